//! The sync loop's end of the engine's channels: commands go out through
//! a local outbox with `try_send`, so the loop never blocks on a full
//! command queue while notices wait to be drained (see
//! `ibex_chainstate::engine::service`).

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::Duration;

use ibex_chainstate::{EngineCommand, EngineNotice, ENGINE_COMMANDS_WAITING_MAX};

/// Commands waiting in the outbox before the loop stops reading the
/// network (back-pressure on peers): the download window's worth.
pub const OUTBOX_COMMANDS_MAX: usize = 1024;

/// Commands sent and not answered yet, at most: the engine then never
/// waits on a full notice queue (it holds twice as many).
const UNANSWERED_COMMANDS_MAX: usize = ENGINE_COMMANDS_WAITING_MAX;
const _: () = assert!(UNANSWERED_COMMANDS_MAX <= ibex_chainstate::ENGINE_NOTICES_WAITING_MAX);

/// The command and notice channels with the outbox.
#[derive(Debug)]
pub struct EngineLink {
    commands: SyncSender<EngineCommand>,
    notices: Receiver<EngineNotice>,
    outbox: VecDeque<EngineCommand>,
    unanswered: usize,
    engine_gone: bool,
}

impl EngineLink {
    /// A link over the engine service's channels.
    pub fn new(commands: SyncSender<EngineCommand>, notices: Receiver<EngineNotice>) -> EngineLink {
        EngineLink { commands, notices, outbox: VecDeque::new(), unanswered: 0, engine_gone: false }
    }

    /// Queues `command` for the engine.
    pub fn push(&mut self, command: EngineCommand) {
        self.outbox.push_back(command);
    }

    /// Whether the outbox has room for more network input.
    pub fn has_room(&self) -> bool {
        self.outbox.len() < OUTBOX_COMMANDS_MAX
    }

    /// Whether the engine stopped listening.
    pub fn engine_gone(&self) -> bool {
        self.engine_gone
    }

    /// Hands the engine what it has room for, without waiting.
    pub fn flush(&mut self) {
        while self.unanswered < UNANSWERED_COMMANDS_MAX {
            let Some(command) = self.outbox.pop_front() else { return };
            match self.commands.try_send(command) {
                Ok(()) => self.unanswered += 1,
                Err(TrySendError::Full(command)) => {
                    self.outbox.push_front(command);
                    return;
                }
                Err(TrySendError::Disconnected(_)) => {
                    self.engine_gone = true;
                    self.outbox.clear();
                    return;
                }
            }
        }
    }

    /// The next notice, waiting at most `wait`.
    pub fn next_notice(&mut self, wait: Duration) -> Option<EngineNotice> {
        let notice = if wait.is_zero() {
            self.notices.try_recv().map_err(|error| match error {
                std::sync::mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                std::sync::mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            })
        } else {
            self.notices.recv_timeout(wait)
        };
        match notice {
            Ok(notice) => {
                self.unanswered = self.unanswered.saturating_sub(1);
                Some(notice)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.engine_gone = true;
                None
            }
        }
    }
}

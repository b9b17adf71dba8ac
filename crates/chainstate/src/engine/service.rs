//! The engine on its own thread, fed through a bounded channel: how blocks
//! and headers from the network (the tokio side) reach the engine API
//! exactly as blocks from files do, with nothing in between but a queue.
//!
//! The network side sends [`EngineCommand`]s (at most
//! [`ENGINE_COMMANDS_WAITING_MAX`] wait; a full queue makes the sender wait,
//! which is the back-pressure that stops a download from outrunning
//! validation) and receives one [`EngineNotice`] per command, in order.
//! What connecting finds later (a block invalid at connect or in its
//! scripts) comes as [`ChainEvent`](super::ChainEvent)s to the observer,
//! and the tip as [`ChainReader`](super::ChainReader) snapshots.
//!
//! Between commands the engine answers readers' queries (each
//! [`EngineService::idle_poll`] while no command comes); when no command
//! has come for [`EngineService::pause_before_settle`], it settles the
//! blocks still pending (a stream of blocks has paused: their verdicts and
//! `UpdateTip` lines must not wait for the next block). Settling at every
//! short gap would drain the script pipeline each time a download lags a
//! little: with every script checked, an IBD over P2P then took 1.5x the
//! time of a reindex of the same blocks.
//!
//! The receiver of notices must be drained independently of sending
//! commands (its own task or thread): the engine waits on a full notice
//! queue, and a sender that waits on a full command queue while nobody
//! drains notices would stall both.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use ibex_primitives::{BlockHash, Header};

use super::accept::AcceptOutcome;
use super::api::BlockSource;
use super::Chainstate;
use crate::error::ChainstateError;
use crate::prepared::PreparedBlock;

/// Commands that may wait for the engine.
pub const ENGINE_COMMANDS_WAITING_MAX: usize = 64;
/// Notices that may wait for the network side.
pub const ENGINE_NOTICES_WAITING_MAX: usize = 2 * ENGINE_COMMANDS_WAITING_MAX;

/// Work for the engine's thread.
#[derive(Debug)]
pub enum EngineCommand {
    /// Index these headers ([`Chainstate::offer_headers`]).
    OfferHeaders {
        /// The headers, in any order.
        headers: Vec<Header>,
        /// Who sent them.
        source: BlockSource,
    },
    /// Accept this block and connect what it makes best
    /// ([`Chainstate::offer_block`]).
    OfferBlock {
        /// The block, parsed once by the network side.
        block: Box<PreparedBlock>,
        /// Who sent it.
        source: BlockSource,
    },
    /// Settle every verdict and return.
    Stop,
}

/// The answer to one command, in command order.
#[derive(Debug)]
pub enum EngineNotice {
    /// Headers were offered.
    HeadersOffered {
        /// Who sent them.
        source: BlockSource,
        /// How many were new and indexed.
        added: usize,
    },
    /// A block was offered.
    BlockOffered {
        /// Who sent it.
        source: BlockSource,
        /// Its hash.
        hash: BlockHash,
        /// What became of it (an unknown parent hands the block back).
        outcome: AcceptOutcome,
    },
}

/// Why the service returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceEnd {
    /// [`EngineCommand::Stop`], or every sender is gone.
    Stopped,
    /// The stop flag was raised (a signal).
    Interrupted,
    /// `-stopatheight` was reached.
    StopHeight,
}

/// The engine's end of the command channel.
#[derive(Debug)]
pub struct EngineService {
    commands: Receiver<EngineCommand>,
    notices: SyncSender<EngineNotice>,
    /// How long to wait for a command before answering reads and checking
    /// the stop flag.
    pub idle_poll: Duration,
    /// How long no command must come before the pending blocks are
    /// settled.
    pub pause_before_settle: Duration,
}

/// The default [`EngineService::pause_before_settle`]: the longest an
/// `UpdateTip` waits once blocks stop coming.
pub const PAUSE_BEFORE_SETTLE: Duration = Duration::from_millis(100);

/// A bounded command channel and notice channel: the senders' ends, and
/// the service to run on the engine's thread.
pub fn engine_service() -> (SyncSender<EngineCommand>, Receiver<EngineNotice>, EngineService) {
    let (command_sender, commands) = sync_channel(ENGINE_COMMANDS_WAITING_MAX);
    let (notices, notice_receiver) = sync_channel(ENGINE_NOTICES_WAITING_MAX);
    let service = EngineService {
        commands,
        notices,
        idle_poll: Duration::from_millis(20),
        pause_before_settle: PAUSE_BEFORE_SETTLE,
    };
    (command_sender, notice_receiver, service)
}

impl Chainstate {
    /// Runs `service` until a stop: offers what the commands carry,
    /// answers each with a notice, serves reads between them, and reaches
    /// the fixed point before it returns (unless interrupted, when it only
    /// settles the pending verdicts).
    pub fn run_service(
        &mut self,
        service: &EngineService,
        stop: &AtomicBool,
    ) -> Result<ServiceEnd, ChainstateError> {
        let mut command_wait = Duration::ZERO;
        // When the engine last had a command: pending blocks are settled
        // once no command has come for `pause_before_settle`.
        let mut last_command_at = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                self.settle()?;
                return Ok(ServiceEnd::Interrupted);
            }
            if self.reached_stop_height() {
                self.activate_best_chain()?;
                return Ok(ServiceEnd::StopHeight);
            }
            let wait_started = Instant::now();
            let received = service.commands.recv_timeout(service.idle_poll);
            command_wait += wait_started.elapsed();
            self.statistics.command_wait_ms =
                u64::try_from(command_wait.as_millis()).unwrap_or(u64::MAX);
            let notice = match received {
                Ok(EngineCommand::OfferHeaders { headers, source }) => {
                    last_command_at = Instant::now();
                    let added = self.offer_headers(&headers)?;
                    EngineNotice::HeadersOffered { source, added }
                }
                Ok(EngineCommand::OfferBlock { block, source }) => {
                    last_command_at = Instant::now();
                    let hash = block.hash();
                    let outcome = self.offer_block(*block, source)?;
                    EngineNotice::BlockOffered { source, hash, outcome }
                }
                Ok(EngineCommand::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    self.activate_best_chain()?;
                    return Ok(ServiceEnd::Stopped);
                }
                Err(RecvTimeoutError::Timeout) => {
                    // A pause in the stream: settle what is pending once it
                    // lasts, and answer readers at every poll.
                    if !self.scripts.is_empty()
                        && last_command_at.elapsed() >= service.pause_before_settle
                    {
                        self.statistics.pauses_settled += 1;
                        self.activate_best_chain()?;
                    }
                    self.serve_reads()?;
                    continue;
                }
            };
            // A network side that went away stops nothing here: the next
            // receive sees its senders gone.
            let _ = service.notices.send(notice);
        }
    }
}

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
//!
//! An operator's commands (`invalidateblock`, `reconsiderblock`,
//! `pruneblockchain`, ... from the RPC server) come through a second,
//! small channel ([`EngineService::control_sender`], at most
//! [`ENGINE_CONTROL_COMMANDS_WAITING_MAX`] waiting) and answer through the
//! reply channel they carry, never as notices: the network side counts its
//! notices against its commands. The engine looks at that channel before
//! each command from the main one, so an operator never waits behind a
//! download's queue, and it never keeps the service running: only the
//! main channel's senders do. When the service returns, the channel is
//! closed and the commands still waiting are dropped (their askers see
//! their reply channel close).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ibex_primitives::{BlockHash, Header};

use super::accept::AcceptOutcome;
use super::api::BlockSource;
use super::assumeutxo::SnapshotActivationError;
use super::headers::HeaderRefusal;
use super::invalidate::ChainControlError;
use super::Chainstate;
use crate::error::ChainstateError;
use crate::prepared::PreparedBlock;

/// Commands that may wait for the engine.
pub const ENGINE_COMMANDS_WAITING_MAX: usize = 64;
/// Notices that may wait for the network side.
pub const ENGINE_NOTICES_WAITING_MAX: usize = 2 * ENGINE_COMMANDS_WAITING_MAX;
/// An operator's commands (through [`EngineService::control_sender`]) that
/// may wait for the engine.
pub const ENGINE_CONTROL_COMMANDS_WAITING_MAX: usize = 8;

/// The answer to an operator's command, through its reply channel.
pub type ChainControlReply = Result<(), ChainControlError>;

/// The answer to [`EngineCommand::PruneBlockFiles`]: Core's
/// `GetPruneHeight` once the files are gone (`None`: nothing pruned).
pub type PruneBlockFilesReply = Result<Option<u32>, PruneRefusal>;

/// Why `pruneblockchain` pruned nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PruneRefusal {
    /// The node keeps every block (`-prune=0`).
    #[error("Cannot prune blocks because node is not in prune mode.")]
    NotPruning,
    /// The engine failed while pruning; it stops with this error.
    #[error(transparent)]
    Chainstate(ChainstateError),
    /// The engine failed while pruning and stopped (the answer through the
    /// engine service: the error itself ends the service and goes to the
    /// node's log).
    #[error("the chain engine failed and stopped")]
    EngineStopped,
}

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
    /// Mark this block invalid ([`Chainstate::invalidate_block`]); the
    /// answer goes to `reply`, not to the notices.
    InvalidateBlock {
        /// The block.
        hash: BlockHash,
        /// Where the answer goes (a channel of one is enough; a reply
        /// nobody waits for any more is dropped).
        reply: SyncSender<ChainControlReply>,
    },
    /// Clear this block's failure marks ([`Chainstate::reconsider_block`]);
    /// the answer goes to `reply`, not to the notices.
    ReconsiderBlock {
        /// The block.
        hash: BlockHash,
        /// Where the answer goes.
        reply: SyncSender<ChainControlReply>,
    },
    /// Make the coins loaded into `directory` (a snapshot of `base`) the
    /// active chainstate ([`Chainstate::activate_snapshot`]); the answer
    /// (the base block's hash and height) goes to `reply`.
    ActivateSnapshot {
        /// The snapshot chainstate's coins database, closed.
        directory: std::path::PathBuf,
        /// The snapshot's base block.
        base: BlockHash,
        /// Where the answer goes.
        reply: SyncSender<Result<(BlockHash, u32), SnapshotActivationError>>,
    },
    /// Index this header ([`Chainstate::submit_header`], `submitheader`);
    /// the answer goes to `reply`.
    SubmitHeader {
        /// The header.
        header: Header,
        /// Where the answer goes.
        reply: SyncSender<Result<(), HeaderRefusal>>,
    },
    /// Remove the block and undo files whose blocks all lie at or below
    /// `height` ([`Chainstate::prune_block_files_manually`],
    /// `pruneblockchain`; the RPC keeps `height` at least 288 below the
    /// tip, as Core's does); the answer goes to `reply`. Height 0 prunes
    /// nothing, as Core's `PruneBlockFilesManual` with 0.
    PruneBlockFiles {
        /// The highest height a removed file may hold.
        height: u32,
        /// Where the answer goes.
        reply: SyncSender<PruneBlockFilesReply>,
    },
    /// The coins a block spent, as a peer claims them (BIP 455), for a
    /// fully validating SwiftSync plan
    /// ([`Chainstate::swiftsync_spent_coins`]).
    SpentCoins {
        /// The block.
        hash: BlockHash,
        /// The coins sent, by input, and the request's cutoff.
        coins: crate::swiftsync::ClaimedSpentCoins,
        /// Who sent them.
        source: BlockSource,
    },
    /// No more spent coins will come: a SwiftSync plan still waiting is
    /// given up ([`Chainstate::end_swiftsync_wait`]).
    EndSwiftSyncWait,
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
    /// A block's spent coins were offered.
    SpentCoinsOffered {
        /// Who sent them.
        source: BlockSource,
        /// The block.
        hash: BlockHash,
        /// Whether a pass took them (not when none runs, the block is not
        /// one of it, or its coins came before).
        taken: bool,
    },
    /// A SwiftSync plan's wait was ended.
    SwiftSyncWaitEnded,
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
    /// The operator's channel; `None` once the service has returned.
    control: Mutex<Option<Receiver<EngineCommand>>>,
    control_sender: SyncSender<EngineCommand>,
    /// How long to wait for a command before answering reads and checking
    /// the stop flag.
    pub idle_poll: Duration,
    /// How long no command must come before the pending blocks are
    /// settled.
    pub pause_before_settle: Duration,
}

/// Blocks the background chainstate connects between two looks at the
/// command channel (a few hundred milliseconds of mainnet blocks at most).
pub const BACKGROUND_STEP_BLOCKS: u32 = 16;

/// The default [`EngineService::pause_before_settle`]: the longest an
/// `UpdateTip` waits once blocks stop coming.
pub const PAUSE_BEFORE_SETTLE: Duration = Duration::from_millis(100);

/// A bounded command channel and notice channel: the senders' ends, and
/// the service to run on the engine's thread.
pub fn engine_service() -> (SyncSender<EngineCommand>, Receiver<EngineNotice>, EngineService) {
    let (command_sender, commands) = sync_channel(ENGINE_COMMANDS_WAITING_MAX);
    let (notices, notice_receiver) = sync_channel(ENGINE_NOTICES_WAITING_MAX);
    let (control_sender, control) = sync_channel(ENGINE_CONTROL_COMMANDS_WAITING_MAX);
    let service = EngineService {
        commands,
        notices,
        control: Mutex::new(Some(control)),
        control_sender,
        idle_poll: Duration::from_millis(20),
        pause_before_settle: PAUSE_BEFORE_SETTLE,
    };
    (command_sender, notice_receiver, service)
}

impl EngineService {
    /// A sender for an operator's commands
    /// ([`EngineCommand::InvalidateBlock`],
    /// [`EngineCommand::ReconsiderBlock`]): they are served before the
    /// main channel's and answer through their reply channel (see the
    /// module docs). Holding one does not keep the service running.
    pub fn control_sender(&self) -> SyncSender<EngineCommand> {
        self.control_sender.clone()
    }

    /// The next operator's command, if one waits.
    fn next_control(&self) -> Option<EngineCommand> {
        let control = self.control.lock().unwrap_or_else(PoisonError::into_inner);
        control.as_ref().and_then(|receiver| receiver.try_recv().ok())
    }

    /// Closes the operator's channel: later sends fail, and the commands
    /// still waiting are dropped with their reply channels.
    fn close_control(&self) {
        self.control.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// What became of one command.
enum Handled {
    /// Answer the network side with this notice.
    Notice(EngineNotice),
    /// Answered through the command's own reply channel.
    Replied,
    /// The service ends.
    Stopped,
}

impl Chainstate {
    /// Runs `service` until a stop: offers what the commands carry,
    /// answers each with a notice (an operator's command through its reply
    /// channel), serves reads between them, and reaches the fixed point
    /// before it returns (unless interrupted, when it only settles the
    /// pending verdicts). The operator's channel is closed when it returns.
    pub fn run_service(
        &mut self,
        service: &EngineService,
        stop: &AtomicBool,
    ) -> Result<ServiceEnd, ChainstateError> {
        let end = self.serve_commands(service, stop);
        service.close_control();
        end
    }

    fn serve_commands(
        &mut self,
        service: &EngineService,
        stop: &AtomicBool,
    ) -> Result<ServiceEnd, ChainstateError> {
        let mut command_wait = Duration::ZERO;
        // When the engine last had a command: pending blocks are settled
        // once no command has come for `pause_before_settle`.
        let mut last_command_at = Instant::now();
        let mut background_has_work = self.background.is_some();
        loop {
            if stop.load(Ordering::Relaxed) {
                self.settle()?;
                self.settle_background()?;
                return Ok(ServiceEnd::Interrupted);
            }
            if self.reached_stop_height() {
                self.activate_best_chain()?;
                return Ok(ServiceEnd::StopHeight);
            }
            let received = match service.next_control() {
                Some(command) => Ok(command),
                None => {
                    let wait_started = Instant::now();
                    let wait = if background_has_work { Duration::ZERO } else { service.idle_poll };
                    let received = service.commands.recv_timeout(wait);
                    command_wait += wait_started.elapsed();
                    self.shared.statistics.command_wait_ms =
                        u64::try_from(command_wait.as_millis()).unwrap_or(u64::MAX);
                    received
                }
            };
            let command = match received {
                Ok(command) => command,
                Err(RecvTimeoutError::Disconnected) => EngineCommand::Stop,
                Err(RecvTimeoutError::Timeout) => {
                    // A pause in the stream: settle what is pending once it
                    // lasts, and answer readers at every poll.
                    if !self.active.scripts.is_empty()
                        && last_command_at.elapsed() >= service.pause_before_settle
                    {
                        self.shared.statistics.pauses_settled += 1;
                        self.activate_best_chain()?;
                    }
                    // The background chainstate validates while no
                    // command waits, one short step at a time (the next
                    // receive does not wait while it has work), so a
                    // command waits for one step at most.
                    background_has_work = self.advance_background(BACKGROUND_STEP_BLOCKS)?;
                    self.serve_reads()?;
                    continue;
                }
            };
            last_command_at = Instant::now();
            let handled = self.handle_command(command)?;
            // A block may be one the background chainstate waits for.
            background_has_work |= self.background.is_some();
            match handled {
                // A network side that went away stops nothing here: the
                // next receive sees its senders gone.
                Handled::Notice(notice) => {
                    let _ = service.notices.send(notice);
                }
                Handled::Replied => {}
                Handled::Stopped => return Ok(ServiceEnd::Stopped),
            }
        }
    }

    /// Carries out one command.
    fn handle_command(&mut self, command: EngineCommand) -> Result<Handled, ChainstateError> {
        match command {
            EngineCommand::OfferHeaders { headers, source } => {
                let added = self.offer_headers(&headers)?;
                Ok(Handled::Notice(EngineNotice::HeadersOffered { source, added }))
            }
            EngineCommand::OfferBlock { block, source } => {
                let hash = block.hash();
                let outcome = self.offer_block(*block, source)?;
                Ok(Handled::Notice(EngineNotice::BlockOffered { source, hash, outcome }))
            }
            EngineCommand::InvalidateBlock { hash, reply } => {
                let result = self.invalidate_block(&hash);
                answer_control(&reply, result)
            }
            EngineCommand::ReconsiderBlock { hash, reply } => {
                let result = self.reconsider_block(&hash);
                answer_control(&reply, result)
            }
            EngineCommand::ActivateSnapshot { directory, base, reply } => {
                let activated = self.activate_snapshot(&directory, &base).map(|id| {
                    let entry = self.shared.index.entry(id);
                    (entry.hash, entry.height)
                });
                answer_control(&reply, activated)
            }
            EngineCommand::SubmitHeader { header, reply } => {
                answer_control(&reply, self.submit_header(&header))
            }
            EngineCommand::PruneBlockFiles { height, reply } => {
                answer_control(&reply, self.prune_on_request(height))
            }
            EngineCommand::SpentCoins { hash, coins, source } => {
                let taken = self.swiftsync_spent_coins(&hash, coins, source)?;
                Ok(Handled::Notice(EngineNotice::SpentCoinsOffered { source, hash, taken }))
            }
            EngineCommand::EndSwiftSyncWait => {
                self.end_swiftsync_wait()?;
                self.activate_best_chain()?;
                Ok(Handled::Notice(EngineNotice::SwiftSyncWaitEnded))
            }
            EngineCommand::Stop => {
                self.activate_best_chain()?;
                self.settle_background()?;
                Ok(Handled::Stopped)
            }
        }
    }
}

impl Chainstate {
    /// `pruneblockchain`'s pruning: Core's `PruneBlockFilesManual`, which
    /// looks for files only for a height above 0.
    fn prune_on_request(&mut self, height: u32) -> PruneBlockFilesReply {
        if !self.shared.options.prune.is_enabled() {
            return Err(PruneRefusal::NotPruning);
        }
        if height == 0 {
            return Ok(self.prune_height());
        }
        self.prune_block_files_manually(height).map_err(|error| match error {
            ChainstateError::NotPruning => PruneRefusal::NotPruning,
            other => PruneRefusal::Chainstate(other),
        })
    }
}

/// An operator's command's error that may be a failure of the engine
/// itself (storage), which ends the service.
trait ControlError: Sized {
    /// The engine's failure inside, if that is what it is.
    fn into_engine_failure(self) -> Result<ChainstateError, Self>;
    /// What the asker hears when the engine failed.
    fn engine_stopped() -> Self;
}

impl ControlError for ChainControlError {
    fn into_engine_failure(self) -> Result<ChainstateError, Self> {
        match self {
            ChainControlError::Chainstate(error) => Ok(error),
            other => Err(other),
        }
    }
    fn engine_stopped() -> Self {
        ChainControlError::EngineStopped
    }
}

impl ControlError for SnapshotActivationError {
    fn into_engine_failure(self) -> Result<ChainstateError, Self> {
        match self {
            SnapshotActivationError::Chainstate(error) => Ok(error),
            other => Err(other),
        }
    }
    fn engine_stopped() -> Self {
        SnapshotActivationError::EngineStopped
    }
}

impl ControlError for HeaderRefusal {
    fn into_engine_failure(self) -> Result<ChainstateError, Self> {
        match self {
            HeaderRefusal::Chainstate(error) => Ok(error),
            other => Err(other),
        }
    }
    fn engine_stopped() -> Self {
        HeaderRefusal::EngineStopped
    }
}

impl ControlError for PruneRefusal {
    fn into_engine_failure(self) -> Result<ChainstateError, Self> {
        match self {
            PruneRefusal::Chainstate(error) => Ok(error),
            other => Err(other),
        }
    }
    fn engine_stopped() -> Self {
        PruneRefusal::EngineStopped
    }
}

/// Sends an operator's command its answer. An engine failure is answered
/// "the engine stopped" and returned, so the service ends with it as with
/// any other engine failure.
fn answer_control<T, E: ControlError>(
    reply: &SyncSender<Result<T, E>>,
    result: Result<T, E>,
) -> Result<Handled, ChainstateError> {
    // The asker may have given up waiting: its answer is dropped.
    match result.map_err(E::into_engine_failure) {
        Err(Ok(failure)) => {
            let _ = reply.try_send(Err(E::engine_stopped()));
            Err(failure)
        }
        Err(Err(refusal)) => {
            let _ = reply.try_send(Err(refusal));
            Ok(Handled::Replied)
        }
        Ok(answer) => {
            let _ = reply.try_send(Ok(answer));
            Ok(Handled::Replied)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ibex_primitives::Params;

    use super::*;
    use crate::engine::{ChainEvent, ChainstateOptions};
    use crate::test_chain::chainstate_options;
    use crate::vocabulary::PruneMode;

    /// Sends `PruneBlockFiles` through the operator's channel of a service
    /// that then stops, and returns the answer.
    fn prune_through_service(chainstate: &mut Chainstate, height: u32) -> PruneBlockFilesReply {
        let (commands, _notices, service) = engine_service();
        let (reply, answer) = sync_channel(1);
        service.control_sender().send(EngineCommand::PruneBlockFiles { height, reply }).unwrap();
        // The operator's channel is looked at before each main command.
        commands.send(EngineCommand::Stop).unwrap();
        let end = chainstate.run_service(&service, &AtomicBool::new(false)).unwrap();
        assert_eq!(end, ServiceEnd::Stopped);
        answer.recv().unwrap()
    }

    fn chainstate(root: &std::path::Path, prune: PruneMode) -> Chainstate {
        let options = ChainstateOptions { prune, ..chainstate_options(root, Params::regtest()) };
        Chainstate::open(options, Box::new(|_: &ChainEvent| {})).unwrap()
    }

    #[test]
    fn a_node_that_keeps_every_block_refuses_and_the_service_goes_on() {
        let root = tempfile::tempdir().unwrap();
        let mut keeping = chainstate(root.path(), PruneMode::Disabled);
        let refused = prune_through_service(&mut keeping, 10);
        assert!(matches!(refused, Err(PruneRefusal::NotPruning)), "{refused:?}");
        assert_eq!(
            PruneRefusal::NotPruning.to_string(),
            "Cannot prune blocks because node is not in prune mode."
        );
        drop(keeping);

        let root = tempfile::tempdir().unwrap();
        let mut pruning = chainstate(root.path(), PruneMode::Manual);
        // Height 0 looks for no file (Core's `PruneBlockFilesManual`); a
        // chain shorter than the blocks always kept has none to give.
        assert_eq!(prune_through_service(&mut pruning, 0).unwrap(), None);
        assert_eq!(prune_through_service(&mut pruning, 5).unwrap(), None);
    }
}

//! An operator's command from an RPC worker to the engine service
//! (`invalidateblock`, `reconsiderblock`, and through [`send_and_wait`]
//! `submitheader`, `loadtxoutset`'s activation, `pruneblockchain`): sent
//! through the service's operator channel (bounded:
//! `ENGINE_CONTROL_COMMANDS_WAITING_MAX`) with a reply channel of one, then
//! the worker waits for the answer, which comes once the engine has
//! changed the chain (and activated the best one) or its files.
//!
//! The worker never blocks on a full channel: it retries every
//! [`SEND_RETRY_INTERVAL`] until [`CHAIN_CONTROL_TIMEOUT`] or a shutdown.
//! A service that has returned closes its channel, so a worker sending or
//! waiting then learns it at once ([`BackendError::Stopped`]). A deep
//! invalidation disconnects a block at a time (a block and an undo read
//! each, ~1 ms for a full block): 100,000 blocks take minutes, hence a
//! timeout as long as `bitcoin-cli`'s own (`-rpcclienttimeout`, 900 s).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use ibex_chainstate::{ChainControlError, ChainControlReply, EngineCommand};
use ibex_primitives::BlockHash;
use ibex_rpc::BackendError;

/// Longest wait for the engine to take and carry out an operator's command
/// (`bitcoin-cli`'s default `-rpcclienttimeout`).
pub const CHAIN_CONTROL_TIMEOUT: Duration = Duration::from_secs(900);
/// How often a worker tries again while the operator channel is full.
pub const SEND_RETRY_INTERVAL: Duration = Duration::from_millis(10);

/// Sends `command(hash, reply)` through `control` and waits for its answer.
pub fn send_control(
    control: &SyncSender<EngineCommand>,
    command: impl FnOnce(BlockHash, SyncSender<ChainControlReply>) -> EngineCommand,
    hash: BlockHash,
    shutdown: &AtomicBool,
) -> Result<(), BackendError> {
    let (reply, answer) = sync_channel(1);
    backend_answer(send_and_wait(control, command(hash, reply), &answer, shutdown)?)
}

/// Sends `command` through `control` (waiting while the channel is full)
/// and waits for the answer it sends to `answer`, at most
/// [`CHAIN_CONTROL_TIMEOUT`] in all.
pub fn send_and_wait<T>(
    control: &SyncSender<EngineCommand>,
    command: EngineCommand,
    answer: &Receiver<T>,
    shutdown: &AtomicBool,
) -> Result<T, BackendError> {
    let deadline = Instant::now() + CHAIN_CONTROL_TIMEOUT;
    let timed_out = || BackendError::TimedOut {
        timeout_ms: u64::try_from(CHAIN_CONTROL_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
    };
    let mut pending = command;
    loop {
        match control.try_send(pending) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) => {
                if shutdown.load(Ordering::Relaxed) {
                    return Err(BackendError::Stopped);
                }
                if Instant::now() >= deadline {
                    return Err(timed_out());
                }
                pending = back;
                std::thread::sleep(SEND_RETRY_INTERVAL);
            }
            Err(TrySendError::Disconnected(_)) => return Err(BackendError::Stopped),
        }
    }
    match answer.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(result) => Ok(result),
        Err(RecvTimeoutError::Timeout) => Err(timed_out()),
        Err(RecvTimeoutError::Disconnected) => Err(BackendError::Stopped),
    }
}

/// The engine's answer as the RPC server takes it.
fn backend_answer(result: ChainControlReply) -> Result<(), BackendError> {
    match result {
        Ok(()) => Ok(()),
        Err(ChainControlError::UnknownBlock { hash }) => {
            Err(BackendError::BlockNotFound { block_hash: hash })
        }
        // Core's `InvalidateBlock` returns at once for the genesis block
        // and its RPC answers null: nothing changes, no error.
        Err(ChainControlError::GenesisBlock { .. }) => Ok(()),
        Err(other) => Err(BackendError::ChainChangeFailed { source: Box::new(other) }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn invalidate(hash: BlockHash, reply: SyncSender<ChainControlReply>) -> EngineCommand {
        EngineCommand::InvalidateBlock { hash, reply }
    }

    /// Runs `send_control` against an "engine" thread answering `answer`.
    fn answered(answer: ChainControlReply) -> Result<(), BackendError> {
        let (control, commands) = sync_channel(1);
        let engine = std::thread::spawn(move || match commands.recv().unwrap() {
            EngineCommand::InvalidateBlock { hash, reply } => {
                assert_eq!(hash, BlockHash([3; 32]));
                reply.send(answer).unwrap();
            }
            other => panic!("unexpected {other:?}"),
        });
        let result =
            send_control(&control, invalidate, BlockHash([3; 32]), &AtomicBool::new(false));
        engine.join().unwrap();
        result
    }

    #[test]
    fn answers_map_to_cores_outcomes() {
        assert!(answered(Ok(())).is_ok());
        let unknown = answered(Err(ChainControlError::UnknownBlock { hash: BlockHash([3; 32]) }));
        assert!(
            matches!(unknown, Err(BackendError::BlockNotFound { block_hash }) if block_hash == BlockHash([3; 32]))
        );
        let genesis = answered(Err(ChainControlError::GenesisBlock { hash: BlockHash([3; 32]) }));
        assert!(genesis.is_ok(), "Core answers null for the genesis block");
        let failed = answered(Err(ChainControlError::EngineStopped));
        assert!(matches!(failed, Err(BackendError::ChainChangeFailed { .. })));
    }

    #[test]
    fn a_closed_channel_or_a_dropped_reply_is_a_stop_and_a_full_one_waits_for_shutdown() {
        let (control, commands) = sync_channel::<EngineCommand>(1);
        drop(commands);
        let closed =
            send_control(&control, invalidate, BlockHash([1; 32]), &AtomicBool::new(false));
        assert!(matches!(closed, Err(BackendError::Stopped)));

        let (control, commands) = sync_channel(1);
        let engine = std::thread::spawn(move || drop(commands.recv().unwrap()));
        let dropped =
            send_control(&control, invalidate, BlockHash([1; 32]), &AtomicBool::new(false));
        assert!(matches!(dropped, Err(BackendError::Stopped)));
        engine.join().unwrap();

        let (control, _commands) = sync_channel(1);
        let (reply, _answer) = sync_channel(1);
        control.send(invalidate(BlockHash([2; 32]), reply)).unwrap();
        let started = Instant::now();
        let full = send_control(&control, invalidate, BlockHash([1; 32]), &AtomicBool::new(true));
        assert!(matches!(full, Err(BackendError::Stopped)));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

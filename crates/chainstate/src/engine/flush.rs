//! Making the chainstate durable, in Core's order (`FlushStateToDisk`):
//!
//! 1. block and undo files are synced, so everything the index will name exists;
//! 2. the changed block index records are written (synced);
//! 3. the coins are flushed: the head-blocks record first, then the coins in
//!    bounded batches, then the new best block (see [`crate::coins::database`]).
//!
//! A crash between any two steps leaves a state the next open repairs:
//! before 3 the coins still name the old tip (blocks after it are connected
//! again); during 3 the head-blocks record makes [`super::recovery`] replay.
//! The coins skip RocksDB's write-ahead log, so a crash keeps a prefix of
//! their batches, possibly ending before the last flushes: the same two
//! cases. A shutdown or periodic flush waits for them to be durable
//! ([`crate::coins::database::CoinsDatabase::persist_memtables`]); a cache-full one does not.
//!
//! Step 3 is reported twice: [`ChainEvent::FlushStarted`] when it begins
//! (what it will write) and [`ChainEvent::Flushed`] once it is written, so
//! an operator (or a crash test) can tell a flush in progress, and a log
//! that ends between the two shows a flush the next start must replay.

use std::time::{Duration, Instant};

use super::coins_chain::BackgroundFlushInfo;
use super::{ChainEvent, Chainstate, CoinsChain, FlushReason, Shared};
use crate::coins::cache::FlushMode;
use crate::error::ChainstateError;
use crate::vocabulary::PruneReport;

/// Once the coins database's table readers (filters and indexes) take more than
/// 1/this of the UTXO cache's share of `-dbcache` from the maps (what they hold
/// beyond
/// [`TABLE_READERS_UNCOUNTED_BYTES_MAX`](crate::coins::cache::TABLE_READERS_UNCOUNTED_BYTES_MAX)),
/// tables written from then on filter on transaction ids only
/// ([`crate::coins::database::CoinsDatabase::drop_whole_key_filters`]): the memory
/// goes back to the maps. Measured on the `utxo-heavy` chain to height 2,000
/// (26 M coins, scripts skipped): whole-key filters won by 4.7 % at
/// `-dbcache=450`, where the readers reached a fifth of the share (45 of 212
/// MiB), and lost by 8 % at `-dbcache=100`, where they took it all (38 MiB); a
/// quarter lies between. With flushes in tables (maps of 72.8 MiB at 100) half
/// measured better at 100: three runs each, 39.8-40.6 s against a quarter's
/// 42.0-42.8 s, the fourth quarter 12.9-13.4 s against 13.8-14.1, the filters
/// dropped at 36 MiB in the third quarter instead of 18 MiB in the second
/// (never dropping them: 40.0-40.6 s). A mainnet set (~180 M coins, ~225 MiB of
/// whole-key filters) passes half of the share below `-dbcache` of ~550 MiB and
/// keeps its whole-key filters above it.
///
/// What the switch costs once the maps keep their share, measured at
/// `-dbcache=100`: transaction-id filters from the first table on took
/// 36.0 and 36.9 s against 30.1 and 32.0 s with whole-key filters
/// throughout (third and fourth quarters 11.0-12.1 and 10.3-11.2 s
/// against 9.0 and 8.2-8.4; docs/utxo-heavy.md). The likely
/// cause: a read whose transaction has another output spent since matches
/// that spend's tombstone in a newer table's filter and reads a block for
/// nothing. So the switch
/// waits until the readers take from the maps, not merely hold memory.
pub const WHOLE_KEY_FILTERS_SHARE_DIVISOR: usize = 2;

/// How often validation looks whether a background flush has freed room.
const FLUSH_ROOM_POLL_INTERVAL: Duration = Duration::from_millis(1);

impl Chainstate {
    /// Writes everything: files, index, coins (as of the current tip), and
    /// waits until it is written (shutdown, tests).
    /// At the shutdown, a SwiftSync pass still running keeps a
    /// checkpoint first (`crate::swiftsync`).
    pub fn flush(&mut self, reason: FlushReason, mode: FlushMode) -> Result<(), ChainstateError> {
        if reason == FlushReason::Shutdown {
            self.suspend_swiftsync()?;
        }
        if let Some(background) = self.background.as_mut() {
            background.flush(&mut self.shared, reason, mode)?;
        }
        self.active.flush(&mut self.shared, reason, mode)
    }

    /// Starts a coins flush on the writer thread (see
    /// `crate::coins::background`): validation goes on while it is written.
    /// Files and the block index are made durable first, synchronously.
    pub fn flush_in_background(
        &mut self,
        reason: FlushReason,
        mode: FlushMode,
    ) -> Result<(), ChainstateError> {
        self.active.flush_in_background(&mut self.shared, reason, mode, None)
    }

    /// The coins database's I/O since open and its shape now (RocksDB's
    /// figures: [`crate::coins::database::io`]).
    pub fn coins_database_io(&self) -> crate::coins::database::io::CoinsDatabaseIo {
        self.active.connector.cache().database().io()
    }

    /// Writes only the block index (and syncs the files it names): cheap,
    /// used while importing so found blocks survive a crash.
    pub fn flush_index(&mut self) -> Result<usize, ChainstateError> {
        self.shared.persistence.write_index(&mut self.shared.index)
    }
}

impl CoinsChain {
    /// [`Chainstate::flush`] of this chainstate.
    pub(crate) fn flush(
        &mut self,
        shared: &mut Shared,
        reason: FlushReason,
        mode: FlushMode,
    ) -> Result<(), ChainstateError> {
        let started = Instant::now();
        let shutdown = reason == FlushReason::Shutdown;
        let collect = if shutdown { Collect::AtShutdown } else { Collect::Wait };
        self.collect_background_flush(shared, collect)?;
        let Some(target) = self.prepare_flush(shared)? else { return self.persist_for(reason) };
        let started_event = self.flush_started_event(reason, &target, false);
        shared.emit(started_event);
        let stats = self.connector.cache_mut().flush(target.hash, mode)?;
        self.persist_for(reason)?;
        let index_records = target.index_records;
        let duration_ms = elapsed_ms(started);
        // A shutdown flush holds up no validation; the others stop it whole.
        let stall_ms = if shutdown {
            shared.statistics.shutdown_flush_ms = duration_ms;
            0
        } else {
            duration_ms
        };
        shared.record_flush(duration_ms, stall_ms, &stats);
        shared.emit(ChainEvent::Flushed { stats, index_records, duration_ms, stall_ms, reason });
        self.emit_database_measured(shared);
        Ok(())
    }

    /// [`Chainstate::flush_in_background`] of this chainstate.
    /// `prune`: files to prune once the flush is durable (`super::prune`).
    pub(crate) fn flush_in_background(
        &mut self,
        shared: &mut Shared,
        reason: FlushReason,
        mode: FlushMode,
        prune: Option<PruneReport>,
    ) -> Result<(), ChainstateError> {
        let started = Instant::now();
        self.collect_background_flush(shared, Collect::Wait)?;
        let Some(target) = self.prepare_flush(shared)? else { return Ok(()) };
        // Taken before the map is frozen: the live map starts empty.
        let started_event = self.flush_started_event(reason, &target, true);
        self.connector.cache_mut().start_background_flush(target.hash, mode)?;
        let stall_ms = elapsed_ms(started);
        shared.emit(started_event);
        let index_records = target.index_records;
        self.flush_schedule.background_flush =
            Some(BackgroundFlushInfo { started, index_records, reason, room_wait_ms: 0, prune });
        shared.note_stall(stall_ms);
        Ok(())
    }

    /// Waits until the background flush's writer has freed enough of the
    /// frozen map for the live map to grow, or has finished (then collects
    /// it). The wait counts as one for a flush.
    pub(crate) fn wait_for_flush_room(
        &mut self,
        shared: &mut Shared,
    ) -> Result<(), ChainstateError> {
        let started = Instant::now();
        while self.connector.cache().needs_room() {
            if self.connector.cache().background_flush_finished() {
                if let Some(info) = self.flush_schedule.background_flush.as_mut() {
                    info.room_wait_ms += elapsed_ms(started);
                }
                self.collect_background_flush(shared, Collect::Wait)?;
                return Ok(());
            }
            std::thread::sleep(FLUSH_ROOM_POLL_INTERVAL);
        }
        let stall_ms = elapsed_ms(started);
        if let Some(info) = self.flush_schedule.background_flush.as_mut() {
            // Reported with the flush when it is collected.
            info.room_wait_ms += stall_ms;
        } else {
            shared.note_stall(stall_ms);
        }
        Ok(())
    }

    /// Counts what the coins database's table readers hold against the
    /// cache's share of `-dbcache` (a property read: ~1 us), and drops
    /// whole keys from the filters of tables to come once the readers take
    /// more than 1/[`WHOLE_KEY_FILTERS_SHARE_DIVISOR`] of the share from
    /// the maps ([`crate::CoinsCache::table_readers_take_more_than`]).
    pub(crate) fn count_table_readers(
        &mut self,
        shared: &mut Shared,
    ) -> Result<(), ChainstateError> {
        let cache = self.connector.cache_mut();
        let bytes = cache.database().table_readers_bytes()?;
        cache.set_table_readers_bytes(bytes);
        let share_bytes = cache.cache_bytes_max();
        if cache.database().has_whole_key_filters()
            && cache.table_readers_take_more_than(WHOLE_KEY_FILTERS_SHARE_DIVISOR)
            && cache.database().drop_whole_key_filters()?
        {
            shared.emit(ChainEvent::WholeKeyFiltersDropped {
                table_readers_bytes: bytes,
                share_bytes,
            });
        }
        Ok(())
    }

    /// Collects a finished background flush (waiting for it unless
    /// `collect` is [`Collect::Poll`]) and reports it.
    pub(crate) fn collect_background_flush(
        &mut self,
        shared: &mut Shared,
        collect: Collect,
    ) -> Result<(), ChainstateError> {
        let waited = Instant::now();
        let stats = if collect == Collect::Poll {
            self.connector.cache_mut().poll_background_flush()?
        } else {
            self.connector.cache_mut().finish_background_flush()?
        };
        // Take the report only with the statistics: a poll that finds the
        // writer still busy must leave it for the next one.
        let Some(stats) = stats else { return Ok(()) };
        let Some(info) = self.flush_schedule.background_flush.take() else { return Ok(()) };
        // Files are pruned only below coins that survive a crash.
        if info.prune.is_some() {
            self.connector.cache().database().persist_memtables()?;
        } else {
            self.persist_for(info.reason)?;
        }
        let duration_ms = elapsed_ms(info.started);
        // The waits for room and the wait for the end, counted as one.
        let stall_ms = match collect {
            Collect::AtShutdown => info.room_wait_ms,
            Collect::Poll | Collect::Wait => info.room_wait_ms + elapsed_ms(waited),
        };
        shared.record_flush(duration_ms, stall_ms, &stats);
        shared.emit(ChainEvent::Flushed {
            stats,
            index_records: info.index_records,
            duration_ms,
            stall_ms,
            reason: info.reason,
        });
        self.emit_database_measured(shared);
        match info.prune {
            Some(report) => self.prune(shared, report),
            None => Ok(()),
        }
    }

    /// Makes the coins database's writes durable unless `reason` is a full
    /// cache (see [`crate::coins::database`], "No write-ahead log"): a shutdown
    /// or a periodic flush promises what it wrote survives a crash; a
    /// flush that only frees memory does not wait for the disk, and a
    /// crash after it replays the blocks its unwritten memtables held.
    fn persist_for(&self, reason: FlushReason) -> Result<(), ChainstateError> {
        if reason == FlushReason::CacheFull {
            return Ok(());
        }
        self.connector.cache().database().persist_memtables()
    }

    /// Settles the pipeline, syncs block and undo files and writes the block
    /// index: everything the coins will refer to. The tip to write the coins
    /// as, or `None` when there is no tip yet.
    fn prepare_flush(
        &mut self,
        shared: &mut Shared,
    ) -> Result<Option<FlushTarget>, ChainstateError> {
        // Only verified state is written: settle the pipeline first.
        self.settle_pending(shared)?;
        let index_records = shared.persistence.write_index(&mut shared.index)?;
        self.flush_schedule.last_flush = Instant::now();
        Ok(self.chain.tip().map(|tip| {
            let entry = shared.index.entry(tip);
            FlushTarget { hash: entry.hash, height: entry.height, index_records }
        }))
    }

    /// [`ChainEvent::FlushStarted`] for a flush of the cache as it is now.
    fn flush_started_event(
        &self,
        reason: FlushReason,
        target: &FlushTarget,
        background: bool,
    ) -> ChainEvent {
        let cache = self.connector.cache();
        ChainEvent::FlushStarted {
            reason,
            height: target.height,
            changed_coin_count: cache.dirty_count(),
            cache_bytes: cache.memory_bytes(),
            background,
        }
    }

    /// The coins database's I/O since open, after a flush: RocksDB's
    /// properties, read in tens of microseconds ([`crate::coins::database::io`]).
    fn emit_database_measured(&self, shared: &mut Shared) {
        let io = Box::new(self.connector.cache().database().io());
        shared.emit(ChainEvent::CoinsDatabaseMeasured(io));
    }
}

/// The tip a flush writes the coins as.
struct FlushTarget {
    hash: ibex_primitives::BlockHash,
    height: u32,
    /// Block index records written before the coins.
    index_records: usize,
}

/// How [`CoinsChain::collect_background_flush`] treats a writer still busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Collect {
    /// Leave it running.
    Poll,
    /// Wait for it: validation stalls meanwhile.
    Wait,
    /// Wait for it at shutdown: nothing is left to validate, no stall.
    AtShutdown,
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

//! The whole coin set walked by several threads at once, for
//! `dumptxoutset` and `gettxoutsetinfo`: the key space is cut into
//! [`WALK_CHUNKS`] ranges of transaction ids, workers walk them through
//! their own RocksDB iterators over the view's snapshot, and the asking
//! thread takes the walked chunks back in key order.
//!
//! # Napkin math
//! A walk of the 26 M-coin `utxo-heavy` set on one thread took 21 s: about
//! a third RocksDB's iteration, a third decoding coins (the allocations of
//! an owned key, value and script each, and a square root for each
//! uncompressed public key), a third serialising them for the file and the
//! hash. Only the hash must be one stream (`hash_serialized_3` is a single
//! SHA-256 over every coin in order): ~75 bytes a coin, 2 GB for this set,
//! ~1.2 s at SHA-NI's ~1.7 GB/s. So workers do everything else: iterate,
//! decode into reused buffers, write the snapshot's records (the
//! database's value is the coin's snapshot serialisation already: copied,
//! not re-encoded) and `TxOutSer` ([`SerializedCoins`]); the asking thread
//! only compresses the SHA-256 blocks and writes the file.
//!
//! # Memory
//! A chunk holds ~1/4096 of the set: mainnet's ~165 M coins give ~40,000 a
//! chunk, ~5 MB of records and serialisations. Each worker holds the chunk
//! it walks and [`CHUNKS_QUEUED_PER_WORKER`] walked ones, the asking thread
//! one: ~30 MB with two workers.
//!
//! # Order
//! Chunks are ranges of the first 12 bits of the transaction id, so a
//! transaction's coins never span two, and worker `w` of `n` takes chunks
//! `w, w + n, ...`: the asking thread receives chunk `c` from worker
//! `c % n`, in order, each worker a bounded queue ahead of it.

use std::ops::Range;

use ibex_primitives::encode::write_compact_size;
use ibex_primitives::txoutset::{Coin as SetCoin, SerializedCoins};
use ibex_primitives::{Height, OutPoint, Txid};
use rocksdb::ReadOptions;

use crate::coins::coin::{decode_coin_fields, Coin, CoinFields, CoinKey, COIN_KEY_PREFIX};
use crate::coins::database::key_order::key_order;
use crate::coins::view::CoinSetView;
use crate::error::ChainstateError;

/// Ranges the transaction ids are cut into (the first 12 bits of the id).
pub const WALK_CHUNKS: u32 = 1 << 12;
/// 16-bit transaction id prefixes in one chunk.
const PREFIXES_PER_CHUNK: u32 = (1 << 16) / WALK_CHUNKS;
/// Walked chunks a worker may hold for the asking thread beyond the one it
/// walks.
pub const CHUNKS_QUEUED_PER_WORKER: usize = 1;
/// Most worker threads, however many cores: the single hash stream bounds
/// the walk at a few workers' pace.
pub const WALK_WORKERS_MAX: usize = 8;

/// What a walk makes of each coin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkOutputs {
    /// The snapshot file's records ([`WalkedChunk::records`]).
    pub snapshot_records: bool,
}

/// One chunk's coins, walked.
#[derive(Debug, Default)]
pub struct WalkedChunk {
    /// The chunk's transactions as a UTXO snapshot holds them: each
    /// transaction id, its coin count and each coin's output index and
    /// serialisation, in the database's key order (empty unless asked).
    pub records: Vec<u8>,
    /// The chunk's coins as the set hashes take them, in Core's order.
    pub serialized: SerializedCoins,
}

/// Walks every coin of `view` on worker threads and gives the chunks to
/// `consume` on this thread, in key order. Stops at the first error,
/// a worker's or `consume`'s.
pub fn walk_in_parallel(
    view: &CoinSetView,
    outputs: WalkOutputs,
    mut consume: impl FnMut(WalkedChunk) -> Result<(), ChainstateError>,
) -> Result<(), ChainstateError> {
    let workers = walk_workers();
    std::thread::scope(|scope| {
        let mut queues = Vec::with_capacity(workers);
        for worker in 0..workers {
            let (sender, receiver) = std::sync::mpsc::sync_channel(CHUNKS_QUEUED_PER_WORKER);
            queues.push(receiver);
            scope.spawn(move || {
                for chunk in (worker as u32..WALK_CHUNKS).step_by(workers) {
                    let walked = walk_chunk(view, chunk, outputs);
                    let failed = walked.is_err();
                    // A closed queue: the asking thread stopped at an error.
                    if sender.send(walked).is_err() || failed {
                        return;
                    }
                }
            });
        }
        for chunk in 0..WALK_CHUNKS {
            let worker = chunk as usize % workers;
            // A worker ends early only after sending an error, taken here
            // first; a closed queue means it panicked.
            let walked = queues[worker]
                .recv()
                .map_err(|_| ChainstateError::CoinWalkWorkerStopped { chunk })?;
            consume(walked?)?;
        }
        Ok(())
    })
}

/// Worker threads for a walk: the cores, at least two (the asking thread
/// mostly waits), at most [`WALK_WORKERS_MAX`].
fn walk_workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |cores| cores.get());
    cores.clamp(2, WALK_WORKERS_MAX)
}

/// The 16-bit transaction id prefixes of `chunk`.
fn chunk_prefixes(chunk: u32) -> Range<u32> {
    chunk * PREFIXES_PER_CHUNK..(chunk + 1) * PREFIXES_PER_CHUNK
}

/// The first key at or after the 16-bit prefix `prefix` (`0x1_0000`: past
/// every coin key).
fn key_at_prefix(prefix: u32) -> Vec<u8> {
    match u16::try_from(prefix) {
        Ok(prefix) => {
            let [high, low] = prefix.to_be_bytes();
            vec![COIN_KEY_PREFIX, high, low]
        }
        Err(_) => vec![COIN_KEY_PREFIX + 1],
    }
}

/// A coin of the walk: the stored value's bytes, or a change's coin.
enum NextCoin<'a> {
    Stored(&'a [u8]),
    Changed(&'a Coin),
}

fn walk_chunk(
    view: &CoinSetView,
    chunk: u32,
    outputs: WalkOutputs,
) -> Result<WalkedChunk, ChainstateError> {
    let prefixes = chunk_prefixes(chunk);
    let lower = key_at_prefix(prefixes.start);
    let mut options = ReadOptions::default();
    options.set_total_order_seek(true);
    options.set_snapshot(view.snapshot());
    options.set_iterate_lower_bound(lower.clone());
    options.set_iterate_upper_bound(key_at_prefix(prefixes.end));
    // A walk reads every block once: caching them would evict the ones
    // the connect reads again.
    options.fill_cache(false);
    let mut stored = view.database().raw().raw_iterator_opt(options);
    stored.seek(&lower);
    let mut changes = view.changes_with_prefixes(prefixes).iter().peekable();
    let mut walk = ChunkWalk::new(outputs);
    loop {
        let stored_outpoint = match stored.key() {
            Some(key) => Some(
                CoinKey::decode(key).map_err(|source| ChainstateError::CorruptKey { source })?,
            ),
            None => {
                stored.status()?;
                None
            }
        };
        let change_first = match (stored_outpoint, changes.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(stored), Some((changed, _))) => key_order(changed, &stored),
        };
        if change_first == std::cmp::Ordering::Greater {
            if let (Some(outpoint), Some(value)) = (stored_outpoint, stored.value()) {
                walk.add(outpoint, NextCoin::Stored(value))?;
            }
            stored.next();
            continue;
        }
        // A change replaces the stored coin at its outpoint.
        if change_first == std::cmp::Ordering::Equal {
            stored.next();
        }
        if let Some((outpoint, Some(coin))) = changes.next() {
            walk.add(*outpoint, NextCoin::Changed(coin))?;
        }
    }
    walk.finish()
}

/// One coin of the transaction being gathered.
struct GatheredCoin {
    vout: u32,
    fields: CoinFields,
    script: Range<usize>,
}

/// A chunk being walked: the transaction being gathered (its coin count
/// comes before its coins in a snapshot, and the hashes take its coins by
/// output index, which the keys' VARINTs order differently past 16,511).
struct ChunkWalk {
    outputs: WalkOutputs,
    walked: WalkedChunk,
    txid: Option<Txid>,
    coins: Vec<GatheredCoin>,
    scripts: Vec<u8>,
    records: Vec<u8>,
    script: Vec<u8>,
}

impl ChunkWalk {
    fn new(outputs: WalkOutputs) -> ChunkWalk {
        ChunkWalk {
            outputs,
            walked: WalkedChunk { records: Vec::new(), serialized: SerializedCoins::new() },
            txid: None,
            coins: Vec::new(),
            scripts: Vec::new(),
            records: Vec::new(),
            script: Vec::with_capacity(128),
        }
    }

    fn add(&mut self, outpoint: OutPoint, coin: NextCoin<'_>) -> Result<(), ChainstateError> {
        if self.txid != Some(outpoint.txid) {
            self.finish_transaction()?;
            self.txid = Some(outpoint.txid);
        }
        let fields = match coin {
            NextCoin::Stored(value) => {
                let fields = decode_coin_fields(value, &mut self.script)
                    .map_err(|source| ChainstateError::CorruptCoin { outpoint, source })?;
                if self.outputs.snapshot_records {
                    write_compact_size(&mut self.records, u64::from(outpoint.vout));
                    // The database's value is the coin's Core serialisation,
                    // as `Coin::encode_into` wrote it: the snapshot's bytes.
                    self.records.extend_from_slice(value);
                    debug_assert_eq!(
                        Coin::decode(value).map(|coin| coin.encode()).ok().as_deref(),
                        Some(value)
                    );
                }
                fields
            }
            NextCoin::Changed(coin) => {
                self.script.clear();
                self.script.extend_from_slice(coin.script_pubkey());
                if self.outputs.snapshot_records {
                    write_compact_size(&mut self.records, u64::from(outpoint.vout));
                    coin.encode_into(&mut self.records);
                }
                let height_code = (coin.height() << 1) | u32::from(coin.is_coinbase());
                CoinFields { height_code, amount: coin.amount() }
            }
        };
        let start = self.scripts.len();
        self.scripts.extend_from_slice(&self.script);
        self.coins.push(GatheredCoin {
            vout: outpoint.vout,
            fields,
            script: start..self.scripts.len(),
        });
        Ok(())
    }

    fn finish_transaction(&mut self) -> Result<(), ChainstateError> {
        let Some(txid) = self.txid.take() else { return Ok(()) };
        if self.outputs.snapshot_records {
            let records = &mut self.walked.records;
            records.extend_from_slice(txid.as_bytes());
            write_compact_size(records, self.coins.len() as u64);
            records.extend_from_slice(&self.records);
        }
        if !self.coins.is_sorted_by_key(|coin| coin.vout) {
            self.coins.sort_unstable_by_key(|coin| coin.vout);
        }
        for coin in &self.coins {
            let set_coin = SetCoin {
                outpoint: OutPoint { txid, vout: coin.vout },
                height: Height::new(coin.fields.height_code >> 1),
                is_coinbase: coin.fields.height_code & 1 == 1,
                value: coin.fields.amount,
                script_pubkey: &self.scripts[coin.script.clone()],
            };
            self.walked
                .serialized
                .push(&set_coin)
                .map_err(|source| ChainstateError::CoinOrder { source })?;
        }
        self.coins.clear();
        self.scripts.clear();
        self.records.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<WalkedChunk, ChainstateError> {
        self.finish_transaction()?;
        Ok(self.walked)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ibex_primitives::txoutset::TxOutSetHashType;
    use ibex_primitives::{Amount, BlockHash};

    use super::*;
    use crate::coins::cache::{CoinsCache, FlushMode};
    use crate::coins::database::{CoinsDatabase, DatabaseOptions};
    use crate::coins::txoutset::stats_of_coins;
    use crate::snapshot::{SnapshotMetadata, SnapshotWriter};

    /// Transaction ids on both sides of chunk edges (the first 12 bits) and
    /// spread over the key space.
    fn txids() -> Vec<Txid> {
        let mut txids = Vec::new();
        for (high, low) in [(0x00, 0x00), (0x00, 0x0f), (0x00, 0x10), (0x7f, 0xff), (0x80, 0x00)] {
            for tail in [0x00, 0x5a, 0xff] {
                let mut bytes = [tail; 32];
                bytes[0] = high;
                bytes[1] = low;
                txids.push(Txid(bytes));
            }
        }
        txids.extend((0..200u32).map(|index| {
            let mut bytes = [0x33u8; 32];
            bytes[..4].copy_from_slice(&index.wrapping_mul(0x9e37_79b9).to_be_bytes());
            Txid(bytes)
        }));
        txids.push(Txid([0xff; 32]));
        txids
    }

    fn coin(seed: u32) -> Coin {
        // Scripts of each compressed form and a raw one, by seed.
        let script: Vec<u8> = match seed % 3 {
            0 => [&[0x76, 0xa9, 20][..], &[seed as u8; 20], &[0x88, 0xac]].concat(),
            1 => [&[0xa9, 20][..], &[seed as u8; 20], &[0x87]].concat(),
            _ => vec![0x51; 1 + seed as usize % 60],
        };
        Coin::new(Amount::from_sat_u32(seed * 7 + 1), script, seed % 900, seed % 5 == 0).unwrap()
    }

    /// A database with coins at outputs whose VARINT keys sort unlike the
    /// numbers (past 16,511), and a view with unflushed changes over it.
    fn view_with_changes(directory: &std::path::Path) -> CoinSetView {
        let database = CoinsDatabase::open(directory, &DatabaseOptions::default()).unwrap();
        let mut cache = CoinsCache::new(Arc::new(database), 8 << 20);
        let mut seed = 0;
        for txid in txids() {
            for vout in [0, 1, 127, 128, 16_511, 16_512, 70_000] {
                seed += 1;
                if seed % 4 != 0 || vout < 2 {
                    cache.add(&OutPoint { txid, vout }, coin(seed), false).unwrap();
                }
            }
        }
        cache.flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        for (index, txid) in txids().into_iter().enumerate().step_by(3) {
            let outpoint = OutPoint { txid, vout: 0 };
            cache.spend(&outpoint).unwrap();
            if index % 2 == 0 {
                cache.add(&outpoint, coin(index as u32 + 5_000), false).unwrap();
            }
            cache.add(&OutPoint { txid, vout: 16_600 }, coin(index as u32 + 9_000), false).unwrap();
        }
        cache.coin_set_view()
    }

    #[test]
    fn the_parallel_walk_writes_and_hashes_as_the_walk_in_key_order() {
        let directory = tempfile::tempdir().unwrap();
        let view = view_with_changes(directory.path());
        let metadata = SnapshotMetadata {
            message_start: [0xfa, 0xbf, 0xb5, 0xda],
            base_block: BlockHash([2; 32]),
            coin_count: 0,
        };
        let mut sequential = SnapshotWriter::new(Vec::new(), &metadata).unwrap();
        for item in view.coins() {
            let (outpoint, coin) = item.unwrap();
            sequential.add(&outpoint, &coin).unwrap();
        }
        let (sequential_bytes, sequential_count) = sequential.finish().unwrap();

        let mut records = metadata.encode().to_vec();
        let mut hasher =
            ibex_primitives::txoutset::TxOutSetHasher::new(TxOutSetHashType::HashSerialized3);
        walk_in_parallel(&view, WalkOutputs { snapshot_records: true }, |chunk| {
            records.extend_from_slice(&chunk.records);
            hasher.add_serialized(&chunk.serialized).unwrap();
            Ok(())
        })
        .unwrap();
        assert_eq!(records, sequential_bytes);
        let stats = hasher.finish();
        let expected = stats_of_coins(view.coins(), TxOutSetHashType::HashSerialized3).unwrap();
        assert_eq!(stats, expected);
        assert_eq!(stats.txouts, sequential_count);
        assert!(stats.txouts > 1_000, "{} coins", stats.txouts);
    }

    #[test]
    fn a_corrupt_coin_stops_the_walk_with_its_outpoint() {
        let directory = tempfile::tempdir().unwrap();
        let view = {
            let view = view_with_changes(directory.path());
            let outpoint = OutPoint { txid: Txid([0x80; 32]), vout: 3 };
            // Height code, then a compressed amount past MAX_MONEY.
            view.database().raw().put(CoinKey::new(&outpoint), [0x02, 0xff, 0xff, 0x7f]).unwrap();
            CoinSetView::new(Arc::clone(view.database()), Vec::new())
        };
        let mut chunks = 0;
        let error = walk_in_parallel(&view, WalkOutputs { snapshot_records: true }, |_| {
            chunks += 1;
            Ok(())
        })
        .unwrap_err();
        match error {
            ChainstateError::CorruptCoin { outpoint, .. } => {
                assert_eq!(outpoint, OutPoint { txid: Txid([0x80; 32]), vout: 3 });
            }
            other => panic!("unexpected error {other}"),
        }
        assert!(chunks < WALK_CHUNKS, "the walk went on past the error");
    }
}

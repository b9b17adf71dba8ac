//! How `-dbcache` is shared between the caches (see
//! [`ibex_chainstate::budget`]), and Core's "Cache configuration:" lines
//! that say so in the log.

use ibex_chainstate::MemoryBudget;

use crate::options::defaults::MEBIBYTE;
use crate::options::NodeOptions;

/// How `-dbcache` is shared for `options` (`-dbcache`, `-dbbatchsize`,
/// `-dbflushtables`):
/// see [`ibex_chainstate::budget`].
pub fn memory_budget(options: &NodeOptions) -> MemoryBudget {
    let budget = memory_budget_for(options.dbcache_mebibytes, options.database_batch_bytes);
    match options.flush_table_count {
        Some(count) => budget.with_flush_table_count(count),
        None => budget,
    }
}

/// How `-dbcache=dbcache_mebibytes` is shared, with flush batches of at most
/// `batch_bytes`.
pub fn memory_budget_for(dbcache_mebibytes: u64, batch_bytes: usize) -> MemoryBudget {
    let bytes = dbcache_mebibytes.saturating_mul(MEBIBYTE);
    MemoryBudget::from_dbcache_bytes(usize::try_from(bytes).unwrap_or(usize::MAX), batch_bytes)
}

fn mebibytes(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / MEBIBYTE as f64)
}

/// Core's "Cache configuration:" lines, with Ibex's other parts: the blocks
/// read ahead, what the chain state database's share holds, and the floor
/// when `-dbcache` is below it.
pub fn cache_lines(options: &NodeOptions) -> Vec<String> {
    let budget = memory_budget(options);
    let database = budget.coins_database;
    let mut lines = vec![
        "Cache configuration:".to_owned(),
        format!("* Using {} MiB for block index database", mebibytes(budget.block_index_database_bytes)),
        format!("* Using {} MiB for chain state database", mebibytes(database.total_bytes())),
        format!(
            "* Using {} MiB for blocks read ahead of validation",
            mebibytes(budget.incoming_blocks_bytes)
        ),
        format!("* Using {} MiB for in-memory UTXO set", mebibytes(budget.coins_bytes)),
        format!(
            "  chain state database: {} write buffers of {} MiB, write batches of {} MiB, a {} MiB block cache, flushes in {} tables sorted in up to {} MiB each; its table readers (bloom filters, indexes) are counted in the UTXO set's share as they grow past {} MiB",
            ibex_chainstate::budget::MEMTABLE_COUNT_MAX,
            mebibytes(database.memtable_bytes),
            mebibytes(database.flush_batch_bytes_max),
            mebibytes(database.block_cache_bytes),
            database.flush_table_count,
            mebibytes(database.flush_order_bytes),
            mebibytes(budget.table_readers_uncounted_bytes),
        ),
    ];
    if budget.parts_bytes() > budget.dbcache_bytes {
        lines.push(format!(
            "[warning] -dbcache={} is below the caches' minimums: they take up to {} MiB",
            options.dbcache_mebibytes,
            mebibytes(budget.parts_bytes())
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_split_from_options() {
        // 450 MiB: Core's 2 MiB for the block index, the rest split
        // between RocksDB, the blocks read ahead and the UTXO set.
        let budget = memory_budget_for(450, 32 << 20);
        assert_eq!(budget.block_index_database_bytes, 2 << 20);
        assert_eq!(mebibytes(budget.coins_database.total_bytes()), "16.0");
        assert_eq!(mebibytes(budget.incoming_blocks_bytes), "56.2");
        assert_eq!(mebibytes(budget.coins_bytes), "375.7");
        assert_eq!(budget.parts_bytes(), 450 << 20);
        // At Core's 4 MiB floor the parts' minimums take more.
        let budget = memory_budget_for(4, 32 << 20);
        assert_eq!(budget.block_index_database_bytes, MEBIBYTE as usize / 2);
        assert_eq!(mebibytes(budget.coins_bytes), "1.0");
        assert_eq!(mebibytes(budget.parts_bytes()), "14.3");
        // A huge -dbcache saturates instead of overflowing.
        assert_eq!(memory_budget_for(u64::MAX, 1).dbcache_bytes, usize::MAX);
    }
}

//! Writing a snapshot: coins given in the database's key order, grouped by
//! transaction as Core groups them (one transaction id, a count, then each
//! coin's output index and serialisation).

use std::io::Write;

use ibex_primitives::encode::write_compact_size;
use ibex_primitives::{OutPoint, Txid};

use super::error::SnapshotError;
use super::metadata::SnapshotMetadata;
use crate::coins::coin::Coin;
use crate::coins::database::key_order::key_order;

/// A snapshot being written to `out` (give it a buffered writer).
///
/// One transaction's coins are held until the next transaction's first
/// coin, because the group's count comes before them: at most one
/// transaction's outputs, bounded by the block weight (~111,000 outputs,
/// ~4 MB).
#[derive(Debug)]
pub struct SnapshotWriter<W: Write> {
    out: W,
    group_txid: Option<Txid>,
    group_records: Vec<u8>,
    group_count: u64,
    previous: Option<OutPoint>,
    coins_written: u64,
}

impl<W: Write> SnapshotWriter<W> {
    /// Writes `metadata` to `out` and returns a writer for the coins.
    pub fn new(
        mut out: W,
        metadata: &SnapshotMetadata,
    ) -> Result<SnapshotWriter<W>, SnapshotError> {
        out.write_all(&metadata.encode())?;
        Ok(SnapshotWriter {
            out,
            group_txid: None,
            group_records: Vec::new(),
            group_count: 0,
            previous: None,
            coins_written: 0,
        })
    }

    /// Adds the coin at `outpoint`, which must follow the last one in the
    /// database's key order.
    pub fn add(&mut self, outpoint: &OutPoint, coin: &Coin) -> Result<(), SnapshotError> {
        if let Some(previous) = self.previous {
            if key_order(&previous, outpoint) != std::cmp::Ordering::Less {
                return Err(SnapshotError::WriterOutOfOrder { outpoint: *outpoint, previous });
            }
        }
        if self.group_txid != Some(outpoint.txid) {
            self.write_group()?;
            self.group_txid = Some(outpoint.txid);
        }
        write_compact_size(&mut self.group_records, u64::from(outpoint.vout));
        coin.encode_into(&mut self.group_records);
        self.group_count += 1;
        self.previous = Some(*outpoint);
        Ok(())
    }

    /// Coins added so far.
    pub fn coins_written(&self) -> u64 {
        self.coins_written
    }

    /// Writes the last group and returns the output and the coins written.
    pub fn finish(mut self) -> Result<(W, u64), SnapshotError> {
        self.write_group()?;
        self.out.flush()?;
        Ok((self.out, self.coins_written))
    }

    fn write_group(&mut self) -> Result<(), SnapshotError> {
        let Some(txid) = self.group_txid else { return Ok(()) };
        self.out.write_all(txid.as_bytes())?;
        let mut count = Vec::with_capacity(9);
        write_compact_size(&mut count, self.group_count);
        self.out.write_all(&count)?;
        self.out.write_all(&self.group_records)?;
        self.coins_written += self.group_count;
        self.group_records.clear();
        self.group_count = 0;
        Ok(())
    }
}

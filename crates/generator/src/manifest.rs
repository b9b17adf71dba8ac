//! `manifest.json`: what was generated, for tests and benchmarks to check
//! against. Deterministic: no paths, no clock readings.

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

use std::collections::BTreeMap;
use std::io;

use crate::named_counts::NamedCounts;
use crate::options::RecordedOptions;
use crate::statistics::{ChainStatistics, ShapeCounts};

/// Version of the generator, recorded so a chain can be regenerated.
pub const GENERATOR_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The most entries of `utxo_count_by_height` besides genesis and the tip:
/// a 4,100-block chain is sampled every 11 blocks (374 entries), enough for
/// a cost chart over 50-block windows, and the manifest stays ~12 KB longer.
pub const UTXO_COUNT_SAMPLES_MAX: u32 = 400;

/// Heights between two entries of `utxo_count_by_height` for a chain of
/// `block_count` blocks: every height up to [`UTXO_COUNT_SAMPLES_MAX`]
/// blocks, then as few as keep the entries within it.
pub fn utxo_count_step_blocks(block_count: u32) -> u32 {
    block_count.div_ceil(UTXO_COUNT_SAMPLES_MAX).max(1)
}

/// An invalid block written after the valid chain.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct InvalidBlockRecord {
    /// The class's name.
    pub class: String,
    /// The reject reason Core gives.
    pub reject_reason: String,
    /// What was broken.
    pub description: String,
    /// Its height (it builds on the valid tip).
    pub height: u32,
    /// Its hash.
    pub hash: String,
}

/// A block of a competing branch.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ForkBlockRecord {
    /// `reorged` (was the tip for a while) or `stale` (never the tip).
    pub branch: String,
    /// Its height.
    pub height: u32,
    /// Its hash.
    pub hash: String,
}

/// The manifest.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Manifest {
    /// The generator's version.
    pub generator_version: String,
    /// Always `regtest`.
    pub network: String,
    /// The seed.
    pub seed: u64,
    /// The options that shaped the chain.
    pub options: RecordedOptions,
    /// Genesis hash.
    pub genesis_hash: String,
    /// Height of the best valid chain's tip (Core's `getblockcount`).
    pub block_count: u32,
    /// Hash of that tip (Core's `getbestblockhash` after `-reindex`).
    pub tip_hash: String,
    /// Transactions in the best chain (genesis excluded).
    pub transactions: u64,
    /// Inputs by the script type they spend.
    pub inputs_by_script_type: NamedCounts,
    /// Outputs by script type.
    pub outputs_by_script_type: NamedCounts,
    /// Serialised bytes of the best chain's blocks (genesis excluded).
    pub total_bytes: u64,
    /// Weight of those blocks.
    pub total_weight: u64,
    /// Bytes of all `blk` files (framing, genesis, forks and invalid blocks included).
    pub file_bytes: u64,
    /// Number of `blk` files.
    pub block_files: u32,
    /// Records in the `blk` files.
    pub records: u64,
    /// Unspent outputs at the tip (Core's `gettxoutsetinfo` `txouts`).
    pub utxo_count: u64,
    /// The UTXO set's size as the chain grows: `[height, unspent outputs]`
    /// after the block at that height, from genesis (`[0, 0]`) every
    /// [`utxo_count_step_blocks`] heights and at the tip (the last entry's
    /// count is `utxo_count`). Written one pair a line.
    pub utxo_count_by_height: Vec<(u32, u64)>,
    /// Transactions with a non-zero nLockTime.
    pub lock_time_transactions: u64,
    /// Inputs under a BIP68 relative lock.
    pub relative_lock_inputs: u64,
    /// Spent coins by age in blocks (`00001-00001` = spent in the next block).
    pub spend_age_blocks: NamedCounts,
    /// Spent coins by age in five ranges: `00000-00001` (the same or the
    /// next block), `00002-00010`, `00011-00100`, `00101-01000`, `01001+`.
    pub spend_age_histogram: NamedCounts,
    /// Transactions, inputs, outputs and spend ages per shape (payment,
    /// batch payout, consolidation); coinbases not included.
    pub shapes: BTreeMap<String, ShapeCounts>,
    /// `xor.dat` as hex.
    pub obfuscation_key: String,
    /// Invalid blocks, in file order.
    pub invalid_blocks: Vec<InvalidBlockRecord>,
    /// Fork blocks, in file order.
    pub fork_blocks: Vec<ForkBlockRecord>,
}

impl Manifest {
    /// The manifest as `manifest.json` holds it: indented, with the pairs
    /// of `utxo_count_by_height` on one line each.
    pub fn to_json_text(&self) -> Result<String, serde_json::Error> {
        let mut bytes = Vec::with_capacity(16 * 1024);
        let mut serializer =
            serde_json::Serializer::with_formatter(&mut bytes, InnerArraysInline::default());
        self.serialize(&mut serializer)?;
        // serde_json writes only UTF-8.
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Fills the counts from `statistics`.
    pub fn set_statistics(&mut self, statistics: &ChainStatistics) {
        self.transactions = statistics.transactions;
        self.inputs_by_script_type = statistics.inputs_named();
        self.outputs_by_script_type = statistics.outputs_named();
        self.total_bytes = statistics.block_bytes;
        self.total_weight = statistics.block_weight;
        self.lock_time_transactions = statistics.lock_time_transactions;
        self.relative_lock_inputs = statistics.relative_lock_inputs;
        self.spend_age_blocks = statistics.spend_ages_named();
        self.spend_age_histogram = statistics.spend_age_ranges.named();
        self.shapes = statistics.shapes_named();
    }
}

/// serde_json's pretty layout, except that an array inside an array is
/// written on one line (`[120, 5417]`): only `utxo_count_by_height` has
/// those, and one line per pair keeps the manifest readable.
#[derive(Debug, Default)]
struct InnerArraysInline {
    pretty: PrettyFormatter<'static>,
    /// The open arrays and objects, `true` for an array.
    open_arrays: Vec<bool>,
    /// How many of the innermost open arrays are written inline.
    inline_depth: usize,
}

impl Formatter for InnerArraysInline {
    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        let in_array = self.open_arrays.last() == Some(&true);
        self.open_arrays.push(true);
        if in_array || self.inline_depth > 0 {
            self.inline_depth += 1;
            return writer.write_all(b"[");
        }
        self.pretty.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open_arrays.pop();
        if self.inline_depth > 0 {
            self.inline_depth -= 1;
            return writer.write_all(b"]");
        }
        self.pretty.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        match (self.inline_depth > 0, first) {
            (true, true) => Ok(()),
            (true, false) => writer.write_all(b", "),
            (false, _) => self.pretty.begin_array_value(writer, first),
        }
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.inline_depth > 0 {
            true => Ok(()),
            false => self.pretty.end_array_value(writer),
        }
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open_arrays.push(false);
        match self.inline_depth > 0 {
            true => writer.write_all(b"{"),
            false => self.pretty.begin_object(writer),
        }
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open_arrays.pop();
        match self.inline_depth > 0 {
            true => writer.write_all(b"}"),
            false => self.pretty.end_object(writer),
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        match (self.inline_depth > 0, first) {
            (true, true) => Ok(()),
            (true, false) => writer.write_all(b", "),
            (false, _) => self.pretty.begin_object_key(writer, first),
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.inline_depth > 0 {
            true => writer.write_all(b": "),
            false => self.pretty.begin_object_value(writer),
        }
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.inline_depth > 0 {
            true => Ok(()),
            false => self.pretty.end_object_value(writer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_every_height_of_a_short_chain_and_at_most_the_cap() {
        assert_eq!(utxo_count_step_blocks(0), 1);
        assert_eq!(utxo_count_step_blocks(200), 1);
        assert_eq!(utxo_count_step_blocks(400), 1);
        assert_eq!(utxo_count_step_blocks(401), 2);
        assert_eq!(utxo_count_step_blocks(2_000), 5);
        assert_eq!(utxo_count_step_blocks(4_100), 11);
        for blocks in [1, 399, 401, 4_100, 900_000] {
            let entries = blocks / utxo_count_step_blocks(blocks) + 2;
            assert!(entries <= UTXO_COUNT_SAMPLES_MAX + 2, "{blocks}: {entries}");
        }
    }

    #[derive(Serialize)]
    struct Sample {
        name: &'static str,
        range: [u32; 2],
        pairs: Vec<(u32, u64)>,
        empty: Vec<(u32, u64)>,
        nested: Vec<Vec<NamedPair>>,
    }

    #[derive(Serialize)]
    struct NamedPair {
        height: u32,
    }

    #[test]
    fn writes_inner_arrays_on_one_line_and_the_rest_indented() {
        let sample = Sample {
            name: "a",
            range: [1, 2],
            pairs: vec![(0, 0), (5, 1_234)],
            empty: Vec::new(),
            nested: vec![vec![NamedPair { height: 3 }, NamedPair { height: 4 }]],
        };
        let mut bytes = Vec::new();
        let mut serializer =
            serde_json::Serializer::with_formatter(&mut bytes, InnerArraysInline::default());
        sample.serialize(&mut serializer).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let expected = "{\n  \"name\": \"a\",\n  \"range\": [\n    1,\n    2\n  ],\n  \"pairs\": [\n    [0, 0],\n    [5, 1234]\n  ],\n  \"empty\": [],\n  \"nested\": [\n    [{\"height\": 3}, {\"height\": 4}]\n  ]\n}";
        assert_eq!(text, expected);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["pairs"][1], serde_json::json!([5, 1234]));
    }
}

//! An independent re-validation of generated block files, for tests and for
//! checking a chain before benchmarking on it: every block is decoded with
//! `ibex_primitives`, checked with `ibex_consensus` (header and contextual
//! rules, context-free checks, finality, BIP68, inputs, sigops, subsidy) for
//! the network's [`Params`], and every input's script is verified with
//! `ibex_script` under the block's flags (Core's `GetBlockScriptFlags`). Each failure is reported
//! with the reject reason Core gives, so the invalid blocks' documented
//! reasons can be checked.
//!
//! It keeps a UTXO map per retained tip (parents of forks) in memory, so it
//! is meant for the `tiny` and `small` profiles, not for `bench`.

mod connect;
mod context;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use ibex_blockstore::files::{block_file_path, read_block_file, read_obfuscation_key};
use ibex_blockstore::Records;
use ibex_consensus::{median_time_past, BlockError};
use ibex_primitives::{BlockHash, BlockView, OutPoint, Params, SpentCoinBuf};

use crate::error::GeneratorError;

/// The state of the chain ending at one block.
#[derive(Debug, Clone, Default)]
pub struct ChainView {
    /// Height of its tip.
    pub height: u32,
    /// Median time past by height.
    pub median_time_past: Vec<i64>,
    /// nTime by height.
    pub times: Vec<u32>,
    /// nBits by height.
    pub bits: Vec<u32>,
    /// Unspent outputs, as the inputs that spend them will see them.
    pub coins: HashMap<OutPoint, SpentCoinBuf>,
}

/// Why a block was refused: Core's reject reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Rejection {
    /// The reject reason, as Core words it.
    pub reason: String,
}

impl Rejection {
    /// A rejection for `reason`.
    pub fn new(reason: impl Into<String>) -> Rejection {
        Rejection { reason: reason.into() }
    }
}

impl From<ibex_consensus::BlockRejection> for Rejection {
    fn from(rejection: ibex_consensus::BlockRejection) -> Rejection {
        Rejection::new(rejection.reject_reason())
    }
}

impl From<BlockError> for Rejection {
    fn from(error: BlockError) -> Rejection {
        Rejection::new(error.reject_reason())
    }
}

/// What connecting a block changes.
#[derive(Debug, Default)]
pub(crate) struct BlockChanges {
    pub(crate) spent: Vec<OutPoint>,
    pub(crate) created: Vec<(OutPoint, SpentCoinBuf)>,
    pub(crate) inputs_verified: u64,
}

/// Replays blocks in file order.
#[derive(Debug)]
pub struct Replay {
    params: Params,
    states: HashMap<BlockHash, ChainView>,
    retain: HashSet<BlockHash>,
    /// The clock headers are checked against (`time-too-new`): the system
    /// time when the replay was made, as Core uses its own clock.
    pub adjusted_time_seconds: i64,
    /// Inputs whose scripts verified.
    pub inputs_verified: u64,
}

impl Replay {
    /// A replay of the chain of `params` (which starts at its genesis block),
    /// keeping the state after each block in `retain` (the parents of forks
    /// and invalid blocks).
    pub fn new(params: Params, retain: HashSet<BlockHash>) -> Replay {
        let adjusted_time_seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(i64::MAX, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX));
        Replay { params, states: HashMap::new(), retain, adjusted_time_seconds, inputs_verified: 0 }
    }

    /// Validates one block and, if valid, connects it on its parent.
    pub fn process(&mut self, bytes: &[u8]) -> Result<BlockHash, Rejection> {
        let block = BlockView::parse(bytes).map_err(|_| Rejection::new("block-decode"))?;
        let hash = block.block_hash();
        let time = block.header().time;
        let bits = block.header().bits;
        if hash == self.params.genesis_hash {
            let genesis = ChainView {
                height: 0,
                median_time_past: vec![i64::from(time)],
                times: vec![time],
                bits: vec![bits],
                coins: HashMap::new(),
            };
            self.states.insert(hash, genesis);
            return Ok(hash);
        }
        let parent = block.header().previous_block_hash;
        let base = self.states.get(&parent).ok_or_else(|| Rejection::new("prev-blk-not-found"))?;
        context::check_header_and_context(&self.params, base, &block, self.adjusted_time_seconds)?;
        let changes = connect::connect(&self.params, base, &block)?;
        let mut next = if self.retain.contains(&parent) {
            base.clone()
        } else {
            self.states.remove(&parent).unwrap_or_default()
        };
        self.inputs_verified += changes.inputs_verified;
        apply(&mut next, changes, time, bits);
        self.states.insert(hash, next);
        Ok(hash)
    }

    /// The state after block `hash`, if kept.
    pub fn state(&self, hash: &BlockHash) -> Option<&ChainView> {
        self.states.get(hash)
    }
}

fn apply(view: &mut ChainView, changes: BlockChanges, time: u32, bits: u32) {
    for outpoint in &changes.spent {
        view.coins.remove(outpoint);
    }
    let spent: HashSet<OutPoint> = changes.spent.into_iter().collect();
    for (outpoint, coin) in changes.created {
        if !spent.contains(&outpoint) {
            view.coins.insert(outpoint, coin);
        }
    }
    view.height += 1;
    view.times.push(time);
    view.bits.push(bits);
    view.median_time_past.push(median_time_past(&view.times));
}

/// Every block record of the blocks directory, de-obfuscated, in file order.
pub fn read_blocks(directory: &Path, magic: [u8; 4]) -> Result<Vec<Vec<u8>>, GeneratorError> {
    let obfuscation = read_obfuscation_key(directory)?;
    let mut blocks = Vec::new();
    for number in 0.. {
        let path = block_file_path(directory, number);
        if !path.exists() {
            break;
        }
        let data = read_block_file(&path, &obfuscation)?;
        blocks.extend(Records::new(&data, magic).map(|record| record.bytes.to_vec()));
    }
    Ok(blocks)
}

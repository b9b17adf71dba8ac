//! `block` messages: a block requested from its sender goes to the
//! scheduler and on to the engine; any other is judged by Core's rules for
//! blocks nobody asked for (its `block` handler, `ProcessNewBlock` with
//! `force_processing` off, `AcceptBlock`):
//!
//! - its parent is unknown: `Misbehaving` (Core: `prev-blk-not-found`);
//! - it is mutated (Core's `IsBlockMutated`, run once the parent is
//!   known): "mutated block" (`super::mutation`);
//! - it fails `CheckBlock` (mutated, proof of work, ...): punished as Core
//!   punishes an invalid block ([`super::block_sources::punishment`]);
//! - it is known already, has less work than the tip, lies more than 288
//!   blocks above the tip or below the minimum chain work: dropped, no
//!   penalty (Core stores none of these);
//! - otherwise it would extend the best chain: offered to the engine like a
//!   downloaded block, counted against the download's byte bound (dropped
//!   when the bound is full: a copy will be requested in turn).
//!
//! Nothing is kept but an offered block, so a flood of unrequested blocks
//! costs parse time, never memory: the network layer holds at most the
//! peer's receive budget (5 MB) of them, the loop one at a time.

use std::time::Instant;

use ibex_chainstate::{BlockRejection, BlockSource, BlockStatus, ChainReader};
use ibex_chainstate::{EngineCommand, PreparedBlock};
use ibex_p2p::sync::{Misbehavior, PeerId};
use ibex_primitives::hash::sha256d;
use ibex_primitives::pow::block_proof;
use ibex_primitives::{BlockBuffers, BlockHash, ChainWork, CompactTarget, Header, HEADER_BYTES};

use super::block_sources::punishment;
use super::SyncLoop;
use crate::p2p_node::engine_view::QUERY_TIMEOUT;

/// How far above the tip an unrequested block may be and still be kept
/// (Core's `MIN_BLOCKS_TO_KEEP`, its `fTooFarAhead` bound).
pub const UNREQUESTED_BLOCKS_AHEAD_MAX: u32 = 288;

/// Where an unrequested block stands against the engine's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Stored already, or known invalid.
    Known {
        /// Its height.
        height: u32,
    },
    /// Its parent is not indexed.
    ParentUnknown,
    /// Core would not store it: less work than the tip, too far ahead, or
    /// below the minimum chain work.
    NotWanted {
        /// Its height.
        height: u32,
    },
    /// Core would store it: it may extend the best chain.
    Wanted {
        /// Its height.
        height: u32,
    },
}

impl SyncLoop {
    /// A `block` message from `peer`.
    pub(super) fn on_block_message(&mut self, peer: PeerId, bytes: Vec<u8>) {
        // Too short for a header: Core cannot deserialise it and drops it.
        let Some(header_bytes) = bytes.get(..HEADER_BYTES) else { return };
        let hash = BlockHash(sha256d(header_bytes));
        if self.download.is_requested_from(peer, &hash) {
            self.on_requested_block(peer, hash, bytes);
            return;
        }
        let mut header = [0u8; HEADER_BYTES];
        header.copy_from_slice(header_bytes);
        let header = Header::decode(&header);
        match standing(&self.reader, header, hash, self.params.minimum_chain_work) {
            // The engine did not answer in time: dropped, as a busy Core
            // would not have read it yet.
            None => {}
            Some(Standing::ParentUnknown) => {
                self.logger.log("[error] ProcessNewBlock: AcceptBlock FAILED (prev-blk-not-found)");
                self.misbehaving(peer, Misbehavior::InvalidBlock { hash });
            }
            Some(standing) => self.judge_unrequested(peer, hash, bytes, standing),
        }
    }

    /// A block requested from `peer`: decoded first. One that does not
    /// decode is dropped as Core drops a message it cannot deserialise,
    /// and its request stays in flight (Core's `mapBlocksInFlight` is not
    /// touched): the peer's stall and download clocks keep running, so a
    /// peer answering every request with a valid header and garbage is
    /// dropped by the stalling or block download timeout like one that
    /// never answers.
    fn on_requested_block(&mut self, peer: PeerId, hash: BlockHash, bytes: Vec<u8>) {
        let size_bytes = bytes.len() as u64;
        let mut buffers = BlockBuffers::default();
        let block = match PreparedBlock::prepare(bytes, None, &self.params, &mut buffers) {
            Ok(block) => block,
            Err(undecodable) => {
                self.log_undecodable(peer, hash, &undecodable.reason);
                return;
            }
        };
        let Some(height) = self.download.take_requested(peer, hash, size_bytes, Instant::now())
        else {
            return;
        };
        self.download_due = true;
        self.offer_prepared(peer, hash, height, block);
    }

    /// `CheckBlock`, then the block is offered when Core would store it.
    fn judge_unrequested(
        &mut self,
        peer: PeerId,
        hash: BlockHash,
        bytes: Vec<u8>,
        standing: Standing,
    ) {
        let size_bytes = bytes.len() as u64;
        let mut buffers = BlockBuffers::default();
        // Undecodable: Core's deserialisation throws and the message is
        // dropped without penalty.
        let Ok(mut block) = PreparedBlock::prepare(bytes, None, &self.params, &mut buffers) else {
            return;
        };
        let height = match standing {
            Standing::Known { height }
            | Standing::NotWanted { height }
            | Standing::Wanted { height } => height,
            Standing::ParentUnknown => return,
        };
        if let Some(mutation) = self.mutation(&mut block, height) {
            self.on_mutated_block(peer, hash, mutation);
            return;
        }
        if let Err(error) = &block.check {
            if let Some(reason) = punishment(hash, &BlockRejection::Block(*error)) {
                self.misbehaving(peer, reason);
            }
            return;
        }
        let Standing::Wanted { height } = standing else { return };
        if self.download.take_unrequested(hash, height, size_bytes) {
            self.block_sources.record(hash, peer);
            let source = BlockSource::Peer(peer.0);
            self.engine.push(EngineCommand::OfferBlock { block: Box::new(block), source });
        }
    }
}

/// One question: where `header` (hashing to `hash`) stands (Core's
/// `AcceptBlock` tests for a block it did not request), on a chain whose
/// minimum chain work is `minimum_chain_work`.
fn standing(
    reader: &ChainReader,
    header: Header,
    hash: BlockHash,
    minimum_chain_work: ChainWork,
) -> Option<Standing> {
    let hashes = [hash, header.previous_block_hash];
    let answer = reader.settled(QUERY_TIMEOUT).blocks_at_tip(&hashes).ok()?;
    if let Some(Some(known)) = answer.blocks.first() {
        if known.status.has(BlockStatus::HAVE_DATA) || known.status.is_failed() {
            return Some(Standing::Known { height: known.height });
        }
    }
    let Some(Some(parent)) = answer.blocks.get(1) else {
        return Some(Standing::ParentUnknown);
    };
    let height = parent.height.saturating_add(1);
    let chain_work = parent.chain_work.wrapping_add(block_proof(CompactTarget(header.bits)));
    let (tip_work, tip_height) =
        answer.tip.map_or((ChainWork::ZERO, 0), |tip| (tip.chain_work, tip.height));
    let too_far_ahead = height > tip_height.saturating_add(UNREQUESTED_BLOCKS_AHEAD_MAX);
    let below_minimum = chain_work < minimum_chain_work;
    if chain_work < tip_work || too_far_ahead || below_minimum {
        Some(Standing::NotWanted { height })
    } else {
        Some(Standing::Wanted { height })
    }
}

//! Low-work headers sync in two passes (Core's `HeadersSyncState`,
//! headerssync.cpp): a peer whose header chain forks from ours below the
//! anti-DoS work threshold must show that its chain has enough work before
//! we store any of it.
//!
//! - **Presync**: the peer's headers are checked (continuity, permitted
//!   difficulty transitions; the caller has checked each header's proof of
//!   work) and summed for work, and only one secret bit is kept per
//!   `commitment_period` headers (at heights congruent to a secret offset).
//!   A chain that ends below the threshold leaves nothing behind.
//! - **Redownload**: once the summed work reaches the threshold, the same
//!   headers are asked for again from the fork point. Each is checked
//!   against the stored bits and held in a buffer; a header is released to
//!   the engine only when `redownload_buffer_size` checked headers sit on
//!   top of it, or once the redownloaded chain itself reaches the threshold
//!   (from then on everything is released). A peer that serves a different
//!   chain the second time fails a bit with probability 1/2 per commitment.
//!
//! # Memory per peer (the bound)
//! - commitments: at most `max_commitments + 1` bits, where
//!   `max_commitments = 6 x (now - MTP(chain start) + 7,200 s) /
//!   commitment_period`: 6 blocks a second is the fastest the median-time
//!   rule allows, so no valid chain is longer. Mainnet from genesis in 2026:
//!   6 x 5.5e8 s / 632 = 5.2 million bits, 650 KB (at most twice that while
//!   the vector grows); an honest 900,000-block chain needs 1,424 bits
//!   (178 bytes).
//! - redownload buffer: `redownload_buffer_size + 1` headers of 48 bytes
//!   (no previous-block hash), allocated once: 15,010 x 48 = 720 KB on
//!   mainnet.
//! - the chain start's locator: at most 101 hashes, 3.2 KB.
//!
//! [`HeadersSyncState::heap_bytes_bound`] computes the bound and
//! [`HeadersSyncState::heap_bytes`] what is held.
//!
//! # Napkin math
//! A pass over mainnet's 900,000 headers is 450 `headers` messages of
//! 162 KB (73 MB). Per header presync does one difficulty-transition check
//! and one 256-bit addition (~50 ns); the proof-of-work check the caller
//! makes hashes the header (~0.3 us with SHA-NI). Redownload hashes each
//! header twice more (continuity, release): both passes cost ~1 s of one
//! core, far below the 146 MB they download.

mod commitments;
mod outcome;
mod params;

pub use commitments::{CommitmentBits, SyncSecret};
pub use outcome::{Finish, HeadersSyncAbort, Outcome, Phase, ProcessingResult};
pub use params::HeadersSyncParams;

use std::collections::VecDeque;

use ibex_primitives::pow::{block_proof, permitted_difficulty_transition};
use ibex_primitives::{BlockHash, ChainWork, CompactTarget, Hash256, Header, Params};

use crate::messages::headers::LOCATOR_HASHES_MAX;

/// Seconds a block's time may be ahead of ours (Core's
/// `MAX_FUTURE_BLOCK_TIME`).
pub const MAX_FUTURE_BLOCK_TIME_SECONDS: i64 = 2 * 60 * 60;
/// Blocks a second a valid chain can hold at most, given the median time
/// past rule (Core's constant 6 in the `m_max_commitments` formula).
const BLOCKS_PER_SECOND_MAX: u64 = 6;

/// The block our chain and the peer's share, where the sync starts (Core's
/// `m_chain_start`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainStart {
    /// Its hash.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Work of the chain up to and including it.
    pub chain_work: ChainWork,
    /// Its `nBits`.
    pub bits: u32,
    /// Its header's time.
    pub time: u32,
    /// Its median time past.
    pub median_time_past: i64,
    /// Its locator (Core's `LocatorEntries(m_chain_start)`); entries past
    /// 100 are dropped.
    pub locator: Vec<BlockHash>,
}

/// A header without its previous-block hash: 48 bytes (Core's
/// `CompressedHeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CompressedHeader {
    version: i32,
    merkle_root: Hash256,
    time: u32,
    bits: u32,
    nonce: u32,
}

const _: () = assert!(std::mem::size_of::<CompressedHeader>() == 48);

impl CompressedHeader {
    fn new(header: &Header) -> CompressedHeader {
        CompressedHeader {
            version: header.version,
            merkle_root: header.merkle_root,
            time: header.time,
            bits: header.bits,
            nonce: header.nonce,
        }
    }

    fn full(&self, previous_block_hash: BlockHash) -> Header {
        Header {
            version: self.version,
            previous_block_hash,
            merkle_root: self.merkle_root,
            time: self.time,
            bits: self.bits,
            nonce: self.nonce,
        }
    }
}

/// The presync phase's running state.
#[derive(Debug, Clone)]
struct PresyncProgress {
    /// Work of the peer's chain so far.
    chain_work: ChainWork,
    /// Hash, bits, time and height of the last header received.
    last_hash: BlockHash,
    last_bits: u32,
    last_time: u32,
    height: u32,
}

/// The redownload phase's running state.
#[derive(Debug, Clone)]
struct RedownloadProgress {
    /// Headers checked and not yet released, oldest first; at most
    /// `redownload_buffer_size + 1`.
    buffer: VecDeque<CompressedHeader>,
    /// Height and hash of the newest header in the buffer (or of the last
    /// released, or of the chain start).
    last_height: u32,
    last_hash: BlockHash,
    /// `nBits` of the header before the next one.
    last_bits: u32,
    /// The previous-block hash of the oldest header in the buffer.
    first_previous_hash: BlockHash,
    /// Work of the redownloaded chain so far.
    chain_work: ChainWork,
    /// The redownloaded chain has reached the threshold: release everything.
    release_all: bool,
}

/// One peer's low-work headers sync (see the module docs).
#[derive(Debug, Clone)]
pub struct HeadersSyncState {
    params: Params,
    sync_params: HeadersSyncParams,
    secret: SyncSecret,
    commitment_offset: u32,
    chain_start: ChainStart,
    minimum_required_work: ChainWork,
    max_commitments: u64,
    commitments: CommitmentBits,
    presync: PresyncProgress,
    redownload: Option<RedownloadProgress>,
    phase: Phase,
}

impl HeadersSyncState {
    /// A sync from `chain_start` towards `minimum_required_work`, salted with
    /// `secret`, at wall-clock time `now_unix_seconds` (which bounds how long
    /// a chain can be).
    pub fn new(
        params: &Params,
        sync_params: HeadersSyncParams,
        mut chain_start: ChainStart,
        minimum_required_work: ChainWork,
        secret: SyncSecret,
        now_unix_seconds: i64,
    ) -> HeadersSyncState {
        let sync_params = HeadersSyncParams {
            commitment_period: sync_params.commitment_period.max(1),
            ..sync_params
        };
        chain_start.locator.truncate(LOCATOR_HASHES_MAX - 1);
        let presync = PresyncProgress {
            chain_work: chain_start.chain_work,
            last_hash: chain_start.hash,
            last_bits: chain_start.bits,
            last_time: chain_start.time,
            height: chain_start.height,
        };
        HeadersSyncState {
            params: params.clone(),
            commitment_offset: secret.commitment_offset(sync_params.commitment_period),
            max_commitments: max_commitments(
                now_unix_seconds,
                chain_start.median_time_past,
                sync_params.commitment_period,
            ),
            sync_params,
            secret,
            chain_start,
            minimum_required_work,
            commitments: CommitmentBits::default(),
            presync,
            redownload: None,
            phase: Phase::Presync,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Height reached in presync (Core's `GetPresyncHeight`).
    pub fn presync_height(&self) -> u32 {
        self.presync.height
    }

    /// Time of the last header received in presync (Core's
    /// `GetPresyncTime`).
    pub fn presync_time(&self) -> u32 {
        self.presync.last_time
    }

    /// Work of the chain received in presync (Core's `GetPresyncWork`).
    pub fn presync_work(&self) -> ChainWork {
        self.presync.chain_work
    }

    /// The work the chain must reach before headers are released (Core's
    /// `m_minimum_required_work`).
    pub fn minimum_required_work(&self) -> ChainWork {
        self.minimum_required_work
    }

    /// Height of the header the sync starts from (the redownload starts
    /// after it).
    pub fn chain_start_height(&self) -> u32 {
        self.chain_start.height
    }

    /// The most commitments this sync will store.
    pub fn max_commitments(&self) -> u64 {
        self.max_commitments
    }

    /// Commitment bits held.
    pub fn commitment_count(&self) -> u64 {
        self.commitments.len()
    }

    /// Heap bytes held now.
    pub fn heap_bytes(&self) -> usize {
        let buffer = self.redownload.as_ref().map_or(0, |redownload| {
            redownload.buffer.capacity() * std::mem::size_of::<CompressedHeader>()
        });
        self.commitments.heap_bytes()
            + buffer
            + self.chain_start.locator.capacity() * std::mem::size_of::<BlockHash>()
    }

    /// The most heap bytes this sync can hold (see the module docs): twice
    /// the commitment words (vector growth), the redownload buffer, the
    /// locator.
    pub fn heap_bytes_bound(&self) -> usize {
        let words = self.max_commitments.saturating_add(1).div_ceil(64).max(4);
        let commitments = usize::try_from(words.saturating_mul(2 * 8)).unwrap_or(usize::MAX);
        let buffer =
            (self.sync_params.redownload_buffer_size + 1) * std::mem::size_of::<CompressedHeader>();
        let locator = LOCATOR_HASHES_MAX * std::mem::size_of::<BlockHash>();
        commitments.saturating_add(buffer).saturating_add(locator)
    }

    /// The locator for the next `getheaders` (Core's
    /// `NextHeadersRequestLocator`): the last header received in this phase,
    /// then the chain start's locator. `None` once the sync is over.
    pub fn next_request_locator(&self) -> Option<Vec<BlockHash>> {
        let last = match (self.phase, &self.redownload) {
            (Phase::Presync, _) => self.presync.last_hash,
            (Phase::Redownload, Some(redownload)) => redownload.last_hash,
            _ => return None,
        };
        let mut locator = Vec::with_capacity(self.chain_start.locator.len() + 1);
        locator.push(last);
        locator.extend_from_slice(&self.chain_start.locator);
        Some(locator)
    }

    /// Processes one `headers` message (Core's `ProcessNextHeaders`). The
    /// caller has checked that the headers are continuous and that each
    /// meets its own target; `full_message` says the message held 2,000
    /// headers (the peer may have more).
    pub fn process_next_headers(
        &mut self,
        headers: &[Header],
        full_message: bool,
    ) -> ProcessingResult {
        let result = match self.phase {
            Phase::Final => ProcessingResult::aborted(HeadersSyncAbort::AlreadyFinished),
            _ if headers.is_empty() => {
                ProcessingResult { headers_to_offer: Vec::new(), outcome: Outcome::RequestMore }
            }
            Phase::Presync => self.process_presync(headers, full_message),
            Phase::Redownload => self.process_redownload(headers, full_message),
        };
        if result.outcome != Outcome::RequestMore {
            self.finalize();
        }
        result
    }

    fn process_presync(&mut self, headers: &[Header], full_message: bool) -> ProcessingResult {
        if let Err(abort) = self.store_commitments(headers) {
            return ProcessingResult::aborted(abort);
        }
        let outcome = if full_message || self.phase == Phase::Redownload {
            Outcome::RequestMore
        } else {
            Outcome::Finished(Finish::LowWorkChainEnded { height: self.presync.height })
        };
        ProcessingResult { headers_to_offer: Vec::new(), outcome }
    }

    /// Core's `ValidateAndStoreHeadersCommitments`.
    fn store_commitments(&mut self, headers: &[Header]) -> Result<(), HeadersSyncAbort> {
        let first_height =
            self.presync.height.checked_add(1).ok_or(HeadersSyncAbort::HeightOverflow)?;
        if headers.first().map(|header| header.previous_block_hash) != Some(self.presync.last_hash)
        {
            return Err(HeadersSyncAbort::NonContinuous {
                height: first_height,
                phase: Phase::Presync,
            });
        }
        for header in headers {
            self.presync_one(header)?;
        }
        if let Some(last) = headers.last() {
            self.presync.last_hash = last.block_hash();
        }
        if self.presync.chain_work >= self.minimum_required_work {
            self.start_redownload();
        }
        Ok(())
    }

    /// Core's `ValidateAndProcessSingleHeader`. Updates everything but the
    /// last hash (set once per message: within one the caller checked
    /// continuity).
    fn presync_one(&mut self, header: &Header) -> Result<(), HeadersSyncAbort> {
        let height = self.presync.height.checked_add(1).ok_or(HeadersSyncAbort::HeightOverflow)?;
        if !permitted_difficulty_transition(
            &self.params,
            height,
            CompactTarget(self.presync.last_bits),
            CompactTarget(header.bits),
        ) {
            return Err(HeadersSyncAbort::InvalidDifficultyTransition {
                height,
                phase: Phase::Presync,
            });
        }
        if height % self.sync_params.commitment_period == self.commitment_offset {
            self.commitments.push(self.secret.commitment_bit(&header.block_hash()));
            if self.commitments.len() > self.max_commitments {
                return Err(HeadersSyncAbort::ExceededMaxCommitments { height });
            }
        }
        self.presync.chain_work =
            self.presync.chain_work.wrapping_add(block_proof(CompactTarget(header.bits)));
        self.presync.last_bits = header.bits;
        self.presync.last_time = header.time;
        self.presync.height = height;
        Ok(())
    }

    fn start_redownload(&mut self) {
        let capacity = self.sync_params.redownload_buffer_size + 1;
        self.redownload = Some(RedownloadProgress {
            buffer: VecDeque::with_capacity(capacity),
            last_height: self.chain_start.height,
            last_hash: self.chain_start.hash,
            last_bits: self.chain_start.bits,
            first_previous_hash: self.chain_start.hash,
            chain_work: self.chain_start.chain_work,
            release_all: false,
        });
        self.phase = Phase::Redownload;
    }

    fn process_redownload(&mut self, headers: &[Header], full_message: bool) -> ProcessingResult {
        let Some(mut redownload) = self.redownload.take() else {
            return ProcessingResult::aborted(HeadersSyncAbort::AlreadyFinished);
        };
        let mut released = Vec::new();
        for header in headers {
            if let Err(abort) = self.redownload_one(&mut redownload, header) {
                return ProcessingResult::aborted(abort);
            }
            release_ready(&mut redownload, self.sync_params.redownload_buffer_size, &mut released);
        }
        let outcome = if redownload.buffer.is_empty() && redownload.release_all {
            Outcome::Finished(Finish::AllReleased { height: redownload.last_height })
        } else if full_message {
            Outcome::RequestMore
        } else {
            Outcome::Finished(Finish::RedownloadIncomplete { height: redownload.last_height })
        };
        self.redownload = Some(redownload);
        ProcessingResult { headers_to_offer: released, outcome }
    }

    /// Core's `ValidateAndStoreRedownloadedHeader`.
    fn redownload_one(
        &mut self,
        redownload: &mut RedownloadProgress,
        header: &Header,
    ) -> Result<(), HeadersSyncAbort> {
        let height =
            redownload.last_height.checked_add(1).ok_or(HeadersSyncAbort::HeightOverflow)?;
        if header.previous_block_hash != redownload.last_hash {
            return Err(HeadersSyncAbort::NonContinuous { height, phase: Phase::Redownload });
        }
        if !permitted_difficulty_transition(
            &self.params,
            height,
            CompactTarget(redownload.last_bits),
            CompactTarget(header.bits),
        ) {
            return Err(HeadersSyncAbort::InvalidDifficultyTransition {
                height,
                phase: Phase::Redownload,
            });
        }
        redownload.chain_work =
            redownload.chain_work.wrapping_add(block_proof(CompactTarget(header.bits)));
        if redownload.chain_work >= self.minimum_required_work {
            redownload.release_all = true;
        }
        let hash = header.block_hash();
        // Past the target work, bits are no longer checked: the peer's chain
        // may have grown since presync, and we would run out of them.
        if !redownload.release_all
            && height % self.sync_params.commitment_period == self.commitment_offset
        {
            let expected =
                self.commitments.pop().ok_or(HeadersSyncAbort::CommitmentOverrun { height })?;
            if self.secret.commitment_bit(&hash) != expected {
                return Err(HeadersSyncAbort::CommitmentMismatch { height });
            }
        }
        redownload.buffer.push_back(CompressedHeader::new(header));
        redownload.last_height = height;
        redownload.last_hash = hash;
        redownload.last_bits = header.bits;
        Ok(())
    }

    /// Frees everything (Core's `Finalize`).
    fn finalize(&mut self) {
        self.commitments.clear();
        self.redownload = None;
        self.chain_start.locator = Vec::new();
        self.phase = Phase::Final;
    }
}

/// Moves headers out of the buffer while more than `buffer_size` wait, or
/// all of them once the chain has enough work (Core's
/// `PopHeadersReadyForAcceptance`, run after each header rather than after
/// each message: the same headers come out in the same order, and the
/// buffer never holds more than `buffer_size + 1`).
fn release_ready(
    redownload: &mut RedownloadProgress,
    buffer_size: usize,
    released: &mut Vec<Header>,
) {
    while redownload.buffer.len() > buffer_size
        || (redownload.release_all && !redownload.buffer.is_empty())
    {
        let Some(compressed) = redownload.buffer.pop_front() else { break };
        let header = compressed.full(redownload.first_previous_hash);
        redownload.first_previous_hash = header.block_hash();
        released.push(header);
    }
}

/// Core's `m_max_commitments`: six blocks a second from the chain start's
/// median time past to two hours from now, one commitment per period. A
/// clock behind the chain start gives the two hours alone.
fn max_commitments(now_unix_seconds: i64, median_time_past: i64, commitment_period: u32) -> u64 {
    let seconds = now_unix_seconds
        .saturating_sub(median_time_past)
        .saturating_add(MAX_FUTURE_BLOCK_TIME_SECONDS)
        .max(0) as u64;
    BLOCKS_PER_SECOND_MAX.saturating_mul(seconds) / u64::from(commitment_period.max(1))
}

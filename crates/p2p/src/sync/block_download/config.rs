//! The download scheduler's limits: Core's constants and Ibex's byte bound.

use std::time::Duration;

use ibex_primitives::Params;

/// How far above the engine's tip blocks are requested (Core's
/// `BLOCK_DOWNLOAD_WINDOW`).
pub const BLOCK_DOWNLOAD_WINDOW_BLOCKS: u32 = 1024;
/// Blocks requested from one peer at once (Core's
/// `MAX_BLOCKS_IN_TRANSIT_PER_PEER`).
pub const BLOCKS_IN_FLIGHT_PER_PEER_MAX: usize = 16;
/// The stalling timeout to start with and to decay back to (Core's
/// `BLOCK_STALLING_TIMEOUT_DEFAULT`).
pub const BLOCK_STALLING_TIMEOUT_DEFAULT: Duration = Duration::from_secs(2);
/// The stalling timeout never grows past this (Core's
/// `BLOCK_STALLING_TIMEOUT_MAX`).
pub const BLOCK_STALLING_TIMEOUT_MAX: Duration = Duration::from_secs(64);
/// The largest `block` message payload, the size assumed for a block not
/// yet received: a block's serialisation cannot pass its 4,000,000 weight
/// units, and the framing refuses longer payloads.
pub const BLOCK_BYTES_MAX: u64 = 4_000_000;
/// Peers the scheduler tracks at once (Core's default is 125 connections).
pub const DOWNLOAD_PEERS_MAX: usize = 1024;
/// Blocks in flight or received and not yet connected, at once: four
/// windows. In steady state both lie inside the window, so this only binds
/// after the tip moves down in a reorganisation.
pub const TRACKED_BLOCKS_MAX: usize = 4 * BLOCK_DOWNLOAD_WINDOW_BLOCKS as usize;

/// Blocks a peer signalling `NODE_NETWORK_LIMITED` alone serves at least,
/// counting down from its tip (BIP159; Core's
/// `NODE_NETWORK_LIMITED_MIN_BLOCKS`).
pub(super) const LIMITED_PEER_SERVED_BLOCKS_MIN: u32 = 288;
/// Of those, the deepest blocks never asked of it (Core's "two blocks
/// buffer for possible races"): its tip may move on between the header we
/// know and our request reaching it.
pub(super) const LIMITED_PEER_RACE_MARGIN_BLOCKS: u32 = 2;
/// The deepest a block may lie below a limited peer's best height (the
/// peer's height minus the block's) and still be asked of it: 285, so a
/// block 286 or more below is skipped (Core's `>= 288 - 2` in
/// `FindNextBlocks`).
pub(super) const LIMITED_PEER_DEPTH_BLOCKS_MAX: u32 =
    LIMITED_PEER_SERVED_BLOCKS_MIN - LIMITED_PEER_RACE_MARGIN_BLOCKS - 1;

const _: () = assert!(BLOCKS_IN_FLIGHT_PER_PEER_MAX <= crate::INVENTORY_ENTRIES_MAX);
const _: () = assert!(BLOCK_BYTES_MAX <= crate::MESSAGE_PAYLOAD_BYTES_MAX as u64);
const _: () =
    assert!(BLOCK_STALLING_TIMEOUT_DEFAULT.as_secs() < BLOCK_STALLING_TIMEOUT_MAX.as_secs());

/// Smallest byte bound [`download_bytes_for_share`] suggests: 8 blocks
/// of the largest size.
pub const DOWNLOAD_BYTES_FLOOR: u64 = 32 << 20;
/// Largest byte bound [`download_bytes_for_share`] suggests.
pub const DOWNLOAD_BYTES_CEILING: u64 = 512 << 20;

/// The scheduler's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadConfig {
    /// Blocks above the tip that may be requested.
    pub window_blocks: u32,
    /// Blocks in flight per peer.
    pub in_flight_per_peer_max: usize,
    /// Bytes of blocks in flight (counted at `block_bytes_estimate`) plus
    /// blocks received and not yet connected (counted at their size).
    pub download_bytes_max: u64,
    /// Bytes assumed for a block before it arrives. At [`BLOCK_BYTES_MAX`]
    /// (the default) `download_bytes_max` is a hard bound; a smaller value
    /// allows more blocks in flight while blocks are small, and lets the
    /// bound be passed by the difference for each block larger than it.
    pub block_bytes_estimate: u64,
    /// The target block interval (Core: `nPowTargetSpacing`, 600 s), the
    /// unit of the block download timeout.
    pub block_interval: Duration,
}

impl DownloadConfig {
    /// Core's limits for `params`' chain, with `download_bytes_max` bytes of
    /// downloaded blocks at most.
    pub fn new(params: &Params, download_bytes_max: u64) -> DownloadConfig {
        let spacing_seconds = u64::try_from(params.pow_target_spacing_seconds).unwrap_or(600);
        DownloadConfig {
            window_blocks: BLOCK_DOWNLOAD_WINDOW_BLOCKS,
            in_flight_per_peer_max: BLOCKS_IN_FLIGHT_PER_PEER_MAX,
            download_bytes_max,
            block_bytes_estimate: BLOCK_BYTES_MAX,
            block_interval: Duration::from_secs(spacing_seconds),
        }
    }

    /// How long the first block in flight from a peer may take when
    /// `peers_downloading` peers have blocks in flight (Core: a block
    /// interval times 1 + 0.5 per other peer, `BLOCK_DOWNLOAD_TIMEOUT_BASE`
    /// and `BLOCK_DOWNLOAD_TIMEOUT_PER_PEER`: 10 minutes alone, 13.3 hours
    /// with 125 peers). Other peers share our bandwidth, so they lengthen it.
    pub fn block_download_timeout(&self, peers_downloading: usize) -> Duration {
        let others = peers_downloading.saturating_sub(1) as u32;
        let half_intervals = others.saturating_add(2);
        self.block_interval.saturating_mul(half_intervals) / 2
    }

    /// The bytes the background chainstate's blocks (all but its next) may
    /// hold while the active chainstate waits for blocks: half the bound.
    /// The active chain, which follows the network's tip, keeps the other
    /// half; with nothing to fetch for it, the background takes the whole
    /// bound.
    pub fn background_bytes_max(&self) -> u64 {
        self.download_bytes_max / 2
    }
}

/// The byte bound for blocks downloaded ahead of validation, from the
/// node's share of `-dbcache` for them in serialised bytes (a sixteenth
/// of `-dbcache`: an eighth once prepared, `ibex_chainstate::budget`), at
/// least [`DOWNLOAD_BYTES_FLOOR`] (32 MiB: 8 blocks of the largest size in
/// flight, the download's fixed minimum, above the share below
/// `-dbcache=512`) and at most [`DOWNLOAD_BYTES_CEILING`] (512 MiB). At the
/// default `-dbcache=450` that is the floor: 8 blocks reserved at 4 MB
/// each, or about 21 of today's 1.5 MB blocks once received, a queue of
/// seconds of validation for the engine. The window is counted inside
/// `-dbcache`: outside the coins' budget, even an eighth of `-dbcache` (56
/// MiB at 450) would add to the peak (a quarter, 112 MiB, peaked an IBD
/// over P2P at 735 MiB, docs/benchmarks.md).
pub fn download_bytes_for_share(incoming_serialised_bytes: u64) -> u64 {
    incoming_serialised_bytes.clamp(DOWNLOAD_BYTES_FLOOR, DOWNLOAD_BYTES_CEILING)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_bound_is_the_share_within_its_limits() {
        assert_eq!(download_bytes_for_share(100 << 20), 100 << 20);
        assert_eq!(download_bytes_for_share(28 << 20), DOWNLOAD_BYTES_FLOOR);
        assert_eq!(download_bytes_for_share(16 << 30), DOWNLOAD_BYTES_CEILING);
        assert!(DOWNLOAD_BYTES_FLOOR >= BLOCKS_IN_FLIGHT_PER_PEER_MAX as u64 / 2 * BLOCK_BYTES_MAX);
    }
}

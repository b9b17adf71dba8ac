//! The adaptive stalling timeout (Core PR #25880): doubled each time a
//! peer is disconnected for stalling, so that a slow link of our own does
//! not cost us peer after peer, and decayed by 15 % per connected block.

use std::time::Duration;

use super::config::{BLOCK_STALLING_TIMEOUT_DEFAULT, BLOCK_STALLING_TIMEOUT_MAX};

/// Connected blocks past which decaying cannot change the timeout (64 s
/// reaches 2 s in 16 steps).
const DECAY_STEPS_MAX: u32 = 64;

/// The current stalling timeout, between 2 s and 64 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallingTimeout {
    current: Duration,
}

impl Default for StallingTimeout {
    fn default() -> StallingTimeout {
        StallingTimeout { current: BLOCK_STALLING_TIMEOUT_DEFAULT }
    }
}

impl StallingTimeout {
    /// The timeout now.
    pub fn current(&self) -> Duration {
        self.current
    }

    /// A peer was disconnected for stalling: double, at most 64 s.
    pub fn on_stall_disconnect(&mut self) {
        self.current = self.current.saturating_mul(2).min(BLOCK_STALLING_TIMEOUT_MAX);
    }

    /// `blocks` were connected: for each, 85 % of the timeout truncated to
    /// whole seconds (Core's `duration_cast<seconds>(timeout * 0.85)` in
    /// `BlockConnected`), at least 2 s.
    pub fn on_blocks_connected(&mut self, blocks: u32) {
        for _ in 0..blocks.min(DECAY_STEPS_MAX) {
            if self.current <= BLOCK_STALLING_TIMEOUT_DEFAULT {
                self.current = BLOCK_STALLING_TIMEOUT_DEFAULT;
                return;
            }
            let decayed_seconds = (self.current.as_secs() as f64 * 0.85) as u64;
            self.current = Duration::from_secs(decayed_seconds).max(BLOCK_STALLING_TIMEOUT_DEFAULT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_64_and_decays_as_core() {
        let mut timeout = StallingTimeout::default();
        let mut doubled = Vec::new();
        for _ in 0..7 {
            timeout.on_stall_disconnect();
            doubled.push(timeout.current().as_secs());
        }
        assert_eq!(doubled, [4, 8, 16, 32, 64, 64, 64]);
        let mut decayed = Vec::new();
        while timeout.current() > BLOCK_STALLING_TIMEOUT_DEFAULT {
            timeout.on_blocks_connected(1);
            decayed.push(timeout.current().as_secs());
        }
        assert_eq!(decayed, [54, 45, 38, 32, 27, 22, 18, 15, 12, 10, 8, 6, 5, 4, 3, 2]);
        timeout.on_blocks_connected(1_000);
        assert_eq!(timeout.current(), BLOCK_STALLING_TIMEOUT_DEFAULT);
    }
}

//! Headers the engine refused. The headers sync checks only what Core
//! checks before storing (proof of work, continuity, work); the engine
//! checks each header's context (`nBits`, time, version) and skips one that
//! fails, with its descendants. Core's `ProcessHeadersMessage` punishes the
//! sender ("invalid header received"), unless the header was only too far
//! in the future (`BLOCK_TIME_FUTURE`) or already known invalid
//! (`BLOCK_CACHED_INVALID`, punished only on automatic outbound
//! connections). The engine's notice says how many headers it added; the
//! last header of the offer missing from the index says one was refused.

use std::collections::VecDeque;

use ibex_chainstate::ChainReader;
use ibex_p2p::sync::{Misbehavior, PeerId};
use ibex_primitives::{BlockHash, Header};

use super::SyncLoop;
use crate::p2p_node::engine_view::{unix_seconds, QUERY_TIMEOUT};

/// Header offers awaiting the engine's notice, at most (the loop waits for
/// each offer's notice before it reads the next `headers` message, so a
/// few at most wait).
pub const HEADER_OFFERS_CHECKED_MAX: usize = 64;
/// How far ahead of our clock a header's time may be (Core's
/// `MAX_FUTURE_BLOCK_TIME`, two hours).
const FUTURE_BLOCK_TIME_SECONDS: i64 = 2 * 60 * 60;

/// One offer: who sent it, its last header, its latest header time.
#[derive(Debug, Clone, Copy)]
struct Offer {
    peer: PeerId,
    last: BlockHash,
    time_max: u32,
}

/// The offers not answered yet, oldest first.
#[derive(Debug, Default)]
pub struct HeaderOffers {
    pending: VecDeque<Offer>,
}

impl HeaderOffers {
    /// `peer`'s `headers` go to the engine.
    pub fn record(&mut self, peer: PeerId, headers: &[Header]) {
        let Some(last) = headers.last() else { return };
        if self.pending.len() >= HEADER_OFFERS_CHECKED_MAX {
            return;
        }
        let time_max = headers.iter().map(|header| header.time).max().unwrap_or(0);
        self.pending.push_back(Offer { peer, last: last.block_hash(), time_max });
    }

    /// The offer whose last header is `last` (older ones left unanswered
    /// are dropped with it).
    fn take(&mut self, last: BlockHash) -> Option<Offer> {
        while let Some(offer) = self.pending.pop_front() {
            if offer.last == last {
                return Some(offer);
            }
        }
        None
    }
}

impl SyncLoop {
    /// The engine answered the offer ending with `last`: its sender is
    /// punished if the engine refused a header of it.
    pub(super) fn check_header_offer(&mut self, last: BlockHash) {
        let Some(offer) = self.header_offers.take(last) else { return };
        let in_the_future = i64::from(offer.time_max) > unix_seconds() + FUTURE_BLOCK_TIME_SECONDS;
        if in_the_future || indexed(&self.reader, last) != Some(false) {
            return;
        }
        self.misbehaving(offer.peer, Misbehavior::InvalidHeader { hash: last });
    }
}

/// Whether `hash` is in the index; `None` when the engine did not answer.
fn indexed(reader: &ChainReader, hash: BlockHash) -> Option<bool> {
    let block = reader.settled(QUERY_TIMEOUT).block(&hash).ok()?;
    Some(block.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(nonce: u32, time: u32) -> Header {
        Header {
            version: 4,
            previous_block_hash: BlockHash::ZERO,
            merkle_root: ibex_primitives::Hash256([0; 32]),
            time,
            bits: 0x207f_ffff,
            nonce,
        }
    }

    #[test]
    fn offers_are_matched_by_their_last_header_and_bounded() {
        let mut offers = HeaderOffers::default();
        offers.record(PeerId(1), &[header(1, 10), header(2, 30), header(3, 20)]);
        offers.record(PeerId(2), &[header(4, 5)]);
        offers.record(PeerId(3), &[]);
        let second = header(4, 5).block_hash();
        let offer = offers.take(second).unwrap();
        assert_eq!((offer.peer, offer.time_max), (PeerId(2), 5));
        assert!(offers.take(header(3, 20).block_hash()).is_none(), "dropped as older");
        for nonce in 0..(HEADER_OFFERS_CHECKED_MAX as u32 + 3) {
            offers.record(PeerId(4), &[header(nonce, 1)]);
        }
        assert_eq!(offers.pending.len(), HEADER_OFFERS_CHECKED_MAX);
    }
}

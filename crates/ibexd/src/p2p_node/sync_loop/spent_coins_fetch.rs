//! Fetching the coins each block spent (BIP 455 `getbspent`) for a fully
//! validating SwiftSync plan (`-swiftsync` with `-assumevalid=0`): the
//! engine's pass accounts a block once it holds both the block (from the
//! usual download) and its coins, so the coins are asked for along the
//! same window, from the peers that announced `feature blockspentcoinsv1`.
//!
//! - What is asked: once the engine's pass runs (it publishes its
//!   terminal block and the heights it had accounted when it started,
//!   from a checkpoint: those are never asked), every block of the best
//!   header chain from the lowest height whose coins the pass has not
//!   taken to the plan's terminal height, at most
//!   [`SPENT_COINS_AHEAD_OF_STORED_BLOCKS`] past the height the plan's
//!   blocks are stored to (the coins of a block not stored yet wait in
//!   memory: a peer may send up to a message's 4 MB for each, so 64
//!   heights hold at most 256 MB, an honest peer's a few MB), and at most
//!   [`SPENT_COINS_WINDOW_BLOCKS`] past the lowest height still wanted,
//!   with BIP 455's cutoff ten blocks back (`ibex_chainstate`'s
//!   `spent_coins_cutoff`: the coins created in the last ten blocks or in
//!   the block itself are not sent; the pass takes them from those
//!   blocks), [`SPENT_COINS_REQUESTS_PER_PEER_MAX`]
//!   requests at a time per peer, the least busy peer first.
//! - An answer is taken only from the peer asked, for the block asked; its
//!   coins' input indices must increase (the draft: a client receiving
//!   un-requested or missing coins must disconnect; which inputs may be
//!   left out only the block tells, so the pass checks that, and refuses
//!   the coins, as below). The
//!   coins go to the engine, which says whether the pass took them; one it
//!   did not take (no pass yet) is asked again [`RETRY_AFTER`] later.
//! - A request unanswered for [`SPENT_COINS_REQUEST_TIMEOUT`] disconnects
//!   the peer (as Core's block download timeout does) and is asked again
//!   of another; a peer's requests go when it does.
//! - Coins the block's checks refuse (the engine publishes each refusal,
//!   `ibex_chainstate::SpentCoinsRefusal`) are the sender's fault: a lie,
//!   or coins for an invalid block, which an honest peer never serves. The
//!   sender is punished as for an invalid block (Core's `Misbehaving`:
//!   disconnected and discouraged unless spared), never asked for that
//!   block again, and the block's coins are asked of another peer. The
//!   engine ends the attempt once a block was refused
//!   `SPENT_COINS_REFUSALS_PER_BLOCK_MAX` times.
//! - With every block of the plan stored and no serving peer (or none
//!   left that was not refused the first block still wanted) for
//!   [`NO_SERVING_PEER_WAIT`], the engine is told no more coins come: the
//!   plan is given up and the blocks are connected the usual way.
//!
//! The draft gives the asker no way to check an answer against the block
//! before the block is there: the block's checks refuse a wrong count or a
//! lie a rule or script catches, once both are in; a lie no rule catches
//! makes the attempt fail at its end (the aggregate), and the blocks are
//! then connected the usual way, at the cost of the time spent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibex_chainstate::{
    spent_coins_cutoff, BlockSource, ClaimedSpentCoins, EngineCommand, SpentCoinsRefusal,
    SwiftSyncPassStart,
};
use ibex_p2p::messages::spent_coins::{GetSpentCoins, SpentCoins};
use ibex_p2p::net::DisconnectReason as NetReason;
use ibex_p2p::sync::{DisconnectReason as SyncReason, Misbehavior, PeerId};
use ibex_p2p::NetworkMessage;
use ibex_primitives::BlockHash;

use super::SyncLoop;
use crate::p2p_node::engine_view::QUERY_TIMEOUT;

/// Heights past the lowest one still wanted whose coins may be asked for
/// (the block download window's size).
pub const SPENT_COINS_WINDOW_BLOCKS: u32 = 1024;
/// Heights past the stored ones whose coins may be asked for: those coins
/// wait in memory for their blocks, at most a 4 MB message each from a
/// lying peer. Blocks arrive in height order, about, so the coins of the
/// next 64 are asked long before the pass can use them.
pub const SPENT_COINS_AHEAD_OF_STORED_BLOCKS: u32 = 64;

/// Requests one peer answers at a time, at most.
pub const SPENT_COINS_REQUESTS_PER_PEER_MAX: usize = 16;
/// How long a request may go unanswered.
pub const SPENT_COINS_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long coins the pass did not take wait before they are asked again.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// How long every block may be stored with no serving peer before the plan
/// is given up.
pub const NO_SERVING_PEER_WAIT: Duration = Duration::from_secs(60);

/// One request out.
#[derive(Debug, Clone, Copy)]
struct Request {
    peer: PeerId,
    height: u32,
    sent_at: Instant,
}

/// The fetch's state.
#[derive(Debug)]
pub struct SpentCoinsFetch {
    terminal_height: u32,
    /// The terminal block the heights below are counted for: another one
    /// (the header chain moved) starts the count again.
    terminal: Option<BlockHash>,
    /// Whether the pass took the coins of height `h`, at `h - 1`.
    taken: Vec<bool>,
    /// Requests out, by block.
    pending: HashMap<BlockHash, Request>,
    /// Coins handed to the engine and not answered yet, by block.
    offered: HashMap<BlockHash, u32>,
    /// Blocks whose coins the pass did not take, and when to ask again:
    /// by block, so that after a new terminal block an answer for the old
    /// chain's block does not hold back the new one's at its height. Only
    /// times still ahead are kept (one passed means "ask"), so the map
    /// holds at most the last [`RETRY_AFTER`]'s answers.
    retry_at: HashMap<BlockHash, Instant>,
    /// Since when every block was stored with no serving peer to ask.
    unserved_since: Option<Instant>,
    /// The engine was told no more coins come.
    wait_ended: bool,
    /// Refusals of the engine's list acted on (the list only grows while
    /// a plan lasts).
    refusals_seen: usize,
    /// Peers whose coins for a block were refused: never asked for it
    /// again (at most `SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX` entries in all,
    /// as the engine's list).
    refused_by: HashMap<BlockHash, Vec<PeerId>>,
    /// The pass whose accounted heights were marked taken.
    adopted: Option<Arc<SwiftSyncPassStart>>,
}

impl SpentCoinsFetch {
    /// A fetch for a plan to `terminal_height`.
    pub fn new(terminal_height: u32) -> SpentCoinsFetch {
        SpentCoinsFetch {
            terminal_height,
            terminal: None,
            taken: vec![false; terminal_height as usize],
            pending: HashMap::new(),
            offered: HashMap::new(),
            retry_at: HashMap::new(),
            unserved_since: None,
            wait_ended: false,
            refusals_seen: 0,
            refused_by: HashMap::new(),
            adopted: None,
        }
    }

    /// Marks the heights `pass` had accounted when it started as taken,
    /// once a pass (a new pass start is a new `Arc`). Whether `pass` is
    /// for the fetch's terminal block (else nothing is asked until the
    /// two agree).
    fn adopt_pass(&mut self, pass: &Arc<SwiftSyncPassStart>) -> bool {
        if self.terminal != Some(pass.terminal) {
            return false;
        }
        if self.adopted.as_ref().is_some_and(|adopted| Arc::ptr_eq(adopted, pass)) {
            return true;
        }
        for (taken, accounted) in self.taken.iter_mut().zip(pass.accounted.iter()) {
            *taken |= *accounted;
        }
        self.adopted = Some(pass.clone());
        true
    }

    /// Counts again for a new terminal block (the header chain moved):
    /// what was taken was for another chain. Requests out stay known, so
    /// that their answers, already on their way, are not taken for
    /// unrequested ones (which would disconnect honest peers); the engine
    /// drops coins of blocks off its chain.
    /// What peers refused stays known too: it is by block.
    fn restart_for(&mut self, terminal: Option<BlockHash>) {
        let pending = std::mem::take(&mut self.pending);
        let refused_by = std::mem::take(&mut self.refused_by);
        let refusals_seen = self.refusals_seen;
        *self = SpentCoinsFetch::new(self.terminal_height);
        self.pending = pending;
        self.refused_by = refused_by;
        self.refusals_seen = refusals_seen;
        self.terminal = terminal;
    }

    /// Acts on the refusals of `published` not seen yet: each block's
    /// coins are wanted again, from another peer. The peers to punish.
    fn absorb_refusals(&mut self, published: &[SpentCoinsRefusal]) -> Vec<(PeerId, BlockHash)> {
        let fresh = published.get(self.refusals_seen..).unwrap_or_default();
        self.refusals_seen = published.len();
        let mut punish = Vec::new();
        for refusal in fresh {
            if let Some(slot) =
                refusal.height.checked_sub(1).and_then(|at| self.taken.get_mut(at as usize))
            {
                *slot = false;
            }
            self.retry_at.remove(&refusal.hash);
            if let BlockSource::Peer(id) = refusal.source {
                let refused = self.refused_by.entry(refusal.hash).or_default();
                if !refused.contains(&PeerId(id)) {
                    refused.push(PeerId(id));
                }
                punish.push((PeerId(id), refusal.hash));
            }
        }
        punish
    }

    /// Whether `peer` may be asked for the coins of `hash`.
    fn may_ask(&self, peer: PeerId, hash: &BlockHash) -> bool {
        self.refused_by.get(hash).is_none_or(|refused| !refused.contains(&peer))
    }

    fn first_untaken(&self) -> Option<u32> {
        self.taken.iter().position(|taken| !taken).map(|at| at as u32 + 1)
    }

    fn requests_of(&self, peer: PeerId) -> usize {
        self.pending.values().filter(|request| request.peer == peer).count()
    }

    fn is_wanted(&self, height: u32, hash: &BlockHash, now: Instant) -> bool {
        let taken = height.checked_sub(1).and_then(|at| self.taken.get(at as usize));
        taken == Some(&false)
            && !self.pending.contains_key(hash)
            && !self.offered.contains_key(hash)
            && self.retry_at.get(hash).is_none_or(|at| now >= *at)
    }
}

/// The highest height whose coins may be asked now, for a plan to
/// `terminal_height` whose blocks are stored to `stored_height` and whose
/// lowest height still wanted is `first_wanted` (never below it).
fn last_height_to_ask(terminal_height: u32, stored_height: u32, first_wanted: u32) -> u32 {
    terminal_height
        .min(stored_height.saturating_add(SPENT_COINS_AHEAD_OF_STORED_BLOCKS))
        .min(first_wanted.saturating_add(SPENT_COINS_WINDOW_BLOCKS))
        .max(first_wanted)
}

impl SyncLoop {
    /// Asks serving peers for the coins of the next blocks (module docs);
    /// ends the plan's wait when no peer serves.
    pub(super) fn fetch_spent_coins(&mut self) {
        let Some(fetch) = self.spent_coins_fetch.as_ref() else { return };
        let snapshot = self.reader.snapshot();
        let Some(stored_height) = snapshot.swiftsync_stored_height else {
            // The plan is over (done, or given up).
            self.spent_coins_fetch = None;
            return;
        };
        let terminal_height = fetch.terminal_height;
        let Some((best_hash, best_height)) = snapshot.best_header else { return };
        if best_height < terminal_height || fetch.wait_ended {
            return;
        }
        let now = Instant::now();
        self.punish_refused_spent_coins(&snapshot.swiftsync_refusals);
        self.expire_spent_coins_requests(now);
        let servers: Vec<PeerId> = self
            .peers
            .iter()
            .filter(|(_, state)| state.serves_spent_coins)
            .map(|(peer, _)| *peer)
            .collect();
        let all_stored = stored_height >= terminal_height;
        if servers.is_empty() {
            self.wait_for_serving_peers(all_stored.then_some(Unserved::NoServer), now);
            return;
        }
        let Some(pass) = snapshot.swiftsync_pass.as_ref() else {
            // No pass yet: which heights it needs is not known.
            return;
        };
        let refused_by_all =
            self.request_spent_coins(&servers, (best_hash, pass), stored_height, now);
        let unserved = refused_by_all.filter(|_| all_stored).map(Unserved::AllRefused);
        self.wait_for_serving_peers(unserved, now);
    }

    /// Acts on the engine's new refusals: the blocks' coins are wanted
    /// again, and each sender is punished as for an invalid block.
    fn punish_refused_spent_coins(&mut self, published: &[SpentCoinsRefusal]) {
        let Some(fetch) = self.spent_coins_fetch.as_mut() else { return };
        if published.len() == fetch.refusals_seen {
            return;
        }
        // A peer spared the disconnect (a manual connection) keeps its
        // other requests: their answers are still checked by their blocks.
        for (peer, hash) in fetch.absorb_refusals(published) {
            self.misbehaving(peer, Misbehavior::SpentCoinsRefused { hash });
        }
    }

    /// Drops requests unanswered for too long and disconnects the peers
    /// asked, as Core disconnects a peer that does not deliver a block in
    /// time ("Timeout downloading block"): their other requests go to
    /// other peers.
    fn expire_spent_coins_requests(&mut self, now: Instant) {
        let Some(fetch) = self.spent_coins_fetch.as_mut() else { return };
        let mut late = Vec::new();
        fetch.pending.retain(|hash, request| {
            let in_time = now.duration_since(request.sent_at) < SPENT_COINS_REQUEST_TIMEOUT;
            if !in_time {
                late.push((request.peer, *hash));
            }
            in_time
        });
        late.sort_unstable_by_key(|(peer, _)| *peer);
        late.dedup_by_key(|(peer, _)| *peer);
        for (peer, hash) in late {
            self.spent_coins_peer_gone(peer);
            let timeout_ms = SPENT_COINS_REQUEST_TIMEOUT.as_millis() as u64;
            self.disconnect_for_spent_coins(
                peer,
                SyncReason::SpentCoinsTimeout { hash, timeout_ms },
            );
        }
    }

    /// No peer to ask (`unserved`, once every block is stored): once that
    /// lasted, the engine is told no coins will come.
    fn wait_for_serving_peers(&mut self, unserved: Option<Unserved>, now: Instant) {
        let Some(fetch) = self.spent_coins_fetch.as_mut() else { return };
        let Some(unserved) = unserved else {
            fetch.unserved_since = None;
            return;
        };
        let since = *fetch.unserved_since.get_or_insert(now);
        if now.duration_since(since) >= NO_SERVING_PEER_WAIT {
            fetch.wait_ended = true;
            let seconds = NO_SERVING_PEER_WAIT.as_secs();
            self.logger.log(&match unserved {
                Unserved::NoServer => format!(
                    "[swiftsync] no peer serves spent coins (BIP 455) for {seconds} s: syncing without hints"
                ),
                Unserved::AllRefused(hash) => format!(
                    "[swiftsync] every peer serving spent coins (BIP 455) had those of block {hash} refused, for {seconds} s: syncing without hints"
                ),
            });
            self.engine.push(EngineCommand::EndSwiftSyncWait);
        }
    }

    /// Sends requests for the wanted blocks to the least busy servers not
    /// refused for them. The first block still wanted when every server
    /// was refused for it.
    fn request_spent_coins(
        &mut self,
        servers: &[PeerId],
        (best_hash, pass): (BlockHash, &Arc<SwiftSyncPassStart>),
        stored_height: u32,
        now: Instant,
    ) -> Option<BlockHash> {
        let fetch = self.spent_coins_fetch.as_ref()?;
        let first = fetch.first_untaken()?;
        let room: usize = servers
            .iter()
            .map(|peer| SPENT_COINS_REQUESTS_PER_PEER_MAX.saturating_sub(fetch.requests_of(*peer)))
            .sum();
        if room == 0 {
            return None;
        }
        // At most a window past the first height still wanted too: after a
        // restart every block is stored, and this read of the chain's
        // hashes stays bounded.
        let last = last_height_to_ask(fetch.terminal_height, stored_height, first);
        let view = self.reader.unsettled(QUERY_TIMEOUT);
        let chain = view.best_chain_blocks(first - 1, last).ok().flatten()?;
        let terminal = view.ancestor(&best_hash, fetch.terminal_height).ok().flatten();
        let terminal_hash = terminal.map(|block| block.hash);
        let fetch = self.spent_coins_fetch.as_mut()?;
        if terminal_hash.is_some() && terminal_hash != fetch.terminal {
            fetch.restart_for(terminal_hash);
        }
        if !fetch.adopt_pass(pass) {
            // The pass runs for another terminal block than the chain the
            // fetch sees: its coins would be dropped. Wait until they agree.
            return None;
        }
        fetch.retry_at.retain(|_, at| *at > now);
        let mut load: Vec<(usize, PeerId)> =
            servers.iter().map(|peer| (fetch.requests_of(*peer), *peer)).collect();
        let mut refused_by_all = None;
        let heights = (chain.first_height..).zip(&chain.blocks);
        for (height, (hash, _)) in heights.take_while(|(height, _)| *height <= last) {
            if !fetch.is_wanted(height, hash, now) {
                continue;
            }
            if !servers.iter().any(|peer| fetch.may_ask(*peer, hash)) {
                refused_by_all = refused_by_all.or(Some(*hash));
                continue;
            }
            load.sort_unstable();
            let Some((count, peer)) = load.iter_mut().find(|(_, peer)| fetch.may_ask(*peer, hash))
            else {
                continue;
            };
            if *count >= SPENT_COINS_REQUESTS_PER_PEER_MAX {
                continue;
            }
            let cutoff_height = spent_coins_cutoff(height);
            let request = GetSpentCoins { block_hash: *hash, cutoff_height };
            if self.network.send(*peer, NetworkMessage::GetSpentCoins(request)).is_err() {
                continue;
            }
            fetch.retry_at.remove(hash);
            fetch.pending.insert(*hash, Request { peer: *peer, height, sent_at: now });
            *count += 1;
        }
        refused_by_all
    }

    /// A `bspent` from `peer`: taken when it answers a request of ours to
    /// that peer with one coin per input in order; else the peer goes.
    pub(super) fn on_spent_coins(&mut self, peer: PeerId, answer: SpentCoins) {
        let hash = answer.block_hash;
        let request = self
            .spent_coins_fetch
            .as_ref()
            .and_then(|fetch| fetch.pending.get(&hash).copied())
            .filter(|request| request.peer == peer);
        let Some(request) = request else {
            self.disconnect_for_spent_coins(peer, SyncReason::SpentCoinsNotRequested { hash });
            return;
        };
        // Inputs in order; those left out are the pass's to fill in from
        // the blocks, which also catches a wrong gap.
        let increasing =
            answer.coins.windows(2).all(|pair| pair[0].input_index < pair[1].input_index);
        if !increasing {
            self.disconnect_for_spent_coins(peer, SyncReason::SpentCoinsIncomplete { hash });
            return;
        }
        if let Some(fetch) = self.spent_coins_fetch.as_mut() {
            fetch.pending.remove(&hash);
            fetch.offered.insert(hash, request.height);
        }
        let coins = ClaimedSpentCoins {
            cutoff_height: spent_coins_cutoff(request.height),
            coins: answer.coins.into_iter().map(|coin| (coin.input_index, coin.coin)).collect(),
        };
        let source = BlockSource::Peer(peer.0);
        self.engine.push(EngineCommand::SpentCoins { hash, coins, source });
        self.fetch_spent_coins();
    }

    /// The engine took (or did not take) the coins of `hash`.
    pub(super) fn on_spent_coins_offered(&mut self, hash: BlockHash, taken: bool) {
        let Some(fetch) = self.spent_coins_fetch.as_mut() else { return };
        let Some(height) = fetch.offered.remove(&hash) else { return };
        if taken {
            if let Some(slot) =
                height.checked_sub(1).and_then(|at| fetch.taken.get_mut(at as usize))
            {
                *slot = true;
            }
        } else {
            fetch.retry_at.insert(hash, Instant::now() + RETRY_AFTER);
        }
    }

    /// Forgets the requests of a peer that left.
    pub(super) fn spent_coins_peer_gone(&mut self, peer: PeerId) {
        if let Some(fetch) = self.spent_coins_fetch.as_mut() {
            fetch.pending.retain(|_, request| request.peer != peer);
        }
    }

    fn disconnect_for_spent_coins(&mut self, peer: PeerId, reason: SyncReason) {
        self.spent_coins_peer_gone(peer);
        self.logger.log(&format!("{}, disconnecting {peer}", reason.core_log_message()));
        let _ = self.network.disconnect(peer, NetReason::Sync(reason));
    }
}

/// Why no peer can be asked for the coins still wanted.
#[derive(Debug, Clone, Copy)]
enum Unserved {
    /// No connected peer serves spent coins.
    NoServer,
    /// Every one that does was refused for this block's.
    AllRefused(BlockHash),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coins_are_asked_a_few_blocks_past_those_stored_and_within_the_window() {
        // Blocks stored to 100, 101 wanted first: 64 heights past the
        // stored ones, whatever the download window holds.
        assert_eq!(last_height_to_ask(5_000, 100, 101), 100 + SPENT_COINS_AHEAD_OF_STORED_BLOCKS);
        // Never past the terminal height.
        assert_eq!(last_height_to_ask(120, 100, 101), 120);
        // Every block stored (a restart): a window past the first wanted.
        assert_eq!(last_height_to_ask(5_000, 5_000, 10), 10 + SPENT_COINS_WINDOW_BLOCKS);
        // The first wanted is always asked, even above the stored ones.
        assert_eq!(last_height_to_ask(5_000, 10, 200), 200);
    }

    #[test]
    fn a_new_terminal_block_keeps_the_requests_out_and_forgets_what_was_taken() {
        let mut fetch = SpentCoinsFetch::new(10);
        let now = Instant::now();
        let (asked, offered) = (BlockHash([1; 32]), BlockHash([2; 32]));
        fetch.pending.insert(asked, Request { peer: PeerId(7), height: 3, sent_at: now });
        fetch.offered.insert(offered, 4);
        fetch.taken[0] = true;
        fetch.retry_at.insert(BlockHash([5; 32]), now);
        let terminal = Some(BlockHash([9; 32]));
        fetch.restart_for(terminal);
        assert_eq!(fetch.terminal, terminal);
        assert_eq!(fetch.pending.get(&asked).map(|request| request.peer), Some(PeerId(7)));
        assert!(fetch.offered.is_empty() && fetch.retry_at.is_empty());
        assert_eq!(fetch.first_untaken(), Some(1));
        assert_eq!(fetch.requests_of(PeerId(7)), 1);
        // Still asked: another block at height 3 is wanted, the one asked is not.
        assert!(!fetch.is_wanted(3, &asked, now));
        assert!(fetch.is_wanted(3, &BlockHash([3; 32]), now));
        // Coins of the old chain's block not taken wait to be asked again;
        // the new chain's block at the same height does not wait for them.
        fetch.pending.clear();
        fetch.retry_at.insert(asked, now + RETRY_AFTER);
        assert!(!fetch.is_wanted(3, &asked, now));
        assert!(fetch.is_wanted(3, &BlockHash([3; 32]), now));
        assert!(fetch.is_wanted(3, &asked, now + RETRY_AFTER));
    }

    #[test]
    fn heights_a_resumed_pass_accounted_are_never_asked() {
        let mut fetch = SpentCoinsFetch::new(6);
        let now = Instant::now();
        let terminal = BlockHash([9; 32]);
        let accounted = [true, true, false, true, false, false];
        let pass = Arc::new(SwiftSyncPassStart { terminal, accounted: accounted.into() });
        // A pass for another terminal block than the chain the fetch sees.
        fetch.restart_for(Some(BlockHash([8; 32])));
        assert!(!fetch.adopt_pass(&pass));
        assert_eq!(fetch.first_untaken(), Some(1));
        fetch.restart_for(Some(terminal));
        assert!(fetch.adopt_pass(&pass));
        assert_eq!(fetch.first_untaken(), Some(3));
        for (height, accounted) in (1..).zip(accounted) {
            let hash = BlockHash([height as u8; 32]);
            assert_eq!(fetch.is_wanted(height, &hash, now), !accounted, "height {height}");
        }
        // Adopted once: a refusal's reopening is not undone by the next tick.
        fetch.taken[0] = false;
        assert!(fetch.adopt_pass(&pass));
        assert_eq!(fetch.first_untaken(), Some(1));
        // A pass started again (a new `Arc`) after the chain moved back.
        fetch.restart_for(Some(terminal));
        let again = Arc::new(SwiftSyncPassStart::clone(&pass));
        assert!(fetch.adopt_pass(&again));
        assert_eq!(fetch.first_untaken(), Some(3));
    }

    fn refusal(height: u32, hash: BlockHash, peer: u64) -> SpentCoinsRefusal {
        SpentCoinsRefusal {
            height,
            hash,
            source: BlockSource::Peer(peer),
            failure: ibex_chainstate::SwiftSyncFailure::SpentCoinsMissing { height, hash },
        }
    }

    #[test]
    fn a_refused_block_is_wanted_again_from_peers_not_refused_for_it() {
        let mut fetch = SpentCoinsFetch::new(10);
        let now = Instant::now();
        let (refused, other) = (BlockHash([4; 32]), BlockHash([5; 32]));
        fetch.taken[3] = true;
        fetch.taken[4] = true;
        assert!(!fetch.is_wanted(4, &refused, now));
        let mut published = vec![refusal(4, refused, 7)];
        assert_eq!(fetch.absorb_refusals(&published), vec![(PeerId(7), refused)]);
        assert!(fetch.is_wanted(4, &refused, now), "asked again");
        assert!(!fetch.is_wanted(5, &other, now), "the others stay taken");
        assert!(!fetch.may_ask(PeerId(7), &refused));
        assert!(fetch.may_ask(PeerId(8), &refused));
        assert!(fetch.may_ask(PeerId(7), &other), "refused for that block only");
        // The list only grows: what was seen is not acted on twice.
        assert!(fetch.absorb_refusals(&published).is_empty());
        fetch.taken[3] = true;
        published.push(refusal(4, refused, 8));
        assert_eq!(fetch.absorb_refusals(&published), vec![(PeerId(8), refused)]);
        assert!(!fetch.may_ask(PeerId(7), &refused) && !fetch.may_ask(PeerId(8), &refused));
        // A new terminal block keeps what peers were refused (by block).
        fetch.restart_for(Some(BlockHash([9; 32])));
        assert!(!fetch.may_ask(PeerId(8), &refused));
        assert!(fetch.absorb_refusals(&published).is_empty());
    }
}

//! Answering BIP 455's `getbspent` (with `-peerblockspentcoins`): the coins
//! a block spent, read from its undo data and sent as `bspent`, so a peer
//! running a fully validating SwiftSync can check the block without a UTXO
//! set.
//!
//! A request joins the peer's queue of block requests (`serve`'s
//! [`super::serve::GetDataQueue`], the same bound and the same pace: one
//! answer per peer per pass of the loop while its send queue has room) and
//! is served under the rules a block is: Core's `BlockRequestAllowed`, and
//! the `NODE_NETWORK_LIMITED` threshold. The draft names no "not found":
//! a block we do not hold, may not serve, or keep no undo data for (below
//! an AssumeUTXO base or a SwiftSync terminal block, pruned) gets no
//! answer, and neither does one whose answer exceeds the 4,000,000-byte
//! message limit (the asker's timeout moves it elsewhere).
//!
//! # Cost (napkin math)
//! One settled query, one read of the block's undo record (at most a few
//! MB; a typical mainnet block's is ~300 kB for ~5,000 inputs), its decode,
//! and one `bspent` of about 30 bytes a coin (index 4, height code 4, a
//! 21-byte script form, an amount 1-5): the same order as serving the block.

use ibex_chainstate::ChainReader;
use ibex_p2p::messages::spent_coins::{GetSpentCoins, IndexedSpentCoin, SpentCoins};
use ibex_primitives::BlockHash;

use super::engine_view::{below_limited_threshold, block_request_allowed, QUERY_TIMEOUT};

/// What a `getbspent` gets.
#[derive(Debug)]
pub enum SpentCoinsAnswer {
    /// The answer.
    Coins(SpentCoins),
    /// Nothing (see the module docs).
    NotServed,
    /// A block below what a `NODE_NETWORK_LIMITED` node serves, asked by a
    /// peer told so: disconnected, as for a block.
    BelowLimitedThreshold,
}

/// The coins block `request.block_hash` spent, those created below the
/// request's cutoff when it has one, each with its input's place among the
/// block's inputs (the coinbase's left out).
pub fn spent_coins_for(
    reader: &ChainReader,
    request: GetSpentCoins,
    spacing_seconds: i64,
    limited: bool,
) -> SpentCoinsAnswer {
    let hash: BlockHash = request.block_hash;
    let view = reader.settled(QUERY_TIMEOUT);
    let Some(block) = view.block(&hash).ok().flatten() else { return SpentCoinsAnswer::NotServed };
    let spacing_seconds = u64::try_from(spacing_seconds).unwrap_or(600);
    if block_request_allowed(&view, &block, spacing_seconds) != Some(true) {
        return SpentCoinsAnswer::NotServed;
    }
    let tip_height = block.active_tip_height.unwrap_or(0);
    if limited && below_limited_threshold(tip_height, block.height) {
        return SpentCoinsAnswer::BelowLimitedThreshold;
    }
    if block.status.is_failed() || block.undo_position.is_none() {
        return SpentCoinsAnswer::NotServed;
    }
    let Ok(undo) = reader.read_stored_undo(&block) else { return SpentCoinsAnswer::NotServed };
    let spent = undo.transactions.iter().flat_map(|transaction| transaction.spent.iter());
    let coins = spent
        .enumerate()
        .filter(|(_, coin)| request.wants(ibex_primitives::Height::new(coin.height())))
        .map(|(input_index, coin)| IndexedSpentCoin {
            // A block's inputs number far below 2^32.
            input_index: input_index as u32,
            coin: coin.as_spent_coin().to_buf(),
        })
        .collect();
    SpentCoinsAnswer::Coins(SpentCoins { block_hash: hash, coins })
}

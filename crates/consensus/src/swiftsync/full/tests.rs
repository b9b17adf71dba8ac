#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_primitives::hints::{OutpointAggregate, OutpointHasher, AGGREGATE_SALT_BYTES};
use ibex_primitives::{
    Amount, BlockHash, BlockView, Height, OutPoint, Params, SpentCoin, Txid, COIN,
};
use ibex_script::VerifyFlags;

use super::*;
use crate::swiftsync::tests::{block, coinbase, output, spend, PAYMENT};

/// The height the spending block sits at: its coinbase coin from height 1
/// is mature (regtest: 100 blocks), the subsidy still 50 (halving at 150).
const SPEND_HEIGHT: u32 = 120;

fn rules<'a>(
    params: &'a Params,
    height: u32,
    median: &'a dyn Fn(Height) -> i64,
) -> ConnectRules<'a> {
    ConnectRules {
        params,
        height: Height::new(height),
        flags: VerifyFlags::NONE,
        enforce_sequence_locks: false,
        previous_median_time_past: 0,
        median_time_past_at: median,
    }
}

fn coin(value: i64, height: u32, is_coinbase: bool) -> SpentCoin<'static> {
    SpentCoin {
        value: Amount::from_sat(value).unwrap(),
        script_pubkey: PAYMENT,
        height: Height::new(height),
        is_coinbase,
    }
}

/// Block 1: a 50-coin coinbase. Block 120: spends it (1 coin of fee), a
/// second transaction spends the first's output in the block (1 more),
/// its coinbase takes the subsidy and `fee_claimed`.
fn blocks(fee_claimed: i64) -> (Vec<u8>, Vec<u8>) {
    let first = block(vec![coinbase(1, vec![output(50 * COIN, PAYMENT)])]);
    let first_coinbase = BlockView::parse(&first).unwrap().txids()[0];
    let payer =
        spend(&[OutPoint { txid: first_coinbase, vout: 0 }], vec![output(49 * COIN, PAYMENT)]);
    let inside = OutPoint { txid: payer.txid(), vout: 0 };
    let spender = spend(&[inside], vec![output(48 * COIN, PAYMENT)]);
    let second =
        block(vec![coinbase(120, vec![output(50 * COIN + fee_claimed, PAYMENT)]), payer, spender]);
    (first, second)
}

/// The right claims for block 120's two inputs.
fn honest_coins() -> Vec<SpentCoin<'static>> {
    vec![coin(50 * COIN, 1, true), coin(49 * COIN, SPEND_HEIGHT, false)]
}

/// Accounts both blocks (block 120 with `coins`, at `spend_height`); block
/// 120's coinbase and spender outputs hinted unspent.
fn run(
    fee_claimed: i64,
    coins: &[SpentCoin<'_>],
    spend_height: u32,
) -> Result<(OutpointAggregate, BlockTotals), FullAccountError> {
    let hasher = OutpointHasher::new(&[3; AGGREGATE_SALT_BYTES]);
    let params = Params::regtest();
    let median = |_: Height| 0i64;
    let (first, second) = blocks(fee_claimed);
    let mut total = OutpointAggregate::ZERO;
    for (bytes, height, spent, hints) in
        [(&first, 1, &[][..], &[][..]), (&second, spend_height, coins, &[0u32, 2][..])]
    {
        let view = BlockView::parse(bytes).unwrap();
        let txids: Vec<Txid> = view.txids();
        let to_account = BlockToAccount {
            block: &view,
            txids: &txids,
            height,
            hash: BlockHash([height as u8; 32]),
            unspent_indices: hints,
        };
        let rules = rules(&params, height, &median);
        let account = account_block_with_coins(&to_account, spent, &rules, &hasher)?;
        total.merge(&account.account.aggregate);
        if height != 1 {
            return Ok((total, account.totals));
        }
    }
    unreachable!("the second block returns")
}

#[test]
fn honest_coins_balance_and_the_fees_are_counted() {
    let (total, totals) = run(2 * COIN, &honest_coins(), SPEND_HEIGHT).unwrap();
    assert!(total.is_zero(), "each coin created once and spent once");
    assert_eq!(totals.fees, Amount::from_sat(2 * COIN).unwrap());
}

#[test]
fn a_lie_about_a_coin_leaves_the_aggregate_unbalanced() {
    let honest = honest_coins();
    let lies = [
        // More value than the output had: the block still passes (the fee
        // only grows), the aggregate does not.
        SpentCoin { value: Amount::from_sat(60 * COIN).unwrap(), ..honest[0] },
        SpentCoin { height: Height::new(2), ..honest[0] },
        SpentCoin { script_pubkey: &[0x52], ..honest[0] },
    ];
    for lie in lies {
        let coins = [lie, honest[1]];
        let (total, _) = run(2 * COIN, &coins, SPEND_HEIGHT).unwrap();
        assert!(!total.is_zero(), "{lie:?}");
    }
}

#[test]
fn the_blocks_rules_are_checked_with_the_claimed_coins() {
    let honest = honest_coins();
    // The coinbase takes more than the subsidy and the fees.
    let greedy = run(2 * COIN + 1, &honest, SPEND_HEIGHT).unwrap_err();
    assert!(matches!(greedy, FullAccountError::Rejected { height: SPEND_HEIGHT, .. }), "{greedy}");
    assert!(greedy.to_string().contains("bad-cb-amount"), "{greedy}");
    // A coinbase coin spent before it matures.
    let early = run(2 * COIN, &[honest[0], coin(49 * COIN, 60, false)], 60).unwrap_err();
    assert!(early.to_string().contains("premature"), "{early}");
    // A claim of less value than the transaction pays out.
    let poor = [SpentCoin { value: Amount::from_sat(COIN).unwrap(), ..honest[0] }, honest[1]];
    let error = run(2 * COIN, &poor, SPEND_HEIGHT).unwrap_err();
    assert!(error.to_string().contains("bad-txns-in-belowout"), "{error}");
}

#[test]
fn claims_must_match_the_inputs_and_come_from_below() {
    let honest = honest_coins();
    let short = run(2 * COIN, &honest[..1], SPEND_HEIGHT).unwrap_err();
    assert_eq!(
        short,
        FullAccountError::CoinCount { height: SPEND_HEIGHT, input_count: 2, coin_count: 1 }
    );
    let later = [honest[0], coin(49 * COIN, SPEND_HEIGHT + 1, false)];
    let error = run(2 * COIN, &later, SPEND_HEIGHT).unwrap_err();
    assert!(matches!(
        error,
        FullAccountError::CoinFromLaterBlock { transaction: 2, input: 0, coin_height: 121, .. }
    ));
}

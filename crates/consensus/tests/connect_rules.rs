//! Core's `ConnectBlock` rules on the spent coins, as one pure check fed a
//! block's transactions in order ([`BlockConnectCheck`]): fees and totals
//! of a valid block, each failure with Core's reject reason, and Core's
//! order within a transaction (`CheckTxInputs`, fee total, sequence locks,
//! sigop cost).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::limits::SEQUENCE_FINAL;
use ibex_consensus::{BlockConnectCheck, BlockRejection, BlockTotals, ConnectRules};
use ibex_primitives::{
    Amount, Block, BlockView, Height, OutPoint, Params, SpentCoin, Transaction, TxInput, TxOutput,
    Txid, COIN, MAX_MONEY,
};
use ibex_script::VerifyFlags;

const HEIGHT: u32 = 300;
const P2WPKH: [u8; 22] = [0x00, 0x14, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7];

fn transaction(version: i32, sequence: u32, outputs: &[i64], output_script: &[u8]) -> Transaction {
    Transaction {
        version,
        inputs: vec![TxInput {
            previous_output: OutPoint { txid: Txid([1; 32]), vout: 0 },
            script_sig: vec![],
            sequence,
            witness: vec![vec![0x30; 71], vec![0x02; 33]],
        }],
        outputs: outputs
            .iter()
            .map(|value| TxOutput { value: *value, script_pubkey: output_script.to_vec() })
            .collect(),
        lock_time: 0,
    }
}

fn coinbase(value: i64, output_script: &[u8]) -> Transaction {
    Transaction {
        version: 1,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig: vec![0x02, 0x2c, 0x01],
            sequence: SEQUENCE_FINAL,
            witness: vec![],
        }],
        outputs: vec![TxOutput { value, script_pubkey: output_script.to_vec() }],
        lock_time: 0,
    }
}

fn amount(satoshis: i64) -> Amount {
    Amount::from_sat(satoshis).unwrap()
}

fn spent(value: i64, height: u32) -> SpentCoin<'static> {
    let height = Height::new(height);
    SpentCoin { value: amount(value), script_pubkey: &P2WPKH, height, is_coinbase: false }
}

fn rules<'a>(
    params: &'a Params,
    median_time_past_at: &'a dyn Fn(Height) -> i64,
) -> ConnectRules<'a> {
    ConnectRules {
        params,
        height: Height::new(HEIGHT),
        flags: VerifyFlags::CONSENSUS,
        enforce_sequence_locks: true,
        previous_median_time_past: 1_000_000,
        median_time_past_at,
    }
}

/// Feeds `transactions` (coinbase first) with one spent coin each to a
/// check, then finishes it.
fn run(
    transactions: Vec<Transaction>,
    spent_coins: &[SpentCoin<'_>],
    enforce_sequence_locks: bool,
) -> Result<BlockTotals, BlockRejection> {
    let params = Params::regtest();
    let median_time_past_at = |_: Height| 1_000_000;
    let mut rules = rules(&params, &median_time_past_at);
    rules.enforce_sequence_locks = enforce_sequence_locks;
    let block = Block { header: Params::regtest().genesis.header, transactions };
    let bytes = block.encode();
    let view = BlockView::parse(&bytes).unwrap();
    let txids = view.txids();
    let mut check = BlockConnectCheck::new(&rules);
    for (index, transaction) in view.transactions().enumerate() {
        if index == 0 {
            check.coinbase(&transaction)?;
        } else {
            check.transaction(&transaction, &txids[index], &spent_coins[index - 1..index])?;
        }
    }
    check.finish(&view)
}

fn reason(result: Result<BlockTotals, BlockRejection>) -> String {
    result.unwrap_err().reject_reason()
}

/// Regtest's subsidy at [`HEIGHT`] (halving every 150 blocks: two halvings).
const SUBSIDY: i64 = 50 * COIN / 4;

#[test]
fn a_valid_block_adds_up_its_fees_and_sigops() {
    let fee = COIN / 10;
    let spend = transaction(2, SEQUENCE_FINAL, &[5 * COIN - fee], &P2WPKH);
    let totals =
        run(vec![coinbase(SUBSIDY + fee, &P2WPKH), spend], &[spent(5 * COIN, 10)], true).unwrap();
    // One P2WPKH input: one witness sigop.
    assert_eq!(totals, BlockTotals { fees: amount(fee), sigop_cost: 1 });
}

#[test]
fn the_coinbase_may_not_claim_one_satoshi_more() {
    let fee = COIN / 10;
    let spend = || transaction(2, SEQUENCE_FINAL, &[5 * COIN - fee], &P2WPKH);
    let greedy = coinbase(SUBSIDY + fee + 1, &P2WPKH);
    assert_eq!(reason(run(vec![greedy, spend()], &[spent(5 * COIN, 10)], true)), "bad-cb-amount");
}

#[test]
fn spending_more_than_the_coins_or_an_immature_coinbase_fails_check_tx_inputs() {
    let spend = transaction(2, SEQUENCE_FINAL, &[5 * COIN + 1], &P2WPKH);
    let result = run(vec![coinbase(SUBSIDY, &P2WPKH), spend], &[spent(5 * COIN, 10)], true);
    assert_eq!(reason(result), "bad-txns-in-belowout");
    let spend = transaction(2, SEQUENCE_FINAL, &[COIN], &P2WPKH);
    let immature = SpentCoin { is_coinbase: true, ..spent(5 * COIN, HEIGHT - 99) };
    let result = run(vec![coinbase(SUBSIDY, &P2WPKH), spend], &[immature], true);
    assert_eq!(reason(result), "bad-txns-premature-spend-of-coinbase");
}

#[test]
fn relative_height_locks_apply_only_where_enforced() {
    // BIP68: a version 2 input locked for 10 blocks on a coin 5 blocks old.
    let locked = || transaction(2, 10, &[COIN], &P2WPKH);
    let young = spent(2 * COIN, HEIGHT - 5);
    let result = run(vec![coinbase(SUBSIDY + COIN, &P2WPKH), locked()], &[young], true);
    assert_eq!(reason(result), "bad-txns-nonfinal");
    assert!(run(vec![coinbase(SUBSIDY + COIN, &P2WPKH), locked()], &[young], false).is_ok());
    // Old enough: fine.
    let old = spent(2 * COIN, HEIGHT - 10);
    assert!(run(vec![coinbase(SUBSIDY + COIN, &P2WPKH), locked()], &[old], true).is_ok());
}

#[test]
fn the_fee_total_is_checked_before_the_sequence_locks() {
    // Two transactions each keeping all of MAX_MONEY as fee: the second
    // passes CheckTxInputs, then the total leaves MoneyRange, and Core
    // reports that before the sequence lock it would also fail.
    let first = transaction(2, SEQUENCE_FINAL, &[0], &P2WPKH);
    let second = transaction(2, 10, &[0], &P2WPKH);
    let coins = [spent(MAX_MONEY, 10), spent(MAX_MONEY, HEIGHT - 1)];
    let result = run(vec![coinbase(SUBSIDY, &P2WPKH), first, second], &coins, true);
    assert_eq!(reason(result), "bad-txns-accumulated-fee-outofrange");
}

#[test]
fn a_coinbase_over_the_sigop_cost_limit_fails_at_once() {
    // 20,001 OP_CHECKSIG: 80,004 legacy sigop cost, over 80,000.
    let heavy = coinbase(SUBSIDY, &[0xac; 20_001]);
    let result = run(vec![heavy], &[], true);
    assert!(
        matches!(
            result,
            Err(BlockRejection::Block(ibex_consensus::BlockError::Sigops { cost: 80_004 }))
        ),
        "{result:?}"
    );
    assert_eq!(reason(result), "bad-blk-sigops");
}

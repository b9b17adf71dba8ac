#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_primitives::hints::{OutpointHasher, AGGREGATE_SALT_BYTES};
use ibex_primitives::{
    Block, BlockHash, BlockView, Hash256, Header, OutPoint, Transaction, TxInput, TxOutput, Txid,
    COIN,
};

use super::*;

pub(super) fn output(value: i64, script: &[u8]) -> TxOutput {
    TxOutput { value, script_pubkey: script.to_vec() }
}

pub(super) fn input(spent: OutPoint) -> TxInput {
    TxInput { previous_output: spent, script_sig: vec![0x51], sequence: u32::MAX, witness: vec![] }
}

pub(super) fn coinbase(height_byte: u8, outputs: Vec<TxOutput>) -> Transaction {
    let null = OutPoint { txid: Txid([0; 32]), vout: u32::MAX };
    let mut coinbase_input = input(null);
    coinbase_input.script_sig = vec![0x01, height_byte, 0x00];
    Transaction { version: 2, inputs: vec![coinbase_input], outputs, lock_time: 0 }
}

pub(super) fn spend(spent: &[OutPoint], outputs: Vec<TxOutput>) -> Transaction {
    Transaction {
        version: 2,
        inputs: spent.iter().copied().map(input).collect(),
        outputs,
        lock_time: 0,
    }
}

pub(super) fn block(transactions: Vec<Transaction>) -> Vec<u8> {
    let header = Header {
        version: 4,
        previous_block_hash: BlockHash([1; 32]),
        merkle_root: Hash256([0; 32]),
        time: 1_700_000_000,
        bits: 0x207f_ffff,
        nonce: 0,
    };
    Block { header, transactions }.encode()
}

fn account<'b>(
    view: &'b BlockView<'_>,
    txids: &'b [Txid],
    height: u32,
    hints: &'b [u32],
    hasher: &OutpointHasher,
) -> Result<BlockAccount<'b>, SwiftSyncBlockError> {
    let to_account = BlockToAccount {
        block: view,
        txids,
        height,
        hash: BlockHash([height as u8; 32]),
        unspent_indices: hints,
    };
    account_block(&to_account, hasher)
}

pub(super) const PAYMENT: &[u8] = &[0x51];
const DATA: &[u8] = &[0x6a, 0x04, 1, 2, 3, 4];

/// Block 1: a coinbase paying two outputs (the second spent in block 2)
/// and burning some in an `OP_RETURN`.
fn first_block() -> Vec<u8> {
    block(vec![coinbase(
        1,
        vec![output(30 * COIN, PAYMENT), output(20 * COIN, PAYMENT), output(7, DATA)],
    )])
}

/// Block 2: spends block 1's second output; a second transaction spends
/// the first's first output within the block.
fn second_block(first_coinbase: Txid, spend_later: bool) -> Vec<u8> {
    let outside = OutPoint { txid: first_coinbase, vout: 1 };
    let payer = spend(&[outside], vec![output(12 * COIN, PAYMENT), output(8 * COIN, PAYMENT)]);
    let inside = OutPoint { txid: payer.txid(), vout: 0 };
    let spender = spend(&[inside], vec![output(12 * COIN, PAYMENT)]);
    let mut transactions = vec![coinbase(2, vec![output(50 * COIN, PAYMENT)]), payer, spender];
    if spend_later {
        transactions.swap(1, 2);
    }
    block(transactions)
}

#[test]
fn two_blocks_balance_when_the_hints_are_right() {
    let hasher = OutpointHasher::new(&[5; AGGREGATE_SALT_BYTES]);
    let first_bytes = first_block();
    let first = BlockView::parse(&first_bytes).unwrap();
    let first_txids = first.txids();
    let first_coinbase = first_txids[0];
    let second_bytes = second_block(first_coinbase, false);
    let second = BlockView::parse(&second_bytes).unwrap();
    let second_txids = second.txids();
    // Block 1: #0 unspent, #1 spent in block 2, the OP_RETURN unnumbered.
    let one = account(&first, &first_txids, 1, &[0], &hasher).unwrap();
    assert_eq!(one.spendable_count, 2);
    assert_eq!(one.unspent_value, 30 * COIN as u64);
    assert_eq!(one.unspendable_value, 7);
    assert_eq!(one.unspent.len(), 1);
    assert!(one.unspent[0].is_coinbase);
    assert_eq!(one.unspent[0].outpoint, OutPoint { txid: first_coinbase, vout: 0 });
    // Block 2: #0 coinbase, #1 spent in-block, #2 and #3 unspent.
    let two = account(&second, &second_txids, 2, &[0, 2, 3], &hasher).unwrap();
    assert_eq!(two.spendable_count, 4);
    assert_eq!(two.unspent.len(), 3);
    assert!(!two.unspent[1].is_coinbase);
    assert_eq!(two.unspent_value, (50 + 8 + 12) * COIN as u64);
    let mut total = one.aggregate;
    assert!(!total.is_zero());
    total.merge(&two.aggregate);
    assert!(total.is_zero(), "every spent output spent once");
    // Blocks accounted in the other order give the same sum.
    let mut reversed = two.aggregate;
    reversed.merge(&one.aggregate);
    assert!(reversed.is_zero());
}

#[test]
fn wrong_hints_leave_the_aggregate_unbalanced() {
    let hasher = OutpointHasher::new(&[6; AGGREGATE_SALT_BYTES]);
    let first_bytes = first_block();
    let first = BlockView::parse(&first_bytes).unwrap();
    let first_txids = first.txids();
    let second_bytes = second_block(first_txids[0], false);
    let second = BlockView::parse(&second_bytes).unwrap();
    let second_txids = second.txids();
    let right_one = account(&first, &first_txids, 1, &[0], &hasher).unwrap().aggregate;
    let right_two = account(&second, &second_txids, 2, &[0, 2, 3], &hasher).unwrap().aggregate;
    // Each way: a spent output hinted unspent, an unspent one left out.
    for (one_hints, two_hints) in
        [(&[0, 1][..], &[0, 2, 3][..]), (&[0][..], &[0, 1, 2, 3][..]), (&[0][..], &[0, 2][..])]
    {
        let mut total = account(&first, &first_txids, 1, one_hints, &hasher).unwrap().aggregate;
        total.merge(&account(&second, &second_txids, 2, two_hints, &hasher).unwrap().aggregate);
        assert!(!total.is_zero(), "{one_hints:?} {two_hints:?}");
    }
    let mut right = right_one;
    right.merge(&right_two);
    assert!(right.is_zero());
}

#[test]
fn a_hint_beyond_the_block_and_a_spend_of_a_later_output_are_refused() {
    let hasher = OutpointHasher::new(&[7; AGGREGATE_SALT_BYTES]);
    let first_bytes = first_block();
    let first = BlockView::parse(&first_bytes).unwrap();
    let first_txids = first.txids();
    assert_eq!(
        account(&first, &first_txids, 1, &[0, 2], &hasher).unwrap_err(),
        SwiftSyncBlockError::HintBeyondBlock { height: 1, index: 2, spendable_count: 2 }
    );
    let later_bytes = second_block(first_txids[0], true);
    let later = BlockView::parse(&later_bytes).unwrap();
    let later_txids = later.txids();
    assert_eq!(
        account(&later, &later_txids, 2, &[0, 2, 3], &hasher).unwrap_err(),
        SwiftSyncBlockError::SpendsLaterOutput { height: 2, transaction: 1, input: 0 }
    );
}

#[test]
fn the_supply_limit_sums_the_subsidies_from_block_one() {
    let coin = COIN as u64;
    assert_eq!(supply_limit_through(0, 150), 0);
    assert_eq!(supply_limit_through(1, 150), 50 * coin);
    assert_eq!(supply_limit_through(149, 150), 149 * 50 * coin);
    assert_eq!(supply_limit_through(150, 150), 149 * 50 * coin + 25 * coin);
    assert_eq!(supply_limit_through(300, 150), 149 * 50 * coin + 150 * 25 * coin + 25 * coin / 2);
    // Mainnet: just under 21 million coins once every subsidy is paid.
    let all = supply_limit_through(u32::MAX, 210_000);
    assert!(all < 21_000_000 * coin && all > 20_999_000 * coin, "{all}");
    assert_eq!(all, supply_limit_through(7_000_000, 210_000));
}

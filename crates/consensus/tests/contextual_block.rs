//! Core's `ContextualCheckBlock`: each reject reason from a block built to
//! break exactly that rule, and the accepted blocks around each boundary
//! (activation heights set as `-testactivationheight` sets them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::finality::bip34_height_prefix;
use ibex_consensus::limits::{BLOCK_WEIGHT_MAX, SEQUENCE_FINAL};
use ibex_consensus::{
    contextual_check_block, BlockError, LocatedTransactionError, TransactionError,
};
use ibex_primitives::hash::sha256d;
use ibex_primitives::merkle::WITNESS_COMMITMENT_HEADER;
use ibex_primitives::params::{BuriedDeployment, RegtestOptions};
use ibex_primitives::{
    merkle_root, Block, BlockHash, BlockView, Hash256, Header, Height, OutPoint, Params,
    Transaction, TxInput, TxOutput, Txid,
};

const HEIGHT: u32 = 100;
/// The parent's median time past: a time, not a height (above 500,000,000).
const MEDIAN: i64 = 1_600_000_000;
/// The block's own time, later than the median.
const BLOCK_TIME: u32 = 1_600_000_500;

/// How the coinbase commits to the witness data.
#[derive(Clone, Copy, PartialEq)]
enum Commitment {
    None,
    Correct,
    WrongRoot,
    /// A correct commitment but a 31-byte reserved value.
    ShortNonce,
}

fn coinbase(script_sig: Vec<u8>) -> Transaction {
    Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig,
            sequence: SEQUENCE_FINAL,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput { value: 50, script_pubkey: vec![0x51] }],
        lock_time: 0,
    }
}

fn spend(lock_time: u32, sequence: u32, witness: Vec<Vec<u8>>) -> Transaction {
    Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint { txid: Txid([1; 32]), vout: 0 },
            script_sig: Vec::new(),
            sequence,
            witness,
        }],
        outputs: vec![TxOutput { value: 1, script_pubkey: vec![0x51] }],
        lock_time,
    }
}

fn height_script(height: u32) -> Vec<u8> {
    let mut script = bip34_height_prefix(Height::new(height));
    script.extend_from_slice(&[0x04, 1, 2, 3, 4]);
    script
}

/// A block at `height` holding a coinbase with `coinbase_script` and `others`.
fn block_with(coinbase_script: Vec<u8>, others: Vec<Transaction>, commitment: Commitment) -> Block {
    let mut transactions = vec![coinbase(coinbase_script)];
    transactions.extend(others);
    if commitment != Commitment::None {
        let mut leaves = vec![[0u8; 32]];
        leaves.extend(transactions[1..].iter().map(|transaction| transaction.wtxid().0));
        let mut preimage = [0u8; 64];
        preimage[..32].copy_from_slice(&merkle_root(leaves).root.0);
        if commitment == Commitment::WrongRoot {
            preimage[0] ^= 1;
        }
        let mut script = WITNESS_COMMITMENT_HEADER.to_vec();
        script.extend_from_slice(&sha256d(&preimage));
        let coinbase = &mut transactions[0];
        coinbase.outputs.push(TxOutput { value: 0, script_pubkey: script });
        let nonce_bytes = if commitment == Commitment::ShortNonce { 31 } else { 32 };
        coinbase.inputs[0].witness = vec![vec![0; nonce_bytes]];
    }
    let mut block = Block {
        header: Header {
            version: 0x2000_0000,
            previous_block_hash: BlockHash([3; 32]),
            merkle_root: Hash256::ZERO,
            time: BLOCK_TIME,
            bits: 0x207f_ffff,
            nonce: 0,
        },
        transactions,
    };
    block.header.merkle_root = block.compute_merkle_root().root;
    block
}

fn block(others: Vec<Transaction>, commitment: Commitment) -> Block {
    block_with(height_script(HEIGHT), others, commitment)
}

fn check_at(block: &Block, height: u32, params: &Params) -> Result<(), BlockError> {
    let bytes = block.encode();
    let height = Height::new(height);
    contextual_check_block(&BlockView::parse(&bytes).unwrap(), height, MEDIAN, params)
}

fn reason_at(block: &Block, height: u32, params: &Params) -> Result<(), String> {
    check_at(block, height, params).map_err(|error| error.reject_reason().into_owned())
}

fn reason(block: &Block) -> Result<(), String> {
    reason_at(block, HEIGHT, &Params::regtest())
}

fn nonfinal() -> Result<(), String> {
    Err("bad-txns-nonfinal".into())
}

#[test]
fn height_locks() {
    assert_eq!(reason(&block(vec![spend(HEIGHT - 1, 0, vec![])], Commitment::None)), Ok(()));
    let locked = block(vec![spend(HEIGHT, 0, vec![])], Commitment::None);
    assert_eq!(reason(&locked), nonfinal());
    assert_eq!(
        check_at(&locked, HEIGHT, &Params::regtest()),
        Err(BlockError::Transaction(LocatedTransactionError {
            index: 1,
            txid: locked.transactions[1].txid(),
            source: TransactionError::NonFinal,
        }))
    );
    // Final sequences switch nLockTime off.
    let final_sequence = spend(HEIGHT + 50, SEQUENCE_FINAL, vec![]);
    assert_eq!(reason(&block(vec![final_sequence], Commitment::None)), Ok(()));
}

#[test]
fn bip113_time_locks_use_the_median_time_past_once_csv_is_active() {
    let before_median = spend(MEDIAN as u32 - 1, 0, vec![]);
    let at_median = spend(MEDIAN as u32, 0, vec![]);
    let before_block_time = spend(BLOCK_TIME - 1, 0, vec![]);
    let at_block_time = spend(BLOCK_TIME, 0, vec![]);
    let regtest = Params::regtest();
    assert_eq!(reason(&block(vec![before_median.clone()], Commitment::None)), Ok(()));
    assert_eq!(reason(&block(vec![at_median.clone()], Commitment::None)), nonfinal());
    assert_eq!(reason(&block(vec![before_block_time.clone()], Commitment::None)), nonfinal());
    // CSV from the next height: the cutoff is still the block's own time.
    let late_csv = RegtestOptions::new()
        .activation_height(BuriedDeployment::CheckSequenceVerify, HEIGHT + 1)
        .build();
    // (transaction, before activation: block time cutoff, at activation: median)
    for (transaction, before, at_activation) in [
        (at_median, Ok(()), nonfinal()),
        (before_block_time, Ok(()), nonfinal()),
        (at_block_time, nonfinal(), nonfinal()),
        (before_median, Ok(()), Ok(())),
    ] {
        let others = vec![transaction];
        let candidate = block(others.clone(), Commitment::None);
        assert_eq!(reason_at(&candidate, HEIGHT, &late_csv), before);
        let next = block_with(height_script(HEIGHT + 1), others, Commitment::None);
        assert_eq!(reason_at(&next, HEIGHT + 1, &late_csv), at_activation);
        assert_eq!(reason_at(&next, HEIGHT + 1, &regtest), at_activation);
    }
}

#[test]
fn bip34_coinbase_height() {
    let next_height = block_with(height_script(HEIGHT + 1), vec![], Commitment::None);
    assert_eq!(reason(&next_height), Err("bad-cb-height".into()));
    assert_eq!(
        check_at(&next_height, HEIGHT, &Params::regtest()),
        Err(BlockError::BadCoinbaseHeight)
    );
    assert_eq!(reason(&block(vec![], Commitment::None)), Ok(()));
    // The prefix alone is enough; a truncated one is not.
    let exact = block_with(bip34_height_prefix(Height::new(1_000)), vec![], Commitment::None);
    let regtest = Params::regtest();
    assert_eq!(reason_at(&exact, 1_000, &regtest), Ok(()));
    let truncated = block_with(vec![0x02, 0xe8], vec![], Commitment::None);
    assert_eq!(reason_at(&truncated, 1_000, &regtest), Err("bad-cb-height".into()));
    // Before activation any coinbase script will do.
    let bip34_later = RegtestOptions::new()
        .activation_height(BuriedDeployment::HeightInCoinbase, HEIGHT + 1)
        .build();
    assert_eq!(reason_at(&next_height, HEIGHT, &bip34_later), Ok(()));
    let at_activation = block_with(height_script(HEIGHT + 2), vec![], Commitment::None);
    assert_eq!(reason_at(&at_activation, HEIGHT + 1, &bip34_later), Err("bad-cb-height".into()));
}

#[test]
fn witness_commitment_once_segwit_is_active() {
    let witness_spend = || spend(0, 0, vec![vec![5; 72], vec![2; 33]]);
    assert_eq!(reason(&block(vec![witness_spend()], Commitment::Correct)), Ok(()));
    assert_eq!(
        reason(&block(vec![witness_spend()], Commitment::None)),
        Err("unexpected-witness".into())
    );
    assert_eq!(
        reason(&block(vec![witness_spend()], Commitment::WrongRoot)),
        Err("bad-witness-merkle-match".into())
    );
    assert_eq!(
        reason(&block(vec![witness_spend()], Commitment::ShortNonce)),
        Err("bad-witness-nonce-size".into())
    );
    // A commitment without witness data elsewhere is fine, and so is none.
    assert_eq!(reason(&block(vec![spend(0, 0, vec![])], Commitment::Correct)), Ok(()));
    assert_eq!(reason(&block(vec![spend(0, 0, vec![])], Commitment::None)), Ok(()));
    // Before segwit no witness data at all, commitment or not (the
    // commitment is not even read: a wrong one passes without witnesses).
    let segwit_later =
        RegtestOptions::new().activation_height(BuriedDeployment::Segwit, HEIGHT + 1).build();
    assert_eq!(
        reason_at(&block(vec![witness_spend()], Commitment::Correct), HEIGHT, &segwit_later),
        Err("unexpected-witness".into())
    );
    let wrong_without_witness = block_with(height_script(HEIGHT), vec![], Commitment::WrongRoot);
    // The coinbase witness (the reserved value) is witness data too.
    assert_eq!(
        reason_at(&wrong_without_witness, HEIGHT, &segwit_later),
        Err("unexpected-witness".into())
    );
    // Without the reserved value, a wrong commitment passes before segwit and
    // fails on the reserved value's size once segwit is active.
    let no_reserved_value = |height: u32| {
        let mut block = block_with(height_script(height), vec![], Commitment::WrongRoot);
        block.transactions[0].inputs[0].witness.clear();
        block.header.merkle_root = block.compute_merkle_root().root;
        block
    };
    assert_eq!(reason_at(&no_reserved_value(HEIGHT), HEIGHT, &segwit_later), Ok(()));
    assert_eq!(
        reason_at(&no_reserved_value(HEIGHT + 1), HEIGHT + 1, &segwit_later),
        Err("bad-witness-nonce-size".into())
    );
}

/// A block whose one spend carries a witness item of `filler_bytes`.
fn heavy_block(filler_bytes: usize, commitment: Commitment) -> Block {
    block(vec![spend(0, 0, vec![vec![0; filler_bytes]])], commitment)
}

#[test]
fn weight_limit_after_the_witness_commitment() {
    let first_guess = 3_990_000;
    let weight = heavy_block(first_guess, Commitment::Correct).weight();
    // Witness bytes weigh one unit each; the item's length prefix stays 5 bytes.
    let at_limit = first_guess + (BLOCK_WEIGHT_MAX - weight);
    let exact = heavy_block(at_limit, Commitment::Correct);
    assert_eq!(exact.weight(), BLOCK_WEIGHT_MAX);
    assert_eq!(reason(&exact), Ok(()));
    let over = heavy_block(at_limit + 1, Commitment::Correct);
    assert_eq!(reason(&over), Err("bad-blk-weight".into()));
    assert_eq!(
        check_at(&over, HEIGHT, &Params::regtest()),
        Err(BlockError::BadWeight { weight: BLOCK_WEIGHT_MAX + 1 })
    );
    // A bad commitment is reported first: the block may be a valid one with
    // its witness padded in transit.
    assert_eq!(
        reason(&heavy_block(at_limit + 1, Commitment::WrongRoot)),
        Err("bad-witness-merkle-match".into())
    );
}

#[test]
fn rules_run_in_cores_order() {
    // Non-final and wrong coinbase height: finality comes first.
    let both =
        block_with(height_script(HEIGHT + 1), vec![spend(HEIGHT, 0, vec![])], Commitment::None);
    assert_eq!(reason(&both), nonfinal());
    // Wrong coinbase height and unexpected witness: the height comes first.
    let witness = spend(0, 0, vec![vec![1]]);
    let height_and_witness = block_with(height_script(HEIGHT + 1), vec![witness], Commitment::None);
    assert_eq!(reason(&height_and_witness), Err("bad-cb-height".into()));
}

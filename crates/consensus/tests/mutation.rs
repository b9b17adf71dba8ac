//! Core's `IsBlockMutated`: which copies of a header's block the node must
//! treat as a peer's mangling rather than as the block.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::{is_block_mutated, BlockError, BlockMutation};
use ibex_primitives::{
    merkle_root, Block, BlockView, Header, OutPoint, Transaction, TxInput, TxOutput, Txid,
    WitnessCommitmentError,
};

fn transaction(tag: u8, script_sig_bytes: usize, witness: Vec<Vec<u8>>) -> Transaction {
    Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint { txid: Txid([tag; 32]), vout: 0 },
            script_sig: vec![tag; script_sig_bytes],
            sequence: u32::MAX,
            witness,
        }],
        outputs: vec![TxOutput { value: 1, script_pubkey: vec![0x51] }],
        lock_time: 0,
    }
}

fn coinbase() -> Transaction {
    let mut coinbase = transaction(0, 4, Vec::new());
    coinbase.inputs[0].previous_output = OutPoint::NULL;
    coinbase
}

/// `transactions` under a header committing to `committed` (their txids).
fn block(committed: &[Transaction], transactions: Vec<Transaction>) -> Vec<u8> {
    let txids = committed.iter().map(|transaction| transaction.txid().0).collect();
    let header = Header {
        version: 0x2000_0000,
        previous_block_hash: ibex_primitives::BlockHash([1; 32]),
        merkle_root: merkle_root(txids).root,
        time: 1,
        bits: 0x207f_ffff,
        nonce: 0,
    };
    Block { header, transactions }.encode()
}

fn mutation(bytes: &[u8], segwit: bool) -> Option<BlockMutation> {
    let view = BlockView::parse(bytes).unwrap();
    is_block_mutated(&view, &view.txids(), segwit)
}

#[test]
fn merkle_mismatches_and_duplicates_are_mutations() {
    let real = vec![coinbase(), transaction(1, 10, Vec::new()), transaction(2, 10, Vec::new())];
    assert_eq!(mutation(&block(&real, real.clone()), true), None);
    let mut doubled = real.clone();
    doubled.push(real[2].clone());
    assert_eq!(
        mutation(&block(&real, doubled), true),
        Some(BlockMutation::Merkle(BlockError::DuplicateTransactions))
    );
    assert_eq!(
        mutation(&block(&real, real[..2].to_vec()), true),
        Some(BlockMutation::Merkle(BlockError::BadMerkleRoot))
    );
}

#[test]
fn a_64_byte_transaction_counts_only_without_a_coinbase() {
    // Version, input count, one input (41 bytes with an empty scriptSig),
    // output count, one output of 10 bytes, lock time: 4 + 1 + 41 + 1 + 10
    // + 4 = 61 bytes, so a 3-byte scriptSig makes 64.
    let sixty_four = transaction(3, 3, Vec::new());
    assert_eq!(sixty_four.base_size(), 64);
    let sixty_five = transaction(3, 4, Vec::new());
    let alone = vec![sixty_four.clone()];
    assert_eq!(
        mutation(&block(&alone, alone.clone()), true),
        Some(BlockMutation::SixtyFourByteTransaction { index: 0 })
    );
    let alone = vec![sixty_five];
    assert_eq!(mutation(&block(&alone, alone.clone()), true), None, "65 bytes");
    // After a coinbase, a 64-byte transaction is no sign of mutation.
    let with_coinbase = vec![coinbase(), sixty_four];
    assert_eq!(mutation(&block(&with_coinbase, with_coinbase.clone()), true), None);
}

#[test]
fn witnesses_must_match_the_commitment_or_be_absent() {
    let witnessed = transaction(4, 0, vec![vec![0x51]]);
    let stripped = transaction(4, 0, Vec::new());
    assert_eq!(witnessed.txid(), stripped.txid());
    // No commitment: any witness is a mutation, with segwit active or not.
    let uncommitted = vec![coinbase(), witnessed.clone()];
    for segwit in [true, false] {
        assert_eq!(
            mutation(&block(&uncommitted, uncommitted.clone()), segwit),
            Some(BlockMutation::Witness(WitnessCommitmentError::UnexpectedWitness))
        );
    }
    // A commitment to the witnessed transaction: the stripped copy and an
    // altered one no longer match it.
    let mut committed_coinbase = coinbase();
    committed_coinbase.inputs[0].witness = vec![vec![0; 32]];
    let mut leaves = vec![[0u8; 32]];
    leaves.push(witnessed.wtxid().0);
    let mut preimage = [0u8; 64];
    preimage[..32].copy_from_slice(&merkle_root(leaves).root.0);
    let mut script = vec![0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
    script.extend_from_slice(&ibex_primitives::hash::sha256d(&preimage));
    committed_coinbase.outputs.push(TxOutput { value: 0, script_pubkey: script });
    let real = vec![committed_coinbase.clone(), witnessed];
    assert_eq!(mutation(&block(&real, real.clone()), true), None);
    let altered = transaction(4, 0, vec![vec![0x52]]);
    for copy in [stripped, altered] {
        let transactions = vec![committed_coinbase.clone(), copy];
        assert_eq!(
            mutation(&block(&real, transactions), true),
            Some(BlockMutation::Witness(WitnessCommitmentError::MerkleMismatch))
        );
    }
    // Before segwit the commitment is not read: the witness itself is the
    // mutation.
    assert_eq!(
        mutation(&block(&real, real.clone()), false),
        Some(BlockMutation::Witness(WitnessCommitmentError::UnexpectedWitness))
    );
}

#[test]
fn a_commitment_checked_before_is_not_hashed_again_only_with_segwit_active() {
    use ibex_consensus::contextual_check_block_known;
    use ibex_consensus::finality::bip34_height_prefix;
    let params = ibex_primitives::Params::regtest();
    let height = ibex_primitives::Height::new(1);
    // A coinbase committing to a witness root that does not match the
    // block's (all zeros): the commitment check must fail when it runs.
    let mut coinbase = coinbase();
    coinbase.inputs[0].script_sig = bip34_height_prefix(height);
    coinbase.inputs[0].script_sig.extend_from_slice(&[0, 0]);
    coinbase.inputs[0].witness = vec![vec![0; 32]];
    let mut script = vec![0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
    script.extend_from_slice(&[0; 32]);
    coinbase.outputs.push(TxOutput { value: 0, script_pubkey: script });
    let transactions = vec![coinbase, transaction(5, 0, vec![vec![0x51]])];
    let bytes = block(&transactions, transactions.clone());
    let view = BlockView::parse(&bytes).unwrap();
    let check =
        |witness_checked| contextual_check_block_known(&view, height, 0, &params, witness_checked);
    assert_eq!(
        check(false),
        Err(BlockError::WitnessCommitment(WitnessCommitmentError::MerkleMismatch))
    );
    assert_eq!(check(true), Ok(()), "the caller vouches for the commitment");
    // Before segwit the word is ignored: witnesses are refused all the same.
    let mut before_segwit = params.clone();
    before_segwit.segwit_height = 10;
    assert_eq!(
        contextual_check_block_known(&view, height, 0, &before_segwit, true),
        Err(BlockError::WitnessCommitment(WitnessCommitmentError::UnexpectedWitness))
    );
}

//! BIP325's solution parsing on a signet whose challenge is `OP_TRUE`, the
//! cases Core's own `signet_parse_tests` walks through: what counts as a
//! solution, what is refused for its shape alone, and the genesis block's
//! exemption.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::signet::{check_signet_block_solution, SignetError, SignetTransactions};
use ibex_primitives::{
    Block, BlockView, Hash256, Header, OutPoint, Params, Transaction, TxInput, TxOutput,
};

const OP_RETURN: u8 = 0x6a;
const OP_TRUE: u8 = 0x51;

/// A block of two one-output transactions, the first's output script
/// `script` (the second only exercises the merkle root).
fn block_with_first_output(script: Vec<u8>) -> Block {
    let transaction = |script_pubkey| Transaction {
        version: 1,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig: vec![0, 0],
            ..TxInput::default()
        }],
        outputs: vec![TxOutput { value: 0, script_pubkey }],
        lock_time: 0,
    };
    Block {
        header: Header {
            version: 1,
            previous_block_hash: ibex_primitives::BlockHash([3; 32]),
            merkle_root: Hash256([0; 32]),
            time: 1_600_000_000,
            bits: 0x1e03_77ae,
            nonce: 0,
        },
        transactions: vec![transaction(script), transaction(Vec::new())],
    }
}

/// `OP_RETURN`, the BIP141 commitment push, then a push of each of
/// `signet_pushes`.
fn commitment_script(signet_pushes: &[&[u8]]) -> Vec<u8> {
    let mut commitment = vec![0xaa, 0x21, 0xa9, 0xed];
    commitment.extend_from_slice(&[0xff; 32]);
    let mut script = vec![OP_RETURN];
    ibex_script::script::push_data_into(&commitment, &mut script);
    for push in signet_pushes {
        ibex_script::script::push_data_into(push, &mut script);
    }
    script
}

fn verdict(block: &Block) -> Result<(), SignetError> {
    let params = Params::custom_signet(vec![OP_TRUE]);
    let bytes = block.encode();
    let view = BlockView::parse(&bytes).unwrap();
    let result = check_signet_block_solution(&view, &view.txids(), &view.block_hash(), &params);
    // `SignetTransactions::create` fails exactly where the shape is wrong.
    let created = SignetTransactions::create(&view, &view.txids(), &[OP_TRUE]);
    if let Err(SignetError::NoWitnessCommitment | SignetError::SolutionUnparsable) = result {
        assert!(created.is_err());
    }
    result
}

#[test]
fn solutions_are_found_and_parsed_as_core_does() {
    let header = [0xec, 0xc7, 0xda, 0xa2];
    let cases: [(&str, Vec<u8>, Result<(), SignetError>); 6] = [
        ("no witness commitment", Vec::new(), Err(SignetError::NoWitnessCommitment)),
        ("no signet push: an empty solution", commitment_script(&[]), Ok(())),
        ("the header alone: an empty solution", commitment_script(&[&header]), Ok(())),
        (
            "a scriptSig and no witness count",
            commitment_script(&[&[&header[..], &[0x01, OP_TRUE]].concat()]),
            Err(SignetError::SolutionUnparsable),
        ),
        (
            "a scriptSig and an empty witness",
            commitment_script(&[&[&header[..], &[0x01, OP_TRUE, 0x00]].concat()]),
            Ok(()),
        ),
        (
            "a byte after the witness",
            commitment_script(&[&[&header[..], &[0x01, OP_TRUE, 0x00, 0x00]].concat()]),
            Err(SignetError::SolutionUnparsable),
        ),
    ];
    for (name, script, expected) in cases {
        assert_eq!(verdict(&block_with_first_output(script)), expected, "{name}");
    }
}

#[test]
fn a_solution_that_leaves_false_fails_and_genesis_needs_none() {
    let header = [0xec, 0xc7, 0xda, 0xa2];
    // scriptSig OP_0 then OP_TRUE's challenge: the top is true, valid; a
    // scriptSig of OP_0 OP_RETURN fails before the challenge runs.
    let returns = commitment_script(&[&[&header[..], &[0x02, 0x00, OP_RETURN, 0x00]].concat()]);
    assert!(matches!(verdict(&block_with_first_output(returns)), Err(SignetError::Script(_))));

    let params = Params::custom_signet(vec![0x00]);
    let genesis = params.genesis.encode();
    let view = BlockView::parse(&genesis).unwrap();
    assert_eq!(
        check_signet_block_solution(&view, &view.txids(), &params.genesis_hash, &params),
        Ok(()),
        "the genesis block has no witness commitment yet passes"
    );
    let regtest = Params::regtest();
    let block = block_with_first_output(Vec::new()).encode();
    let view = BlockView::parse(&block).unwrap();
    assert_eq!(
        check_signet_block_solution(&view, &view.txids(), &view.block_hash(), &regtest),
        Ok(()),
        "no challenge off signet"
    );
}

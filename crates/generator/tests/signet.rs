//! Signet blocks the generator signs pass BIP325's check as the consensus
//! crate runs it (Core's `CheckSignetBlockSolution`), and each way of
//! getting the solution wrong fails it as `bad-signet-blksig`; the written
//! chain carries the signet's own magic and a manifest naming its
//! challenge.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::{check_block_on_network, BlockError, SignetError};
use ibex_generator::signet::{
    signet_block, write_signet_chain, SignetChainOptions, SignetPlace, SignetSigner, SolutionFault,
};
use ibex_primitives::pow::check_proof_of_work;
use ibex_primitives::{Block, BlockView, Params};
use ibex_script::ScriptError;

fn verdict(block: &Block, params: &Params) -> Result<(), BlockError> {
    let bytes = block.encode();
    let view = BlockView::parse(&bytes).unwrap();
    let hash = view.block_hash();
    assert!(check_proof_of_work(&hash, ibex_primitives::CompactTarget(block.header.bits), params));
    check_block_on_network(&view, &view.txids(), &hash, params)
}

#[test]
fn signed_blocks_pass_and_every_fault_fails_as_bad_signet_blksig() {
    let signer = SignetSigner::from_secret([7; 32]).unwrap();
    let other = SignetSigner::from_secret([8; 32]).unwrap();
    let params = Params::custom_signet(signer.challenge());
    let place = SignetPlace {
        previous_block_hash: params.genesis_hash,
        previous_time: params.genesis.header.time,
        height: 1,
    };
    let payout = [0x51];
    let block = |fault| signet_block(&params, place, &signer, &payout, fault, 2).unwrap();

    let valid = block(SolutionFault::None);
    assert_eq!(verdict(&valid, &params), Ok(()));
    // The same block is no solution on another signet (nor on the default
    // one), and passes where no challenge applies.
    let elsewhere = Params::custom_signet(other.challenge());
    let error = verdict(&valid, &elsewhere).unwrap_err();
    assert_eq!(error.reject_reason(), "bad-signet-blksig");
    assert_eq!(
        check_block_on_network(
            &BlockView::parse(&valid.encode()).unwrap(),
            &BlockView::parse(&valid.encode()).unwrap().txids(),
            &valid.block_hash(),
            &Params::regtest(),
        ),
        Ok(())
    );

    let cases = [
        (SolutionFault::Missing, SignetError::Script(ScriptError::InvalidStackOperation)),
        (SolutionFault::WrongSignature, SignetError::Script(ScriptError::EvalFalse)),
        (SolutionFault::OtherChallenge(&other), SignetError::Script(ScriptError::EvalFalse)),
        (SolutionFault::ChangedAfterSigning, SignetError::Script(ScriptError::EvalFalse)),
    ];
    for (fault, expected) in cases {
        let broken = block(fault);
        let error = verdict(&broken, &params).unwrap_err();
        assert_eq!(error, BlockError::BadSignetSolution(expected), "{fault:?}");
        assert_eq!(error.reject_reason(), "bad-signet-blksig", "{fault:?}");
    }
}

#[test]
fn a_written_chain_names_its_challenge_and_uses_its_magic() {
    let directory = tempfile::tempdir().unwrap();
    let options = SignetChainOptions {
        out: directory.path().join("blocks"),
        blocks: 2,
        secret: [9; 32],
        threads: 2,
    };
    let report = write_signet_chain(&options).unwrap();
    let signer = SignetSigner::from_secret([9; 32]).unwrap();
    assert_eq!(report.challenge_hex, ibex_primitives::hex::encode(&signer.challenge()));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report.manifest_path).unwrap()).unwrap();
    assert_eq!(manifest["signet_challenge"], report.challenge_hex);
    assert_eq!(manifest["tip_hash"], report.tip_hash.to_hex());
    let params = Params::custom_signet(signer.challenge());
    let file = std::fs::read(options.out.join("blk00000.dat")).unwrap();
    // Three records (genesis and two blocks), each opening with the magic.
    let mut offset = 0;
    let mut previous = None;
    for _ in 0..3 {
        assert_eq!(file[offset..offset + 4], params.message_start);
        let size = u32::from_le_bytes(file[offset + 4..offset + 8].try_into().unwrap()) as usize;
        let block = Block::decode(&file[offset + 8..offset + 8 + size]).unwrap();
        if let Some(previous) = previous {
            assert_eq!(block.header.previous_block_hash, previous);
            assert_eq!(verdict(&block, &params), Ok(()));
        }
        previous = Some(block.block_hash());
        offset += 8 + size;
    }
    assert_eq!(previous, Some(report.tip_hash));
}

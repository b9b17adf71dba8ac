//! Taproot spends signed here and verified end to end through
//! `verify_script` and the transaction checker: key path with and without
//! annex, script path through a two-leaf tree, OP_CODESEPARATOR positions,
//! OP_CHECKSIGADD multisig, and the BIP342 validation weight budget (which
//! the annex raises). These check that the interpreter hands the sighash the
//! execution data (tapleaf hash, code separator position, annex) BIP342 signs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};
use ibex_script::assembly::parse_assembly;
use ibex_script::sighash::taproot::{taproot_sighash, TaprootInput};
use ibex_script::taproot::{
    tapbranch_hash, tapleaf_hash, taptweak_hash, tweaked_output_key, TAPROOT_LEAF_TAPSCRIPT,
};
use ibex_script::{
    verify_script, ExecutionData, PrecomputedTransactionData, ScriptError, SigVersion, SpentOutput,
    TransactionChecker, VerifyFlags,
};
use secp256k1::{Keypair, Scalar, Secp256k1, SecretKey};

const AMOUNT: i64 = 100_000;

fn flags() -> VerifyFlags {
    VerifyFlags::parse("P2SH,WITNESS,TAPROOT,NULLFAIL,CLEANSTACK,DISCOURAGE_OP_SUCCESS").unwrap()
}

fn keypair(seed: u8) -> Keypair {
    Keypair::from_secret_key(&Secp256k1::new(), &SecretKey::from_byte_array([seed; 32]).unwrap())
}

fn x_only(keypair: &Keypair) -> [u8; 32] {
    keypair.x_only_public_key().0.serialize()
}

/// The spending transaction's bytes with `witness` on its only input.
fn spending_bytes(witness: Vec<Vec<u8>>) -> Vec<u8> {
    Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint { txid: Txid([7; 32]), vout: 1 },
            script_sig: Vec::new(),
            sequence: 0xffff_fffd,
            witness,
        }],
        outputs: vec![TxOutput { value: AMOUNT - 1_000, script_pubkey: vec![0x51] }],
        lock_time: 0,
    }
    .encode()
}

/// A spend of `script_pubkey`, signed by `sign` (given the transaction
/// without its witness, which sighashes do not cover) and verified.
struct Spend {
    script_pubkey: Vec<u8>,
}

impl Spend {
    fn sighash(&self, sig_version: SigVersion, execution: &ExecutionData) -> [u8; 32] {
        let bytes = spending_bytes(Vec::new());
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let view = parsed.view();
        let spent = SpentOutput { amount: AMOUNT, script_pubkey: &self.script_pubkey };
        let precomputed = PrecomputedTransactionData::with_force(&view, &[spent], true).unwrap();
        let input = TaprootInput { input_index: 0, spent_output: spent, sig_version, execution };
        taproot_sighash(&view, &input, 0, precomputed.bip341()).unwrap()
    }

    fn verify(&self, witness: Vec<Vec<u8>>) -> Result<(), ScriptError> {
        let bytes = spending_bytes(witness.clone());
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let view = parsed.view();
        let spent = SpentOutput { amount: AMOUNT, script_pubkey: &self.script_pubkey };
        let precomputed = PrecomputedTransactionData::new(&view, &[spent]).unwrap();
        let checker = TransactionChecker::new(view, 0, spent, &precomputed).unwrap();
        let items: Vec<&[u8]> = witness.iter().map(Vec::as_slice).collect();
        verify_script(&[], &self.script_pubkey, &items, flags(), &checker)
    }
}

fn sign(keypair: &Keypair, sighash: &[u8; 32]) -> Vec<u8> {
    Secp256k1::new().sign_schnorr_no_aux_rand(sighash, keypair).to_byte_array().to_vec()
}

fn p2tr(output_key: &[u8; 32]) -> Vec<u8> {
    [&[0x51, 0x20][..], output_key].concat()
}

fn annex_hash(annex: &[u8]) -> [u8; 32] {
    ibex_script::sighash::taproot::annex_hash(annex)
}

#[test]
fn key_path_with_and_without_annex() {
    let internal = keypair(1);
    let (output_key, _) = tweaked_output_key(&x_only(&internal), None).unwrap();
    let tweak = Scalar::from_be_bytes(taptweak_hash(&x_only(&internal), None)).unwrap();
    let tweaked = internal.add_xonly_tweak(&Secp256k1::new(), &tweak).unwrap();
    let spend = Spend { script_pubkey: p2tr(&output_key) };

    let plain = ExecutionData { annex: Some(None), ..Default::default() };
    let signature = sign(&tweaked, &spend.sighash(SigVersion::Taproot, &plain));
    assert_eq!(spend.verify(vec![signature.clone()]), Ok(()));
    let mut wrong = signature.clone();
    wrong[10] ^= 1;
    assert_eq!(spend.verify(vec![wrong]), Err(ScriptError::SchnorrSig));
    assert_eq!(spend.verify(vec![signature[..63].to_vec()]), Err(ScriptError::SchnorrSigSize));
    assert_eq!(spend.verify(vec![]), Err(ScriptError::WitnessProgramWitnessEmpty));

    // The annex is signed: the same signature fails once an annex is added.
    let annex = vec![0x50, 0xaa, 0xbb];
    assert_eq!(spend.verify(vec![signature, annex.clone()]), Err(ScriptError::SchnorrSig));
    let with_annex = ExecutionData { annex: Some(Some(annex_hash(&annex))), ..Default::default() };
    let signature = sign(&tweaked, &spend.sighash(SigVersion::Taproot, &with_annex));
    assert_eq!(spend.verify(vec![signature, annex]), Ok(()));
}

/// A two-leaf tree under `internal`: its scriptPubKey and each leaf's control block.
fn two_leaf_tree(internal: &[u8; 32], leaves: [&[u8]; 2]) -> (Vec<u8>, [Vec<u8>; 2]) {
    let hashes = leaves.map(|script| tapleaf_hash(TAPROOT_LEAF_TAPSCRIPT, script));
    let root = tapbranch_hash(&hashes[0], &hashes[1]);
    let (output_key, odd) = tweaked_output_key(internal, Some(&root)).unwrap();
    let control = |sibling: &[u8; 32]| {
        [&[TAPROOT_LEAF_TAPSCRIPT | u8::from(odd)][..], internal, sibling].concat()
    };
    (p2tr(&output_key), [control(&hashes[1]), control(&hashes[0])])
}

fn tapscript_execution(script: &[u8], codeseparator_position: u32) -> ExecutionData {
    ExecutionData {
        tapleaf_hash: Some(tapleaf_hash(TAPROOT_LEAF_TAPSCRIPT, script)),
        codeseparator_position: Some(codeseparator_position),
        annex: Some(None),
        validation_weight_left: None,
    }
}

#[test]
fn script_path_leaves_and_code_separators() {
    let (alice, bob) = (keypair(2), keypair(3));
    let leaf_a = [&[0x20][..], &x_only(&alice), &[0xac]].concat();
    // OP_1 OP_DROP OP_CODESEPARATOR <bob> OP_CHECKSIG: the separator is opcode 2.
    let leaf_b = [&[0x51, 0x75, 0xab, 0x20][..], &x_only(&bob), &[0xac]].concat();
    let (script_pubkey, controls) = two_leaf_tree(&x_only(&keypair(9)), [&leaf_a, &leaf_b]);
    let spend = Spend { script_pubkey };

    let sighash_a = spend.sighash(SigVersion::Tapscript, &tapscript_execution(&leaf_a, u32::MAX));
    let signature_a = sign(&alice, &sighash_a);
    assert_eq!(
        spend.verify(vec![signature_a.clone(), leaf_a.clone(), controls[0].clone()]),
        Ok(())
    );
    // The leaf's own control block is required.
    assert_eq!(
        spend.verify(vec![signature_a.clone(), leaf_a.clone(), controls[1].clone()]),
        Err(ScriptError::WitnessProgramMismatch)
    );
    let mut short_control = controls[0].clone();
    short_control.pop();
    assert_eq!(
        spend.verify(vec![signature_a.clone(), leaf_a.clone(), short_control]),
        Err(ScriptError::TaprootWrongControlSize)
    );
    // An empty signature is a failed check, leaving false.
    assert_eq!(
        spend.verify(vec![vec![], leaf_a, controls[0].clone()]),
        Err(ScriptError::EvalFalse)
    );

    let signed_at = |position| {
        sign(&bob, &spend.sighash(SigVersion::Tapscript, &tapscript_execution(&leaf_b, position)))
    };
    assert_eq!(spend.verify(vec![signed_at(2), leaf_b.clone(), controls[1].clone()]), Ok(()));
    assert_eq!(
        spend.verify(vec![signed_at(u32::MAX), leaf_b.clone(), controls[1].clone()]),
        Err(ScriptError::SchnorrSig)
    );
}

#[test]
fn checksigadd_two_of_two() {
    let (alice, bob) = (keypair(4), keypair(5));
    let script =
        [&[0x20][..], &x_only(&alice), &[0xac, 0x20], &x_only(&bob), &[0xba, 0x52, 0x9c]].concat();
    let (script_pubkey, controls) = two_leaf_tree(&x_only(&keypair(9)), [&script, &[0x51]]);
    let spend = Spend { script_pubkey };
    let sighash = spend.sighash(SigVersion::Tapscript, &tapscript_execution(&script, u32::MAX));
    let (signature_a, signature_b) = (sign(&alice, &sighash), sign(&bob, &sighash));
    let witness = |first: Vec<u8>, second: Vec<u8>| {
        // Bottom first: Bob's signature is consumed by the second check.
        vec![second, first, script.clone(), controls[0].clone()]
    };
    assert_eq!(spend.verify(witness(signature_a.clone(), signature_b.clone())), Ok(()));
    assert_eq!(spend.verify(witness(signature_a.clone(), vec![])), Err(ScriptError::EvalFalse));
    assert_eq!(
        spend.verify(witness(signature_b.clone(), signature_a.clone())),
        Err(ScriptError::SchnorrSig)
    );
    // The other leaf is a plain OP_1.
    assert_eq!(spend.verify(vec![vec![0x51], controls[1].clone()]), Ok(()));
}

#[test]
fn validation_weight_budget_counts_the_whole_witness() {
    let signer = keypair(6);
    // One signature checked 20 times: 1,000 units against a witness of ~850 bytes.
    let checks = 20;
    let mut script = Vec::new();
    for check in 1..=checks {
        let last = check == checks;
        if !last {
            script.push(0x76); // OP_DUP
        }
        script.push(0x20);
        script.extend_from_slice(&x_only(&signer));
        script.push(if last { 0xac } else { 0xad }); // OP_CHECKSIG(VERIFY)
    }
    let (script_pubkey, controls) = two_leaf_tree(&x_only(&keypair(9)), [&script, &[0x51]]);
    let spend = Spend { script_pubkey };
    let signature = sign(
        &signer,
        &spend.sighash(SigVersion::Tapscript, &tapscript_execution(&script, u32::MAX)),
    );
    assert_eq!(
        spend.verify(vec![signature.clone(), script.clone(), controls[0].clone()]),
        Err(ScriptError::TapscriptValidationWeight)
    );
    // A 200-byte annex pays for the missing weight; it is signed too.
    let annex = [&[0x50][..], &[0u8; 199]].concat();
    let execution = ExecutionData {
        annex: Some(Some(annex_hash(&annex))),
        ..tapscript_execution(&script, u32::MAX)
    };
    let signature = sign(&signer, &spend.sighash(SigVersion::Tapscript, &execution));
    assert_eq!(spend.verify(vec![signature, script, controls[0].clone(), annex]), Ok(()));
}

#[test]
fn op_success_overrides_everything_else() {
    let internal = x_only(&keypair(9));
    // OP_SUCCESS80 (0x50) after a truncated-looking tail still succeeds...
    let success = vec![0x50, 0x4c];
    let (script_pubkey, controls) = two_leaf_tree(&internal, [&success, &[0x51]]);
    let spend = Spend { script_pubkey };
    let witness = vec![success.clone(), controls[0].clone()];
    let items: Vec<&[u8]> = witness.iter().map(Vec::as_slice).collect();
    let lenient = VerifyFlags::parse("P2SH,WITNESS,TAPROOT").unwrap();
    let bytes = spending_bytes(witness.clone());
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let spent = SpentOutput { amount: AMOUNT, script_pubkey: &spend.script_pubkey };
    let precomputed = PrecomputedTransactionData::new(&parsed.view(), &[spent]).unwrap();
    let checker = TransactionChecker::new(parsed.view(), 0, spent, &precomputed).unwrap();
    assert_eq!(verify_script(&[], &spend.script_pubkey, &items, lenient, &checker), Ok(()));
    // ...unless discouraged by policy.
    assert_eq!(spend.verify(witness), Err(ScriptError::DiscourageOpSuccess));

    // A truncated push before any OP_SUCCESS is a bad opcode.
    let truncated = parse_assembly("0x4c").unwrap();
    let (script_pubkey, controls) = two_leaf_tree(&internal, [&truncated, &[0x51]]);
    let spend = Spend { script_pubkey };
    assert_eq!(spend.verify(vec![truncated, controls[0].clone()]), Err(ScriptError::BadOpcode));
}

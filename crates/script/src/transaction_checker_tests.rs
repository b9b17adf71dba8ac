use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};
use secp256k1::{Keypair, Message, Secp256k1, SecretKey};

use super::*;
use crate::sighash::taproot::taproot_sighash;

fn transaction_bytes(
    version: i32,
    lock_time: u32,
    sequences: &[u32],
    with_witness: bool,
) -> Vec<u8> {
    let inputs = sequences
        .iter()
        .enumerate()
        .map(|(index, &sequence)| TxInput {
            previous_output: OutPoint { txid: Txid([index as u8 + 1; 32]), vout: index as u32 },
            script_sig: Vec::new(),
            sequence,
            witness: if with_witness { vec![vec![1]] } else { Vec::new() },
        })
        .collect();
    let outputs = vec![TxOutput { value: 5_000, script_pubkey: vec![0x51] }];
    Transaction { version, inputs, outputs, lock_time }.encode()
}

const NO_SPENT: SpentOutput<'static> = SpentOutput { amount: 0, script_pubkey: &[] };

#[test]
fn checker_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TransactionChecker<'static>>();
    assert_send_sync::<PrecomputedTransactionData>();
}

#[test]
fn input_index_is_checked() {
    let bytes = transaction_bytes(2, 0, &[0], false);
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let precomputed = PrecomputedTransactionData::default();
    assert!(TransactionChecker::new(parsed.view(), 0, NO_SPENT, &precomputed).is_ok());
    assert_eq!(
        TransactionChecker::new(parsed.view(), 1, NO_SPENT, &precomputed).unwrap_err(),
        CheckerError::InputOutOfRange { input_index: 1, input_count: 1 }
    );
}

#[test]
fn lock_time_rules() {
    let precomputed = PrecomputedTransactionData::default();
    let check = |lock_time: u32, sequence: u32, wanted: i64| {
        let bytes = transaction_bytes(1, lock_time, &[sequence], false);
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let checker = TransactionChecker::new(parsed.view(), 0, NO_SPENT, &precomputed).unwrap();
        checker.check_lock_time(wanted)
    };
    assert!(check(100, 0, 100));
    assert!(check(100, 0, 0));
    assert!(!check(100, 0, 101));
    // Heights and times do not compare.
    assert!(!check(100, 0, 500_000_000));
    assert!(!check(500_000_001, 0, 100));
    assert!(check(500_000_001, 0, 500_000_000));
    assert!(check(u32::MAX, 0, i64::from(u32::MAX)));
    // A final input disables the check.
    assert!(!check(100, SEQUENCE_FINAL, 50));
    assert!(check(100, SEQUENCE_FINAL - 1, 50));
}

#[test]
fn sequence_rules() {
    let precomputed = PrecomputedTransactionData::default();
    let check = |version: i32, sequence: u32, wanted: i64| {
        let bytes = transaction_bytes(version, 0, &[sequence], false);
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let checker = TransactionChecker::new(parsed.view(), 0, NO_SPENT, &precomputed).unwrap();
        checker.check_sequence(wanted)
    };
    assert!(check(2, 10, 10));
    assert!(check(2, 10, 9));
    assert!(!check(2, 10, 11));
    // Version below 2 (unsigned): no relative lock times; -1 is 0xffffffff.
    assert!(!check(1, 10, 10));
    assert!(check(-1, 10, 10));
    // Disabled input sequence.
    assert!(!check(2, SEQUENCE_LOCKTIME_DISABLE_FLAG | 10, 10));
    // Height and time kinds do not compare.
    assert!(!check(2, SEQUENCE_LOCKTIME_TYPE_FLAG | 10, 10));
    assert!(check(
        2,
        SEQUENCE_LOCKTIME_TYPE_FLAG | 10,
        i64::from(SEQUENCE_LOCKTIME_TYPE_FLAG) | 10
    ));
    // Bits outside the mask are ignored on both sides.
    assert!(check(2, 0x0001_0000 | 10, 0x0002_0000 | 10));
    assert!(check(2, 10, (1i64 << 32) | 10));
}

#[test]
fn ecdsa_segwit_signature() {
    let context = Secp256k1::new();
    let secret = SecretKey::from_byte_array([0x21; 32]).unwrap();
    let public = secret.public_key(&context).serialize();
    let bytes = transaction_bytes(2, 0, &[0xffff_fffe, 0xffff_fffe], true);
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let view = parsed.view();
    let script_code =
        [0x76, 0xa9, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0xac];
    let spent = SpentOutput { amount: 70_000, script_pubkey: &[0x00, 0x14] };
    let precomputed = PrecomputedTransactionData::new(&view, &[spent, spent]).unwrap();
    assert!(precomputed.bip143().is_some());
    let sighash =
        segwit_v0_sighash(&view, 1, &script_code, 70_000, 1, precomputed.bip143().unwrap());
    let mut signature =
        context.sign_ecdsa(Message::from_digest(sighash), &secret).serialize_der().to_vec();
    signature.push(1);

    let checker = TransactionChecker::new(view, 1, spent, &precomputed).unwrap();
    assert!(checker.check_ecdsa_signature(
        &signature,
        &public,
        &script_code,
        SigVersion::WitnessV0
    ));
    // Other input, other amount, legacy rules, taproot rules: all fail.
    let other_input = TransactionChecker::new(view, 0, spent, &precomputed).unwrap();
    assert!(!other_input.check_ecdsa_signature(
        &signature,
        &public,
        &script_code,
        SigVersion::WitnessV0
    ));
    let other_amount = SpentOutput { amount: 70_001, ..spent };
    let other_amount = TransactionChecker::new(view, 1, other_amount, &precomputed).unwrap();
    assert!(!other_amount.check_ecdsa_signature(
        &signature,
        &public,
        &script_code,
        SigVersion::WitnessV0
    ));
    assert!(!checker.check_ecdsa_signature(&signature, &public, &script_code, SigVersion::Base));
    assert!(!checker.check_ecdsa_signature(&signature, &public, &script_code, SigVersion::Taproot));
    assert!(!checker.check_ecdsa_signature(&[], &public, &script_code, SigVersion::WitnessV0));
    // Without precomputed data the hashes are computed on the fly, same answer.
    let nothing = PrecomputedTransactionData::default();
    let on_the_fly = TransactionChecker::new(view, 1, spent, &nothing).unwrap();
    assert!(on_the_fly.check_ecdsa_signature(
        &signature,
        &public,
        &script_code,
        SigVersion::WitnessV0
    ));
}

#[test]
fn schnorr_key_path_signature() {
    let context = Secp256k1::new();
    let keypair = Keypair::from_seckey_byte_array(&context, [0x37; 32]).unwrap();
    let x_only = keypair.x_only_public_key().0.serialize();
    let mut script_pubkey = vec![0x51, 0x20];
    script_pubkey.extend_from_slice(&x_only);
    // Two inputs, one output: SIGHASH_SINGLE has no output for input 1.
    let bytes = transaction_bytes(2, 0, &[0, 0], true);
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let view = parsed.view();
    let spent = SpentOutput { amount: 1_000, script_pubkey: &script_pubkey };
    let precomputed = PrecomputedTransactionData::new(&view, &[spent, spent]).unwrap();
    assert!(precomputed.bip341().is_some());
    assert!(precomputed.bip143().is_none());
    let execution = ExecutionData { annex: Some(None), ..ExecutionData::default() };
    let sign = |input_index: usize, hash_type: u8| {
        let input = TaprootInput {
            input_index,
            spent_output: spent,
            sig_version: SigVersion::Taproot,
            execution: &execution,
        };
        let sighash = taproot_sighash(&view, &input, hash_type, precomputed.bip341()).unwrap();
        let mut signature =
            context.sign_schnorr_no_aux_rand(&sighash, &keypair).to_byte_array().to_vec();
        if hash_type != 0 {
            signature.push(hash_type);
        }
        signature
    };
    let checker = TransactionChecker::new(view, 1, spent, &precomputed).unwrap();
    let check = |signature: &[u8]| {
        checker.check_schnorr_signature(signature, &x_only, SigVersion::Taproot, &execution)
    };
    assert_eq!(check(&sign(1, 0)), Ok(()));
    assert_eq!(check(&sign(1, 0x81)), Ok(()));
    assert_eq!(check(&sign(1, 0x82)), Ok(()));
    assert_eq!(check(&sign(0, 0)), Err(ScriptError::SchnorrSig));
    let mut explicit_default = sign(1, 0);
    explicit_default.push(0);
    assert_eq!(check(&explicit_default), Err(ScriptError::SchnorrSigHashtype));
    assert_eq!(check(&sign(1, 0)[..63]), Err(ScriptError::SchnorrSigSize));
    assert_eq!(check(&[]), Err(ScriptError::SchnorrSigSize));
    let mut undefined = sign(1, 0);
    undefined.push(0x84);
    assert_eq!(check(&undefined), Err(ScriptError::SchnorrSigHashtype));
    // SINGLE without an output at index 1.
    let mut single = sign(1, 0);
    single.push(0x03);
    assert_eq!(check(&single), Err(ScriptError::SchnorrSigHashtype));
    // Without spent outputs there are no BIP341 hashes: Core fails the same way.
    let unknown = PrecomputedTransactionData::new(&view, &[]).unwrap();
    let blind = TransactionChecker::new(view, 1, spent, &unknown).unwrap();
    assert_eq!(
        blind.check_schnorr_signature(&sign(1, 0), &x_only, SigVersion::Taproot, &execution),
        Err(ScriptError::SchnorrSigHashtype)
    );
}

//! `bip341_wallet_vectors.json`: taproot output keys from script trees, and a
//! key-path signed transaction (intermediate hashes, signature messages,
//! sighashes, tweaked keys and BIP340 signatures with zero aux randomness).

use ibex_primitives::ParsedTransaction;
use ibex_script::sighash::taproot::{taproot_sighash, write_taproot_message, TaprootInput};
use ibex_script::taproot::{
    check_tap_tweak, tapbranch_hash, tapleaf_hash, taptweak_hash as tap_tweak_hash,
};
use ibex_script::{
    ExecutionData, PrecomputedTransactionData, SigVersion, SignatureChecker, SpentOutput,
    TransactionChecker,
};
use secp256k1::{Keypair, Scalar, Secp256k1, XOnlyPublicKey};
use serde_json::Value;

use crate::common::{hex, hex32, load_json};

/// A leaf of a script tree: its id, leaf hash, version and path to the root.
struct Leaf {
    id: u64,
    hash: [u8; 32],
    version: u8,
    path: Vec<[u8; 32]>,
}

/// The merkle root of a tree given as a leaf object or a two-element array.
fn walk_tree(tree: &Value, leaves: &mut Vec<Leaf>) -> [u8; 32] {
    if let Some(children) = tree.as_array() {
        assert_eq!(children.len(), 2);
        let first_leaf = leaves.len();
        let left = walk_tree(&children[0], leaves);
        let middle = leaves.len();
        let right = walk_tree(&children[1], leaves);
        for leaf in &mut leaves[first_leaf..middle] {
            leaf.path.push(right);
        }
        for leaf in &mut leaves[middle..] {
            leaf.path.push(left);
        }
        return tapbranch_hash(&left, &right);
    }
    let version = tree["leafVersion"].as_u64().unwrap() as u8;
    let hash = tapleaf_hash(version, &hex(tree["script"].as_str().unwrap()));
    leaves.push(Leaf { id: tree["id"].as_u64().unwrap(), hash, version, path: Vec::new() });
    hash
}

#[test]
fn script_pubkey_vectors() {
    let vectors = load_json("bip341_wallet_vectors.json");
    let context = Secp256k1::verification_only();
    let mut checked = 0;
    for case in vectors["scriptPubKey"].as_array().unwrap() {
        let internal = hex32(case["given"]["internalPubkey"].as_str().unwrap());
        let intermediary = &case["intermediary"];
        let mut leaves = Vec::new();
        let merkle_root = match &case["given"]["scriptTree"] {
            Value::Null => None,
            tree => Some(walk_tree(tree, &mut leaves)),
        };
        match intermediary["merkleRoot"].as_str() {
            None => assert!(merkle_root.is_none()),
            Some(root) => assert_eq!(merkle_root, Some(hex32(root))),
        }
        if let Some(expected_hashes) = intermediary["leafHashes"].as_array() {
            let mut by_id: Vec<&Leaf> = leaves.iter().collect();
            by_id.sort_by_key(|leaf| leaf.id);
            let ours: Vec<[u8; 32]> = by_id.iter().map(|leaf| leaf.hash).collect();
            let expected: Vec<[u8; 32]> =
                expected_hashes.iter().map(|hash| hex32(hash.as_str().unwrap())).collect();
            assert_eq!(ours, expected);
        }
        let tweak = tap_tweak_hash(&internal, merkle_root.as_ref());
        assert_eq!(tweak, hex32(intermediary["tweak"].as_str().unwrap()));

        let internal_key = XOnlyPublicKey::from_byte_array(internal).unwrap();
        let (output_key, parity) =
            internal_key.add_tweak(&context, &Scalar::from_be_bytes(tweak).unwrap()).unwrap();
        let output = output_key.serialize();
        assert_eq!(output, hex32(intermediary["tweakedPubkey"].as_str().unwrap()));
        let mut script_pubkey = vec![0x51, 0x20];
        script_pubkey.extend_from_slice(&output);
        assert_eq!(script_pubkey, hex(case["expected"]["scriptPubKey"].as_str().unwrap()));
        let odd = parity == secp256k1::Parity::Odd;
        assert!(check_tap_tweak(&output, &internal, &tweak, odd));
        assert!(!check_tap_tweak(&output, &internal, &tweak, !odd));

        if let Some(blocks) = case["expected"]["scriptPathControlBlocks"].as_array() {
            leaves.sort_by_key(|leaf| leaf.id);
            assert_eq!(blocks.len(), leaves.len());
            for (leaf, expected) in leaves.iter().zip(blocks) {
                let mut control = vec![leaf.version | u8::from(odd)];
                control.extend_from_slice(&internal);
                for node in &leaf.path {
                    control.extend_from_slice(node);
                }
                assert_eq!(control, hex(expected.as_str().unwrap()), "leaf {}", leaf.id);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 7);
    eprintln!("bip341 scriptPubKey: {checked} of 7 cases match");
}

#[test]
fn key_path_spending_vectors() {
    let vectors = load_json("bip341_wallet_vectors.json");
    let signing = Secp256k1::new();
    let mut checked = 0;
    for case in vectors["keyPathSpending"].as_array().unwrap() {
        let raw = hex(case["given"]["rawUnsignedTx"].as_str().unwrap());
        let parsed = ParsedTransaction::parse(&raw).unwrap();
        let view = parsed.view();
        let scripts: Vec<Vec<u8>> = case["given"]["utxosSpent"]
            .as_array()
            .unwrap()
            .iter()
            .map(|utxo| hex(utxo["scriptPubKey"].as_str().unwrap()))
            .collect();
        let spent: Vec<SpentOutput<'_>> = case["given"]["utxosSpent"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&scripts)
            .map(|(utxo, script)| SpentOutput {
                amount: utxo["amountSats"].as_i64().unwrap(),
                script_pubkey: script,
            })
            .collect();
        // The unsigned transaction has no witnesses: force, as Core's test does.
        let precomputed = PrecomputedTransactionData::with_force(&view, &spent, true).unwrap();
        let hashes = precomputed.bip341().unwrap();
        let intermediary = &case["intermediary"];
        for (name, ours) in [
            ("hashAmounts", hashes.sha_amounts),
            ("hashOutputs", hashes.sha_outputs),
            ("hashPrevouts", hashes.sha_prevouts),
            ("hashScriptPubkeys", hashes.sha_scriptpubkeys),
            ("hashSequences", hashes.sha_sequences),
        ] {
            assert_eq!(ours, hex32(intermediary[name].as_str().unwrap()), "{name}");
        }

        let execution = ExecutionData { annex: Some(None), ..ExecutionData::default() };
        for input in case["inputSpending"].as_array().unwrap() {
            let given = &input["given"];
            let expected = &input["intermediary"];
            let input_index = given["txinIndex"].as_u64().unwrap() as usize;
            let hash_type = given["hashType"].as_u64().unwrap() as u8;
            let merkle_root = given["merkleRoot"].as_str().map(hex32);

            let keypair = Keypair::from_seckey_byte_array(
                &signing,
                hex32(given["internalPrivkey"].as_str().unwrap()),
            )
            .unwrap();
            let internal = keypair.x_only_public_key().0.serialize();
            assert_eq!(internal, hex32(expected["internalPubkey"].as_str().unwrap()));
            let tweak = tap_tweak_hash(&internal, merkle_root.as_ref());
            assert_eq!(tweak, hex32(expected["tweak"].as_str().unwrap()));
            let tweaked =
                keypair.add_xonly_tweak(&signing, &Scalar::from_be_bytes(tweak).unwrap()).unwrap();
            assert_eq!(tweaked.secret_bytes(), hex32(expected["tweakedPrivkey"].as_str().unwrap()));

            let taproot_input = TaprootInput {
                input_index,
                spent_output: spent[input_index],
                sig_version: SigVersion::Taproot,
                execution: &execution,
            };
            let mut message = Vec::new();
            write_taproot_message(&mut message, &view, &taproot_input, hash_type, Some(hashes))
                .unwrap();
            assert_eq!(message, hex(expected["sigMsg"].as_str().unwrap()), "input {input_index}");
            let sighash = taproot_sighash(&view, &taproot_input, hash_type, Some(hashes)).unwrap();
            assert_eq!(sighash, hex32(expected["sigHash"].as_str().unwrap()));

            let mut signature = signing
                .sign_schnorr_with_aux_rand(&sighash, &tweaked, &[0; 32])
                .to_byte_array()
                .to_vec();
            if hash_type != 0 {
                signature.push(hash_type);
            }
            let witness = &input["expected"]["witness"];
            assert_eq!(signature, hex(witness[0].as_str().unwrap()), "input {input_index}");

            // The checker accepts it for this input.
            let checker =
                TransactionChecker::new(view, input_index, spent[input_index], &precomputed)
                    .unwrap();
            let output_key = tweaked.x_only_public_key().0.serialize();
            assert_eq!(
                checker.check_schnorr_signature(
                    &signature,
                    &output_key,
                    SigVersion::Taproot,
                    &execution
                ),
                Ok(())
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 7);
    eprintln!("bip341 keyPathSpending: {checked} of 7 inputs match");
}

/// The fully signed transaction's signatures, taproot and ECDSA, all verify
/// through the checker (inputs 2 and 5 are P2PKH and P2WPKH).
#[test]
fn fully_signed_transaction_verifies() {
    let vectors = load_json("bip341_wallet_vectors.json");
    let case = &vectors["keyPathSpending"][0];
    let raw = hex(case["auxiliary"]["fullySignedTx"].as_str().unwrap());
    let parsed = ParsedTransaction::parse(&raw).unwrap();
    let view = parsed.view();
    let scripts: Vec<Vec<u8>> = case["given"]["utxosSpent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|utxo| hex(utxo["scriptPubKey"].as_str().unwrap()))
        .collect();
    let spent: Vec<SpentOutput<'_>> = case["given"]["utxosSpent"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&scripts)
        .map(|(utxo, script)| SpentOutput {
            amount: utxo["amountSats"].as_i64().unwrap(),
            script_pubkey: script,
        })
        .collect();
    let precomputed = PrecomputedTransactionData::new(&view, &spent).unwrap();
    assert!(precomputed.bip143().is_some() && precomputed.bip341().is_some());
    let execution = ExecutionData { annex: Some(None), ..ExecutionData::default() };
    let mut verified = 0;
    for (index, input) in view.inputs().iter().enumerate() {
        let checker = TransactionChecker::new(view, index, spent[index], &precomputed).unwrap();
        let script_pubkey = spent[index].script_pubkey;
        let witness = input.witness.to_vec();
        if script_pubkey.len() == 34 && script_pubkey[0] == 0x51 {
            let key = &script_pubkey[2..];
            assert_eq!(
                checker.check_schnorr_signature(witness[0], key, SigVersion::Taproot, &execution),
                Ok(()),
                "input {index}"
            );
            let mut broken = witness[0].to_vec();
            broken[10] ^= 1;
            assert!(checker
                .check_schnorr_signature(&broken, key, SigVersion::Taproot, &execution)
                .is_err());
        } else if script_pubkey.len() == 22 {
            // P2WPKH: witness [signature, key], script code is the P2PKH form.
            let mut script_code = vec![0x76, 0xa9, 0x14];
            script_code.extend_from_slice(&script_pubkey[2..]);
            script_code.extend_from_slice(&[0x88, 0xac]);
            assert!(checker.check_ecdsa_signature(
                witness[0],
                witness[1],
                &script_code,
                SigVersion::WitnessV0
            ));
            assert!(!checker.check_ecdsa_signature(
                witness[0],
                witness[1],
                &script_code,
                SigVersion::Base
            ));
        } else {
            // P2PKH: scriptSig pushes signature and key; script code is the scriptPubKey.
            let script_sig = input.script_sig;
            let signature_length = usize::from(script_sig[0]);
            let signature = &script_sig[1..1 + signature_length];
            let key = &script_sig[2 + signature_length..];
            assert_eq!(key.len(), usize::from(script_sig[1 + signature_length]));
            assert!(checker.check_ecdsa_signature(signature, key, script_pubkey, SigVersion::Base));
            assert!(!checker.check_ecdsa_signature(
                signature,
                key,
                script_pubkey,
                SigVersion::WitnessV0
            ));
        }
        verified += 1;
    }
    assert_eq!(verified, 9);
}

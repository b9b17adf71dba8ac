//! Differential tests against Bitcoin Core's own script verification, through
//! the `bitcoinkernel` crate (libbitcoinkernel built from Core's sources).
//!
//! Random transactions spend random P2PKH (compressed and uncompressed keys),
//! P2WPKH, P2SH-P2WPKH, P2WSH 1-of-2 multisig, P2TR key path and P2TR script
//! path outputs with random hash types, correctly signed, then often mutated
//! (a flipped signature bit, a changed amount, output, lock time or sequence,
//! a high-S or padded signature, a foreign witness, a dropped witness item, an
//! annex). Every input is verified under random consensus flag sets by both
//! implementations; the verdicts must be identical.
//!
//! Run: `cargo test -p ibex-script --features kernel-differential --test kernel_differential`
//! (needs cmake and the boost headers: `apt-get install -y cmake libboost-dev`).
//! `IBEX_DIFFERENTIAL_CASES` sets the number of transactions (default
//! [`DEFAULT_CASES`], which `.ci/run` uses); the `script_differential` fuzz
//! target in `fuzz/` runs the same comparison for as long as it is given.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};
use ibex_script::sighash::legacy::legacy_sighash;
use ibex_script::sighash::segwit_v0::segwit_v0_sighash;
use ibex_script::sighash::taproot::{annex_hash, taproot_sighash, TaprootInput};
use ibex_script::taproot::{tapleaf_hash, taptweak_hash as tap_tweak_hash};
use ibex_script::{
    verify_input, ExecutionData, PrecomputedTransactionData, SigVersion, SpentOutput,
    TransactionChecker, VerifyFlags,
};
use ripemd::Ripemd160;
use secp256k1::{All, Keypair, Message, Scalar, Secp256k1, SecretKey};
use sha2::{Digest, Sha256};

/// Transactions generated when `IBEX_DIFFERENTIAL_CASES` is not set: small
/// enough for CI (a few seconds), large enough that every kind, hash type and
/// mutation occurs many times.
const DEFAULT_CASES: usize = 500;

/// The number of transactions to generate: `IBEX_DIFFERENTIAL_CASES` or
/// [`DEFAULT_CASES`].
fn case_count() -> usize {
    match std::env::var("IBEX_DIFFERENTIAL_CASES") {
        Ok(value) => value.parse().expect("IBEX_DIFFERENTIAL_CASES is a number"),
        Err(_) => DEFAULT_CASES,
    }
}
/// Flag sets tried per transaction.
const FLAG_SETS_PER_CASE: usize = 3;

/// SplitMix64: deterministic, so a failure names a reproducible case.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut value = self.0;
        value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        value ^ (value >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

fn hash160(data: &[u8]) -> [u8; 20] {
    Ripemd160::digest(Sha256::digest(data)).into()
}

fn push(data: &[u8]) -> Vec<u8> {
    ibex_script::script::push_data(data)
}

fn p2pkh_script(key_hash: &[u8; 20]) -> Vec<u8> {
    [&[0x76, 0xa9, 0x14][..], key_hash, &[0x88, 0xac]].concat()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    P2pkhCompressed,
    P2pkhUncompressed,
    P2wpkh,
    P2shP2wpkh,
    P2wshMultisig,
    P2trKeyPath,
    P2trScriptPath,
}

const KINDS: [Kind; 7] = [
    Kind::P2pkhCompressed,
    Kind::P2pkhUncompressed,
    Kind::P2wpkh,
    Kind::P2shP2wpkh,
    Kind::P2wshMultisig,
    Kind::P2trKeyPath,
    Kind::P2trScriptPath,
];

/// One input's plan: what it spends and how to sign it.
struct Plan {
    kind: Kind,
    secret: SecretKey,
    other_secret: SecretKey,
    script_pubkey: Vec<u8>,
    amount: i64,
    hash_type: u8,
    annex: Option<Vec<u8>>,
}

fn taproot_parts(context: &Secp256k1<All>, secret: &SecretKey) -> (Keypair, [u8; 32], Vec<u8>) {
    let keypair = Keypair::from_secret_key(context, secret);
    let internal = keypair.x_only_public_key().0.serialize();
    let leaf_script = [&[0x20][..], &internal[..], &[0xac]].concat();
    (keypair, internal, leaf_script)
}

fn plan_input(random: &mut Random, context: &Secp256k1<All>) -> Plan {
    let kind = random.pick(&KINDS);
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&random.next().to_le_bytes());
    seed[31] = 1;
    let secret = SecretKey::from_byte_array(seed).unwrap();
    seed[30] = 2;
    let other_secret = SecretKey::from_byte_array(seed).unwrap();
    let public = secret.public_key(context);
    let script_pubkey = match kind {
        Kind::P2pkhCompressed => p2pkh_script(&hash160(&public.serialize())),
        Kind::P2pkhUncompressed => p2pkh_script(&hash160(&public.serialize_uncompressed())),
        Kind::P2wpkh => [&[0x00, 0x14][..], &hash160(&public.serialize())].concat(),
        Kind::P2shP2wpkh => {
            let redeem = [&[0x00, 0x14][..], &hash160(&public.serialize())].concat();
            [&[0xa9, 0x14][..], &hash160(&redeem), &[0x87]].concat()
        }
        Kind::P2wshMultisig => {
            let script = multisig_script(context, &secret, &other_secret);
            [&[0x00, 0x20][..], &Sha256::digest(&script)[..]].concat()
        }
        Kind::P2trKeyPath | Kind::P2trScriptPath => {
            let (keypair, internal, leaf_script) = taproot_parts(context, &secret);
            let root = tapleaf_hash(0xc0, &leaf_script);
            let merkle_root = (kind == Kind::P2trScriptPath).then_some(root);
            let tweak = tap_tweak_hash(&internal, merkle_root.as_ref());
            let tweaked =
                keypair.add_xonly_tweak(context, &Scalar::from_be_bytes(tweak).unwrap()).unwrap();
            [&[0x51, 0x20][..], &tweaked.x_only_public_key().0.serialize()].concat()
        }
    };
    let taproot = matches!(kind, Kind::P2trKeyPath | Kind::P2trScriptPath);
    let hash_type = if taproot {
        random.pick(&[0x00, 0x00, 0x01, 0x02, 0x03, 0x81, 0x82, 0x83, 0x04, 0x80])
    } else {
        random.pick(&[0x01, 0x01, 0x02, 0x03, 0x81, 0x82, 0x83, 0x00, 0x04, 0x41])
    };
    let annex = (taproot && random.chance(15)).then(|| vec![0x50, random.next() as u8]);
    Plan {
        kind,
        secret,
        other_secret,
        script_pubkey,
        amount: random.below(5_000_000_000) as i64,
        hash_type,
        annex,
    }
}

fn multisig_script(context: &Secp256k1<All>, first: &SecretKey, second: &SecretKey) -> Vec<u8> {
    let mut script = vec![0x51];
    script.extend(push(&first.public_key(context).serialize()));
    script.extend(push(&second.public_key(context).serialize()));
    script.extend([0x52, 0xae]);
    script
}

fn ecdsa_signature(
    context: &Secp256k1<All>,
    secret: &SecretKey,
    sighash: [u8; 32],
    hash_type: u8,
) -> Vec<u8> {
    let mut signature =
        context.sign_ecdsa(Message::from_digest(sighash), secret).serialize_der().to_vec();
    signature.push(hash_type);
    signature
}

/// Fills scriptSig and witness of input `index` so that it is validly signed.
fn sign_input(
    context: &Secp256k1<All>,
    transaction: &mut Transaction,
    plans: &[Plan],
    index: usize,
) {
    let bytes = transaction.encode();
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let view = parsed.view();
    let spent: Vec<SpentOutput<'_>> = plans
        .iter()
        .map(|plan| SpentOutput { amount: plan.amount, script_pubkey: &plan.script_pubkey })
        .collect();
    let precomputed = PrecomputedTransactionData::with_force(&view, &spent, true).unwrap();
    let plan = &plans[index];
    let public = plan.secret.public_key(context);
    let hash_type = plan.hash_type;
    let input = &mut transaction.inputs[index];
    match plan.kind {
        Kind::P2pkhCompressed | Kind::P2pkhUncompressed => {
            let key = if plan.kind == Kind::P2pkhCompressed {
                public.serialize().to_vec()
            } else {
                public.serialize_uncompressed().to_vec()
            };
            let sighash = legacy_sighash(&view, index, &plan.script_pubkey, i32::from(hash_type));
            let signature = ecdsa_signature(context, &plan.secret, sighash, hash_type);
            input.script_sig = [push(&signature), push(&key)].concat();
        }
        Kind::P2wpkh | Kind::P2shP2wpkh => {
            let key = public.serialize();
            let script_code = p2pkh_script(&hash160(&key));
            let sighash = segwit_v0_sighash(
                &view,
                index,
                &script_code,
                plan.amount,
                i32::from(hash_type),
                precomputed.bip143().unwrap(),
            );
            input.witness =
                vec![ecdsa_signature(context, &plan.secret, sighash, hash_type), key.to_vec()];
            if plan.kind == Kind::P2shP2wpkh {
                input.script_sig = push(&[&[0x00, 0x14][..], &hash160(&key)].concat());
            }
        }
        Kind::P2wshMultisig => {
            let script = multisig_script(context, &plan.secret, &plan.other_secret);
            let sighash = segwit_v0_sighash(
                &view,
                index,
                &script,
                plan.amount,
                i32::from(hash_type),
                precomputed.bip143().unwrap(),
            );
            input.witness = vec![
                Vec::new(),
                ecdsa_signature(context, &plan.secret, sighash, hash_type),
                script,
            ];
        }
        Kind::P2trKeyPath | Kind::P2trScriptPath => {
            let (keypair, internal, leaf_script) = taproot_parts(context, &plan.secret);
            let leaf = tapleaf_hash(0xc0, &leaf_script);
            let script_path = plan.kind == Kind::P2trScriptPath;
            let execution = ExecutionData {
                annex: Some(plan.annex.as_deref().map(annex_hash)),
                tapleaf_hash: script_path.then_some(leaf),
                codeseparator_position: script_path.then_some(u32::MAX),
                validation_weight_left: None,
            };
            let sig_version = if script_path { SigVersion::Tapscript } else { SigVersion::Taproot };
            let taproot_input = TaprootInput {
                input_index: index,
                spent_output: spent[index],
                sig_version,
                execution: &execution,
            };
            // An undefined hash type has no sighash: sign anything, it must fail.
            let sighash = taproot_sighash(&view, &taproot_input, hash_type, precomputed.bip341())
                .unwrap_or([0x5a; 32]);
            let merkle_root = script_path.then_some(leaf);
            let tweak = tap_tweak_hash(&internal, merkle_root.as_ref());
            let tweaked =
                keypair.add_xonly_tweak(context, &Scalar::from_be_bytes(tweak).unwrap()).unwrap();
            let signing_key = if script_path { keypair } else { tweaked };
            let mut signature =
                context.sign_schnorr_no_aux_rand(&sighash, &signing_key).to_byte_array().to_vec();
            if hash_type != 0 {
                signature.push(hash_type);
            }
            let mut witness = vec![signature];
            if script_path {
                let parity = tweaked.x_only_public_key().1 == secp256k1::Parity::Odd;
                let mut control = vec![0xc0 | u8::from(parity)];
                control.extend_from_slice(&internal);
                witness.push(leaf_script);
                witness.push(control);
            }
            if let Some(annex) = &plan.annex {
                witness.push(annex.clone());
            }
            input.witness = witness;
        }
    }
}

/// Flips one bit of the signature: the first witness item that is not empty,
/// or the first push of the scriptSig.
fn corrupt_signature(random: &mut Random, input: &mut TxInput) {
    let bit = 1u8 << random.below(8);
    if let Some(item) = input.witness.iter_mut().find(|item| !item.is_empty()) {
        let position = random.below(item.len() as u64) as usize;
        item[position] ^= bit;
    } else if input.script_sig.len() > 2 {
        let position = 1 + random.below(u64::from(input.script_sig[0])) as usize;
        input.script_sig[position] ^= bit;
    }
}

/// The ECDSA signature's S replaced by n - S (valid without LOW_S).
fn high_s(signature: &[u8]) -> Option<Vec<u8>> {
    let (hash_type, der) = signature.split_last()?;
    let parsed = secp256k1::ecdsa::Signature::from_der(der).ok()?;
    let compact = parsed.serialize_compact();
    let order = secp256k1::constants::CURVE_ORDER;
    let mut s = [0u8; 32];
    let mut borrow = 0i16;
    for index in (0..32).rev() {
        let difference = i16::from(order[index]) - i16::from(compact[32 + index]) - borrow;
        borrow = i16::from(difference < 0);
        s[index] = difference.rem_euclid(256) as u8;
    }
    // Hand-built DER: libsecp256k1's serialiser would not emit a high S.
    let integer = |value: &[u8]| {
        let trimmed: Vec<u8> = value.iter().copied().skip_while(|&byte| byte == 0).collect();
        let mut out = Vec::new();
        if trimmed.first().is_some_and(|byte| byte & 0x80 != 0) {
            out.push(0);
        }
        out.extend(trimmed);
        out
    };
    let r = integer(&compact[..32]);
    let s = integer(&s);
    let mut out = vec![0x30, (4 + r.len() + s.len()) as u8, 0x02, r.len() as u8];
    out.extend(&r);
    out.extend([0x02, s.len() as u8]);
    out.extend(&s);
    out.push(*hash_type);
    Some(out)
}

fn mutate(random: &mut Random, transaction: &mut Transaction, plans: &mut [Plan]) -> &'static str {
    let index = random.below(transaction.inputs.len() as u64) as usize;
    match random.below(10) {
        0 => {
            corrupt_signature(random, &mut transaction.inputs[index]);
            "flipped signature bit"
        }
        1 => {
            plans[index].amount += 1;
            "spent amount changed"
        }
        2 => {
            let output = random.below(transaction.outputs.len() as u64) as usize;
            transaction.outputs[output].value ^= 1;
            "output value changed"
        }
        3 => {
            transaction.lock_time ^= 1;
            "lock time changed"
        }
        4 => {
            transaction.inputs[index].sequence ^= 1;
            "sequence changed"
        }
        5 => {
            let input = &mut transaction.inputs[index];
            let byte = random.next() as u8;
            if let Some(item) = input.witness.iter_mut().find(|item| !item.is_empty()) {
                if let Some(last) = item.last_mut() {
                    *last = byte;
                }
            }
            "hash type byte replaced"
        }
        6 => {
            let input = &mut transaction.inputs[index];
            if let Some(item) = input.witness.iter_mut().find(|item| item.len() > 65) {
                if let Some(high) = high_s(item) {
                    *item = high;
                }
            }
            "high S"
        }
        7 => {
            transaction.inputs[index].witness.pop();
            "witness item dropped"
        }
        8 => {
            let other = random.below(transaction.inputs.len() as u64) as usize;
            let witness = transaction.inputs[other].witness.clone();
            transaction.inputs[index].witness = witness;
            "foreign witness"
        }
        _ => {
            let input = &mut transaction.inputs[index];
            if !input.witness.is_empty() {
                input.witness.push(vec![0x50, 0x01]);
            }
            "annex appended"
        }
    }
}

const CONSENSUS_FLAGS: [VerifyFlags; 7] = [
    VerifyFlags::P2SH,
    VerifyFlags::DERSIG,
    VerifyFlags::NULLDUMMY,
    VerifyFlags::CHECKLOCKTIMEVERIFY,
    VerifyFlags::CHECKSEQUENCEVERIFY,
    VerifyFlags::WITNESS,
    VerifyFlags::TAPROOT,
];

fn random_flags(random: &mut Random) -> VerifyFlags {
    if random.chance(40) {
        return VerifyFlags::CONSENSUS;
    }
    let mut flags = VerifyFlags::NONE;
    for flag in CONSENSUS_FLAGS {
        if random.chance(50) {
            flags |= flag;
        }
    }
    // The kernel refuses WITNESS without P2SH, as Core's VerifyScript asserts.
    if flags.contains(VerifyFlags::WITNESS) {
        flags |= VerifyFlags::P2SH;
    }
    flags
}

fn build_transaction(random: &mut Random, plans: &[Plan]) -> Transaction {
    let inputs = (0..plans.len())
        .map(|index| TxInput {
            previous_output: OutPoint { txid: Txid([random.next() as u8; 32]), vout: index as u32 },
            script_sig: Vec::new(),
            sequence: random.pick(&[0xffff_ffff, 0xffff_fffe, 0xffff_fffd, 0, 10]),
            witness: Vec::new(),
        })
        .collect();
    let outputs = (0..1 + random.below(3))
        .map(|index| TxOutput {
            value: random.below(1_000_000) as i64,
            script_pubkey: vec![0x51, index as u8],
        })
        .collect();
    Transaction {
        version: random.pick(&[1, 2, 2, 3]),
        inputs,
        outputs,
        lock_time: random.pick(&[0, 100, 600_000_000]),
    }
}

#[test]
fn verdicts_match_bitcoin_core() {
    let context = Secp256k1::new();
    let mut random = Random(0x1b3c_5d7e);
    let mut comparisons = 0usize;
    let mut accepted = 0usize;
    let cases = case_count();
    for case in 0..cases {
        let input_count = 1 + random.below(3) as usize;
        let mut plans: Vec<Plan> =
            (0..input_count).map(|_| plan_input(&mut random, &context)).collect();
        let mut transaction = build_transaction(&mut random, &plans);
        for index in 0..input_count {
            sign_input(&context, &mut transaction, &plans, index);
        }
        let mutation = if random.chance(50) {
            mutate(&mut random, &mut transaction, &mut plans)
        } else {
            "none"
        };

        let bytes = transaction.encode();
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let view = parsed.view();
        let spent: Vec<SpentOutput<'_>> = plans
            .iter()
            .map(|plan| SpentOutput { amount: plan.amount, script_pubkey: &plan.script_pubkey })
            .collect();
        let precomputed = PrecomputedTransactionData::new(&view, &spent).unwrap();

        let kernel_transaction = bitcoinkernel::Transaction::new(&bytes).unwrap();
        let kernel_scripts: Vec<bitcoinkernel::ScriptPubkey> = plans
            .iter()
            .map(|plan| bitcoinkernel::ScriptPubkey::new(&plan.script_pubkey).unwrap())
            .collect();
        let kernel_spent: Vec<bitcoinkernel::TxOut> = plans
            .iter()
            .zip(&kernel_scripts)
            .map(|(plan, script)| bitcoinkernel::TxOut::new(script, plan.amount))
            .collect();
        let kernel_precomputed =
            bitcoinkernel::PrecomputedTransactionData::new(&kernel_transaction, &kernel_spent)
                .unwrap();

        for _ in 0..FLAG_SETS_PER_CASE {
            let flags = random_flags(&mut random);
            for (index, input) in view.inputs().iter().enumerate() {
                let checker =
                    TransactionChecker::new(view, index, spent[index], &precomputed).unwrap();
                let ours = verify_input(
                    input.script_sig,
                    spent[index].script_pubkey,
                    input.witness,
                    flags,
                    &checker,
                );
                let theirs = bitcoinkernel::verify(
                    &kernel_scripts[index],
                    Some(plans[index].amount),
                    &kernel_transaction,
                    index,
                    Some(flags.0),
                    &kernel_precomputed,
                );
                if let Err(bitcoinkernel::KernelError::ScriptVerify(error)) = &theirs {
                    assert!(
                        matches!(error, bitcoinkernel::ScriptVerifyError::Invalid),
                        "kernel setup error {error:?} in case {case}"
                    );
                }
                assert_eq!(
                    ours.is_ok(),
                    theirs.is_ok(),
                    "case {case}, input {index} ({:?}, hash type {:#04x}, mutation {mutation}, flags {:#x}): ours {ours:?}, kernel {theirs:?}",
                    plans[index].kind,
                    plans[index].hash_type,
                    flags.0,
                );
                comparisons += 1;
                accepted += usize::from(ours.is_ok());
            }
        }
    }
    eprintln!(
        "kernel differential: {cases} transactions, {comparisons} verdicts identical ({accepted} valid, {} invalid)",
        comparisons - accepted
    );
    assert!(accepted > comparisons / 10 && accepted < comparisons * 9 / 10);
}

//! Signature benchmarks: bare libsecp256k1 verification against a whole input
//! check through [`TransactionChecker`] (sighash, parsing, verification),
//! and BIP143 against legacy sighashing of a 1,000-input
//! transaction (constant versus quadratic per input).
//!
//! Run: `cargo bench -p ibex-script --bench signatures`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};
use ibex_script::precomputed::Bip143Hashes;
use ibex_script::sighash::legacy::legacy_sighash;
use ibex_script::sighash::segwit_v0::segwit_v0_sighash;
use ibex_script::sighash::taproot::{taproot_sighash, TaprootInput};
use ibex_script::{
    verify_input, ExecutionData, PrecomputedTransactionData, SigVersion, SignatureChecker,
    SpentOutput, TransactionChecker, VerifyFlags,
};
use ripemd::Ripemd160;
use secp256k1::{Keypair, Message, Secp256k1, SecretKey};
use sha2::{Digest, Sha256};

/// A version 2 transaction with `input_count` witness inputs and two outputs.
fn transaction_bytes(input_count: usize) -> Vec<u8> {
    let inputs = (0..input_count)
        .map(|index| TxInput {
            previous_output: OutPoint { txid: Txid([(index % 251) as u8; 32]), vout: index as u32 },
            script_sig: Vec::new(),
            sequence: 0xffff_fffd,
            witness: vec![vec![0x30; 72], vec![0x02; 33]],
        })
        .collect();
    let outputs = vec![
        TxOutput { value: 50_000, script_pubkey: [&[0x00, 0x14][..], &[0x11; 20]].concat() },
        TxOutput { value: 40_000, script_pubkey: [&[0x51, 0x20][..], &[0x22; 32]].concat() },
    ];
    Transaction { version: 2, inputs, outputs, lock_time: 0 }.encode()
}

fn p2pkh_script_code(key_hash: &[u8; 20]) -> Vec<u8> {
    [&[0x76, 0xa9, 0x14][..], key_hash, &[0x88, 0xac]].concat()
}

fn bare_verification(criterion: &mut Criterion) {
    let context = Secp256k1::new();
    let secret = SecretKey::from_byte_array([0x5a; 32]).unwrap();
    let public = secret.public_key(&context);
    let message = Message::from_digest([0x77; 32]);
    let ecdsa = context.sign_ecdsa(message, &secret);
    let keypair = Keypair::from_secret_key(&context, &secret);
    let x_only = keypair.x_only_public_key().0;
    let schnorr = context.sign_schnorr_no_aux_rand(&[0x77; 32], &keypair);
    let verifier = Secp256k1::verification_only();
    criterion.bench_function("libsecp256k1 ecdsa verify", |bench| {
        bench.iter(|| verifier.verify_ecdsa(black_box(message), &ecdsa, &public).unwrap())
    });
    criterion.bench_function("libsecp256k1 schnorr verify", |bench| {
        bench.iter(|| verifier.verify_schnorr(&schnorr, black_box(&[0x77; 32]), &x_only).unwrap())
    });
}

/// The signature floor's unit: one key parse plus one verification on every
/// core at once. A whole import keeps all cores verifying; on a VM whose
/// vCPUs share physical cores (the 2-core EPYC VM of docs/benchmarks.md:
/// 28-32 us alone, 34-52 us with two at once) that is what a verification
/// costs, and the time per iteration
/// reported here is the wall time for `cores` verifications, so a chain's
/// floor is `verifications x time / cores`.
fn verification_on_every_core(criterion: &mut Criterion) {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let context = Secp256k1::new();
    let secret = SecretKey::from_byte_array([0x5a; 32]).unwrap();
    let public = secret.public_key(&context).serialize();
    let message = Message::from_digest([0x77; 32]);
    let ecdsa = context.sign_ecdsa(message, &secret);
    let keypair = Keypair::from_secret_key(&context, &secret);
    let x_only = keypair.x_only_public_key().0.serialize();
    let schnorr = context.sign_schnorr_no_aux_rand(&[0x77; 32], &keypair);
    let verifier = Secp256k1::verification_only();
    let ecdsa_once = || {
        let key = secp256k1::PublicKey::from_byte_array_compressed(*black_box(&public)).unwrap();
        verifier.verify_ecdsa(black_box(message), &ecdsa, &key).unwrap();
    };
    let schnorr_once = || {
        let key = secp256k1::XOnlyPublicKey::from_byte_array(*black_box(&x_only)).unwrap();
        verifier.verify_schnorr(&schnorr, black_box(&[0x77; 32]), &key).unwrap();
    };
    let on_every_core = |iterations: u64, once: &(dyn Fn() + Sync)| {
        let started = std::time::Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..cores {
                scope.spawn(|| (0..iterations).for_each(|_| once()));
            }
        });
        started.elapsed()
    };
    criterion.bench_function(&format!("ecdsa parse + verify, {cores} cores at once"), |bench| {
        bench.iter_custom(|iterations| on_every_core(iterations, &ecdsa_once))
    });
    criterion.bench_function(&format!("schnorr parse + verify, {cores} cores at once"), |bench| {
        bench.iter_custom(|iterations| on_every_core(iterations, &schnorr_once))
    });
}

/// Distinct signatures a core cycles through in [`distinct_signatures`].
const DISTINCT_SIGNATURES: usize = 4_096;

/// As [`verification_on_every_core`], each verification of a different
/// key, message and signature, as a chain's are: the same one over and
/// over keeps the few entries of libsecp256k1's precomputed tables it
/// reads (~1 MB in all) in the core's first caches, which a chain's
/// verifications do not.
fn distinct_signatures(criterion: &mut Criterion) {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let context = Secp256k1::new();
    let mut ecdsa = Vec::with_capacity(DISTINCT_SIGNATURES);
    let mut schnorr = Vec::with_capacity(DISTINCT_SIGNATURES);
    for index in 0..DISTINCT_SIGNATURES {
        let mut seed = [0x11u8; 32];
        seed[..8].copy_from_slice(&(index as u64 + 1).to_be_bytes());
        let secret = SecretKey::from_byte_array(seed).unwrap();
        let digest: [u8; 32] = Sha256::digest(seed).into();
        let message = Message::from_digest(digest);
        let public = secret.public_key(&context).serialize();
        ecdsa.push((public, message, context.sign_ecdsa(message, &secret)));
        let keypair = Keypair::from_secret_key(&context, &secret);
        let x_only = keypair.x_only_public_key().0.serialize();
        schnorr.push((x_only, digest, context.sign_schnorr_no_aux_rand(&digest, &keypair)));
    }
    let verifier = Secp256k1::verification_only();
    let ecdsa_at = |at: usize| {
        let (public, message, signature) = &ecdsa[at % DISTINCT_SIGNATURES];
        let key = secp256k1::PublicKey::from_byte_array_compressed(*black_box(public)).unwrap();
        verifier.verify_ecdsa(*message, signature, &key).unwrap();
    };
    let schnorr_at = |at: usize| {
        let (x_only, digest, signature) = &schnorr[at % DISTINCT_SIGNATURES];
        let key = secp256k1::XOnlyPublicKey::from_byte_array(*black_box(x_only)).unwrap();
        verifier.verify_schnorr(signature, digest, &key).unwrap();
    };
    let on_every_core = |iterations: u64, at: &(dyn Fn(usize) + Sync)| {
        let started = std::time::Instant::now();
        std::thread::scope(|scope| {
            for core in 0..cores {
                let first = core * DISTINCT_SIGNATURES / cores;
                scope.spawn(move || (0..iterations as usize).for_each(|step| at(first + step)));
            }
        });
        started.elapsed()
    };
    let name = |kind: &str| format!("{kind} parse + verify, distinct signatures, {cores} cores");
    criterion.bench_function(&name("ecdsa"), |bench| {
        bench.iter_custom(|iterations| on_every_core(iterations, &ecdsa_at))
    });
    criterion.bench_function(&name("schnorr"), |bench| {
        bench.iter_custom(|iterations| on_every_core(iterations, &schnorr_at))
    });
}

fn input_verification(criterion: &mut Criterion) {
    let context = Secp256k1::new();
    let secret = SecretKey::from_byte_array([0x5a; 32]).unwrap();
    let public = secret.public_key(&context).serialize();
    let keypair = Keypair::from_secret_key(&context, &secret);
    let x_only = keypair.x_only_public_key().0.serialize();
    let bytes = transaction_bytes(2);
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let view = parsed.view();

    // Input 0: P2WPKH, signed with SIGHASH_ALL.
    let script_code = p2pkh_script_code(&[0x33; 20]);
    let p2wpkh_script = [&[0x00, 0x14][..], &[0x33; 20]].concat();
    let p2wpkh = SpentOutput { amount: 100_000, script_pubkey: &p2wpkh_script };
    // Input 1: P2TR key path, SIGHASH_DEFAULT.
    let p2tr_script = [&[0x51, 0x20][..], &x_only[..]].concat();
    let p2tr = SpentOutput { amount: 200_000, script_pubkey: &p2tr_script };
    let precomputed = PrecomputedTransactionData::new(&view, &[p2wpkh, p2tr]).unwrap();

    let sighash =
        segwit_v0_sighash(&view, 0, &script_code, 100_000, 1, precomputed.bip143().unwrap());
    let mut ecdsa =
        context.sign_ecdsa(Message::from_digest(sighash), &secret).serialize_der().to_vec();
    ecdsa.push(1);
    let execution = ExecutionData { annex: Some(None), ..ExecutionData::default() };
    let input = TaprootInput {
        input_index: 1,
        spent_output: p2tr,
        sig_version: SigVersion::Taproot,
        execution: &execution,
    };
    let sighash = taproot_sighash(&view, &input, 0, precomputed.bip341()).unwrap();
    let schnorr = context.sign_schnorr_no_aux_rand(&sighash, &keypair).to_byte_array();

    let p2wpkh_checker = TransactionChecker::new(view, 0, p2wpkh, &precomputed).unwrap();
    let p2tr_checker = TransactionChecker::new(view, 1, p2tr, &precomputed).unwrap();
    criterion.bench_function("p2wpkh input check (checker)", |bench| {
        bench.iter(|| {
            assert!(p2wpkh_checker.check_ecdsa_signature(
                black_box(&ecdsa),
                &public,
                &script_code,
                SigVersion::WitnessV0
            ))
        })
    });
    criterion.bench_function("p2tr key path input check (checker)", |bench| {
        bench.iter(|| {
            p2tr_checker
                .check_schnorr_signature(
                    black_box(&schnorr),
                    &x_only,
                    SigVersion::Taproot,
                    &execution,
                )
                .unwrap()
        })
    });
    criterion.bench_function("precompute (2-input transaction)", |bench| {
        bench.iter(|| PrecomputedTransactionData::new(black_box(&view), &[p2wpkh, p2tr]).unwrap())
    });
}

/// Consensus flags of a block after taproot activation.
const BLOCK_FLAGS: VerifyFlags = VerifyFlags::CONSENSUS;

fn hash160(data: &[u8]) -> [u8; 20] {
    Ripemd160::digest(Sha256::digest(data)).into()
}

/// Whole inputs through `verify_input`: script interpretation, sighash, key
/// and signature parsing, verification.
fn full_input_verification(criterion: &mut Criterion) {
    let context = Secp256k1::new();
    let secret = SecretKey::from_byte_array([0x6b; 32]).unwrap();
    let public = secret.public_key(&context).serialize();
    let keypair = Keypair::from_secret_key(&context, &secret);
    let x_only = keypair.x_only_public_key().0.serialize();
    let key_hash = hash160(&public);
    let p2wpkh_script = [&[0x00, 0x14][..], &key_hash[..]].concat();
    let p2tr_script = [&[0x51, 0x20][..], &x_only[..]].concat();
    let p2wpkh = SpentOutput { amount: 100_000, script_pubkey: &p2wpkh_script };
    let p2tr = SpentOutput { amount: 200_000, script_pubkey: &p2tr_script };

    // Sign against the unsigned transaction: witnesses are not part of any sighash.
    let unsigned = transaction_bytes(2);
    let parsed = ParsedTransaction::parse(&unsigned).unwrap();
    let view = parsed.view();
    let precomputed = PrecomputedTransactionData::new(&view, &[p2wpkh, p2tr]).unwrap();
    let script_code = p2pkh_script_code(&key_hash);
    let sighash =
        segwit_v0_sighash(&view, 0, &script_code, 100_000, 1, precomputed.bip143().unwrap());
    let mut ecdsa =
        context.sign_ecdsa(Message::from_digest(sighash), &secret).serialize_der().to_vec();
    ecdsa.push(1);
    let execution = ExecutionData { annex: Some(None), ..ExecutionData::default() };
    let input = TaprootInput {
        input_index: 1,
        spent_output: p2tr,
        sig_version: SigVersion::Taproot,
        execution: &execution,
    };
    let sighash = taproot_sighash(&view, &input, 0, precomputed.bip341()).unwrap();
    let schnorr = context.sign_schnorr_no_aux_rand(&sighash, &keypair).to_byte_array();

    let mut signed = Transaction::decode(&unsigned).unwrap();
    signed.inputs[0].witness = vec![ecdsa, public.to_vec()];
    signed.inputs[1].witness = vec![schnorr.to_vec()];
    let signed_bytes = signed.encode();
    let parsed = ParsedTransaction::parse(&signed_bytes).unwrap();
    let view = parsed.view();
    let precomputed = PrecomputedTransactionData::new(&view, &[p2wpkh, p2tr]).unwrap();
    let inputs = view.inputs();
    let p2wpkh_checker = TransactionChecker::new(view, 0, p2wpkh, &precomputed).unwrap();
    let p2tr_checker = TransactionChecker::new(view, 1, p2tr, &precomputed).unwrap();
    verify_input(
        inputs[0].script_sig,
        &p2wpkh_script,
        inputs[0].witness,
        BLOCK_FLAGS,
        &p2wpkh_checker,
    )
    .unwrap();
    verify_input(inputs[1].script_sig, &p2tr_script, inputs[1].witness, BLOCK_FLAGS, &p2tr_checker)
        .unwrap();
    criterion.bench_function("p2wpkh input verify_input (interpreter + checker)", |bench| {
        bench.iter(|| {
            verify_input(
                inputs[0].script_sig,
                black_box(&p2wpkh_script),
                inputs[0].witness,
                BLOCK_FLAGS,
                &p2wpkh_checker,
            )
            .unwrap()
        })
    });
    criterion.bench_function("p2tr key path verify_input (interpreter + checker)", |bench| {
        bench.iter(|| {
            verify_input(
                inputs[1].script_sig,
                black_box(&p2tr_script),
                inputs[1].witness,
                BLOCK_FLAGS,
                &p2tr_checker,
            )
            .unwrap()
        })
    });
}

fn thousand_input_sighashes(criterion: &mut Criterion) {
    const INPUTS: usize = 1_000;
    let bytes = transaction_bytes(INPUTS);
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let view = parsed.view();
    let script_code = p2pkh_script_code(&[0x44; 20]);
    let mut group = criterion.benchmark_group("1000-input transaction, every input's sighash");
    group.sample_size(10);
    group.bench_function("bip143 (with precomputation)", |bench| {
        bench.iter(|| {
            let hashes = Bip143Hashes::compute(&view);
            for index in 0..INPUTS {
                black_box(segwit_v0_sighash(&view, index, &script_code, 1_000, 1, &hashes));
            }
        })
    });
    group.bench_function("legacy (quadratic)", |bench| {
        bench.iter(|| {
            for index in 0..INPUTS {
                black_box(legacy_sighash(&view, index, &script_code, 1));
            }
        })
    });
    group.finish();
    eprintln!(
        "1000-input transaction: {} bytes serialised, {} without witness",
        view.total_size(),
        view.base_size()
    );
}

criterion_group!(
    benches,
    bare_verification,
    verification_on_every_core,
    distinct_signatures,
    input_verification,
    full_input_verification,
    thousand_input_sighashes
);
criterion_main!(benches);

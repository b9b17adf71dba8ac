//! Block verification scaling: every input of a ConnectBlock-sized block
//! (1,000 transactions x 5 inputs, as Core's `ConnectBlockAllEcdsa` and
//! `ConnectBlockAllSchnorr`) through `verify_input` under consensus flags, on
//! 1 and on 2 threads, with no signature cache.
//!
//! Each iteration computes every transaction's [`PrecomputedTransactionData`]
//! on the calling thread (as Core's ConnectBlock does), then splits the flat
//! list of (transaction, input) pairs into one contiguous chunk per thread
//! (std scoped threads); the threads share the transactions, spent outputs and
//! precomputed data by reference. Parsing and signing happen once, in setup.
//!
//! Run: `cargo bench -p ibex-script --bench block_verification`. Criterion
//! reports time per block; divide by 5,000 for time per input.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};
use ibex_script::sighash::segwit_v0::segwit_v0_sighash;
use ibex_script::sighash::taproot::{taproot_sighash, TaprootInput};
use ibex_script::{
    verify_input, ExecutionData, PrecomputedTransactionData, SigVersion, SpentOutput,
    TransactionChecker, VerifyFlags,
};
use ripemd::Ripemd160;
use secp256k1::{Keypair, Message, Secp256k1, SecretKey};
use sha2::{Digest, Sha256};

const TRANSACTIONS_PER_BLOCK: usize = 1_000;
const INPUTS_PER_TRANSACTION: usize = 5;
const KEY_COUNT: usize = 16;
const SPENT_AMOUNT_SATOSHIS: i64 = 100_000;

/// Consensus flags of a block after taproot activation.
const BLOCK_FLAGS: VerifyFlags = VerifyFlags::CONSENSUS;

#[derive(Clone, Copy, PartialEq, Eq)]
enum InputKind {
    P2wpkh,
    P2trKeyPath,
}

/// One signing key with its compressed and x-only public keys and the
/// scriptPubKeys paying to it.
struct Key {
    secret: SecretKey,
    keypair: Keypair,
    public: [u8; 33],
    key_hash: [u8; 20],
    p2wpkh_script: Vec<u8>,
    p2tr_script: Vec<u8>,
}

fn hash160(data: &[u8]) -> [u8; 20] {
    Ripemd160::digest(Sha256::digest(data)).into()
}

fn keys() -> Vec<Key> {
    let context = Secp256k1::new();
    (0..KEY_COUNT)
        .map(|index| {
            let secret = SecretKey::from_byte_array([index as u8 + 1; 32]).unwrap();
            let keypair = Keypair::from_secret_key(&context, &secret);
            let public = secret.public_key(&context).serialize();
            let key_hash = hash160(&public);
            let x_only = keypair.x_only_public_key().0.serialize();
            Key {
                secret,
                keypair,
                public,
                key_hash,
                p2wpkh_script: [&[0x00, 0x14][..], &key_hash[..]].concat(),
                p2tr_script: [&[0x51, 0x20][..], &x_only[..]].concat(),
            }
        })
        .collect()
}

/// A block's signed transactions and, per transaction, the key index of each
/// spent output.
struct SignedBlock {
    transactions: Vec<Vec<u8>>,
    spent_keys: Vec<Vec<usize>>,
    kind: InputKind,
}

fn unsigned_transaction(transaction_index: usize, key: &Key) -> Transaction {
    let inputs = (0..INPUTS_PER_TRANSACTION)
        .map(|input_index| {
            let mut txid = [0u8; 32];
            txid[..8].copy_from_slice(&(transaction_index as u64).to_le_bytes());
            TxInput {
                previous_output: OutPoint { txid: Txid(txid), vout: input_index as u32 },
                script_sig: Vec::new(),
                sequence: 0xffff_fffd,
                witness: Vec::new(),
            }
        })
        .collect();
    let outputs = vec![
        TxOutput { value: 300_000, script_pubkey: key.p2wpkh_script.clone() },
        TxOutput { value: 190_000, script_pubkey: key.p2tr_script.clone() },
    ];
    Transaction { version: 2, inputs, outputs, lock_time: 0 }
}

fn spent_outputs<'a>(keys: &'a [Key], spent: &[usize], kind: InputKind) -> Vec<SpentOutput<'a>> {
    spent
        .iter()
        .map(|&key| SpentOutput {
            amount: SPENT_AMOUNT_SATOSHIS,
            script_pubkey: match kind {
                InputKind::P2wpkh => &keys[key].p2wpkh_script,
                InputKind::P2trKeyPath => &keys[key].p2tr_script,
            },
        })
        .collect()
}

/// The witness that spends input `input_index` of `unsigned_bytes`.
fn sign_input(
    unsigned_bytes: &[u8],
    spent: &[SpentOutput<'_>],
    input_index: usize,
    key: &Key,
    kind: InputKind,
) -> Vec<Vec<u8>> {
    let context = Secp256k1::signing_only();
    let parsed = ParsedTransaction::parse(unsigned_bytes).unwrap();
    let view = parsed.view();
    let precomputed = PrecomputedTransactionData::with_force(&view, spent, true).unwrap();
    match kind {
        InputKind::P2wpkh => {
            let script_code = [&[0x76, 0xa9, 0x14][..], &key.key_hash[..], &[0x88, 0xac]].concat();
            let bip143 = precomputed.bip143().unwrap();
            let sighash = segwit_v0_sighash(
                &view,
                input_index,
                &script_code,
                SPENT_AMOUNT_SATOSHIS,
                1,
                bip143,
            );
            let signature = context.sign_ecdsa(Message::from_digest(sighash), &key.secret);
            let mut signature = signature.serialize_der().to_vec();
            signature.push(1);
            vec![signature, key.public.to_vec()]
        }
        InputKind::P2trKeyPath => {
            let execution = ExecutionData { annex: Some(None), ..ExecutionData::default() };
            let input = TaprootInput {
                input_index,
                spent_output: spent[input_index],
                sig_version: SigVersion::Taproot,
                execution: &execution,
            };
            let sighash = taproot_sighash(&view, &input, 0, precomputed.bip341()).unwrap();
            let signature = context.sign_schnorr_no_aux_rand(&sighash, &key.keypair);
            vec![signature.to_byte_array().to_vec()]
        }
    }
}

fn signed_block(keys: &[Key], kind: InputKind) -> SignedBlock {
    let mut transactions = Vec::with_capacity(TRANSACTIONS_PER_BLOCK);
    let mut spent_keys = Vec::with_capacity(TRANSACTIONS_PER_BLOCK);
    for transaction_index in 0..TRANSACTIONS_PER_BLOCK {
        let spent: Vec<usize> = (0..INPUTS_PER_TRANSACTION)
            .map(|input| (transaction_index * INPUTS_PER_TRANSACTION + input) % KEY_COUNT)
            .collect();
        let mut transaction = unsigned_transaction(transaction_index, &keys[spent[0]]);
        let unsigned_bytes = transaction.encode();
        let outputs = spent_outputs(keys, &spent, kind);
        for (input_index, &key) in spent.iter().enumerate() {
            transaction.inputs[input_index].witness =
                sign_input(&unsigned_bytes, &outputs, input_index, &keys[key], kind);
        }
        transactions.push(transaction.encode());
        spent_keys.push(spent);
    }
    SignedBlock { transactions, spent_keys, kind }
}

/// Verifies every input of `transactions` on `thread_count` threads; returns
/// how many verified.
fn verify_block(
    transactions: &[ParsedTransaction<'_>],
    spent: &[Vec<SpentOutput<'_>>],
    thread_count: usize,
) -> usize {
    // Precomputation on the calling thread, shared by every worker.
    let precomputed: Vec<PrecomputedTransactionData> = transactions
        .iter()
        .zip(spent)
        .map(|(transaction, spent)| {
            PrecomputedTransactionData::new(&transaction.view(), spent).unwrap()
        })
        .collect();
    let jobs: Vec<(usize, usize)> = transactions
        .iter()
        .enumerate()
        .flat_map(|(transaction, parsed)| {
            (0..parsed.view().inputs().len()).map(move |input| (transaction, input))
        })
        .collect();
    let chunk_length = jobs.len().div_ceil(thread_count);
    let verify_chunk = |chunk: &[(usize, usize)]| {
        let mut verified = 0;
        for &(transaction, input_index) in chunk {
            let view = transactions[transaction].view();
            let spent_output = spent[transaction][input_index];
            let checker =
                TransactionChecker::new(view, input_index, spent_output, &precomputed[transaction])
                    .unwrap();
            let input = &view.inputs()[input_index];
            let result = verify_input(
                input.script_sig,
                spent_output.script_pubkey,
                input.witness,
                BLOCK_FLAGS,
                &checker,
            );
            assert!(result.is_ok(), "input {input_index} of transaction {transaction}: {result:?}");
            verified += 1;
        }
        verified
    };
    std::thread::scope(|scope| {
        let mut chunks = jobs.chunks(chunk_length);
        // The calling thread takes the first chunk; the others get a thread each.
        let own = chunks.next().unwrap_or_default();
        let workers: Vec<_> =
            chunks.map(|chunk| scope.spawn(move || verify_chunk(chunk))).collect();
        let mut verified = verify_chunk(own);
        for worker in workers {
            verified += worker.join().unwrap();
        }
        verified
    })
}

fn block_verification(criterion: &mut Criterion) {
    let keys = keys();
    for kind in [InputKind::P2wpkh, InputKind::P2trKeyPath] {
        let block = signed_block(&keys, kind);
        let parsed: Vec<ParsedTransaction<'_>> = block
            .transactions
            .iter()
            .map(|bytes| ParsedTransaction::parse(bytes).unwrap())
            .collect();
        let spent: Vec<Vec<SpentOutput<'_>>> =
            block.spent_keys.iter().map(|spent| spent_outputs(&keys, spent, block.kind)).collect();
        let input_count = TRANSACTIONS_PER_BLOCK * INPUTS_PER_TRANSACTION;
        assert_eq!(verify_block(&parsed, &spent, 2), input_count);
        let name = match kind {
            InputKind::P2wpkh => "block of 5,000 P2WPKH inputs",
            InputKind::P2trKeyPath => "block of 5,000 P2TR key-path inputs",
        };
        let mut group = criterion.benchmark_group(name);
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(1));
        for thread_count in [1, 2] {
            group.bench_function(format!("{thread_count} thread(s)"), |bench| {
                bench.iter(|| verify_block(&parsed, &spent, thread_count))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, block_verification);
criterion_main!(benches);

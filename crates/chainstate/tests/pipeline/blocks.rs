//! Blocks for the pipeline tests: the main chain of the Core-made regtest
//! chain (`shared/chains/core-wallet-mix`), a copy of one of its blocks with
//! a broken signature and every other rule repaired, and coinbase-only
//! children.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use ibex_blockstore::{read_block_file, read_obfuscation_key, Records};
use ibex_consensus::finality::bip34_height_prefix;
use ibex_consensus::subsidy::block_subsidy;
use ibex_primitives::hash::sha256d;
use ibex_primitives::merkle::{merkle_root, WITNESS_COMMITMENT_HEADER};
use ibex_primitives::owned::{Block, Transaction, TxInput, TxOutput};
use ibex_primitives::pow::check_proof_of_work;
use ibex_primitives::{BlockHash, CompactTarget, Height, OutPoint, Params};

fn shared_chain() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix")
}

/// Core's best chain, block bytes by height (the file also holds stale
/// branches, which are left out).
pub fn main_chain() -> &'static [Vec<u8>] {
    static CHAIN: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let directory = shared_chain().join("blocks");
        let key = read_obfuscation_key(&directory).unwrap();
        let data = read_block_file(&directory.join("blk00000.dat"), &key).unwrap();
        let mut by_hash: HashMap<BlockHash, Vec<u8>> = HashMap::new();
        for record in Records::new(&data, Params::regtest().message_start) {
            let block = Block::decode(record.bytes).unwrap();
            by_hash.insert(block.block_hash(), record.bytes.to_vec());
        }
        let expected: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(shared_chain().join("expected.json")).unwrap(),
        )
        .unwrap();
        let tip = expected["getblockchaininfo"]["bestblockhash"].as_str().unwrap();
        let mut hash = BlockHash::from_hex(tip).unwrap();
        let mut chain = Vec::new();
        while let Some(bytes) = by_hash.remove(&hash) {
            hash = Block::decode(&bytes).unwrap().header.previous_block_hash;
            chain.push(bytes);
        }
        chain.reverse();
        assert_eq!(chain.len(), 1191, "Core's chain is 1190 blocks over genesis");
        chain
    })
}

/// A signature in a block: transaction, input and witness item.
#[derive(Debug, Clone, Copy)]
pub struct SignatureAt {
    pub height: u32,
    pub transaction: usize,
    pub input: usize,
}

/// The lowest block spending a coin with a DER signature in its witness
/// (P2WPKH, bare or nested in P2SH).
pub fn first_witness_signature(chain: &[Vec<u8>]) -> SignatureAt {
    for (height, bytes) in chain.iter().enumerate() {
        let block = Block::decode(bytes).unwrap();
        for (transaction_index, transaction) in block.transactions.iter().enumerate().skip(1) {
            let found = transaction.inputs.iter().position(|input| {
                input.witness.len() == 2 && input.witness[0].first() == Some(&0x30)
            });
            if let Some(input) = found {
                let height = u32::try_from(height).unwrap();
                return SignatureAt { height, transaction: transaction_index, input };
            }
        }
    }
    panic!("no witness signature in the chain");
}

/// `bytes` with the last byte of `at`'s signature value (`s`, just before
/// the sighash byte) flipped, then sealed again: still valid DER, still
/// low-S, but no longer a signature of the transaction. Only the wtxid
/// changes, so the transactions that spend it in the block still find it.
pub fn break_signature(bytes: &[u8], at: SignatureAt, params: &Params) -> Block {
    let mut block = Block::decode(bytes).unwrap();
    let signature = &mut block.transactions[at.transaction].inputs[at.input].witness[0];
    let last_s_byte = signature.len() - 2;
    signature[last_s_byte] ^= 0x01;
    seal(&mut block, params);
    assert_ne!(block.block_hash().0, sha256d(&bytes[..80]));
    block
}

/// Repairs what does not depend on scripts after a change: the witness
/// commitment (BIP141: SHA256d(witness merkle root || witness nonce) in the
/// coinbase's last `6a24aa21a9ed` output), the merkle root, and the
/// proof of work (regtest: about two tries).
pub fn seal(block: &mut Block, params: &Params) {
    let commitment_output = block.transactions[0].outputs.iter().rposition(|output| {
        output.script_pubkey.len() >= 38
            && output.script_pubkey.starts_with(&WITNESS_COMMITMENT_HEADER)
    });
    if let Some(output) = commitment_output {
        let mut leaves = vec![[0u8; 32]];
        leaves.extend(block.transactions.iter().skip(1).map(|transaction| transaction.wtxid().0));
        let witness_root = merkle_root(leaves).root;
        let nonce = &block.transactions[0].inputs[0].witness[0];
        let mut preimage = witness_root.0.to_vec();
        preimage.extend_from_slice(nonce);
        let commitment = sha256d(&preimage);
        block.transactions[0].outputs[output].script_pubkey[6..38].copy_from_slice(&commitment);
    }
    let merkle = block.compute_merkle_root();
    assert!(!merkle.mutated);
    block.header.merkle_root = merkle.root;
    block.header.nonce = 0;
    while !check_proof_of_work(&block.block_hash(), CompactTarget(block.header.bits), params) {
        block.header.nonce += 1;
    }
}

/// A valid block on `parent` (at `height`) holding only a coinbase that
/// claims the subsidy; `tag` makes siblings differ.
pub fn coinbase_child(parent: &Block, height: u32, tag: u8, params: &Params) -> Block {
    let mut script_sig = bip34_height_prefix(Height::new(height));
    script_sig.extend_from_slice(&[0x01, tag]);
    let coinbase = Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig,
            sequence: u32::MAX,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput {
            value: block_subsidy(Height::new(height), params.subsidy_halving_interval).to_sat(),
            // OP_TRUE: anyone can spend it.
            script_pubkey: vec![0x51],
        }],
        lock_time: 0,
    };
    let mut header = parent.header;
    header.previous_block_hash = parent.block_hash();
    header.time = parent.header.time + 1;
    let mut block = Block { header, transactions: vec![coinbase] };
    seal(&mut block, params);
    block
}

/// `count` coinbase-only blocks on `parent` (at `height - 1`).
pub fn coinbase_chain(
    parent: &Block,
    height: u32,
    count: u32,
    tag: u8,
    params: &Params,
) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    for offset in 0..count {
        let below = blocks.last().unwrap_or(parent);
        let child = coinbase_child(below, height + offset, tag, params);
        blocks.push(child);
    }
    blocks
}

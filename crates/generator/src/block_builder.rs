//! Block assembly: the coinbase (BIP34 height, subsidy plus fees, BIP141
//! witness commitment with a zero reserved value), the merkle root, and the
//! regtest proof of work.
//!
//! Napkin math: regtest's target (nBits 0x207fffff) is met by about every
//! second hash, so grinding costs ~2 header hashes (~1 µs); the merkle root of
//! a 4,000-transaction block is ~8,000 SHA-256d of 64 bytes (~2 ms), under a
//! tenth of what signing that block costs.

use ibex_consensus::finality::bip34_height_prefix;
use ibex_primitives::hash::sha256d;
use ibex_primitives::merkle::WITNESS_COMMITMENT_HEADER;
use ibex_primitives::{
    merkle_root, Amount, Block, BlockHash, Hash256, Header, Height, OutPoint, Transaction, TxInput,
    TxOutput, Txid, Wtxid,
};

use crate::error::GeneratorError;
use crate::regtest::meets_target;

pub use crate::regtest::REGTEST_BITS;
/// Version of generated blocks: BIP9 top bits, no deployment signalled.
pub const BLOCK_VERSION: i32 = 0x2000_0000;
/// Nonces tried before giving up (regtest needs ~2).
const NONCE_ATTEMPTS_MAX: u32 = 1 << 24;

/// The witness commitment output script for `witness_root` and an all-zero
/// reserved value: OP_RETURN, push 36, 0xaa21a9ed, SHA256d(root || reserved).
pub fn witness_commitment_script(witness_root: &Hash256) -> Vec<u8> {
    let mut preimage = [0u8; 64];
    preimage[..32].copy_from_slice(&witness_root.0);
    let commitment = sha256d(&preimage);
    let mut script = Vec::with_capacity(38);
    script.extend_from_slice(&WITNESS_COMMITMENT_HEADER);
    script.extend_from_slice(&commitment);
    script
}

/// The witness merkle root over `wtxids` of the non-coinbase transactions
/// (the coinbase's leaf is all zeros).
pub fn witness_root(wtxids: &[Wtxid]) -> Hash256 {
    let mut leaves = Vec::with_capacity(wtxids.len() + 1);
    leaves.push([0u8; 32]);
    leaves.extend(wtxids.iter().map(|wtxid| wtxid.0));
    merkle_root(leaves).root
}

/// What a coinbase pays and says.
#[derive(Debug, Clone)]
pub struct CoinbaseSpec {
    /// Height it claims (BIP34).
    pub height: u32,
    /// Extra scriptSig bytes after the height (pool tag, extra nonce).
    pub extra: Vec<u8>,
    /// The payout script.
    pub script_pubkey: Vec<u8>,
    /// What it pays: at most the subsidy plus the fees.
    pub value: Amount,
    /// The witness root to commit to, when the block has witness data.
    pub witness_root: Option<Hash256>,
}

/// Builds the coinbase transaction.
pub fn build_coinbase(spec: &CoinbaseSpec) -> Transaction {
    let mut script_sig = bip34_height_prefix(Height::new(spec.height));
    ibex_script::script::push_data_into(&spec.extra, &mut script_sig);
    let witness = if spec.witness_root.is_some() { vec![vec![0u8; 32]] } else { Vec::new() };
    let mut outputs =
        vec![TxOutput { value: spec.value.to_sat(), script_pubkey: spec.script_pubkey.clone() }];
    if let Some(root) = &spec.witness_root {
        outputs.push(TxOutput { value: 0, script_pubkey: witness_commitment_script(root) });
    }
    Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig,
            sequence: u32::MAX,
            witness,
        }],
        outputs,
        lock_time: 0,
    }
}

/// Grinds `header.nonce` until the hash meets `header.bits`.
pub fn grind(header: &mut Header, height: u32) -> Result<BlockHash, GeneratorError> {
    for nonce in 0..NONCE_ATTEMPTS_MAX {
        header.nonce = nonce;
        let hash = header.block_hash();
        if meets_target(&hash, header.bits) {
            return Ok(hash);
        }
    }
    Err(GeneratorError::ProofOfWork { height })
}

/// Where a block goes and when.
#[derive(Debug, Clone, Copy)]
pub struct BlockPlace {
    /// The parent block.
    pub previous_block_hash: BlockHash,
    /// Height of the new block.
    pub height: u32,
    /// nTime.
    pub time: u32,
    /// nBits.
    pub bits: u32,
}

/// Assembles a block from its transactions (coinbase first) and their
/// `txids`: merkle root, then proof of work.
pub fn assemble_block(
    place: BlockPlace,
    transactions: Vec<Transaction>,
    txids: &[Txid],
) -> Result<Block, GeneratorError> {
    let leaves = txids.iter().map(|txid| txid.0).collect();
    let mut header = Header {
        version: BLOCK_VERSION,
        previous_block_hash: place.previous_block_hash,
        merkle_root: merkle_root(leaves).root,
        time: place.time,
        bits: place.bits,
        nonce: 0,
    };
    grind(&mut header, place.height)?;
    Ok(Block { header, transactions })
}

//! Signet chains with real block solutions (BIP325), for testing the
//! signet rules: a custom signet whose challenge is a 1-of-1 bare multisig
//! (`OP_1 <key> OP_1 OP_CHECKMULTISIG`, the shape of the default signet's
//! 1-of-2) over a key the caller holds, blocks of a coinbase each, and the
//! ways a block's solution can be wrong ([`SolutionFault`]).
//!
//! A block is signed as Core's `contrib/signet/miner` signs it: the
//! coinbase's witness commitment output gets a push of the signet header
//! alone, the virtual `to_spend`/`to_sign` transactions are built from that
//! block ([`SignetTransactions::create`]), `to_sign`'s input is signed
//! (legacy sighash, `SIGHASH_ALL`, scriptSig `OP_0 <signature>`), and the
//! push becomes the header followed by the serialised solution. Checking
//! cuts the push back to the header, so both sides hash the same coinbase.
//!
//! Napkin math: every signet shares the pow limit `0x1e0377ae`, met by one
//! header hash in ~4.8 M. Grinding hashes only the header's second 64-byte
//! block and the outer hash per nonce (the first block's state is kept):
//! two compressions, ~0.1 µs with SHA-NI, so ~0.5 s a block on one core,
//! split over the cores given.

use std::path::PathBuf;

use ibex_consensus::signet::{encode_signet_solution, SignetTransactions, SIGNET_HEADER};
use ibex_consensus::subsidy::block_subsidy;
use ibex_primitives::{
    merkle_root, Block, BlockHash, Header, Height, Params, ParsedTransaction, Transaction, Txid,
};
use ibex_script::script::push_data_into;
use ibex_script::sighash::legacy::legacy_sighash;
use ibex_script::sighash::SIGHASH_ALL;
use secp256k1::{Message, PublicKey, Secp256k1, SecretKey};

use crate::block_builder::{build_coinbase, witness_root, CoinbaseSpec, BLOCK_VERSION};
use crate::error::GeneratorError;
use crate::output::{write_manifest, ChainWriter};
use crate::signet_grind::grind_header;

/// `OP_1`, `OP_0` and `OP_CHECKMULTISIG`.
const OP_1: u8 = 0x51;
const OP_0: u8 = 0x00;
const OP_CHECKMULTISIG: u8 = 0xae;
/// Seconds between generated blocks: the target spacing, so the
/// difficulty stays at the pow limit across retargets.
const BLOCK_SPACING_SECONDS: u32 = 600;

/// A key that signs a signet's blocks, and the challenge it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignetSigner {
    secret_key: SecretKey,
    public_key: [u8; 33],
}

impl SignetSigner {
    /// The signer for the 32-byte secret `secret` (refused when it is not a
    /// valid secp256k1 scalar).
    pub fn from_secret(secret: [u8; 32]) -> Result<SignetSigner, GeneratorError> {
        let secret_key = SecretKey::from_byte_array(secret)
            .map_err(|_| GeneratorError::InvalidOption("signet key is not a valid secret key"))?;
        let secp = Secp256k1::signing_only();
        let public_key = PublicKey::from_secret_key(&secp, &secret_key).serialize();
        Ok(SignetSigner { secret_key, public_key })
    }

    /// The challenge: `OP_1 <compressed key> OP_1 OP_CHECKMULTISIG`.
    pub fn challenge(&self) -> Vec<u8> {
        let mut challenge = vec![OP_1];
        push_data_into(&self.public_key, &mut challenge);
        challenge.extend_from_slice(&[OP_1, OP_CHECKMULTISIG]);
        challenge
    }

    /// The solution's scriptSig for `to_sign` (its input spends a
    /// `challenge` output): `OP_0 <DER signature || SIGHASH_ALL>`, over the
    /// legacy sighash, or over that sighash with its first bit flipped when
    /// `corrupt` (a well-formed signature of the wrong message).
    fn sign(
        &self,
        to_sign: &Transaction,
        challenge: &[u8],
        corrupt: bool,
    ) -> Result<Vec<u8>, GeneratorError> {
        let bytes = to_sign.encode_without_witness();
        let parsed = ParsedTransaction::parse(&bytes)
            .map_err(|_| GeneratorError::InvalidOption("to_sign does not decode"))?;
        let mut sighash = legacy_sighash(&parsed.view(), 0, challenge, i32::from(SIGHASH_ALL));
        if corrupt {
            sighash[0] ^= 1;
        }
        let secp = Secp256k1::signing_only();
        let signature = secp.sign_ecdsa(Message::from_digest(sighash), &self.secret_key);
        let mut push = signature.serialize_der().to_vec();
        push.push(SIGHASH_ALL);
        let mut script_sig = vec![OP_0];
        push_data_into(&push, &mut script_sig);
        Ok(script_sig)
    }
}

/// How a generated block's solution is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolutionFault<'a> {
    /// A valid solution.
    None,
    /// No solution in the commitment at all.
    Missing,
    /// A well-formed signature over the wrong message.
    WrongSignature,
    /// A valid solution for another signet's challenge, signed by its key.
    OtherChallenge(&'a SignetSigner),
    /// A valid solution, after which the coinbase's payout changed (the
    /// merkle root and proof of work redone): the signature covers the
    /// block as it was.
    ChangedAfterSigning,
}

/// Where a block goes.
#[derive(Debug, Clone, Copy)]
pub struct SignetPlace {
    /// The parent block's hash.
    pub previous_block_hash: BlockHash,
    /// The parent's time.
    pub previous_time: u32,
    /// The new block's height.
    pub height: u32,
}

/// One signet block on `params` (whose challenge `signer` answers unless
/// `fault` says otherwise), paying its subsidy to `payout`, mined with
/// `threads` threads.
pub fn signet_block(
    params: &Params,
    place: SignetPlace,
    signer: &SignetSigner,
    payout: &[u8],
    fault: SolutionFault<'_>,
    threads: usize,
) -> Result<Block, GeneratorError> {
    let subsidy = block_subsidy(Height::new(place.height), params.subsidy_halving_interval);
    let mut coinbase = build_coinbase(&CoinbaseSpec {
        height: place.height,
        extra: Vec::new(),
        script_pubkey: payout.to_vec(),
        value: subsidy,
        witness_root: Some(witness_root(&[])),
    });
    let commitment = coinbase.outputs.len() - 1;
    let mut block = Block {
        header: Header {
            version: BLOCK_VERSION,
            previous_block_hash: place.previous_block_hash,
            merkle_root: ibex_primitives::Hash256([0; 32]),
            time: place.previous_time + BLOCK_SPACING_SECONDS,
            bits: params.pow_limit.to_compact().0,
            nonce: 0,
        },
        transactions: Vec::new(),
    };
    let (signing_key, challenge) = match fault {
        SolutionFault::OtherChallenge(other) => (other, other.challenge()),
        _ => (signer, signer.challenge()),
    };
    if fault != SolutionFault::Missing {
        push_data_into(&SIGNET_HEADER, &mut coinbase.outputs[commitment].script_pubkey);
        block.transactions = vec![coinbase.clone()];
        block.header.merkle_root = block_merkle_root(&block);
        let solution = solve(&block, signing_key, &challenge, fault)?;
        let script = &mut coinbase.outputs[commitment].script_pubkey;
        script.truncate(script.len() - (SIGNET_HEADER.len() + 1));
        push_data_into(&[&SIGNET_HEADER[..], &solution].concat(), script);
    }
    if fault == SolutionFault::ChangedAfterSigning {
        coinbase.outputs[0].value -= 1;
    }
    block.transactions = vec![coinbase];
    block.header.merkle_root = block_merkle_root(&block);
    grind_header(&mut block.header, threads, place.height)?;
    Ok(block)
}

/// The serialised solution for `block` (its commitment holding the bare
/// signet header) under `challenge`.
fn solve(
    block: &Block,
    signer: &SignetSigner,
    challenge: &[u8],
    fault: SolutionFault<'_>,
) -> Result<Vec<u8>, GeneratorError> {
    let bytes = block.encode();
    let parsed = ibex_primitives::BlockView::parse(&bytes)
        .map_err(|_| GeneratorError::InvalidOption("signet block does not decode"))?;
    let txids = parsed.txids();
    let transactions = SignetTransactions::create(&parsed, &txids, challenge)
        .map_err(|_| GeneratorError::InvalidOption("signet block has no witness commitment"))?;
    let script_sig =
        signer.sign(&transactions.to_sign, challenge, fault == SolutionFault::WrongSignature)?;
    Ok(encode_signet_solution(&script_sig, &[]))
}

fn block_merkle_root(block: &Block) -> ibex_primitives::Hash256 {
    let txids: Vec<Txid> = block.transactions.iter().map(Transaction::txid).collect();
    merkle_root(txids.iter().map(|txid| txid.0).collect()).root
}

/// What `ibex gen --chain signet` writes.
#[derive(Debug, Clone)]
pub struct SignetChainOptions {
    /// The `blocks/` directory to write.
    pub out: PathBuf,
    /// Blocks after genesis.
    pub blocks: u32,
    /// The signing key's secret.
    pub secret: [u8; 32],
    /// Grinding threads.
    pub threads: usize,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct SignetChainReport {
    /// The challenge, hex (`-signetchallenge=` takes it).
    pub challenge_hex: String,
    /// The tip's hash.
    pub tip_hash: BlockHash,
    /// The manifest's path.
    pub manifest_path: PathBuf,
}

/// Writes a custom signet's chain: genesis, then `blocks` signed blocks,
/// in Core's block files with the signet's magic, and a manifest naming
/// the challenge and the tip.
pub fn write_signet_chain(
    options: &SignetChainOptions,
) -> Result<SignetChainReport, GeneratorError> {
    let signer = SignetSigner::from_secret(options.secret)?;
    let challenge = signer.challenge();
    let params = Params::custom_signet(challenge.clone());
    let mut writer = ChainWriter::create(&options.out, params.message_start, [0; 8])?;
    writer.append(&params.genesis.encode())?;
    let payout = signer.challenge();
    let mut place = SignetPlace {
        previous_block_hash: params.genesis_hash,
        previous_time: params.genesis.header.time,
        height: 1,
    };
    for _ in 0..options.blocks {
        let block =
            signet_block(&params, place, &signer, &payout, SolutionFault::None, options.threads)?;
        writer.append(&block.encode())?;
        place = SignetPlace {
            previous_block_hash: block.block_hash(),
            previous_time: block.header.time,
            height: place.height + 1,
        };
    }
    writer.finish()?;
    let challenge_hex = ibex_primitives::hex::encode(&challenge);
    let manifest = signet_manifest(&challenge_hex, options.blocks, &place.previous_block_hash);
    let manifest_path = write_manifest(&options.out, &manifest)?;
    Ok(SignetChainReport { challenge_hex, tip_hash: place.previous_block_hash, manifest_path })
}

fn signet_manifest(challenge_hex: &str, blocks: u32, tip: &BlockHash) -> String {
    let value = serde_json::json!({
        "network": "signet",
        "signet_challenge": challenge_hex,
        "block_count": blocks,
        "tip_hash": tip.to_hex(),
    });
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

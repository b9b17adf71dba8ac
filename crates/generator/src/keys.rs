//! The key pool: secp256k1 keys derived from the seed, with every script the
//! generator pays to precomputed per key.
//!
//! Napkin math: deriving one entry costs a public key, two keypairs and two
//! taproot tweaks, ~100 µs; a pool of 1,024 keys is ~0.1 s once per run, and
//! every output script afterwards is a table look-up.

use ibex_primitives::hash::sha256;
use ibex_script::taproot::TAPROOT_LEAF_TAPSCRIPT;
use ibex_script::taproot::{tapleaf_hash, taptweak_hash as tap_tweak_hash};
use ripemd::{Digest, Ripemd160};
use secp256k1::{Keypair, Parity, PublicKey, Scalar, Secp256k1, SecretKey, XOnlyPublicKey};

use crate::error::GeneratorError;
use crate::random::DeterministicRng;
use crate::script_kind::{
    multisig_2_of_3_script, p2pk_script, p2pkh_script, p2sh_script, tapscript_checksig,
    witness_program_script, ScriptKind, OP_0, OP_1, SCRIPT_KIND_COUNT,
};

/// RIPEMD-160 of SHA-256 (Core's `Hash160`).
pub fn hash160(data: &[u8]) -> [u8; 20] {
    Ripemd160::digest(sha256(data)).into()
}

/// One key and everything derived from it.
#[derive(Debug, Clone)]
pub struct KeyEntry {
    /// The ECDSA secret key.
    pub secret_key: SecretKey,
    /// Compressed public key.
    pub public_key_compressed: [u8; 33],
    /// Uncompressed public key (P2PK outputs, as early coinbases paid).
    pub public_key_uncompressed: [u8; 65],
    /// The untweaked keypair (signs tapscript leaves).
    pub keypair: Keypair,
    /// Its x-only public key (the leaf script's key, the internal key).
    pub x_only: [u8; 32],
    /// Keypair tweaked for a key-path-only output.
    pub key_path_keypair: Keypair,
    /// The leaf script `<next key> OP_CHECKSIG` of the script-path output.
    pub leaf_script: Vec<u8>,
    /// Control block for that leaf: leaf version with the output key parity, internal key.
    pub control_block: [u8; 33],
    /// Witness script (P2WSH) and redeem script (P2SH) of the 2-of-3 multisig
    /// over this key and the next two.
    pub multisig_script: Vec<u8>,
    /// scriptPubKey per [`ScriptKind`], indexed by [`ScriptKind::index`].
    pub script_pubkeys: [Vec<u8>; SCRIPT_KIND_COUNT],
}

/// Keys derived from the seed, looked up by index.
#[derive(Debug)]
pub struct KeyPool {
    entries: Vec<KeyEntry>,
}

/// Core keys of one entry before the scripts that combine several keys.
struct BaseKey {
    secret_key: SecretKey,
    public_key: PublicKey,
    keypair: Keypair,
    x_only: XOnlyPublicKey,
}

fn base_key(
    secp: &Secp256k1<secp256k1::All>,
    rng: &mut DeterministicRng,
) -> Result<BaseKey, GeneratorError> {
    // A random 32-byte string is a valid key except with negligible chance;
    // retry rather than fail in that case.
    for _ in 0..16 {
        if let Ok(secret_key) = SecretKey::from_byte_array(rng.bytes_32()) {
            let public_key = PublicKey::from_secret_key(secp, &secret_key);
            let keypair = Keypair::from_secret_key(secp, &secret_key);
            let (x_only, _) = keypair.x_only_public_key();
            return Ok(BaseKey { secret_key, public_key, keypair, x_only });
        }
    }
    Err(GeneratorError::KeyDerivation)
}

fn tweak(
    secp: &Secp256k1<secp256k1::All>,
    keypair: &Keypair,
    merkle_root: Option<&[u8; 32]>,
) -> Result<Keypair, GeneratorError> {
    let (internal, _) = keypair.x_only_public_key();
    let hash = tap_tweak_hash(&internal.serialize(), merkle_root);
    let scalar = Scalar::from_be_bytes(hash).map_err(|_| GeneratorError::KeyDerivation)?;
    keypair.add_xonly_tweak(secp, &scalar).map_err(|_| GeneratorError::KeyDerivation)
}

fn entry(
    secp: &Secp256k1<secp256k1::All>,
    bases: &[BaseKey],
    index: usize,
) -> Result<KeyEntry, GeneratorError> {
    let count = bases.len();
    let base = &bases[index % count];
    let next = &bases[(index + 1) % count];
    let last = &bases[(index + 2) % count];
    let public_key_compressed = base.public_key.serialize();
    let multisig_script = multisig_2_of_3_script([
        &public_key_compressed,
        &next.public_key.serialize(),
        &last.public_key.serialize(),
    ]);
    let key_path_keypair = tweak(secp, &base.keypair, None)?;
    let leaf_script = tapscript_checksig(&next.x_only.serialize());
    let leaf_hash = tapleaf_hash(TAPROOT_LEAF_TAPSCRIPT, &leaf_script);
    let script_path_keypair = tweak(secp, &base.keypair, Some(&leaf_hash))?;
    let (script_path_output, parity) = script_path_keypair.x_only_public_key();
    let mut control_block = [0u8; 33];
    control_block[0] = TAPROOT_LEAF_TAPSCRIPT | u8::from(parity == Parity::Odd);
    control_block[1..].copy_from_slice(&base.x_only.serialize());
    let key_hash = hash160(&public_key_compressed);
    let p2wpkh = witness_program_script(OP_0, &key_hash);
    let script_pubkeys = [
        p2pk_script(&base.public_key.serialize_uncompressed()),
        p2pkh_script(&key_hash),
        p2sh_script(&hash160(&multisig_script)),
        p2sh_script(&hash160(&p2wpkh)),
        p2wpkh,
        witness_program_script(OP_0, &sha256(&multisig_script)),
        witness_program_script(OP_1, &key_path_keypair.x_only_public_key().0.serialize()),
        witness_program_script(OP_1, &script_path_output.serialize()),
        multisig_script.clone(),
    ];
    Ok(KeyEntry {
        secret_key: base.secret_key,
        public_key_compressed,
        public_key_uncompressed: base.public_key.serialize_uncompressed(),
        keypair: base.keypair,
        x_only: base.x_only.serialize(),
        key_path_keypair,
        leaf_script,
        control_block,
        multisig_script,
        script_pubkeys,
    })
}

impl KeyPool {
    /// Derives `count` keys (at least 3, for the 2-of-3 multisig) from `rng`.
    pub fn derive(rng: &mut DeterministicRng, count: usize) -> Result<KeyPool, GeneratorError> {
        let count = count.max(3);
        let secp = Secp256k1::new();
        let bases: Vec<BaseKey> =
            (0..count).map(|_| base_key(&secp, rng)).collect::<Result<_, _>>()?;
        let entries =
            (0..count).map(|index| entry(&secp, &bases, index)).collect::<Result<_, _>>()?;
        Ok(KeyPool { entries })
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the pool is empty (never, once derived).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key at `index` (wrapping around the pool).
    pub fn entry(&self, index: u32) -> &KeyEntry {
        &self.entries[index as usize % self.entries.len()]
    }

    /// The `offset`-th key after `index` (multisig and leaf co-signers).
    pub fn following(&self, index: u32, offset: u32) -> &KeyEntry {
        let position = (index as usize + offset as usize) % self.entries.len();
        &self.entries[position]
    }

    /// The scriptPubKey of an output of `kind` to key `index`.
    pub fn script_pubkey(&self, kind: ScriptKind, index: u32) -> &[u8] {
        &self.entry(index).script_pubkeys[kind.index()]
    }
}

/// Checks the x-only key serialisation the leaf and control block use.
#[cfg(test)]
mod tests {
    use super::*;
    use ibex_script::taproot::ControlBlock;

    #[test]
    fn script_path_commitment_matches_output() {
        let mut rng = DeterministicRng::new(3, 0);
        let pool = KeyPool::derive(&mut rng, 4).unwrap();
        let entry = pool.entry(1);
        let control = ControlBlock::parse(&entry.control_block).unwrap();
        let leaf_hash = tapleaf_hash(TAPROOT_LEAF_TAPSCRIPT, &entry.leaf_script);
        let root = control.merkle_root(&leaf_hash);
        let output = &entry.script_pubkeys[ScriptKind::P2trScriptPath.index()];
        let x_only = XOnlyPublicKey::from_byte_array(output[2..34].try_into().unwrap()).unwrap();
        let secp = Secp256k1::verification_only();
        let internal = XOnlyPublicKey::from_byte_array(entry.x_only).unwrap();
        let tweak_hash = tap_tweak_hash(&entry.x_only, Some(&root));
        let scalar = Scalar::from_be_bytes(tweak_hash).unwrap();
        let (tweaked, _) = internal.add_tweak(&secp, &scalar).unwrap();
        assert_eq!(tweaked, x_only);
    }
}

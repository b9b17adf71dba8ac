//! BIP341 taproot commitments: tagged hashes, tapleaf and tapbranch hashes,
//! the merkle path of a control block, and the output key tweak check.
//!
//! Napkin math: a script path spend costs one TapLeaf hash over the script,
//! one TapBranch hash (a single 64-byte compression after the cached tag
//! prefix) per path node, one TapTweak hash and one tweak-add check (~15 µs
//! on libsecp256k1), small next to a Schnorr verification.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use ibex_primitives::encode::write_compact_size;

/// Leaf version bits of a control block's first byte (the low bit is the
/// output key's Y parity).
pub const TAPROOT_LEAF_MASK: u8 = 0xfe;
/// The BIP342 tapscript leaf version.
pub const TAPROOT_LEAF_TAPSCRIPT: u8 = 0xc0;
/// Control block bytes before the path: leaf version/parity and internal key.
pub const TAPROOT_CONTROL_BASE_SIZE: usize = 33;
/// Bytes per merkle path node.
pub const TAPROOT_CONTROL_NODE_SIZE: usize = 32;
/// Deepest merkle path.
pub const TAPROOT_CONTROL_MAX_NODE_COUNT: usize = 128;
/// Largest control block.
pub const TAPROOT_CONTROL_MAX_SIZE: usize =
    TAPROOT_CONTROL_BASE_SIZE + TAPROOT_CONTROL_NODE_SIZE * TAPROOT_CONTROL_MAX_NODE_COUNT;
/// First byte marking the last witness item as an annex.
pub const ANNEX_TAG: u8 = 0x50;
/// BIP342: the validation weight budget is the witness size plus this.
pub const VALIDATION_WEIGHT_OFFSET: i64 = 50;

const _: () = assert!(TAPROOT_CONTROL_MAX_SIZE == 4129);

/// A BIP340 tagged hasher with the `SHA256(tag) || SHA256(tag)` prefix
/// already absorbed (one compression, computed once per tag).
fn tagged_hasher(cell: &'static OnceLock<Sha256>, tag: &str) -> Sha256 {
    cell.get_or_init(|| {
        let tag_hash = Sha256::digest(tag.as_bytes());
        let mut hasher = Sha256::new();
        hasher.update(tag_hash);
        hasher.update(tag_hash);
        hasher
    })
    .clone()
}

fn tapleaf_hasher() -> Sha256 {
    static CELL: OnceLock<Sha256> = OnceLock::new();
    tagged_hasher(&CELL, "TapLeaf")
}

fn tapbranch_hasher() -> Sha256 {
    static CELL: OnceLock<Sha256> = OnceLock::new();
    tagged_hasher(&CELL, "TapBranch")
}

fn taptweak_hasher() -> Sha256 {
    static CELL: OnceLock<Sha256> = OnceLock::new();
    tagged_hasher(&CELL, "TapTweak")
}

/// BIP341 tapleaf hash: `TaggedHash("TapLeaf", version || compact_size(len) || script)`.
pub fn tapleaf_hash(leaf_version: u8, script: &[u8]) -> [u8; 32] {
    let mut prefix = Vec::with_capacity(10);
    prefix.push(leaf_version);
    write_compact_size(&mut prefix, script.len() as u64);
    let mut hasher = tapleaf_hasher();
    hasher.update(&prefix);
    hasher.update(script);
    hasher.finalize().into()
}

/// BIP341 tapbranch hash of two children, smaller first.
pub fn tapbranch_hash(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let (first, second) = if a < b { (a, b) } else { (b, a) };
    let mut hasher = tapbranch_hasher();
    hasher.update(first);
    hasher.update(second);
    hasher.finalize().into()
}

/// BIP341 tweak hash: `TaggedHash("TapTweak", internal_key || merkle_root)`,
/// without the root for a key-only output.
pub fn taptweak_hash(internal_key: &[u8; 32], merkle_root: Option<&[u8; 32]>) -> [u8; 32] {
    let mut hasher = taptweak_hasher();
    hasher.update(internal_key);
    if let Some(root) = merkle_root {
        hasher.update(root);
    }
    hasher.finalize().into()
}

/// A control block of valid size: `33 + 32 * m` bytes, `m <= 128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlBlock<'a> {
    bytes: &'a [u8],
}

impl<'a> ControlBlock<'a> {
    /// Checks the size (Core's `TAPROOT_WRONG_CONTROL_SIZE` condition).
    pub fn parse(bytes: &'a [u8]) -> Option<ControlBlock<'a>> {
        let path_bytes = bytes.len().checked_sub(TAPROOT_CONTROL_BASE_SIZE)?;
        if bytes.len() > TAPROOT_CONTROL_MAX_SIZE || path_bytes % TAPROOT_CONTROL_NODE_SIZE != 0 {
            return None;
        }
        Some(ControlBlock { bytes })
    }

    /// The leaf version (first byte without the parity bit).
    pub fn leaf_version(&self) -> u8 {
        self.bytes.first().map_or(0, |first| first & TAPROOT_LEAF_MASK)
    }

    /// The output key's Y parity (true for odd).
    pub fn output_key_parity(&self) -> bool {
        self.bytes.first().is_some_and(|first| first & 1 == 1)
    }

    /// The x-only internal key.
    pub fn internal_key(&self) -> [u8; 32] {
        let mut key = [0u8; 32];
        if let Some(bytes) = self.bytes.get(1..TAPROOT_CONTROL_BASE_SIZE) {
            key.copy_from_slice(bytes);
        }
        key
    }

    /// The merkle root from `leaf_hash` up the path (Core's
    /// `ComputeTaprootMerkleRoot`).
    pub fn merkle_root(&self, leaf_hash: &[u8; 32]) -> [u8; 32] {
        let path = self.bytes.get(TAPROOT_CONTROL_BASE_SIZE..).unwrap_or_default();
        path.chunks_exact(TAPROOT_CONTROL_NODE_SIZE).fold(*leaf_hash, |node, sibling| {
            let mut sibling_hash = [0u8; 32];
            sibling_hash.copy_from_slice(sibling);
            tapbranch_hash(&node, &sibling_hash)
        })
    }
}

/// Core's `VerifyTaprootCommitment`: whether `output_key` (the witness
/// program) commits to the leaf through the control block's path and
/// internal key, with the control block's parity.
pub fn verify_taproot_commitment(
    control: &ControlBlock<'_>,
    output_key: &[u8],
    leaf_hash: &[u8; 32],
) -> bool {
    let Ok(output_key) = <[u8; 32]>::try_from(output_key) else {
        return false;
    };
    let internal_key = control.internal_key();
    let merkle_root = control.merkle_root(leaf_hash);
    let tweak = taptweak_hash(&internal_key, Some(&merkle_root));
    check_tap_tweak(&output_key, &internal_key, &tweak, control.output_key_parity())
}

/// Core's `XOnlyPubKey::CheckTapTweak`: whether `output_key` with Y parity
/// `odd` equals `internal_key + tweak·G`. False for an internal key that is
/// not on the curve or a tweak not below the group order.
pub fn check_tap_tweak(
    output_key: &[u8; 32],
    internal_key: &[u8; 32],
    tweak: &[u8; 32],
    odd: bool,
) -> bool {
    let Ok(internal) = secp256k1::XOnlyPublicKey::from_byte_array(*internal_key) else {
        return false;
    };
    // An output key that is not a valid x coordinate can match nothing.
    let Ok(output) = secp256k1::XOnlyPublicKey::from_byte_array(*output_key) else {
        return false;
    };
    let Ok(tweak) = secp256k1::Scalar::from_be_bytes(*tweak) else {
        return false;
    };
    let parity = if odd { secp256k1::Parity::Odd } else { secp256k1::Parity::Even };
    internal.tweak_add_check(context(), &output, parity, tweak)
}

/// The taproot output key and its Y parity (true for odd) for
/// `internal_key` and an optional script tree root (BIP341's
/// `taproot_tweak_pubkey`); `None` if the key or tweak is invalid.
pub fn tweaked_output_key(
    internal_key: &[u8; 32],
    merkle_root: Option<&[u8; 32]>,
) -> Option<([u8; 32], bool)> {
    let internal = secp256k1::XOnlyPublicKey::from_byte_array(*internal_key).ok()?;
    let tweak = secp256k1::Scalar::from_be_bytes(taptweak_hash(internal_key, merkle_root)).ok()?;
    let (output, parity) = internal.add_tweak(context(), &tweak).ok()?;
    Some((output.serialize(), parity == secp256k1::Parity::Odd))
}

fn context() -> &'static secp256k1::Secp256k1<secp256k1::VerifyOnly> {
    static CONTEXT: OnceLock<secp256k1::Secp256k1<secp256k1::VerifyOnly>> = OnceLock::new();
    CONTEXT.get_or_init(secp256k1::Secp256k1::verification_only)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hex;

    fn array(text: &str) -> [u8; 32] {
        hex::decode(text).unwrap().try_into().unwrap()
    }

    #[test]
    fn control_block_sizes() {
        assert!(ControlBlock::parse(&[0xc0; 32]).is_none());
        assert!(ControlBlock::parse(&[0xc0; 33]).is_some());
        assert!(ControlBlock::parse(&[0xc0; 34]).is_none());
        assert!(ControlBlock::parse(&[0xc0; 65]).is_some());
        assert!(ControlBlock::parse(&vec![0xc0; TAPROOT_CONTROL_MAX_SIZE]).is_some());
        assert!(ControlBlock::parse(&vec![0xc0; TAPROOT_CONTROL_MAX_SIZE + 32]).is_none());
    }

    /// BIP341's wallet vectors, first script tree: one leaf, NUMS-free keys.
    #[test]
    fn bip341_single_leaf_output_key() {
        let internal = array("187791b6f712a8ea41c8ecdd0ee77fab3e85263b37e1ec18a3651926b3a6cf27");
        let script =
            hex::decode("20d85a959b0290bf19bb89ed43c916be835475d013da4b362117393e25a48229b8ac")
                .unwrap();
        let leaf = tapleaf_hash(TAPROOT_LEAF_TAPSCRIPT, &script);
        assert_eq!(
            hex::encode(&leaf),
            "5b75adecf53548f3ec6ad7d78383bf84cc57b55a3127c72b9a2481752dd88b21"
        );
        let (output, odd) = tweaked_output_key(&internal, Some(&leaf)).unwrap();
        assert_eq!(
            hex::encode(&output),
            "147c9c57132f6e7ecddba9800bb0c4449251c92a1e60371ee77557b6620f3ea3"
        );
        let mut control = vec![TAPROOT_LEAF_TAPSCRIPT | u8::from(odd)];
        control.extend_from_slice(&internal);
        let control = ControlBlock::parse(&control).unwrap();
        assert!(verify_taproot_commitment(&control, &output, &leaf));
        let mut wrong = output;
        wrong[0] ^= 1;
        assert!(!verify_taproot_commitment(&control, &wrong, &leaf));
    }
}

//! Merkle roots with Core's mutation detection (CVE-2012-2459), the witness
//! merkle root and the BIP141 witness commitment.
//!
//! Napkin math: a 2,500-transaction block has 2,499 inner nodes, each one
//! [`sha256d_64`] (three compressions, ~110 ns with SHA-NI): ~0.3 ms one node at a
//! time; hashing two nodes at once with interleaved SHA-NI
//! ([`sha256d_64_pair`]) roughly halves that, as Core's `SHA256D64` does.

use crate::block::BlockView;
use crate::hash::{sha256_each, sha256_each_32_in_place, sha256d_64, sha256d_64_pair, Hash256};
use thiserror::Error;

/// A merkle root and whether the tree was mutated: two equal siblings somewhere
/// (Core's `ComputeMerkleRoot` `mutated` output). A mutated tree has the same root
/// as a different transaction list, so Core rejects such blocks (`bad-txns-duplicate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MerkleRoot {
    /// The root (all zeros for no leaves).
    pub root: Hash256,
    /// Whether two equal siblings were met.
    pub mutated: bool,
}

/// Computes the merkle root of `leaves` in place (the vector is consumed as scratch).
///
/// Parents are hashed two at a time ([`sha256d_64_pair`], interleaved SHA-NI);
/// an odd parent left over at a level takes the single [`sha256d_64`].
pub fn merkle_root(mut leaves: Vec<[u8; 32]>) -> MerkleRoot {
    let mut mutated = false;
    if leaves.is_empty() {
        return MerkleRoot { root: Hash256::ZERO, mutated };
    }
    while leaves.len() > 1 {
        // Core compares positions (0,1), (2,3), ... before duplicating an odd last
        // node, so the duplicate added below never counts as a mutation.
        for siblings in leaves.chunks_exact(2) {
            mutated |= siblings[0] == siblings[1];
        }
        if leaves.len() % 2 == 1 {
            let last = leaves[leaves.len() - 1];
            leaves.push(last);
        }
        let parents = leaves.len() / 2;
        let mut index = 0;
        // Parent `index` reads children 2 * index and 2 * index + 1, at or after
        // `index`, and both pairs are read before either parent is written.
        while index + 2 <= parents {
            let [first, second] =
                sha256d_64_pair(&children(&leaves, 2 * index), &children(&leaves, 2 * index + 2));
            leaves[index] = first;
            leaves[index + 1] = second;
            index += 2;
        }
        if index < parents {
            leaves[index] = sha256d_64(&children(&leaves, 2 * index));
        }
        leaves.truncate(parents);
    }
    MerkleRoot { root: Hash256(leaves[0]), mutated }
}

/// The 64 bytes a merkle parent hashes: nodes `first` and `first + 1`.
#[inline]
fn children(nodes: &[[u8; 32]], first: usize) -> [u8; 64] {
    let mut pair = [0u8; 64];
    pair[..32].copy_from_slice(&nodes[first]);
    pair[32..].copy_from_slice(&nodes[first + 1]);
    pair
}

/// BIP141: a witness commitment output script starts with OP_RETURN, a 36-byte
/// push and this 4-byte tag.
pub const WITNESS_COMMITMENT_HEADER: [u8; 6] = [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
/// Core's MINIMUM_WITNESS_COMMITMENT: header plus the 32-byte commitment.
pub const WITNESS_COMMITMENT_BYTES_MIN: usize = 38;

/// Index of the coinbase output holding the witness commitment: the last output
/// that matches, as Core's `GetWitnessCommitmentIndex` picks.
pub fn witness_commitment_index(block: &BlockView<'_>) -> Option<usize> {
    let coinbase = block.transaction(0)?;
    coinbase.outputs().iter().rposition(|output| {
        output.script_pubkey.len() >= WITNESS_COMMITMENT_BYTES_MIN
            && output.script_pubkey.starts_with(&WITNESS_COMMITMENT_HEADER)
    })
}

/// Why a block's witness data does not match its commitment; the messages are
/// Core's reject reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WitnessCommitmentError {
    /// The coinbase witness must be exactly one 32-byte item.
    #[error("bad-witness-nonce-size")]
    BadNonceSize,
    /// The committed hash differs from the one computed.
    #[error("bad-witness-merkle-match")]
    MerkleMismatch,
    /// Witness data in a block without a commitment.
    #[error("unexpected-witness")]
    UnexpectedWitness,
}

/// The witness merkle root: wtxids with the coinbase's replaced by zeros. The
/// mutation flag is ignored here, as in Core.
pub fn witness_merkle_root(block: &BlockView<'_>) -> Hash256 {
    // The wtxids' hashes run two transactions at a time (`sha256_each`).
    let messages: Vec<[&[u8]; 3]> =
        block.transactions().skip(1).map(|transaction| [transaction.bytes(), &[], &[]]).collect();
    let mut leaves = vec![[0u8; 32]; block.transaction_count()];
    if let Some(wtxids) = leaves.get_mut(1..) {
        sha256_each(&messages, wtxids);
        sha256_each_32_in_place(wtxids);
    }
    merkle_root(leaves).root
}

/// Core's `CheckWitnessMalleation` for a block where segwit is active.
pub fn check_witness_commitment(block: &BlockView<'_>) -> Result<(), WitnessCommitmentError> {
    let Some(coinbase) = block.transaction(0) else {
        return Ok(());
    };
    if let Some(index) = witness_commitment_index(block) {
        let witness = coinbase.inputs().first().map(|input| input.witness);
        let nonce = match witness.map(|witness| (witness.len(), witness.iter().next())) {
            Some((1, Some(item))) if item.len() == 32 => item,
            _ => return Err(WitnessCommitmentError::BadNonceSize),
        };
        let mut preimage = [0u8; 64];
        preimage[..32].copy_from_slice(&witness_merkle_root(block).0);
        preimage[32..].copy_from_slice(nonce);
        let commitment = sha256d_64(&preimage);
        let script = coinbase.outputs()[index].script_pubkey;
        if script.get(6..38) != Some(&commitment[..]) {
            return Err(WitnessCommitmentError::MerkleMismatch);
        }
        return Ok(());
    }
    if block.transactions().any(|transaction| transaction.has_witness()) {
        return Err(WitnessCommitmentError::UnexpectedWitness);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

    /// Core's `ComputeMerkleRoot` written plainly: new vectors per level, the
    /// plain hasher, equal siblings checked before the odd duplication.
    fn reference_merkle_root(leaves: &[[u8; 32]]) -> MerkleRoot {
        let mut level = leaves.to_vec();
        let mut mutated = false;
        if level.is_empty() {
            return MerkleRoot { root: Hash256::ZERO, mutated };
        }
        while level.len() > 1 {
            for position in (0..level.len() - 1).step_by(2) {
                mutated |= level[position] == level[position + 1];
            }
            if level.len() % 2 == 1 {
                level.push(level[level.len() - 1]);
            }
            level = level
                .chunks(2)
                .map(|pair| {
                    let first =
                        Sha256::new().chain_update(pair[0]).chain_update(pair[1]).finalize();
                    Sha256::digest(first).into()
                })
                .collect();
        }
        MerkleRoot { root: Hash256(level[0]), mutated }
    }

    /// Leaves from a tiny alphabet half of the time, so equal siblings (and
    /// so the mutation flag) come up often.
    fn leaf() -> impl Strategy<Value = [u8; 32]> {
        prop_oneof![any::<[u8; 32]>(), (0u8..3).prop_map(|byte| [byte; 32])]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn matches_the_reference_merkle_root(leaves in proptest::collection::vec(leaf(), 0..100)) {
            prop_assert_eq!(merkle_root(leaves.clone()), reference_merkle_root(&leaves));
        }
    }

    #[test]
    fn matches_the_reference_for_every_count_up_to_100() {
        for count in 0..100u32 {
            let leaves: Vec<[u8; 32]> =
                (0..count).map(|index| Sha256::digest(index.to_le_bytes()).into()).collect();
            assert_eq!(merkle_root(leaves.clone()), reference_merkle_root(&leaves), "{count}");
        }
    }

    #[test]
    fn single_leaf_is_its_own_root() {
        let leaf = [7u8; 32];
        assert_eq!(merkle_root(vec![leaf]), MerkleRoot { root: Hash256(leaf), mutated: false });
    }

    #[test]
    fn odd_duplication_is_not_a_mutation_but_equal_siblings_are() {
        let (a, b, c) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let three = merkle_root(vec![a, b, c]);
        let four = merkle_root(vec![a, b, c, c]);
        assert!(!three.mutated);
        assert!(four.mutated);
        assert_eq!(three.root, four.root, "CVE-2012-2459: same root for both lists");
    }
}

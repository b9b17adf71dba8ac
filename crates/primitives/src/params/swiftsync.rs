//! The SwiftSync hints file a network trusts by default: its terminal
//! height and the SHA-256 of its exact bytes, as Core commits AssumeUTXO
//! hashes (and btcd its hints files, `chaincfg.Params.SwiftSync`).
//!
//! No network has an entry yet: no hints file in the BIP 456 coding is
//! published whose bytes could be committed (btcd's signet entry commits
//! a gzipped file in its own coding). A file the operator names with
//! `-swiftsync` is checked against the entry when there is one, and taken
//! as it is otherwise: a wrong file costs time, never correctness (the
//! aggregate must balance before its coins are used).

use crate::hash::{sha256, Hash256};

/// A network's hints file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwiftSyncHintsEntry {
    /// The last block the file covers.
    pub terminal_height: u32,
    /// SHA-256 of the file's bytes (as they hash, not reversed).
    pub file_sha256: Hash256,
}

/// Why a hints file is not the one a network commits to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the hints file's SHA-256 is {found}, the network's hints file has {expected}")]
pub struct HintsCommitmentMismatch {
    /// The file's hash.
    pub found: Hash256,
    /// The entry's.
    pub expected: Hash256,
}

impl SwiftSyncHintsEntry {
    /// Whether `bytes` are the committed file.
    pub fn check(&self, bytes: &[u8]) -> Result<(), HintsCommitmentMismatch> {
        let found = Hash256(sha256(bytes));
        if found == self.file_sha256 {
            Ok(())
        } else {
            Err(HintsCommitmentMismatch { found, expected: self.file_sha256 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_committed_bytes_pass() {
        let bytes = b"UTXO\x00\x00\x00\x00\x00".to_vec();
        let entry =
            SwiftSyncHintsEntry { terminal_height: 0, file_sha256: Hash256(sha256(&bytes)) };
        assert_eq!(entry.check(&bytes), Ok(()));
        let mut flipped = bytes.clone();
        flipped[8] ^= 1;
        let error = entry.check(&flipped).unwrap_err();
        assert_eq!(error.expected, entry.file_sha256);
        assert_ne!(error.found, error.expected);
    }
}

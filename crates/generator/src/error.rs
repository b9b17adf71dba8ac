//! The generator's errors.

use std::path::PathBuf;

use thiserror::Error;

/// Why generation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GeneratorError {
    /// Thirty-two random bytes were not a valid secret key sixteen times in a row.
    #[error("could not derive a secp256k1 key from the seed")]
    KeyDerivation,
    /// A transaction the generator built did not decode back.
    #[error("transaction at height {height} did not decode: {source}")]
    TransactionDecode {
        /// Height of the block being built.
        height: u32,
        /// The decoder's error.
        source: ibex_primitives::DecodeError,
    },
    /// Signing an input failed (a sighash could not be computed).
    #[error("signing input {input} of a transaction at height {height} failed")]
    Signing {
        /// Height of the block being built.
        height: u32,
        /// The input's index.
        input: usize,
    },
    /// No nonce gave a hash under the target (impossible on regtest in practice).
    #[error("no nonce satisfies the proof of work at height {height}")]
    ProofOfWork {
        /// Height of the block.
        height: u32,
    },
    /// Writing block files failed.
    #[error("block files: {0}")]
    BlockStore(#[from] ibex_blockstore::BlockStoreError),
    /// Writing another output file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The manifest could not be serialised.
    #[error("manifest: {0}")]
    Manifest(#[from] serde_json::Error),
    /// A value or fee the generator computed left the money range (a
    /// bookkeeping bug: every coin it spends came from its own blocks).
    #[error("an amount at height {height} is outside the money range")]
    AmountOutOfRange {
        /// Height of the block being built.
        height: u32,
    },
    /// An option is out of range.
    #[error("invalid option: {0}")]
    InvalidOption(&'static str),
}

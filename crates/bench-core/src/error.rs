//! What can go wrong in a benchmark run.

use std::path::PathBuf;
use std::process::ExitStatus;

use crate::measurement::Side;

/// A benchmark failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// Reading or writing a file or directory failed.
    #[error("i/o on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A path the kernel needs as UTF-8 text is not.
    #[error("path {path} is not UTF-8")]
    NonUtf8Path {
        /// The path.
        path: PathBuf,
    },
    /// The generator's `manifest.json` could not be parsed.
    #[error("manifest {path}: {source}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The manifest lacks a field or holds a wrong value in it.
    #[error("manifest {path}: missing or bad field {field}")]
    ManifestField {
        /// The manifest.
        path: PathBuf,
        /// The field.
        field: &'static str,
    },
    /// Generating the chain failed.
    #[error("generator: {0}")]
    Generator(#[from] ibex_generator::GeneratorError),
    /// Ibex's chainstate failed.
    #[error("ibex: {0}")]
    Ibex(#[from] ibex_chainstate::ChainstateError),
    /// Core's kernel failed.
    #[error("core: {0}")]
    Kernel(#[from] bitcoinkernel::KernelError),
    /// A side ended the import on another tip than the manifest's.
    #[error("{side} ended at {found}, the manifest's tip is {expected}")]
    WrongTip {
        /// The side.
        side: Side,
        /// Its tip (hash and height).
        found: String,
        /// The manifest's.
        expected: String,
    },
    /// A child process could not start or failed.
    #[error("the {side} child process failed: {status:?}")]
    Child {
        /// The side it ran.
        side: Side,
        /// Its exit status, when it ran.
        status: Option<ExitStatus>,
    },
    /// A child process printed no parsable result line.
    #[error("the {side} child process printed no result line")]
    NoResult {
        /// The side it ran.
        side: Side,
    },
}

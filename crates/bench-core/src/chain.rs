//! The chain being imported: its block files and what the generator's
//! `manifest.json` says about it.

use std::path::{Path, PathBuf};

use crate::error::BenchError;

/// What the manifest says about the best chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFacts {
    /// The tip's hash (hex, as Core prints it).
    pub tip_hash: String,
    /// The tip's height.
    pub tip_height: u32,
    /// Transactions, genesis's coinbase included.
    pub transactions: u64,
    /// Inputs, coinbases excluded.
    pub inputs: u64,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Io { path: path.to_path_buf(), source }
}

impl ChainFacts {
    /// Reads `manifest.json` from the blocks directory `blocks`.
    pub fn read(blocks: &Path) -> Result<ChainFacts, BenchError> {
        let path = blocks.join(ibex_generator::output::MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(io_error(&path))?;
        let manifest: serde_json::Value = serde_json::from_str(&text)
            .map_err(|source| BenchError::Manifest { path: path.clone(), source })?;
        let field = |field: &'static str| BenchError::ManifestField { path: path.clone(), field };
        let number = |value: &serde_json::Value, name: &'static str| {
            value.as_u64().ok_or_else(|| field(name))
        };
        let inputs = &manifest["inputs_by_script_type"];
        let all_inputs = number(&inputs["total"], "inputs_by_script_type.total")?;
        let coinbase_inputs = number(&inputs["coinbase"], "inputs_by_script_type.coinbase")?;
        let tip_height = number(&manifest["block_count"], "block_count")?;
        Ok(ChainFacts {
            tip_hash: manifest["tip_hash"].as_str().ok_or_else(|| field("tip_hash"))?.to_owned(),
            tip_height: u32::try_from(tip_height).map_err(|_| field("block_count"))?,
            // The manifest does not count genesis's coinbase; the chainstates do.
            transactions: number(&manifest["transactions"], "transactions")? + 1,
            inputs: all_inputs.saturating_sub(coinbase_inputs),
        })
    }

    /// Blocks in the chain, genesis included.
    pub fn block_count(&self) -> u64 {
        u64::from(self.tip_height) + 1
    }
}

/// Copies the block files (`blk?????.dat`, `xor.dat`) of `source` into a
/// new directory `destination` and returns the bytes copied.
pub fn copy_block_files(source: &Path, destination: &Path) -> Result<u64, BenchError> {
    std::fs::create_dir_all(destination).map_err(io_error(destination))?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(source).map_err(io_error(source))? {
        let path = entry.map_err(io_error(source))?.path();
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned());
        let Some(name) = name else { continue };
        if (name.starts_with("blk") && name.ends_with(".dat")) || name == "xor.dat" {
            bytes += std::fs::copy(&path, destination.join(&name)).map_err(io_error(&path))?;
        }
    }
    Ok(bytes)
}

/// A fresh, empty directory at `path` (whatever was there is removed).
pub fn fresh_directory(path: &Path) -> Result<PathBuf, BenchError> {
    if path.exists() {
        std::fs::remove_dir_all(path).map_err(io_error(path))?;
    }
    std::fs::create_dir_all(path).map_err(io_error(path))?;
    Ok(path.to_path_buf())
}

/// `path` as UTF-8 text, for the kernel's C API.
pub fn path_text(path: &Path) -> Result<&str, BenchError> {
    path.to_str().ok_or_else(|| BenchError::NonUtf8Path { path: path.to_path_buf() })
}

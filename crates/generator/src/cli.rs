//! The `ibex gen` command line (the `ibex` binary embeds [`GenArguments`]).

use std::path::PathBuf;

use clap::Args;

use crate::generate::generate;
use crate::options::{GeneratorOptions, Profile};
use crate::siblings::{parse_classes, SiblingTail};

/// `ibex gen`: write a valid, realistic regtest chain as Core block files.
#[derive(Debug, Clone, Args)]
pub struct GenArguments {
    /// Size and shape: tiny (seconds, unit tests), small (~2,000 blocks,
    /// ~50 MB), bench (several GB, millions of coins), utxo-heavy (batch
    /// payouts to a UTXO set of more than 25 M coins).
    #[arg(long, default_value = "tiny")]
    pub profile: String,
    /// Seed of every random choice: same seed and options, same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory (Core's `blocks/`); must not hold block files yet.
    #[arg(long)]
    pub out: PathBuf,
    /// Blocks after genesis (overrides the profile).
    #[arg(long)]
    pub blocks: Option<u32>,
    /// Weight blocks fill toward, at most 4,000,000 (overrides the profile).
    #[arg(long)]
    pub target_weight: Option<usize>,
    /// Write an all-zero xor.dat (no obfuscation).
    #[arg(long)]
    pub xor_zero: bool,
    /// Append one invalid block per documented class after the valid chain.
    #[arg(long)]
    pub invalid: bool,
    /// Also write a reorged branch and a stale block.
    #[arg(long)]
    pub forks: bool,
    /// End the chain with invalid siblings of its last valid block, of
    /// these classes in file order (comma-separated names, as in the
    /// manifest: invalid_signature, coinbase_overpays, missing_coin, ...).
    #[arg(long)]
    pub invalid_siblings: Option<String>,
    /// Where the valid sibling goes among the invalid ones: 0 first
    /// (default: after all of them).
    #[arg(long, requires = "invalid_siblings")]
    pub valid_sibling_position: Option<usize>,
    /// Add a valid child of the valid sibling after all the siblings.
    #[arg(long, requires = "invalid_siblings")]
    pub valid_child: bool,
    /// Signing threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The chain: `regtest` (default), or `signet` for a custom signet
    /// whose blocks carry real BIP325 solutions (coinbase-only blocks at
    /// signet's real difficulty, ~0.5 s a block; the other options but
    /// `--blocks`, `--out` and `--threads` do not apply).
    #[arg(long, default_value = "regtest")]
    pub chain: String,
    /// The signet signing key's 32-byte secret, hex (default: derived from
    /// `--seed`); its challenge is `OP_1 <key> OP_1 OP_CHECKMULTISIG`.
    #[arg(long)]
    pub signet_key: Option<String>,
}

/// The random stream the signet key comes from (apart from the regtest
/// generator's streams).
const STREAM_SIGNET_KEY: u64 = 65;
/// Blocks a signet chain gets without `--blocks`.
const SIGNET_BLOCKS_DEFAULT: u32 = 10;

/// `ibex gen --chain signet`: writes the chain, says how to load it.
fn run_signet(arguments: &GenArguments) -> Result<String, String> {
    let secret = match &arguments.signet_key {
        Some(hex) => ibex_primitives::hex::decode(hex)
            .ok()
            .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
            .ok_or_else(|| "--signet-key must be 64 hex digits".to_owned())?,
        None => crate::random::DeterministicRng::new(arguments.seed, STREAM_SIGNET_KEY).bytes_32(),
    };
    let options = crate::signet::SignetChainOptions {
        out: arguments.out.clone(),
        blocks: arguments.blocks.unwrap_or(SIGNET_BLOCKS_DEFAULT),
        secret,
        threads: arguments.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        }),
    };
    let report = crate::signet::write_signet_chain(&options).map_err(|error| error.to_string())?;
    Ok(format!(
        "generated a signet of {} blocks (tip {}); load it with ibexd -signet -signetchallenge={} -loadblock={} -stopatheight={} (which ends the run at its tip); manifest {}",
        options.blocks,
        report.tip_hash,
        report.challenge_hex,
        options.out.join("blk00000.dat").display(),
        options.blocks,
        report.manifest_path.display(),
    ))
}

/// Runs `ibex gen`; returns the text to print (a summary) or an error message.
pub fn run(arguments: &GenArguments) -> Result<String, String> {
    match arguments.chain.as_str() {
        "regtest" => {}
        "signet" => return run_signet(arguments),
        other => return Err(format!("unknown chain {other:?} (regtest, signet)")),
    }
    let profile = Profile::from_name(&arguments.profile).ok_or_else(|| {
        format!("unknown profile {:?} (tiny, small, bench, utxo-heavy)", arguments.profile)
    })?;
    let mut options = GeneratorOptions::new(profile, arguments.seed, arguments.out.clone());
    options.blocks = arguments.blocks;
    options.target_weight = arguments.target_weight;
    options.xor_zero = arguments.xor_zero;
    options.invalid = arguments.invalid;
    options.forks = arguments.forks;
    options.threads = arguments.threads;
    if let Some(names) = &arguments.invalid_siblings {
        let invalid = parse_classes(names)?;
        let valid_position = arguments.valid_sibling_position.unwrap_or(invalid.len());
        options.siblings =
            Some(SiblingTail { invalid, valid_position, valid_child: arguments.valid_child });
    }
    let report = generate(&options).map_err(|error| error.to_string())?;
    let manifest = &report.manifest;
    Ok(format!(
        "generated {} blocks (tip {}), {} transactions, {:.1} MB in {} files, {} coins at the tip; \
         {:.2} s, {:.1} MB/s; manifest {}",
        manifest.block_count,
        manifest.tip_hash,
        manifest.transactions,
        manifest.file_bytes as f64 / 1e6,
        manifest.block_files,
        manifest.utxo_count,
        report.elapsed_seconds,
        report.megabytes_per_second(),
        report.manifest_path.display(),
    ))
}

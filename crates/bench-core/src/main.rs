//! `ibex-bench-core`: the whole-import macro benchmark, Ibex against
//! Bitcoin Core. The same block files (a chain from `ibex gen`) are
//! reindexed from a fresh datadir by Ibex's chainstate (`import_blocks`)
//! and by Core's libbitcoinkernel (`ChainstateManager::import_blocks`),
//! each in a child process of its own so that peak RSS is per side. One
//! line per side, then the ratio and the signature floor.
//!
//! # Napkin math: the signature floor
//! Every checked input costs one signature verification, ~32 us on this
//! machine kind (`cargo bench -p ibex-script`, `docs/benchmarks.md`), so no
//! import can beat `inputs checked x 32 us / cores`; the distance between a
//! side's time and that floor is what the rest of its pipeline costs.

mod chain;
mod core_side;
mod error;
mod ibex_side;
mod measurement;

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use clap::Parser;
use ibex_generator::output::MANIFEST_FILE;
use ibex_generator::{generate, GeneratorOptions, Profile};

use crate::chain::ChainFacts;
use crate::error::BenchError;
use crate::measurement::{Measurement, Side};

/// Whole-import benchmark: Ibex and Bitcoin Core's kernel reindexing the
/// same block files.
#[derive(Debug, Clone, Parser)]
#[command(name = "ibex-bench-core")]
pub struct BenchSettings {
    /// Blocks directory of the chain (`blk?????.dat`, `xor.dat`, `manifest.json`).
    #[arg(long)]
    pub blocks_dir: PathBuf,
    /// Scratch directory; each side starts from a fresh `ibex/` or `core/` in it.
    #[arg(long)]
    pub datadir: PathBuf,
    /// Ibex: `-assumevalid` = the chain's tip (Core: not settable in the kernel).
    #[arg(long = "assumevalid-tip")]
    pub assume_valid_tip: bool,
    /// Ibex's `-dbcache` in MiB (Core's is fixed at the kernel's 450).
    #[arg(long = "dbcache-mib", default_value_t = 450)]
    pub dbcache_mib: u64,
    /// Script threads (`-par`); the machine's cores when absent.
    #[arg(long, default_value_t = default_threads())]
    pub par: usize,
    /// Which side to run; `both` runs each in a child process.
    #[arg(long, value_enum, default_value_t = Side::Both)]
    pub side: Side,
    /// Generate the chain first with this `ibex gen` profile (`tiny`,
    /// `small`, `bench`) when `--blocks-dir` holds no `manifest.json` yet.
    #[arg(long, value_parser = parse_profile)]
    pub generate: Option<Profile>,
    /// The generator's seed, with `--generate`.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Cost of one signature verification for the floor, in microseconds.
    #[arg(long = "verify-us", default_value_t = 32.0)]
    pub verify_us: f64,
}

fn parse_profile(name: &str) -> Result<Profile, String> {
    Profile::from_name(name).ok_or_else(|| format!("unknown profile {name}: tiny, small, bench"))
}

/// Generates the chain when asked to and it is not there yet.
fn generate_if_asked(settings: &BenchSettings) -> Result<(), BenchError> {
    let Some(profile) = settings.generate else { return Ok(()) };
    if settings.blocks_dir.join(MANIFEST_FILE).exists() {
        return Ok(());
    }
    let options = GeneratorOptions::new(profile, settings.seed, settings.blocks_dir.clone());
    let report = generate(&options)?;
    println!(
        "generated {} blocks ({} bytes of block files) in {:.1} s",
        report.manifest.block_count, report.manifest.file_bytes, report.elapsed_seconds
    );
    Ok(())
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |count| count.get())
}

/// Runs one side in a child process of this executable and reads its result.
fn run_child(settings: &BenchSettings, side: Side) -> Result<Measurement, BenchError> {
    let executable = std::env::current_exe()
        .map_err(|source| BenchError::Io { path: PathBuf::from("/proc/self/exe"), source })?;
    let mut command = Command::new(executable);
    command
        .arg("--blocks-dir")
        .arg(&settings.blocks_dir)
        .arg("--datadir")
        .arg(&settings.datadir)
        .args(["--dbcache-mib", &settings.dbcache_mib.to_string()])
        .args(["--par", &settings.par.to_string()])
        .args(["--side", &side.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if settings.assume_valid_tip {
        command.arg("--assumevalid-tip");
    }
    let output = command.output().map_err(|_| BenchError::Child { side, status: None })?;
    if !output.status.success() {
        return Err(BenchError::Child { side, status: Some(output.status) });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().find_map(Measurement::parse_result_line).ok_or(BenchError::NoResult { side })
}

/// The floor line: checked inputs x verify cost / threads.
fn floor_line(measurement: &Measurement, settings: &BenchSettings) -> String {
    let threads = settings.par.max(1) as f64;
    let seconds = measurement.scripts_checked as f64 * settings.verify_us / 1e6 / threads;
    let share = 100.0 * seconds / measurement.seconds.max(f64::MIN_POSITIVE);
    format!(
        "{:<4} signature floor: {} inputs checked x {} us / {} threads = {seconds:.2} s \
         ({share:.0}% of its time)",
        measurement.side, measurement.scripts_checked, settings.verify_us, settings.par
    )
}

fn describe(settings: &BenchSettings) {
    println!(
        "chain {}; par {}; ibex dbcache {} MiB, assumevalid {}; core: kernel cache {} MiB \
         (fixed), worker threads {} (+ the validation thread), assumevalid not exposed by the \
         kernel: every script checked",
        settings.blocks_dir.display(),
        settings.par,
        settings.dbcache_mib,
        if settings.assume_valid_tip { "tip" } else { "none" },
        core_side::KERNEL_CACHE_MIB,
        settings.par.saturating_sub(1),
    );
}

fn run(settings: &BenchSettings) -> Result<(), BenchError> {
    generate_if_asked(settings)?;
    let facts = ChainFacts::read(&settings.blocks_dir)?;
    let measurement = match settings.side {
        Side::Ibex => ibex_side::run(settings, &facts)?,
        Side::Core => core_side::run(settings, &facts)?,
        Side::Both => return run_both(settings),
    };
    println!("{}", measurement.human_line());
    println!("{}", measurement.result_line());
    Ok(())
}

fn run_both(settings: &BenchSettings) -> Result<(), BenchError> {
    describe(settings);
    let ibex = run_child(settings, Side::Ibex)?;
    println!("{}", ibex.human_line());
    let core = run_child(settings, Side::Core)?;
    println!("{}", core.human_line());
    println!(
        "ratio ibex/core: time {:.3} (ibex {:.2}x as fast), inputs/s {:.2}, peak RSS {:.2}",
        ibex.seconds / core.seconds.max(f64::MIN_POSITIVE),
        core.seconds / ibex.seconds.max(f64::MIN_POSITIVE),
        ibex.inputs_per_second() / core.inputs_per_second().max(f64::MIN_POSITIVE),
        ibex.peak_rss_kib as f64 / (core.peak_rss_kib.max(1)) as f64,
    );
    println!("{}", floor_line(&ibex, settings));
    println!("{}", floor_line(&core, settings));
    Ok(())
}

fn main() -> ExitCode {
    let settings = BenchSettings::parse();
    match run(&settings) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ibex-bench-core: {error}");
            ExitCode::FAILURE
        }
    }
}

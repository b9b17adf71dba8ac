//! `ibex`: Ibex's command-line tools.

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ibex",
    version,
    about = "Ibex tools: inspect blocks, generate chains, plot IBD logs, benchmark.\n\nAlso: ibex txoutsetinfo -datadir=DIR [-regtest|-chain=NAME] [-hash_type=hash_serialized_3|muhash|none] prints gettxoutsetinfo for a stopped node; it takes the node's data directory lock for its run, so it refuses (naming the directory) while ibexd or bitcoind runs on it, and no node starts while it reads.\n\nAlso: ibex hints -datadir=DIR [-regtest|-chain=NAME] -out=FILE [-height=H] [-format=bip456|btcd] writes the SwiftSync hints file of a stopped node's active chain at a height (the tip by default; gzip-compressed when FILE ends in .gz), as the dumphints RPC does on a running node."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a JSON summary of a serialised block (raw bytes, or hex with --hex).
    Block {
        /// The block file.
        file: PathBuf,
        /// The file holds the block as hex text (as `getblock HASH 0` prints it).
        #[arg(long)]
        hex: bool,
    },
    /// Generate a valid, realistic regtest chain as Core block files.
    Gen(ibex_generator::cli::GenArguments),
    /// Plot IBD progress from Bitcoin Core's or Ibex's debug.log files (SVG and CSV).
    Plot(ibex_tools::plot::command::PlotArguments),
    /// Benchmark nodes end to end (`ibex bench ibd`: IBD timed hyperfine style).
    Bench(ibex_tools::bench::arguments::BenchArguments),
}

fn run_block(file: &Path, hex: bool) -> Result<String, String> {
    let summary = ibex_tools::block_summary::block_file_summary(file, hex)
        .map_err(|error| error.to_string())?;
    serde_json::to_string_pretty(&summary).map_err(|error| format!("{}: {error}", file.display()))
}

fn main() -> ExitCode {
    // `txoutsetinfo` and `hints` take Bitcoin Core's `-name=value`
    // options, which clap does not parse, so they are dispatched before it.
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match arguments.first().map(String::as_str) {
        Some("txoutsetinfo") => {
            return print_result(
                ibex_tools::txoutsetinfo::run(&arguments[1..]).map_err(|error| error.to_string()),
            )
        }
        Some("hints") => {
            return print_result(
                ibex_tools::hints::run(&arguments[1..]).map_err(|error| error.to_string()),
            )
        }
        _ => {}
    }
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Block { file, hex } => run_block(file, *hex),
        Command::Gen(arguments) => ibex_generator::cli::run(arguments),
        Command::Plot(arguments) => {
            ibex_tools::plot::command::run(arguments).map_err(|error| error.to_string())
        }
        Command::Bench(arguments) => {
            ibex_tools::bench::command::run(arguments).map_err(|error| error.to_string())
        }
    };
    print_result(result)
}

fn print_result(result: Result<String, String>) -> ExitCode {
    match result {
        // A closed standard output (`ibex ... | head -1`) ends it quietly.
        Ok(output) => match ibex_daemon::standard_output::print_text(&format!("{output}\n")) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

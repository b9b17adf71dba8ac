//! Writes every target's seed inputs ([`ibex_fuzz_checks::seeds`]) under
//! a directory, one subdirectory per target: `fuzz/regressions` (the
//! default, relative to the repository root) or a libFuzzer corpus.
//!
//! ```sh
//! cargo run -p ibex-fuzz-checks --bin ibex-fuzz-seeds -- fuzz/regressions
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let directory = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions"),
        PathBuf::from,
    );
    let mut written = 0;
    for seed in ibex_fuzz_checks::seeds::all() {
        let target_directory = directory.join(seed.target);
        let path = target_directory.join(&seed.name);
        let result = std::fs::create_dir_all(&target_directory)
            .and_then(|()| std::fs::write(&path, &seed.bytes));
        if let Err(error) = result {
            eprintln!("error: cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        written += 1;
    }
    println!("{written} seeds written under {}", directory.display());
    ExitCode::SUCCESS
}

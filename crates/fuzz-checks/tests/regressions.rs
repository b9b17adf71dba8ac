//! Replays every fuzz target's committed inputs (`fuzz/regressions/<target>/`:
//! seeds, edge cases and inputs that once crashed) through the same
//! functions libFuzzer runs, and checks the seeds there are the ones the
//! project's encoders make today.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use ibex_fuzz_checks::{seeds, TARGETS};

/// Fewest inputs a target's directory holds: a target whose corpus went
/// missing must not pass by replaying nothing.
const INPUTS_PER_TARGET_MIN: usize = 2;

fn regressions_directory() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions")
}

/// The files of `target`'s directory, sorted by name.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let directory = regressions_directory().join(target);
    let entries = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()));
    let mut inputs: Vec<(String, Vec<u8>)> = entries
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
            (name, std::fs::read(&path).expect("a readable input"))
        })
        .collect();
    inputs.sort();
    inputs
}

#[test]
fn every_committed_input_passes_its_target() {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for target in TARGETS {
        let inputs = inputs(target.name);
        assert!(
            inputs.len() >= INPUTS_PER_TARGET_MIN,
            "{}: {} inputs, expected at least {INPUTS_PER_TARGET_MIN}",
            target.name,
            inputs.len()
        );
        for (name, bytes) in inputs {
            replayed += 1;
            if std::panic::catch_unwind(|| (target.check)(&bytes)).is_err() {
                failures.push(format!("{}/{name}", target.name));
            }
        }
    }
    assert!(failures.is_empty(), "inputs that fail their target: {failures:?}");
    eprintln!("{replayed} inputs replayed over {} targets", TARGETS.len());
}

#[test]
fn every_directory_belongs_to_a_target() {
    let known: Vec<&str> = TARGETS.iter().map(|target| target.name).collect();
    for entry in std::fs::read_dir(regressions_directory()).expect("fuzz/regressions") {
        let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
        assert!(known.contains(&name.as_str()), "fuzz/regressions/{name} has no target");
    }
}

#[test]
fn committed_seeds_are_what_the_encoders_make() {
    for seed in seeds::all() {
        let path = regressions_directory().join(seed.target).join(&seed.name);
        let committed = std::fs::read(&path).unwrap_or_else(|error| {
            panic!(
                "{}: {error}; run `cargo run -p ibex-fuzz-checks --bin ibex-fuzz-seeds`",
                path.display()
            )
        });
        assert!(
            committed == seed.bytes,
            "{} differs from what the encoders make; run `cargo run -p ibex-fuzz-checks --bin ibex-fuzz-seeds`",
            path.display()
        );
    }
}

#[test]
fn seed_names_are_unique() {
    let mut names: Vec<(&str, String)> =
        seeds::all().into_iter().map(|seed| (seed.target, seed.name)).collect();
    let count = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), count);
}

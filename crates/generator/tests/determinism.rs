#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Same seed and options, same bytes; another seed, another chain.

use std::path::Path;

use ibex_generator::{generate, GeneratorOptions, Profile};

fn files(directory: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path()).unwrap())
        })
        .collect();
    entries.sort();
    entries
}

fn options(seed: u64, out: &Path) -> GeneratorOptions {
    let mut options = GeneratorOptions::new(Profile::Tiny, seed, out.to_path_buf());
    options.blocks = Some(160);
    options.invalid = true;
    options.forks = true;
    options
}

#[test]
fn same_seed_gives_identical_files_and_manifest() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let report_first = generate(&options(42, first.path())).unwrap();
    let mut two_threads = options(42, second.path());
    two_threads.threads = Some(2);
    let report_second = generate(&two_threads).unwrap();
    assert_eq!(report_first.manifest, report_second.manifest);
    let first_files = files(first.path());
    assert_eq!(first_files, files(second.path()), "thread count must not change the bytes");
    assert!(first_files.iter().any(|(name, _)| name == "blk00000.dat"));
    assert!(first_files.iter().any(|(name, _)| name == "xor.dat"));
    assert!(first_files.iter().any(|(name, _)| name == "manifest.json"));

    let report_other = generate(&options(43, other.path())).unwrap();
    assert_ne!(report_first.manifest.tip_hash, report_other.manifest.tip_hash);
    assert_ne!(report_first.manifest.obfuscation_key, report_other.manifest.obfuscation_key);
}

#[test]
fn xor_zero_writes_an_identity_key_and_the_same_chain() {
    let plain = tempfile::tempdir().unwrap();
    let obfuscated = tempfile::tempdir().unwrap();
    let mut zero = GeneratorOptions::new(Profile::Tiny, 5, plain.path().to_path_buf());
    zero.blocks = Some(120);
    zero.xor_zero = true;
    let mut keyed = zero.clone();
    keyed.out = obfuscated.path().to_path_buf();
    keyed.xor_zero = false;
    let zero_report = generate(&zero).unwrap();
    let keyed_report = generate(&keyed).unwrap();
    assert_eq!(std::fs::read(plain.path().join("xor.dat")).unwrap(), vec![0u8; 8]);
    assert_ne!(std::fs::read(obfuscated.path().join("xor.dat")).unwrap(), vec![0u8; 8]);
    assert_eq!(zero_report.manifest.tip_hash, keyed_report.manifest.tip_hash);
    let raw = std::fs::read(plain.path().join("blk00000.dat")).unwrap();
    assert_eq!(&raw[..4], &[0xfa, 0xbf, 0xb5, 0xda], "regtest magic in clear");
    assert_ne!(raw, std::fs::read(obfuscated.path().join("blk00000.dat")).unwrap());
}

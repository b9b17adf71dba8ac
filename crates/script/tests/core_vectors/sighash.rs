//! `sighash.json`: legacy signature hashes of random transactions and scripts
//! with random 32-bit hash types (Core's `sighash_tests.cpp`).

use ibex_primitives::ParsedTransaction;
use ibex_script::sighash::legacy::legacy_sighash;

use crate::common::{hex, load_json};

#[test]
fn every_sighash_vector_matches() {
    let vectors = load_json("sighash.json");
    let mut checked = 0;
    for case in vectors.as_array().unwrap() {
        let case = case.as_array().unwrap();
        if case.len() == 1 {
            continue; // the header comment
        }
        let raw = hex(case[0].as_str().unwrap());
        let script = hex(case[1].as_str().unwrap());
        let input_index = case[2].as_u64().unwrap() as usize;
        let hash_type = case[3].as_i64().unwrap() as i32;
        // Core prints uint256 reversed.
        let mut expected = hex(case[4].as_str().unwrap());
        expected.reverse();
        let parsed = ParsedTransaction::parse(&raw).unwrap();
        let sighash = legacy_sighash(&parsed.view(), input_index, &script, hash_type);
        assert_eq!(sighash.to_vec(), expected, "case {checked}: {case:?}");
        checked += 1;
    }
    assert_eq!(checked, 500, "sighash.json has 500 cases");
    eprintln!("sighash.json: {checked} of {checked} cases match");
}

//! `compressed_amount`: the body and its properties are `ibex_fuzz_checks::chain_data::compressed_amount`
//! (replayed on `fuzz/regressions/compressed_amount/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::compressed_amount(data));

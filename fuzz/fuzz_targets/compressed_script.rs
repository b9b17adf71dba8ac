//! `compressed_script`: the body and its properties are `ibex_fuzz_checks::chain_data::compressed_script`
//! (replayed on `fuzz/regressions/compressed_script/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::compressed_script(data));

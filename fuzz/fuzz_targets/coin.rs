//! `coin`: the body and its properties are `ibex_fuzz_checks::chain_data::coin`
//! (replayed on `fuzz/regressions/coin/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::coin(data));

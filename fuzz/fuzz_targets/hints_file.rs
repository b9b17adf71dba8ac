//! `hints_file`: the body and its properties are
//! `ibex_fuzz_checks::chain_data::hints_file` (replayed on
//! `fuzz/regressions/hints_file/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::hints_file(data));

//! `undo_record`: the body and its properties are `ibex_fuzz_checks::chain_data::undo_record`
//! (replayed on `fuzz/regressions/undo_record/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::undo_record(data));

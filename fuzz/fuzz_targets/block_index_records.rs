//! `block_index_records`: the body and its properties are `ibex_fuzz_checks::chain_data::block_index_records`
//! (replayed on `fuzz/regressions/block_index_records/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::block_index_records(data));

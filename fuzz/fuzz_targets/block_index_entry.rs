//! `block_index_entry`: the body and its properties are `ibex_fuzz_checks::chain_data::block_index_entry`
//! (replayed on `fuzz/regressions/block_index_entry/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::block_index_entry(data));

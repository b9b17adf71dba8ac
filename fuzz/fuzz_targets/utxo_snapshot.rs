//! `utxo_snapshot`: the body and its properties are
//! `ibex_fuzz_checks::chain_data::utxo_snapshot` (replayed on
//! `fuzz/regressions/utxo_snapshot/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::chain_data::utxo_snapshot(data));

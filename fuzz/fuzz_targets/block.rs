//! `block`: the body and its properties are `ibex_fuzz_checks::wire::block`
//! (replayed on `fuzz/regressions/block/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::wire::block(data));

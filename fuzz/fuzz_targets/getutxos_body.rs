//! `getutxos_body`: the body and its properties are `ibex_fuzz_checks::rest::getutxos_body`
//! (replayed on `fuzz/regressions/getutxos_body/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::rest::getutxos_body(data));

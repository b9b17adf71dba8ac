//! `rest_request`: the body and its properties are `ibex_fuzz_checks::rest::rest_request`
//! (replayed on `fuzz/regressions/rest_request/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::rest::rest_request(data));

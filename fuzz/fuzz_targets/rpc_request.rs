//! `rpc_request`: the body and its properties are `ibex_fuzz_checks::rpc::rpc_request`
//! (replayed on `fuzz/regressions/rpc_request/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::rpc::rpc_request(data));

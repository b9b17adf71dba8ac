//! `p2p_v2_handshake`: the body and its properties are `ibex_fuzz_checks::wire_v2::p2p_v2_handshake`
//! (replayed on `fuzz/regressions/p2p_v2_handshake/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::wire_v2::p2p_v2_handshake(data));

//! `p2p_message_decode`: the body and its properties are `ibex_fuzz_checks::wire::p2p_message_decode`
//! (replayed on `fuzz/regressions/p2p_message_decode/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::wire::p2p_message_decode(data));

//! `command_line`: the body and its properties are `ibex_fuzz_checks::config::command_line`
//! (replayed on `fuzz/regressions/command_line/` by the workspace's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ibex_fuzz_checks::config::command_line(data));

//! Bitcoin Core's test vectors for the script crate, read from `../shared`.
//! One module per vector file under `core_vectors/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "core_vectors/common.rs"]
mod common;

#[path = "core_vectors/bip341.rs"]
mod bip341;
#[path = "core_vectors/script_tests.rs"]
mod script_tests;
#[path = "core_vectors/sighash.rs"]
mod sighash;
#[path = "core_vectors/transactions.rs"]
mod transactions;

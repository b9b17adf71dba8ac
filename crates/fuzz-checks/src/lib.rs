//! The bodies of Ibex's fuzz targets, one function per target: each feeds
//! its bytes to a decoder of data that comes from disk or from a client and
//! checks what the decoder must guarantee. No input may panic a decoder;
//! where there is an encoder, what decodes re-encodes to the same bytes (or
//! to a canonical form that decodes to the same value).
//!
//! The `fuzz/` workspace wraps each function in a `fuzz_target!` for
//! libFuzzer; this crate's test `regressions` runs the same functions over
//! the committed inputs in `fuzz/regressions/<target>/` (seeds from the
//! project's own encoders, edge cases, and every input that once crashed),
//! so a plain `cargo test` replays exactly the code libFuzzer runs.
//! [`seeds`] makes the seed inputs; `ibex-fuzz-seeds` writes them out.
//!
//! A failed property panics: that is how a fuzz target reports a bug, so
//! this crate allows what the workspace's lints deny on input paths. It is
//! never linked into the node.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

pub mod chain_data;
pub mod config;
mod genesis_node;
pub mod rest;
pub mod rpc;
pub mod seeds;
pub mod wire;
pub mod wire_v2;

/// One fuzz target: its name (the `fuzz/fuzz_targets/<name>.rs` file and
/// the `fuzz/regressions/<name>/` directory) and its body.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// What one input is checked with.
    pub check: fn(&[u8]),
}

/// Every target whose body lives here (all but `script_differential`,
/// which needs Bitcoin Core's kernel).
pub const TARGETS: [Target; 18] = [
    Target { name: "block", check: wire::block },
    Target { name: "transaction", check: wire::transaction },
    Target { name: "p2p_message_decode", check: wire::p2p_message_decode },
    Target { name: "p2p_v2_handshake", check: wire_v2::p2p_v2_handshake },
    Target { name: "address_file", check: wire::address_file },
    Target { name: "rpc_request", check: rpc::rpc_request },
    Target { name: "undo_record", check: chain_data::undo_record },
    Target { name: "coin", check: chain_data::coin },
    Target { name: "compressed_script", check: chain_data::compressed_script },
    Target { name: "compressed_amount", check: chain_data::compressed_amount },
    Target { name: "block_index_entry", check: chain_data::block_index_entry },
    Target { name: "block_index_records", check: chain_data::block_index_records },
    Target { name: "utxo_snapshot", check: chain_data::utxo_snapshot },
    Target { name: "hints_file", check: chain_data::hints_file },
    Target { name: "config_file", check: config::config_file },
    Target { name: "command_line", check: config::command_line },
    Target { name: "rest_request", check: rest::rest_request },
    Target { name: "getutxos_body", check: rest::getutxos_body },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|target| target.name == name).copied()
}

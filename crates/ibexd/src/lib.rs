//! `ibexd`, the Ibex node: its options in Bitcoin Core's syntax, the log,
//! the chainstate engine's hookup, the P2P side, the RPC server and the
//! metrics endpoint, progress. The `ibex` tools (crate `ibex-tools`) read
//! options, data directories and the UTXO set through this library; nothing
//! here depends on them.
//!
//! Layers, each importing only its own and those below it:
//!
//! | layer | modules |
//! |---|---|
//! | the run | [`daemon`] (startup lines, the run's summary), [`engine`] (the engine, the import, the P2P side and the servers wired together) |
//! | servers | [`rpc_start`], [`rpc_backend`], [`rpc_network`], [`rpc_control`], [`metrics`] |
//! | the node's parts | [`p2p_node`], [`node_observer`], [`progress`], [`logging`], [`txoutset`], [`directory_lock`], [`memory_budget`], [`reindex_marker`], [`database_report`] |
//! | the bottom | [`options`] (everything `ibexd` is told), [`version`], [`signals`], [`private_files`], [`standard_output`], [`progress_estimate`] |

pub mod daemon;
pub mod database_report;
pub mod directory_lock;
pub mod engine;
pub mod logging;
pub mod memory_budget;
pub mod metrics;
pub mod node_observer;
pub mod options;
pub mod p2p_node;
pub mod private_files;
pub mod progress;
pub mod progress_estimate;
pub mod reindex_marker;
pub mod rpc_backend;
pub mod rpc_control;
pub mod rpc_hints;
pub mod rpc_network;
pub mod rpc_snapshot;
pub mod rpc_start;
pub mod signals;
pub mod standard_output;
pub mod txoutset;
pub mod version;

//! The `ibexd` node and the `ibex` command-line tools: option parsing, logging,
//! progress, and the tool subcommands.

pub mod bench;
pub mod block_summary;
pub mod config;
pub mod config_error;
pub mod config_file;
pub mod config_options;
pub mod config_values;
pub mod daemon;
pub mod database_report;
pub mod directory_lock;
pub mod engine;
pub mod logging;
pub mod metrics;
pub mod network_options;
pub mod node_observer;
pub mod numeric_options;
pub mod p2p_node;
pub mod plot;
pub mod private_files;
pub mod progress;
pub mod progress_estimate;
pub mod reindex_marker;
pub mod rpc_backend;
pub mod rpc_control;
pub mod rpc_network;
pub mod rpc_start;
pub mod settings;
pub mod signals;
pub mod standard_output;
pub mod txoutsetinfo;

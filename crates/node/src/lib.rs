//! The `ibexd` node and the `ibex` command-line tools: option parsing, logging,
//! progress, and the tool subcommands.

pub mod block_summary;

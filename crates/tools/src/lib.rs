//! `ibex`, Ibex's command-line tools: `gen` (a chain as Core's block files,
//! from `ibex-generator`), `plot` (IBD progress from `debug.log` files),
//! `bench ibd` (nodes timed end to end), `block` (a block's summary) and
//! `txoutsetinfo` (a stopped node's UTXO set). They read options, data
//! directories and the UTXO set through the daemon's library
//! (`ibex-daemon`); the daemon links none of them.

pub mod bench;
pub mod block_summary;
pub mod hints;
pub mod plot;
pub mod txoutsetinfo;

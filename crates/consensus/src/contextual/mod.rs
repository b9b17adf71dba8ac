//! Contextual block rules: what Core checks of a header or block given its
//! place in the chain (`CheckBlockHeader`, `ContextualCheckBlockHeader`,
//! `ContextualCheckBlock`), the script flags a block is verified with
//! (`GetBlockScriptFlags`), the sigop cost of a transaction given the coins
//! it spends (`GetTransactionSigOpCost`) and ConnectBlock's coinbase amount
//! check, all driven by [`ibex_primitives::Params`].
//!
//! The caller (the chainstate) looks up the chain facts (height, median time
//! past, expected nBits, the clock) and passes them in: nothing here reads a
//! block index or a clock.
//!
//! Core's order within a block's life: `CheckBlockHeader` and
//! `ContextualCheckBlockHeader` when the header arrives, `CheckBlock`
//! ([`crate::check_block`]) and `ContextualCheckBlock` when the block does,
//! then ConnectBlock (inputs, sequence locks, sigops, scripts, coinbase amount).

mod block;
mod header;
mod script_flags;
mod sigops;

pub use block::{check_coinbase_amount, contextual_check_block, contextual_check_block_known};
pub use header::{
    check_block_header, contextual_check_block_header, median_time_past, HeaderContext,
};
pub use script_flags::block_script_flags;
pub use sigops::transaction_sigop_cost;

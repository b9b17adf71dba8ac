//! Bitcoin's consensus rules as pure functions, matching Bitcoin Core.
//!
//! Every function takes the block or transaction view, the spent coins, the
//! parameters and the flags as arguments: no I/O, no globals, no locks. Errors
//! carry Core's reject reasons (`bad-txns-inputs-missingorspent`, ...).

pub mod block;
pub mod connect;
pub mod contextual;
pub mod error;
pub mod finality;
pub mod inputs;
pub mod limits;
pub mod rejection;
pub mod script_reason;
pub mod signet;
pub mod subsidy;
pub mod swiftsync;
pub mod transaction;

pub use block::{
    check_block, check_block_on_network, is_block_mutated, merkle_mutation, mutation_after_merkle,
    BlockMutation,
};
pub use connect::{BlockConnectCheck, BlockTotals, ConnectRules};
pub use contextual::{
    block_script_flags, check_block_header, check_coinbase_amount, contextual_check_block,
    contextual_check_block_header, contextual_check_block_known, median_time_past,
    transaction_sigop_cost, HeaderContext,
};
pub use error::{BlockError, BlockFailureKind, LocatedTransactionError, TransactionError};
pub use inputs::check_transaction_inputs;
pub use rejection::BlockRejection;
pub use script_reason::{script_error_text, script_failure_reason};
pub use signet::{check_signet_block_solution, SignetError, SignetTransactions, SIGNET_HEADER};
pub use transaction::{check_transaction, output_amount, transaction_value_out};

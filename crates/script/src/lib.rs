//! Bitcoin script verification, matching Bitcoin Core bit for bit.
//!
//! - [`error`]: [`ScriptError`], one variant per Core script error.
//! - [`flags`]: [`VerifyFlags`], Core's `SCRIPT_VERIFY_*` bits.
//! - [`checker`]: the [`SignatureChecker`] interface between the interpreter and
//!   the transaction.

pub mod checker;
pub mod error;
pub mod flags;

// Interpreter side: opcodes, numbers, script reading, sigop counting, the
// interpreter, taproot commitments and input verification.
pub mod assembly;
pub mod interpreter;
pub mod number;
pub mod opcodes;
pub mod script;
pub mod sigops;
pub mod taproot;
pub mod verify;

pub use checker::{ExecutionData, NoSignatures, SigVersion, SignatureChecker};
pub use error::ScriptError;
pub use flags::VerifyFlags;
pub use interpreter::eval_script;
pub use verify::{verify_input, verify_script};

// Signature side: sighashes, precomputed transaction data, libsecp256k1
// signatures, the signature cache and the transaction checker.
pub mod cache;
pub mod precomputed;
pub mod sighash;
pub mod signature;
pub mod transaction_checker;

pub use cache::SignatureCache;
pub use precomputed::{PrecomputedTransactionData, SpentOutput};
pub use transaction_checker::TransactionChecker;

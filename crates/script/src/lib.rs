//! Bitcoin script verification, matching Bitcoin Core bit for bit.
//!
//! - [`error`]: [`ScriptError`], one variant per Core script error.
//! - [`flags`]: [`VerifyFlags`], Core's `SCRIPT_VERIFY_*` bits.
//! - [`checker`]: the [`SignatureChecker`] interface between the interpreter and
//!   the transaction.
//!
//! # No signature cache
//!
//! Core keeps a salted cache of verified signatures
//! (`CachingTransactionSignatureChecker`, 32 MiB by default) so that a
//! transaction verified when it entered the mempool is not verified again
//! when its block arrives. Ibex has no mempool yet: while validating blocks
//! every signature is seen once, so a cache would cost a salted SHA-256, a
//! missed lookup and an insert per signature and save nothing (it hits only
//! when a block is connected again after a reorg). Measured here
//! (`cargo bench -p ibex-script --bench signatures`, 2-core EPYC): a miss
//! plus insert costs ~0.32 µs against ~26-30 µs for the P2WPKH or P2TR
//! check it would guard (about 1 % more per signature, plus 32 MiB), while a
//! hit would cost ~0.35 µs. So there is none: the mempool, when it comes,
//! brings the cache back, filled on mempool acceptance and read when the
//! block's inputs are checked.

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
// signatures and the transaction checker.
pub mod precomputed;
pub mod sighash;
pub mod signature;
pub mod transaction_checker;

pub use precomputed::{PrecomputedTransactionData, SpentOutput};
pub use transaction_checker::TransactionChecker;

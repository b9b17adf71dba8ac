//! Bitcoin script verification, matching Bitcoin Core bit for bit.
//!
//! - [`error`]: [`ScriptError`], one variant per Core script error.
//! - [`flags`]: [`VerifyFlags`], Core's `SCRIPT_VERIFY_*` bits.
//! - [`checker`]: the [`SignatureChecker`] interface between the interpreter and
//!   the transaction.

pub mod checker;
pub mod error;
pub mod flags;

pub use checker::{ExecutionData, NoSignatures, SigVersion, SignatureChecker};
pub use error::ScriptError;
pub use flags::VerifyFlags;

//! The [`SignatureChecker`] of a real transaction input (Core's
//! `GenericTransactionSignatureChecker`).
//!
//! A checker borrows the transaction, the spent output and the
//! transaction's [`PrecomputedTransactionData`]; all are immutable and
//! `Sync`, so one precomputation serves every input of a transaction checked
//! on any number of threads, each with its own checker.
//!
//! Napkin math: per signature, the sighash (legacy: the transaction's size;
//! BIP143/341: ~200 bytes) comes before the ~30-50 µs libsecp256k1
//! verification. There is no signature cache (Core's
//! `CachingTransactionSignatureChecker`): see the crate docs for why.

use ibex_primitives::TransactionView;
use thiserror::Error;

use crate::checker::{ExecutionData, SigVersion, SignatureChecker};
use crate::error::ScriptError;
use crate::precomputed::{Bip143Hashes, PrecomputedTransactionData, SpentOutput};
use crate::sighash::legacy::legacy_sighash;
use crate::sighash::segwit_v0::segwit_v0_sighash;
use crate::sighash::taproot::{taproot_sighash, TaprootInput};
use crate::signature::{
    is_valid_public_key_length, verify_ecdsa, verify_schnorr, SCHNORR_SIGNATURE_BYTES,
    X_ONLY_PUBLIC_KEY_BYTES,
};

pub use ibex_primitives::lock_time::{
    LOCKTIME_THRESHOLD, SEQUENCE_FINAL, SEQUENCE_LOCKTIME_DISABLE_FLAG, SEQUENCE_LOCKTIME_MASK,
    SEQUENCE_LOCKTIME_TYPE_FLAG,
};

/// Why a checker could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CheckerError {
    /// The input index is past the transaction's inputs.
    #[error("input {input_index} out of range ({input_count} inputs)")]
    InputOutOfRange {
        /// The index asked for.
        input_index: usize,
        /// Inputs in the transaction.
        input_count: usize,
    },
}

/// Checks signatures, lock time and sequence for one input of a transaction.
#[derive(Debug, Clone, Copy)]
pub struct TransactionChecker<'a> {
    transaction: TransactionView<'a>,
    input_index: usize,
    spent_output: SpentOutput<'a>,
    precomputed: &'a PrecomputedTransactionData,
}

impl<'a> TransactionChecker<'a> {
    /// A checker for input `input_index` of `transaction`, which spends `spent_output`.
    pub fn new(
        transaction: TransactionView<'a>,
        input_index: usize,
        spent_output: SpentOutput<'a>,
        precomputed: &'a PrecomputedTransactionData,
    ) -> Result<TransactionChecker<'a>, CheckerError> {
        let input_count = transaction.inputs().len();
        if input_index >= input_count {
            return Err(CheckerError::InputOutOfRange { input_index, input_count });
        }
        Ok(TransactionChecker { transaction, input_index, spent_output, precomputed })
    }

    /// The checked input's nSequence.
    fn input_sequence(&self) -> u32 {
        self.transaction
            .inputs()
            .get(self.input_index)
            .map_or(SEQUENCE_FINAL, |input| input.sequence)
    }

    /// The ECDSA sighash, or `None` where Core's checker fails before hashing.
    fn ecdsa_sighash(
        &self,
        script_code: &[u8],
        hash_type: i32,
        sig_version: SigVersion,
    ) -> Option<[u8; 32]> {
        match sig_version {
            SigVersion::Base => {
                Some(legacy_sighash(&self.transaction, self.input_index, script_code, hash_type))
            }
            SigVersion::WitnessV0 => {
                // Core: a witness sighash needs the amount (missing data fails).
                if self.spent_output.amount < 0 {
                    return None;
                }
                let computed;
                let hashes = match self.precomputed.bip143() {
                    Some(hashes) => hashes,
                    None => {
                        computed = Bip143Hashes::compute(&self.transaction);
                        &computed
                    }
                };
                Some(segwit_v0_sighash(
                    &self.transaction,
                    self.input_index,
                    script_code,
                    self.spent_output.amount,
                    hash_type,
                    hashes,
                ))
            }
            SigVersion::Taproot | SigVersion::Tapscript => None,
        }
    }
}

impl SignatureChecker for TransactionChecker<'_> {
    fn check_ecdsa_signature(
        &self,
        signature: &[u8],
        public_key: &[u8],
        script_code: &[u8],
        sig_version: SigVersion,
    ) -> bool {
        if !is_valid_public_key_length(public_key) {
            return false;
        }
        let Some((&hash_type, signature_der)) = signature.split_last() else {
            return false;
        };
        let Some(sighash) = self.ecdsa_sighash(script_code, i32::from(hash_type), sig_version)
        else {
            return false;
        };
        verify_ecdsa(signature_der, public_key, &sighash)
    }

    fn check_schnorr_signature(
        &self,
        signature: &[u8],
        public_key: &[u8],
        sig_version: SigVersion,
        execution: &ExecutionData,
    ) -> Result<(), ScriptError> {
        // The interpreter only passes 32-byte keys (Core asserts it).
        let Ok(public_key) = <&[u8; X_ONLY_PUBLIC_KEY_BYTES]>::try_from(public_key) else {
            return Err(ScriptError::SchnorrSig);
        };
        let (signature, hash_type) = match signature.len() {
            64 => (signature, 0),
            65 => match signature.split_last() {
                // BIP341: an explicit 0x00 hash type must be written as 64 bytes.
                Some((&0, _)) | None => return Err(ScriptError::SchnorrSigHashtype),
                Some((&hash_type, rest)) => (rest, hash_type),
            },
            _ => return Err(ScriptError::SchnorrSigSize),
        };
        let Ok(signature) = <&[u8; SCHNORR_SIGNATURE_BYTES]>::try_from(signature) else {
            return Err(ScriptError::SchnorrSigSize);
        };
        let input = TaprootInput {
            input_index: self.input_index,
            spent_output: self.spent_output,
            sig_version,
            execution,
        };
        let sighash =
            taproot_sighash(&self.transaction, &input, hash_type, self.precomputed.bip341())
                .map_err(|_| ScriptError::SchnorrSigHashtype)?;
        if !verify_schnorr(signature, public_key, &sighash) {
            return Err(ScriptError::SchnorrSig);
        }
        Ok(())
    }

    /// Core's `CheckLockTime` (BIP65); the interpreter has rejected negatives.
    fn check_lock_time(&self, lock_time: i64) -> bool {
        let transaction_lock_time = i64::from(self.transaction.lock_time());
        // Heights compare with heights and times with times only.
        let threshold = i64::from(LOCKTIME_THRESHOLD);
        let same_kind = (transaction_lock_time < threshold) == (lock_time < threshold);
        if !same_kind || lock_time > transaction_lock_time {
            return false;
        }
        // A final input disables the transaction's nLockTime, and so CLTV.
        self.input_sequence() != SEQUENCE_FINAL
    }

    /// Core's `CheckSequence` (BIP112); the interpreter has rejected negatives
    /// and skipped arguments with the disable flag.
    fn check_sequence(&self, sequence: i64) -> bool {
        let input_sequence = i64::from(self.input_sequence());
        // BIP68 applies from version 2, compared unsigned as in Core.
        if (self.transaction.version() as u32) < 2 {
            return false;
        }
        if input_sequence & i64::from(SEQUENCE_LOCKTIME_DISABLE_FLAG) != 0 {
            return false;
        }
        let mask = i64::from(SEQUENCE_LOCKTIME_TYPE_FLAG | SEQUENCE_LOCKTIME_MASK);
        let input_masked = input_sequence & mask;
        let wanted_masked = sequence & mask;
        let type_flag = i64::from(SEQUENCE_LOCKTIME_TYPE_FLAG);
        if (input_masked < type_flag) != (wanted_masked < type_flag) {
            return false;
        }
        wanted_masked <= input_masked
    }
}

#[cfg(test)]
#[path = "transaction_checker_tests.rs"]
mod tests;

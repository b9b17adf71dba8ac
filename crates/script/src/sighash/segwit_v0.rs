//! BIP143 signature hash for segwit v0 (Core's `SignatureHash` with
//! `SigVersion::WitnessV0`).
//!
//! The preimage has a fixed shape: version, hashPrevouts, hashSequence, the
//! signed outpoint, script code, amount and sequence, hashOutputs, lock time and
//! hash type. The three transaction-wide hashes come from
//! [`Bip143Hashes`], computed once per transaction, so each signature costs
//! two SHA-256 passes over ~160 bytes plus its script code: constant per input
//! instead of the legacy scheme's quadratic cost.
//!
//! Unlike the legacy scheme the script code is serialised as is: BIP143 does
//! not remove OP_CODESEPARATORs (the interpreter passes the script from the
//! last executed one).

use ibex_primitives::TransactionView;
use sha2::{Digest, Sha256};

use super::{
    sha256_of_hash, HashSink, BASE_TYPE_MASK, SIGHASH_ANYONECANPAY, SIGHASH_NONE, SIGHASH_ONE,
    SIGHASH_SINGLE,
};
use crate::precomputed::Bip143Hashes;

/// The BIP143 signature hash of input `input_index` spending `amount` satoshis.
pub fn segwit_v0_sighash(
    transaction: &TransactionView<'_>,
    input_index: usize,
    script_code: &[u8],
    amount: i64,
    hash_type: i32,
    hashes: &Bip143Hashes,
) -> [u8; 32] {
    if input_index >= transaction.inputs().len() {
        // Core asserts; a caller error answers the constant instead of panicking.
        return SIGHASH_ONE;
    }
    let mut hasher = Sha256::new();
    write_segwit_v0_preimage(
        &mut hasher,
        transaction,
        input_index,
        script_code,
        amount,
        hash_type,
        hashes,
    );
    sha256_of_hash(&hasher.finalize().into())
}

/// Writes the BIP143 preimage. `input_index` must be in range.
pub fn write_segwit_v0_preimage(
    sink: &mut impl HashSink,
    transaction: &TransactionView<'_>,
    input_index: usize,
    script_code: &[u8],
    amount: i64,
    hash_type: i32,
    hashes: &Bip143Hashes,
) {
    const ZERO: [u8; 32] = [0; 32];
    let anyone_can_pay = hash_type & i32::from(SIGHASH_ANYONECANPAY) != 0;
    let base_type = hash_type & BASE_TYPE_MASK;
    let single = base_type == i32::from(SIGHASH_SINGLE);
    let none = base_type == i32::from(SIGHASH_NONE);

    let hash_prevouts = if anyone_can_pay { &ZERO } else { &hashes.hash_prevouts };
    let hash_sequence =
        if anyone_can_pay || single || none { &ZERO } else { &hashes.hash_sequence };
    let single_output_hash;
    let hash_outputs = if !single && !none {
        &hashes.hash_outputs
    } else if let (true, Some(output)) = (single, transaction.outputs().get(input_index)) {
        let mut hasher = Sha256::new();
        hasher.write(&output.value.to_le_bytes());
        hasher.write_var_bytes(output.script_pubkey);
        single_output_hash = sha256_of_hash(&hasher.finalize().into());
        &single_output_hash
    } else {
        // NONE, or SINGLE without a matching output: zero (no ONE quirk here).
        &ZERO
    };

    let Some(input) = transaction.inputs().get(input_index) else {
        return;
    };
    sink.write(&transaction.version().to_le_bytes());
    sink.write(hash_prevouts);
    sink.write(hash_sequence);
    sink.write(input.previous_output_bytes());
    sink.write_var_bytes(script_code);
    sink.write(&amount.to_le_bytes());
    sink.write(&input.sequence.to_le_bytes());
    sink.write(hash_outputs);
    sink.write(&transaction.lock_time().to_le_bytes());
    sink.write(&hash_type.to_le_bytes());
}

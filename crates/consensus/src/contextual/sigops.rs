//! A transaction's signature-operation cost: Core's `GetTransactionSigOpCost`.

use crate::block::transaction_legacy_sigops;
use crate::limits::WITNESS_SCALE_FACTOR;
use ibex_primitives::TransactionView;
use ibex_script::script::is_pay_to_script_hash;
use ibex_script::sigops::{p2sh_sigop_count, witness_sigop_count};
use ibex_script::VerifyFlags;

/// The sigop cost of `transaction`, whose input `i` spends an output locked
/// by `spent_scripts[i]` (ignored for a coinbase; inputs without a script
/// count no P2SH or witness sigops), verified with `flags`:
/// - legacy sigops of every scriptSig and scriptPubKey, times 4 (all a
///   coinbase counts);
/// - with P2SH, each P2SH input's redeem script counted accurately, times 4;
/// - with WITNESS, each witness program's sigops, counted once (witness
///   bytes weigh a quarter).
pub fn transaction_sigop_cost(
    transaction: &TransactionView<'_>,
    spent_scripts: &[&[u8]],
    flags: VerifyFlags,
) -> u64 {
    let scale = WITNESS_SCALE_FACTOR as u64;
    let mut cost = transaction_legacy_sigops(transaction) * scale;
    if transaction.is_coinbase() {
        return cost;
    }
    let inputs = transaction.inputs().iter().zip(spent_scripts);
    if flags.contains(VerifyFlags::P2SH) {
        for (input, script_pubkey) in inputs.clone() {
            if is_pay_to_script_hash(script_pubkey) {
                cost += p2sh_sigop_count(script_pubkey, input.script_sig) as u64 * scale;
            }
        }
    }
    for (input, script_pubkey) in inputs {
        let witness_script = input.witness.iter().last();
        cost += witness_sigop_count(input.script_sig, script_pubkey, witness_script, flags) as u64;
    }
    cost
}

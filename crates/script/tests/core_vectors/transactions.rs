//! `tx_valid.json` and `tx_invalid.json` (Core's `transaction_tests.cpp`):
//! whole transactions verified input by input through the interpreter and
//! [`TransactionChecker`].
//!
//! Flags follow Core: a tx_valid entry lists the flags to EXCLUDE from the full
//! set, and must stay valid when any further flag is removed (singly or
//! cumulatively, trimmed so WITNESS needs P2SH and CLEANSTACK needs WITNESS);
//! a tx_invalid entry lists the flags to apply (or BADTX: it must fail
//! CheckTransaction), and must stay invalid when any flag is added (filled the
//! other way round).

use std::collections::{HashMap, HashSet};

use ibex_primitives::limits::{BLOCK_WEIGHT_MAX, WITNESS_SCALE_FACTOR};
use ibex_primitives::{OutPoint, ParsedTransaction, TransactionView, Txid, MAX_MONEY};
use ibex_script::assembly::parse_assembly;
use ibex_script::{
    verify_input, PrecomputedTransactionData, SpentOutput, TransactionChecker, VerifyFlags,
};
use serde_json::Value;

use crate::common::{hex, load_json};

/// Core's MAX_BLOCK_WEIGHT over WITNESS_SCALE_FACTOR: the stripped size limit.
const TRANSACTION_BASE_BYTES_MAX: usize = BLOCK_WEIGHT_MAX / WITNESS_SCALE_FACTOR;

/// One vector: prevouts (script and amount) and the transaction bytes.
struct TransactionCase {
    spent: HashMap<OutPoint, (Vec<u8>, i64)>,
    bytes: Vec<u8>,
    flags: String,
    text: String,
}

fn cases(name: &str) -> Vec<TransactionCase> {
    let vectors = load_json(name);
    let mut cases = Vec::new();
    for entry in vectors.as_array().unwrap() {
        let entry = entry.as_array().unwrap();
        let Some(prevouts) = entry[0].as_array() else {
            continue; // a comment
        };
        assert_eq!(entry.len(), 3, "bad test {entry:?}");
        let mut spent = HashMap::new();
        for prevout in prevouts {
            let txid = Txid::from_hex(prevout[0].as_str().unwrap()).unwrap();
            let vout = prevout[1].as_i64().unwrap() as u32;
            let script = parse_assembly(prevout[2].as_str().unwrap()).unwrap();
            let amount = prevout.get(3).map_or(0, |amount| amount.as_i64().unwrap());
            spent.insert(OutPoint { txid, vout }, (script, amount));
        }
        cases.push(TransactionCase {
            spent,
            bytes: hex(entry[1].as_str().unwrap()),
            flags: entry[2].as_str().unwrap().to_string(),
            text: Value::Array(entry.clone()).to_string(),
        });
    }
    cases
}

/// Core's context-free `CheckTransaction`, enough for the vectors' BADTX cases.
/// A deliberate test-only copy: the real rule belongs to the consensus crate,
/// which depends on this one, so the script crate's tests cannot call it
/// without a dependency cycle.
fn check_transaction(view: &TransactionView<'_>) -> Result<(), &'static str> {
    if view.inputs().is_empty() {
        return Err("bad-txns-vin-empty");
    }
    if view.outputs().is_empty() {
        return Err("bad-txns-vout-empty");
    }
    if view.base_size() > TRANSACTION_BASE_BYTES_MAX {
        return Err("bad-txns-oversize");
    }
    let mut total = 0i64;
    for output in view.outputs() {
        if output.value < 0 {
            return Err("bad-txns-vout-negative");
        }
        if output.value > MAX_MONEY {
            return Err("bad-txns-vout-toolarge");
        }
        total += output.value;
        if total > MAX_MONEY {
            return Err("bad-txns-txouttotal-toolarge");
        }
    }
    let mut seen = HashSet::new();
    for input in view.inputs() {
        if !seen.insert(input.previous_output()) {
            return Err("bad-txns-inputs-duplicate");
        }
    }
    if view.is_coinbase() {
        let length = view.inputs()[0].script_sig.len();
        if !(2..=100).contains(&length) {
            return Err("bad-cb-length");
        }
    } else if view.inputs().iter().any(|input| input.previous_output().is_null()) {
        return Err("bad-txns-prevout-null");
    }
    Ok(())
}

/// Every flag Core's tests know.
fn all_flags() -> VerifyFlags {
    VerifyFlags::NAMED.iter().fold(VerifyFlags::NONE, |all, (_, flag)| all | *flag)
}

/// Core's `TrimFlags`: WITNESS needs P2SH, CLEANSTACK needs WITNESS.
fn trim_flags(mut flags: VerifyFlags) -> VerifyFlags {
    if !flags.contains(VerifyFlags::P2SH) {
        flags.0 &= !VerifyFlags::WITNESS.0;
    }
    if !flags.contains(VerifyFlags::WITNESS) {
        flags.0 &= !VerifyFlags::CLEANSTACK.0;
    }
    flags
}

/// Core's `FillFlags`: CLEANSTACK implies WITNESS implies P2SH.
fn fill_flags(mut flags: VerifyFlags) -> VerifyFlags {
    if flags.contains(VerifyFlags::CLEANSTACK) {
        flags |= VerifyFlags::WITNESS;
    }
    if flags.contains(VerifyFlags::WITNESS) {
        flags |= VerifyFlags::P2SH;
    }
    flags
}

/// Core's `CheckTxScripts`: whether every input verifies under `flags`.
fn scripts_valid(case: &TransactionCase, view: &TransactionView<'_>, flags: VerifyFlags) -> bool {
    let spent: Vec<SpentOutput<'_>> = view
        .inputs()
        .iter()
        .map(|input| {
            let (script, amount) = case
                .spent
                .get(&input.previous_output())
                .unwrap_or_else(|| panic!("no prevout for an input: {}", case.text));
            SpentOutput { amount: *amount, script_pubkey: script }
        })
        .collect();
    let precomputed = PrecomputedTransactionData::new(view, &spent).unwrap();
    view.inputs().iter().enumerate().all(|(index, input)| {
        let checker = TransactionChecker::new(*view, index, spent[index], &precomputed).unwrap();
        verify_input(input.script_sig, spent[index].script_pubkey, input.witness, flags, &checker)
            .is_ok()
    })
}

#[test]
fn tx_valid_vectors() {
    let mut transactions = 0;
    let mut verifications = 0;
    for case in cases("tx_valid.json") {
        let parsed = ParsedTransaction::parse(&case.bytes).unwrap();
        let view = parsed.view();
        assert_eq!(check_transaction(&view), Ok(()), "{}", case.text);
        let excluded = VerifyFlags::parse(&case.flags).unwrap();
        let flags = VerifyFlags(all_flags().0 & !excluded.0);
        assert_eq!(flags, fill_flags(flags), "bad test flags: {}", case.text);
        assert!(scripts_valid(&case, &view, flags), "valid transaction failed: {}", case.text);
        verifications += 1;
        // Removing flags never invalidates a valid transaction.
        let mut combined = flags;
        for (name, flag) in VerifyFlags::NAMED {
            let single = trim_flags(VerifyFlags(flags.0 & !flag.0));
            assert!(scripts_valid(&case, &view, single), "fails without {name}: {}", case.text);
            combined = trim_flags(VerifyFlags(combined.0 & !flag.0));
            assert!(
                scripts_valid(&case, &view, combined),
                "fails without flags up to {name}: {}",
                case.text
            );
            verifications += 2;
        }
        transactions += 1;
    }
    assert_eq!(transactions, 120);
    eprintln!(
        "tx_valid.json: {transactions} of 120 transactions valid ({verifications} flag sets)"
    );
}

#[test]
fn tx_invalid_vectors() {
    let mut transactions = 0;
    let mut bad_transactions = 0;
    let mut verifications = 0;
    for case in cases("tx_invalid.json") {
        let parsed = ParsedTransaction::parse(&case.bytes).unwrap();
        let view = parsed.view();
        transactions += 1;
        if check_transaction(&view).is_err() {
            assert_eq!(case.flags, "BADTX", "{}", case.text);
            bad_transactions += 1;
            continue;
        }
        assert_ne!(case.flags, "BADTX", "passed CheckTransaction: {}", case.text);
        let flags = VerifyFlags::parse(&case.flags).unwrap();
        assert_eq!(flags, fill_flags(flags), "bad test flags: {}", case.text);
        assert!(!scripts_valid(&case, &view, flags), "invalid transaction passed: {}", case.text);
        verifications += 1;
        // Adding flags never validates an invalid transaction.
        let mut combined = flags;
        for (name, flag) in VerifyFlags::NAMED {
            let single = fill_flags(flags | *flag);
            assert!(!scripts_valid(&case, &view, single), "passes with {name}: {}", case.text);
            combined = fill_flags(combined | *flag);
            assert!(
                !scripts_valid(&case, &view, combined),
                "passes with flags up to {name}: {}",
                case.text
            );
            verifications += 2;
        }
    }
    assert_eq!(transactions, 93);
    eprintln!(
        "tx_invalid.json: {transactions} of 93 transactions invalid ({bad_transactions} by CheckTransaction, {verifications} flag sets by script)"
    );
}

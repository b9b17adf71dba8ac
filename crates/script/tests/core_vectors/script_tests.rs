//! `script_tests.json`: every case run through `verify_script` exactly as
//! Core's `script_tests.cpp` does it: a crediting transaction paying the
//! scriptPubKey, a spending transaction carrying the scriptSig and witness,
//! the expected error name, then (as Core's `DoTest`) the same verdict with
//! flags removed from passing cases and added to failing ones.

use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput};
use ibex_script::assembly::parse_assembly;
use ibex_script::taproot::{tapleaf_hash, tweaked_output_key, TAPROOT_LEAF_TAPSCRIPT};
use ibex_script::{
    verify_script, PrecomputedTransactionData, ScriptError, SpentOutput, TransactionChecker,
    VerifyFlags,
};
use serde_json::Value;

use crate::common::{hex, hex32, load_json};

/// BIP341's provably unspendable internal key, Core's `XOnlyPubKey::NUMS_H`.
const NUMS_H: &str = "50929b74c1a04954b78b4b6035e97a5e078a5a0f28ec96d547bfee9ace803ac0";

/// One parsed case.
struct Case {
    witness: Vec<Vec<u8>>,
    amount: i64,
    script_sig: Vec<u8>,
    script_pubkey: Vec<u8>,
    flags: VerifyFlags,
    expected: String,
    text: String,
}

/// Parses a case, or `None` for a comment line.
fn parse_case(entry: &Value) -> Option<Case> {
    let fields = entry.as_array().unwrap();
    let text = entry.to_string();
    let mut position = 0;
    let mut witness = Vec::new();
    let mut amount = 0;
    let mut tapscript: Option<Vec<u8>> = None;
    if let Some(items) = fields[0].as_array() {
        let (last, items) = items.split_last().unwrap();
        for item in items {
            let item = item.as_str().unwrap();
            if let Some(assembly) = item.strip_prefix("#SCRIPT#") {
                let script = parse_assembly(assembly).unwrap();
                witness.push(script.clone());
                tapscript = Some(script);
            } else if item == "#CONTROLBLOCK#" {
                let script = tapscript.as_ref().expect("#CONTROLBLOCK# after #SCRIPT#");
                let (_, odd) = single_leaf_output(script);
                let mut control = vec![TAPROOT_LEAF_TAPSCRIPT | u8::from(odd)];
                control.extend_from_slice(&hex32(NUMS_H));
                witness.push(control);
            } else {
                witness.push(hex(item));
            }
        }
        amount = (last.as_f64().unwrap() * 100_000_000.0).round() as i64;
        position = 1;
    }
    if fields.len() < position + 4 {
        assert_eq!(fields.len(), 1, "bad test: {text}");
        return None;
    }
    let script_sig = parse_assembly(fields[position].as_str().unwrap()).unwrap();
    let script_pubkey = match fields[position + 1].as_str().unwrap() {
        "0x51 0x20 #TAPROOTOUTPUT#" => {
            let script = tapscript.as_ref().expect("#TAPROOTOUTPUT# needs a #SCRIPT#");
            let (output_key, _) = single_leaf_output(script);
            [&[0x51, 0x20][..], &output_key].concat()
        }
        assembly => parse_assembly(assembly).unwrap(),
    };
    let mut flags = VerifyFlags::parse(fields[position + 2].as_str().unwrap()).unwrap();
    // As Core's DoTest: CLEANSTACK is only defined together with P2SH and WITNESS.
    if flags.contains(VerifyFlags::CLEANSTACK) {
        flags |= VerifyFlags::P2SH | VerifyFlags::WITNESS;
    }
    let expected = fields[position + 3].as_str().unwrap().to_string();
    Some(Case { witness, amount, script_sig, script_pubkey, flags, expected, text })
}

/// The output key (and parity) of a tree holding only `script` as a
/// tapscript leaf under NUMS_H, as Core's `TaprootBuilder` makes it.
fn single_leaf_output(script: &[u8]) -> ([u8; 32], bool) {
    let leaf = tapleaf_hash(TAPROOT_LEAF_TAPSCRIPT, script);
    tweaked_output_key(&hex32(NUMS_H), Some(&leaf)).unwrap()
}

/// Core's `BuildCreditingTransaction` and `BuildSpendingTransaction`,
/// serialised.
fn spending_transaction(case: &Case) -> Vec<u8> {
    let credit = Transaction {
        version: 1,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig: vec![0x00, 0x00],
            sequence: 0xffff_ffff,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput { value: case.amount, script_pubkey: case.script_pubkey.clone() }],
        lock_time: 0,
    };
    let spend = Transaction {
        version: 1,
        inputs: vec![TxInput {
            previous_output: OutPoint { txid: credit.txid(), vout: 0 },
            script_sig: case.script_sig.clone(),
            sequence: 0xffff_ffff,
            witness: case.witness.clone(),
        }],
        outputs: vec![TxOutput { value: case.amount, script_pubkey: Vec::new() }],
        lock_time: 0,
    };
    spend.encode()
}

/// Runs `case` under `flags` with a checker on the spending transaction.
fn run(case: &Case, flags: VerifyFlags) -> Result<(), ScriptError> {
    let bytes = spending_transaction(case);
    let parsed = ParsedTransaction::parse(&bytes).unwrap();
    let view = parsed.view();
    let spent = SpentOutput { amount: case.amount, script_pubkey: &case.script_pubkey };
    let precomputed = PrecomputedTransactionData::new(&view, &[spent]).unwrap();
    let checker = TransactionChecker::new(view, 0, spent, &precomputed).unwrap();
    let witness: Vec<&[u8]> = case.witness.iter().map(Vec::as_slice).collect();
    verify_script(&case.script_sig, &case.script_pubkey, &witness, flags, &checker)
}

fn result_name(result: Result<(), ScriptError>) -> &'static str {
    match result {
        Ok(()) => "OK",
        Err(error) => error.core_name(),
    }
}

/// A small deterministic generator for the flag variations (xorshift64).
struct Xorshift(u64);

impl Xorshift {
    fn next_16_bits(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 32) as u32 & 0xffff
    }
}

/// Core's `DoTest` flag variations: a passing case still passes with any
/// flags removed, a failing one still fails with any added (skipping
/// combinations Core rejects: CLEANSTACK without P2SH and WITNESS, WITNESS
/// without P2SH).
fn check_flag_variations(case: &Case, random: &mut Xorshift) -> Option<String> {
    let expect_ok = case.expected == "OK";
    for _ in 0..16 {
        let extra = random.next_16_bits();
        let combined =
            VerifyFlags(if expect_ok { case.flags.0 & !extra } else { case.flags.0 | extra });
        let p2sh_and_witness = VerifyFlags::P2SH | VerifyFlags::WITNESS;
        if combined.contains(VerifyFlags::CLEANSTACK) && !combined.contains(p2sh_and_witness) {
            continue;
        }
        if combined.contains(VerifyFlags::WITNESS) && !combined.contains(VerifyFlags::P2SH) {
            continue;
        }
        if run(case, combined).is_ok() != expect_ok {
            return Some(format!("flags {:#x} change the verdict", combined.0));
        }
    }
    None
}

#[test]
fn every_script_test_matches_core() {
    let vectors = load_json("script_tests.json");
    let mut random = Xorshift(0x1bad_b002_dead_beef);
    let mut passed = 0;
    let mut failures = Vec::new();
    for entry in vectors.as_array().unwrap() {
        let Some(case) = parse_case(entry) else { continue };
        let got = result_name(run(&case, case.flags));
        if got != case.expected {
            failures.push(format!("expected {}, got {got}: {}", case.expected, case.text));
            continue;
        }
        if let Some(problem) = check_flag_variations(&case, &mut random) {
            failures.push(format!("{problem}: {}", case.text));
            continue;
        }
        passed += 1;
    }
    for failure in &failures {
        eprintln!("{failure}");
    }
    eprintln!("script_tests.json: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} script_tests.json cases differ from Core", failures.len());
    assert!(passed > 1_200, "script_tests.json should have over 1,200 cases, ran {passed}");
}

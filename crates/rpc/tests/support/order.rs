//! Core's key order for each object `getblock` writes, as read from Core
//! 30's source: `blockheaderToJSON` and `blockToJSON`
//! (`src/rpc/blockchain.cpp`), `TxToUniv` and `ScriptToUniv`
//! (`src/core_write.cpp`). Optional keys are listed where Core pushes them.

use super::json::Json;

pub const HEADER: &[&str] = &[
    "hash",
    "confirmations",
    "height",
    "version",
    "versionHex",
    "merkleroot",
    "time",
    "mediantime",
    "nonce",
    "bits",
    "target",
    "difficulty",
    "chainwork",
    "nTx",
    "previousblockhash",
    "nextblockhash",
];
pub const BLOCK_AFTER_HEADER: &[&str] = &["strippedsize", "size", "weight", "tx"];
pub const TRANSACTION: &[&str] = &[
    "txid", "hash", "version", "size", "vsize", "weight", "locktime", "vin", "vout", "fee", "hex",
];
pub const COINBASE_INPUT: &[&str] = &["coinbase", "txinwitness", "sequence"];
pub const INPUT: &[&str] = &["txid", "vout", "scriptSig", "txinwitness", "prevout", "sequence"];
pub const SCRIPT_SIG: &[&str] = &["asm", "hex"];
pub const PREVOUT: &[&str] = &["generated", "height", "value", "scriptPubKey"];
pub const OUTPUT: &[&str] = &["value", "n", "scriptPubKey"];
pub const SCRIPT_PUB_KEY: &[&str] = &["asm", "desc", "hex", "address", "type"];

/// Checks `object`'s keys are `expected` in order, optional keys that are
/// absent left out, and nothing else.
fn assert_order(object: &Json, expected: &[&str], what: &str) {
    let keys = object.keys();
    let present: Vec<&str> = expected.iter().copied().filter(|key| keys.contains(key)).collect();
    assert_eq!(keys, present, "{what} keys out of Core's order");
}

fn items(value: Option<&Json>) -> &[Json] {
    match value {
        Some(Json::Array(items)) => items,
        other => panic!("expected an array, got {other:?}"),
    }
}

/// Walks an object of kind `kind` ("header", "block", "transaction") and
/// checks every object in it against Core's order.
pub fn assert_core_key_order(object: &Json, kind: &str) {
    match kind {
        "header" => assert_order(object, HEADER, "header"),
        "block" => {
            let expected: Vec<&str> = HEADER.iter().chain(BLOCK_AFTER_HEADER).copied().collect();
            assert_order(object, &expected, "block");
            for transaction in items(object.get("tx")) {
                if matches!(transaction, Json::Object(_)) {
                    assert_core_key_order(transaction, "transaction");
                }
            }
        }
        "transaction" => assert_transaction_order(object),
        other => panic!("unknown kind {other}"),
    }
}

fn assert_transaction_order(transaction: &Json) {
    assert_order(transaction, TRANSACTION, "transaction");
    for input in items(transaction.get("vin")) {
        if input.get("coinbase").is_some() {
            assert_order(input, COINBASE_INPUT, "coinbase input");
            continue;
        }
        assert_order(input, INPUT, "input");
        assert_order(input.get("scriptSig").unwrap(), SCRIPT_SIG, "scriptSig");
        if let Some(prevout) = input.get("prevout") {
            assert_order(prevout, PREVOUT, "prevout");
            assert_order(prevout.get("scriptPubKey").unwrap(), SCRIPT_PUB_KEY, "scriptPubKey");
        }
    }
    for output in items(transaction.get("vout")) {
        assert_order(output, OUTPUT, "output");
        assert_order(output.get("scriptPubKey").unwrap(), SCRIPT_PUB_KEY, "scriptPubKey");
    }
}

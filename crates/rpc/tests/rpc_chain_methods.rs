//! The chain methods over real HTTP against Bitcoin Core 30's answers for
//! the shared regtest chain (`expected.json`, `getblock/*.json`), compared
//! by value and in Core's key order; their parameter errors in Core's codes
//! and words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::chain::chain_directory;
use support::compare::assert_same_value;
use support::http::{call, post, start};
use support::json::{parse, Json};
use support::order::assert_core_key_order;

fn expected() -> Json {
    parse(&std::fs::read_to_string(chain_directory().join("expected.json")).unwrap())
}

fn samples() -> Vec<(String, Json)> {
    let mut paths: Vec<_> = std::fs::read_dir(chain_directory().join("getblock"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                parse(&std::fs::read_to_string(&path).unwrap()),
            )
        })
        .collect()
}

fn text(value: &Json) -> &str {
    value.as_str().unwrap()
}

/// Asserts a JSON-RPC 1.0 error reply and its status.
fn assert_error(body: &str, status: u16, code: i64, message: &str) {
    let test = start();
    let reply = post(test.address, body);
    assert_eq!(reply.status, status, "{body}: {}", reply.text());
    let json = reply.json();
    assert_eq!(json.get("result"), Some(&Json::Null));
    let error = json.get("error").unwrap();
    assert_eq!(error.get("code"), Some(&Json::Number(code.to_string())), "{body}");
    assert_eq!(error.get("message").and_then(Json::as_str), Some(message), "{body}");
}

#[test]
fn tip_methods_match_core() {
    let test = start();
    let core = expected();
    let info = core.get("getblockchaininfo").unwrap();
    assert_eq!(call(test.address, "getblockcount", "[]"), *info.get("blocks").unwrap());
    assert_eq!(call(test.address, "getbestblockhash", "[]"), *info.get("bestblockhash").unwrap());
    let Json::Number(blocks) = info.get("blocks").unwrap() else { panic!("a number") };
    let tip = call(test.address, "getblockhash", &format!("[{blocks}]"));
    assert_eq!(tip, *info.get("bestblockhash").unwrap());
    assert_eq!(call(test.address, "getdifficulty", "[]"), *info.get("difficulty").unwrap());
    let ours = call(test.address, "getblockchaininfo", "[]");
    let keys = ours.keys();
    let core_order = [
        "chain",
        "blocks",
        "headers",
        "bestblockhash",
        "bits",
        "target",
        "difficulty",
        "time",
        "mediantime",
        "verificationprogress",
        "initialblockdownload",
        "chainwork",
        "size_on_disk",
        "pruned",
        "warnings",
    ];
    assert_eq!(keys, core_order);
    for key in core_order.iter().filter(|key| **key != "size_on_disk") {
        assert_same_value(ours.get(key).unwrap(), info.get(key).unwrap(), key);
    }
}

#[test]
fn getchaintips_matches_core() {
    let test = start();
    let ours = call(test.address, "getchaintips", "[]");
    let core = expected();
    let sorted = |tips: &Json| {
        let Json::Array(items) = tips else { panic!("an array") };
        let mut items = items.clone();
        items.sort_by_key(|tip| text(tip.get("hash").unwrap()).to_owned());
        Json::Array(items)
    };
    let ours = sorted(&ours);
    assert_same_value(&ours, &sorted(core.get("getchaintips").unwrap()), "getchaintips");
    let Json::Array(tips) = ours else { panic!("an array") };
    assert_eq!(tips[0].keys(), ["height", "hash", "branchlen", "status"]);
}

#[test]
fn getblockhash_getblockheader_getblock_match_core_for_every_sample() {
    let test = start();
    let mut answers = 0;
    for (name, core) in samples() {
        let hash = text(core.get("hash").unwrap());
        let height = core.get("height").unwrap();
        let Json::Number(height) = height else { panic!("a number") };
        assert_eq!(text(&call(test.address, "getblockhash", &format!("[{height}]"))), hash);
        let header = call(test.address, "getblockheader", &format!(r#"["{hash}"]"#));
        assert_same_value(&header, core.get("header").unwrap(), &name);
        assert_core_key_order(&header, "header");
        let header_hex = call(test.address, "getblockheader", &format!(r#"["{hash}", false]"#));
        assert_eq!(header_hex, *core.get("header_hex").unwrap());
        for verbosity in 0..=3 {
            let ours = call(test.address, "getblock", &format!(r#"["{hash}", {verbosity}]"#));
            let expected = core.get(&format!("verbosity{verbosity}")).unwrap();
            assert_same_value(&ours, expected, &format!("{name} verbosity {verbosity}"));
            if verbosity > 0 {
                assert_core_key_order(&ours, "block");
            }
        }
        // Core's boolean form and the default.
        let verbose_false = call(test.address, "getblock", &format!(r#"["{hash}", false]"#));
        assert_eq!(verbose_false, *core.get("verbosity0").unwrap());
        let verbose_true = call(test.address, "getblock", &format!(r#"["{hash}", true]"#));
        assert_same_value(&verbose_true, core.get("verbosity1").unwrap(), &name);
        let default = call(test.address, "getblock", &format!(r#"["{hash}"]"#));
        assert_same_value(&default, core.get("verbosity1").unwrap(), &name);
        answers += 9;
    }
    assert_eq!(answers, 18 * 9);
}

#[test]
fn named_parameters() {
    let test = start();
    let (_, core) = samples().remove(3);
    let hash = text(core.get("hash").unwrap()).to_owned();
    let height = core.get("height").unwrap().clone();
    let Json::Number(height_text) = &height else { panic!("a number") };
    assert_eq!(
        text(&call(test.address, "getblockhash", &format!(r#"{{"height":{height_text}}}"#))),
        hash
    );
    let hex =
        call(test.address, "getblock", &format!(r#"{{"blockhash":"{hash}","verbose":false}}"#));
    assert_eq!(hex, *core.get("verbosity0").unwrap());
    let two = call(test.address, "getblock", &format!(r#"{{"verbosity":2,"blockhash":"{hash}"}}"#));
    assert_same_value(&two, core.get("verbosity2").unwrap(), "named verbosity");
    let positional =
        call(test.address, "getblockheader", &format!(r#"{{"args":["{hash}"],"verbose":false}}"#));
    assert_eq!(positional, *core.get("header_hex").unwrap());
}

#[test]
fn parameter_errors_in_core_words() {
    let missing = "00".repeat(32);
    let getblock_missing = format!(r#"{{"method":"getblock","params":["{missing}"],"id":1}}"#);
    assert_error(&getblock_missing, 500, -5, "Block not found");
    let header_missing = format!(r#"{{"method":"getblockheader","params":["{missing}"],"id":1}}"#);
    assert_error(&header_missing, 500, -5, "Block not found");
    assert_error(
        r#"{"method":"getblockhash","params":[1191],"id":1}"#,
        500,
        -8,
        "Block height out of range",
    );
    assert_error(
        r#"{"method":"getblockhash","params":[-1],"id":1}"#,
        500,
        -8,
        "Block height out of range",
    );
    assert_error(
        r#"{"method":"getblockhash","params":["1"],"id":1}"#,
        500,
        -3,
        "Wrong type passed:\n{\n    \"Position 1 (height)\": \"JSON value of type string is not of expected type number\"\n}",
    );
    assert_error(
        r#"{"method":"getblockhash","params":[1.5],"id":1}"#,
        500,
        -1,
        "JSON integer out of range",
    );
    assert_error(
        r#"{"method":"getblockheader","params":["abc"],"id":1}"#,
        500,
        -8,
        "hash must be of length 64 (not 3, for 'abc')",
    );
    let not_hex = "g".repeat(64);
    assert_error(
        &format!(r#"{{"method":"getblock","params":["{not_hex}"],"id":1}}"#),
        500,
        -8,
        &format!("blockhash must be hexadecimal string (not '{not_hex}')"),
    );
    assert_error(
        r#"{"method":"getblockhash","params":{"height":1,"extra":2},"id":1}"#,
        500,
        -8,
        "Unknown named parameter extra",
    );
    assert_error(
        r#"{"method":"nosuchmethod","params":[],"id":1}"#,
        404,
        -32601,
        "Method not found",
    );
    assert_error(
        r#"{"method":"waitfornewblock","params":[-1],"id":1}"#,
        500,
        -1,
        "Negative timeout",
    );
    // A wrong count answers the method's help (-1), first line Core's.
    let test = start();
    let reply = post(test.address, r#"{"method":"getblockhash","params":[],"id":1}"#);
    let error = reply.json().get("error").unwrap().clone();
    assert_eq!(error.get("code"), Some(&Json::Number("-1".into())));
    assert!(text(error.get("message").unwrap()).starts_with("getblockhash height\n"));
}

#[test]
fn gettxout_finds_unspent_outputs_only() {
    let test = start();
    let chain = test.backend.chain();
    let tip_height = chain.active().len() as u32 - 1;
    // The tip's coinbase output 0 is unspent; block 1's coinbase was spent
    // or not: find one of each among the early coinbases.
    let mut seen_unspent = false;
    let mut seen_spent = false;
    for height in 1..=200u32 {
        let block = chain.block(&chain.active()[height as usize]);
        let txid = block.transaction(0).unwrap().txid();
        let result = call(test.address, "gettxout", &format!(r#"["{}", 0]"#, txid.to_hex()));
        if result == Json::Null {
            seen_spent = true;
            continue;
        }
        seen_unspent = true;
        assert_eq!(
            result.keys(),
            ["bestblock", "confirmations", "value", "scriptPubKey", "coinbase"]
        );
        assert_eq!(result.get("coinbase"), Some(&Json::Bool(true)));
        assert_eq!(
            result.get("confirmations"),
            Some(&Json::Number((tip_height - height + 1).to_string()))
        );
        let bestblock = result.get("bestblock").unwrap();
        assert_eq!(text(bestblock), chain.active()[tip_height as usize].to_hex());
    }
    assert!(seen_spent && seen_unspent);
    let mempool_off =
        call(test.address, "gettxout", &format!(r#"["{}", 0, false]"#, "11".repeat(32)));
    assert_eq!(mempool_off, Json::Null);
}

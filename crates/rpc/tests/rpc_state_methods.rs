//! `gettxoutsetinfo`, `getchainstates` and `getdeploymentinfo` over real
//! HTTP on the shared regtest chain Core made: the UTXO set statistics
//! against Core's answers in `expected.json`, the deployments against the
//! chain's own version bits, read independently here, and the parameter
//! errors in Core's codes and words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::backend::{TEST_CACHE_SIZES, TEST_COINS_DISK_BYTES};
use support::chain::chain_directory;
use support::compare::assert_same_value;
use support::http::{call, post, start};
use support::json::{parse, Json};

fn expected() -> Json {
    parse(&std::fs::read_to_string(chain_directory().join("expected.json")).unwrap())
}

fn number(value: impl ToString) -> Json {
    Json::Number(value.to_string())
}

/// Asserts a JSON-RPC 1.0 error reply with status 500.
fn assert_error(method: &str, params: &str, code: i64, message: &str) {
    let test = start();
    let body = format!(r#"{{"method":"{method}","params":{params},"id":1}}"#);
    let reply = post(test.address, &body);
    assert_eq!(reply.status, 500, "{body}: {}", reply.text());
    let error = reply.json().get("error").unwrap().clone();
    assert_eq!(error.get("code"), Some(&number(code)), "{body}");
    assert_eq!(error.get("message").and_then(Json::as_str), Some(message), "{body}");
}

#[test]
fn gettxoutsetinfo_gives_cores_answers_for_each_hash_type() {
    let test = start();
    let core = expected();
    let tip_serialized = core.get("gettxoutsetinfo_tip_hash_serialized_3").unwrap();
    let ours = call(test.address, "gettxoutsetinfo", "[]");
    assert_eq!(
        ours.keys(),
        [
            "height",
            "bestblock",
            "txouts",
            "bogosize",
            "hash_serialized_3",
            "total_amount",
            "transactions",
            "disk_size"
        ]
    );
    for field in ["height", "bestblock", "txouts", "bogosize", "hash_serialized_3", "total_amount"]
    {
        assert_same_value(ours.get(field).unwrap(), tip_serialized.get(field).unwrap(), field);
    }
    assert_eq!(ours.get("transactions"), tip_serialized.get("transactions"));
    assert_eq!(ours.get("disk_size"), Some(&number(TEST_COINS_DISK_BYTES)));
    let explicit = call(test.address, "gettxoutsetinfo", r#"["hash_serialized_3"]"#);
    assert_eq!(explicit, ours);

    let tip_muhash = core.get("gettxoutsetinfo").unwrap().get("1190").unwrap();
    let muhash = call(test.address, "gettxoutsetinfo", r#"{"hash_type":"muhash"}"#);
    assert!(muhash.get("hash_serialized_3").is_none());
    let core_muhash = tip_muhash.get("muhash").unwrap();
    for field in ["height", "bestblock", "txouts", "bogosize", "muhash", "total_amount"] {
        assert_same_value(muhash.get(field).unwrap(), core_muhash.get(field).unwrap(), field);
    }
    let none = call(test.address, "gettxoutsetinfo", r#"["none", null, true]"#);
    assert_eq!(
        none.keys(),
        ["height", "bestblock", "txouts", "bogosize", "total_amount", "transactions", "disk_size"]
    );
    let core_none = tip_muhash.get("none").unwrap();
    for field in ["height", "bestblock", "txouts", "bogosize", "total_amount"] {
        assert_same_value(none.get(field).unwrap(), core_none.get(field).unwrap(), field);
    }
}

#[test]
fn gettxoutsetinfo_parameter_errors_in_core_words() {
    assert_error("gettxoutsetinfo", r#"["sha256"]"#, -8, "'sha256' is not a valid hash_type");
    assert_error(
        "gettxoutsetinfo",
        r#"["muhash", 100]"#,
        -8,
        "Querying specific block heights requires coinstatsindex",
    );
    assert_error(
        "gettxoutsetinfo",
        r#"["none", null, 1]"#,
        -3,
        "Wrong type passed:\n{\n    \"Position 3 (use_index)\": \"JSON value of type number is not of expected type bool\"\n}",
    );
}

#[test]
fn getchainstates_reports_the_one_validated_chainstate() {
    let test = start();
    let info = expected();
    let info = info.get("getblockchaininfo").unwrap();
    let ours = call(test.address, "getchainstates", "[]");
    assert_eq!(ours.keys(), ["headers", "chainstates"]);
    assert_same_value(ours.get("headers").unwrap(), info.get("headers").unwrap(), "headers");
    let Some(Json::Array(chainstates)) = ours.get("chainstates") else { panic!("an array") };
    assert_eq!(chainstates.len(), 1);
    let chainstate = &chainstates[0];
    assert_eq!(
        chainstate.keys(),
        [
            "blocks",
            "bestblockhash",
            "bits",
            "target",
            "difficulty",
            "verificationprogress",
            "coins_db_cache_bytes",
            "coins_tip_cache_bytes",
            "validated"
        ]
    );
    for field in ["blocks", "bestblockhash", "bits", "target", "difficulty"] {
        assert_same_value(chainstate.get(field).unwrap(), info.get(field).unwrap(), field);
    }
    let sizes = TEST_CACHE_SIZES;
    assert_eq!(chainstate.get("coins_db_cache_bytes"), Some(&number(sizes.coins_database_bytes)));
    assert_eq!(chainstate.get("coins_tip_cache_bytes"), Some(&number(sizes.coins_tip_bytes)));
    assert_eq!(chainstate.get("validated"), Some(&Json::Bool(true)));
}

/// Whether a version signals `testdummy`: top bits `001`, bit 28 set.
fn signals(version: i32) -> bool {
    (version as u32) >> 29 == 0b001 && version & (1 << 28) != 0
}

/// `testdummy`'s state for each period of the active chain, worked out
/// here from the blocks' versions: period 0 is `defined`; each later
/// period is `started`, then `locked_in` after a period with 108 of 144
/// blocks signalling bit 28, then `active`.
fn testdummy_states(versions: &[i32]) -> Vec<&'static str> {
    let mut states = vec!["defined"];
    for period in 1..=versions.len() / 144 + 1 {
        let previous = states[period - 1];
        let blocks = &versions[(period - 1) * 144..(period * 144).min(versions.len())];
        let count = blocks.iter().filter(|version| signals(**version)).count();
        states.push(match previous {
            "defined" => "started",
            "started" if count >= 108 && blocks.len() == 144 => "locked_in",
            "locked_in" => "active",
            other => other,
        });
    }
    states
}

#[test]
fn getdeploymentinfo_follows_the_chains_version_bits() {
    let test = start();
    let chain = test.backend.chain();
    let versions: Vec<i32> =
        chain.active().iter().map(|hash| chain.block(hash).header().version).collect();
    let states = testdummy_states(&versions);
    let tip = chain.active().len() - 1;
    let heights = (0..=tip).step_by(37).chain([143, 144, 287, 288, 431, 432, tip]);
    let mut seen_states = std::collections::BTreeSet::new();
    for height in heights {
        let hash = chain.active()[height].to_hex();
        let ours = call(test.address, "getdeploymentinfo", &format!(r#"["{hash}"]"#));
        assert_eq!(ours.keys(), ["hash", "height", "script_flags", "deployments"]);
        assert_eq!(ours.get("height"), Some(&number(height)));
        let flags: Vec<&str> = match ours.get("script_flags") {
            Some(Json::Array(flags)) => flags.iter().map(|flag| flag.as_str().unwrap()).collect(),
            _ => panic!("an array"),
        };
        // Regtest buries every soft fork at height 1 (segwit at 0).
        let expected_flags: &[&str] = if height == 0 {
            &["NULLDUMMY", "P2SH", "TAPROOT", "WITNESS"]
        } else {
            &[
                "CHECKLOCKTIMEVERIFY",
                "CHECKSEQUENCEVERIFY",
                "DERSIG",
                "NULLDUMMY",
                "P2SH",
                "TAPROOT",
                "WITNESS",
            ]
        };
        assert_eq!(flags, expected_flags, "height {height}");
        let deployments = ours.get("deployments").unwrap();
        assert_eq!(deployments.keys(), ["bip34", "bip66", "bip65", "csv", "segwit", "testdummy"]);
        let segwit = deployments.get("segwit").unwrap();
        assert_eq!(segwit.keys(), ["type", "active", "height"]);
        assert_eq!(segwit.get("active"), Some(&Json::Bool(true)));
        let bip34 = deployments.get("bip34").unwrap();
        assert_eq!(bip34.get("height"), Some(&number(1)));
        assert_eq!(bip34.get("active"), Some(&Json::Bool(true)), "active for the next block");
        let dummy = deployments.get("testdummy").unwrap();
        let bip9 = dummy.get("bip9").unwrap();
        let current = states[height / 144];
        let next = states[(height + 1) / 144];
        seen_states.insert(current);
        assert_eq!(bip9.get("status").and_then(Json::as_str), Some(current), "height {height}");
        assert_eq!(bip9.get("status_next").and_then(Json::as_str), Some(next), "height {height}");
        let first_period =
            (0..=height / 144).rev().take_while(|period| states[*period] == current).last();
        let since = if current == "defined" { 0 } else { first_period.unwrap() * 144 };
        assert_eq!(bip9.get("since"), Some(&number(since)), "height {height}");
        let active_since = match (current, next) {
            ("active", _) => Some(since),
            (_, "active") => Some(height + 1),
            _ => None,
        };
        assert_eq!(dummy.get("height"), active_since.map(number).as_ref(), "height {height}");
        assert_eq!(dummy.get("active"), Some(&Json::Bool(active_since.is_some())));
        let signalling = current == "started" || current == "locked_in";
        assert_eq!(bip9.get("statistics").is_some(), signalling, "height {height}");
        if signalling {
            let first = height - height % 144;
            let marks: String = versions[first..=height]
                .iter()
                .map(|version| if signals(*version) { '#' } else { '-' })
                .collect();
            assert_eq!(bip9.get("signalling").and_then(Json::as_str), Some(marks.as_str()));
            let statistics = bip9.get("statistics").unwrap();
            assert_eq!(statistics.get("elapsed"), Some(&number(height - first + 1)));
            let count = marks.bytes().filter(|mark| *mark == b'#').count();
            assert_eq!(statistics.get("count"), Some(&number(count)));
            assert_eq!(statistics.get("threshold").is_some(), current == "started");
            assert_eq!(bip9.get("bit"), Some(&number(28)));
        }
    }
    assert!(seen_states.len() >= 3, "the chain walks testdummy through {seen_states:?}");
    // The tip by default.
    let at_tip = call(test.address, "getdeploymentinfo", "[]");
    assert_eq!(at_tip.get("height"), Some(&number(tip)));
}

#[test]
fn getdeploymentinfo_parameter_errors_in_core_words() {
    let missing = "00".repeat(32);
    assert_error("getdeploymentinfo", &format!(r#"["{missing}"]"#), -5, "Block not found");
    assert_error(
        "getdeploymentinfo",
        r#"["abc"]"#,
        -8,
        "blockhash must be of length 64 (not 3, for 'abc')",
    );
    assert_error(
        "getdeploymentinfo",
        "[1]",
        -3,
        "Wrong type passed:\n{\n    \"Position 1 (blockhash)\": \"JSON value of type number is not of expected type string\"\n}",
    );
}

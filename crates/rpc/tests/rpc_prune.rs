//! `pruneblockchain` and pruning's answers on the server side, over the
//! in-memory backend (a node that keeps every block): Core's refusal and
//! its order against the parameter checks, `help`'s listing and text, and
//! `getrawtransaction` at verbosity 2 on a block without undo data (Core
//! answers verbosity 1's object, as for a block fetched again after a
//! prune). Pruning itself is tested against `ibexd`
//! (`ibex-daemon`'s `ibexd_pruneblockchain`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::http::{call, post, start};
use support::json::Json;

/// The (code, message) of the error a JSON-RPC 1.0 call answers.
fn error_of(address: std::net::SocketAddr, params: &str) -> (String, String) {
    let body = format!(r#"{{"method":"pruneblockchain","params":{params},"id":1}}"#);
    let reply = post(address, &body);
    assert_eq!(reply.status, 500, "{body}: {}", reply.text());
    let json = reply.json();
    let error = json.get("error").unwrap();
    let Some(Json::Number(code)) = error.get("code") else { panic!("no code: {body}") };
    (code.clone(), error.get("message").and_then(Json::as_str).unwrap().to_owned())
}

#[test]
fn a_node_that_keeps_every_block_refuses_after_the_type_checks() {
    let test = start();
    let refusal =
        ("-1".to_owned(), "Cannot prune blocks because node is not in prune mode.".to_owned());
    assert_eq!(error_of(test.address, "[500]"), refusal);
    // Core asks whether it prunes before it reads the height.
    assert_eq!(error_of(test.address, "[-1]"), refusal);
    assert_eq!(error_of(test.address, "[1.5]"), refusal);
    assert_eq!(error_of(test.address, "[99999999999]"), refusal);
    assert_eq!(error_of(test.address, r#"{"height":500}"#), refusal);
    // The argument's type and count are checked before the method runs.
    let (code, message) = error_of(test.address, r#"["500"]"#);
    assert_eq!(code, "-3");
    assert_eq!(
        message,
        "Wrong type passed:\n{\n    \"Position 1 (height)\": \"JSON value of type string is not of expected type number\"\n}"
    );
    let (code, message) = error_of(test.address, "[]");
    assert_eq!(code, "-1");
    assert!(message.starts_with("pruneblockchain height\n\nAttempts to delete"), "{message}");
}

#[test]
fn help_lists_it_where_core_does_and_describes_it_in_cores_words() {
    let test = start();
    let list = call(test.address, "help", "[]");
    let list = list.as_str().unwrap();
    assert!(
        list.contains("\nloadtxoutset \"path\"\npruneblockchain height\nwaitforblockheight "),
        "{list}"
    );
    let help = call(test.address, "help", r#"["pruneblockchain"]"#);
    let help = help.as_str().unwrap();
    assert!(help.contains("Requires `-prune` to be enabled at startup. While pruned data may be re-fetched in some cases (e.g., via `getblockfrompeer`), local deletion is irreversible."), "{help}");
    assert!(help.contains("or to a UNIX epoch time\n                  to prune blocks whose block time is at least 2 hours older than the provided timestamp."), "{help}");
    assert!(help.ends_with("Height of the last block pruned"), "{help}");
}

#[test]
fn getblockchaininfo_says_not_pruned_without_the_prune_keys() {
    let test = start();
    let info = call(test.address, "getblockchaininfo", "[]");
    assert_eq!(info.get("pruned"), Some(&Json::Bool(false)));
    for key in ["pruneheight", "automatic_pruning", "prune_target_size"] {
        assert!(info.get(key).is_none(), "{key}");
    }
}

#[test]
fn a_payment_in_a_block_without_undo_data_is_given_at_verbosity_one() {
    let test = start();
    let chain = test.backend.chain();
    let stale = chain
        .hashes()
        .find(|hash| !chain.is_active(hash) && chain.block(hash).transaction_count() > 1)
        .expect("the chain has a stale block with a payment");
    let txid = chain.block(stale).transaction(1).unwrap().txid().to_hex();
    let params = |verbosity: u8| format!(r#"["{txid}", {verbosity}, "{}"]"#, stale.to_hex());
    let two = call(test.address, "getrawtransaction", &params(2));
    let one = call(test.address, "getrawtransaction", &params(1));
    assert_eq!(two, one);
    assert!(two.get("fee").is_none(), "{two:?}");
    assert_eq!(two.get("in_active_chain"), Some(&Json::Bool(false)));
}

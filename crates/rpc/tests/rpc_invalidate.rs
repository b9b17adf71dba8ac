//! `invalidateblock` and `reconsiderblock` on the server side: Core's
//! parameter errors, hidden from `help`'s list but described by `help
//! <name>`, and a backend that takes no engine command (the in-memory one
//! here) refuses them with an error rather than a silent null. Their
//! effect on a real chain is tested against `ibexd` (`ibex-daemon`'s
//! `ibexd_rpc_invalidate`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::http::{call, post, start};
use support::json::Json;

/// The error object of a JSON-RPC 1.0 reply to `body`, checked for
/// Core's HTTP status (500 for a method's error).
fn error_of(address: std::net::SocketAddr, body: &str) -> (String, String) {
    let reply = post(address, body);
    assert_eq!(reply.status, 500, "{body}: {}", reply.text());
    let json = reply.json();
    assert_eq!(json.get("result"), Some(&Json::Null));
    let error = json.get("error").unwrap();
    let Some(Json::Number(code)) = error.get("code") else { panic!("no code: {body}") };
    (code.clone(), error.get("message").and_then(Json::as_str).unwrap().to_owned())
}

#[test]
fn parameters_are_checked_as_core_checks_them() {
    let test = start();
    for method in ["invalidateblock", "reconsiderblock"] {
        let short = format!(r#"{{"method":"{method}","params":["zz"],"id":1}}"#);
        assert_eq!(
            error_of(test.address, &short),
            ("-8".to_owned(), "blockhash must be of length 64 (not 2, for 'zz')".to_owned())
        );
        let not_hex = format!(r#"{{"method":"{method}","params":["{}"],"id":1}}"#, "g".repeat(64));
        let (code, message) = error_of(test.address, &not_hex);
        assert_eq!((code.as_str(), message.contains("must be hexadecimal string")), ("-8", true));
        let missing = format!(r#"{{"method":"{method}","params":[],"id":1}}"#);
        let (code, message) = error_of(test.address, &missing);
        assert_eq!(code, "-1");
        assert!(message.starts_with(&format!("{method} \"blockhash\"")), "{message}");
    }
}

#[test]
fn a_backend_without_engine_commands_refuses_them_and_help_hides_them() {
    let test = start();
    let hash = "11".repeat(32);
    for method in ["invalidateblock", "reconsiderblock"] {
        let body = format!(r#"{{"method":"{method}","params":["{hash}"],"id":1}}"#);
        let (code, message) = error_of(test.address, &body);
        assert_eq!(code, "-1");
        assert!(message.contains("takes no command that changes the chain"), "{message}");
    }
    let list = call(test.address, "help", "[]");
    let list = list.as_str().unwrap();
    assert!(list.contains("getblockcount") && !list.contains("invalidateblock"), "{list}");
    assert!(!list.contains("Hidden"), "{list}");
    let help = call(test.address, "help", r#"["reconsiderblock"]"#);
    assert!(help.as_str().unwrap().starts_with("reconsiderblock \"blockhash\""), "{help:?}");
}

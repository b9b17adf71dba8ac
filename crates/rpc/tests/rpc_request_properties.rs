//! Property tests of the JSON-RPC request parser and the method table
//! (the deterministic, short form of `fuzz/fuzz_targets/rpc_request.rs`):
//! random bytes, mutated requests and well-formed requests with random
//! methods, ids, versions and parameters, in batches too, all answered
//! through `RequestHandler` over the shared chain. Every body gets a reply
//! with one of Core's statuses that is one JSON value (or nothing, 204),
//! a body that is not JSON gets -32700, ids are echoed, a batch answers
//! each element that is not a notification in order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::{Arc, OnceLock};

use ibex_primitives::Network;
use ibex_rpc::{HttpReply, RequestHandler};
use proptest::prelude::*;
use serde_json::{json, Value};
use support::backend::ChainBackend;

fn handler() -> &'static RequestHandler {
    static HANDLER: OnceLock<RequestHandler> = OnceLock::new();
    HANDLER.get_or_init(|| {
        RequestHandler::without_waits(Arc::new(ChainBackend::new()), Network::Regtest)
    })
}

/// What every reply satisfies; the reply's JSON unless it is a 204.
fn check_reply(body: &[u8], reply: &HttpReply) -> Option<Value> {
    assert!([200, 204, 400, 404, 500].contains(&reply.status), "status {}", reply.status);
    if reply.status == 204 {
        assert!(reply.body.is_empty());
        return None;
    }
    assert_eq!(reply.body.last(), Some(&b'\n'));
    // JSON's grammar: an id is echoed as written, even a number out of a
    // double's range (as Core echoes it), which serde will not read.
    let valid = serde_json::from_slice::<serde::de::IgnoredAny>(&reply.body);
    assert!(valid.is_ok(), "a reply is one JSON value");
    let Ok(answer) = serde_json::from_slice::<Value>(&reply.body) else { return None };
    if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
        assert_eq!(reply.status, 500);
        assert_eq!(answer["error"]["code"], -32700);
    }
    Some(answer)
}

/// One element's reply against its request.
fn check_element_reply(request: &Value, reply: &Value) {
    let Some(fields) = request.as_object() else { return };
    let version_two = fields.get("jsonrpc") == Some(&json!("2.0"));
    let reply_fields = reply.as_object().expect("an object");
    if let Some(id) = fields.get("id") {
        // The id is echoed as written: the same text, so the same value
        // once read back (serde's float reading is not exact both ways).
        let written: Value = serde_json::from_str(&id.to_string()).unwrap();
        assert_eq!(reply_fields.get("id"), Some(&written), "the id is echoed");
    }
    let error = reply_fields.get("error").filter(|error| !error.is_null());
    if let Some(error) = error {
        assert!(error["code"].is_i64() && error["message"].is_string(), "{error}");
    }
    if !(version_two && error.is_some()) {
        assert!(reply_fields.contains_key("result"));
    }
    if !version_two {
        assert!(reply_fields.contains_key("error"), "1.0 replies carry both keys");
        assert!(error.is_none() || reply_fields["result"].is_null());
    }
}

const METHODS: &[&str] = &[
    "getbestblockhash",
    "getblock",
    "getblockchaininfo",
    "getblockcount",
    "getblockhash",
    "getblockheader",
    "getblockstats",
    "getchainstates",
    "getchaintips",
    "getdeploymentinfo",
    "getdifficulty",
    "gettxout",
    "gettxoutsetinfo",
    "getrawtransaction",
    "waitfornewblock",
    "waitforblockheight",
    "help",
    "uptime",
    "getnetworkinfo",
    "nosuchmethod",
    "",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|number| json!(number)),
        (0..1300i64).prop_map(|height| json!(height)),
        any::<f64>().prop_filter("finite", |number| number.is_finite()).prop_map(|n| json!(n)),
        "[a-z0-9_]{0,12}".prop_map(Value::String),
        Just(json!("7720e38fed81718c530b96cb43e3e85b0fb52636e94b768340af9f80ec047b87")),
        Just(json!("hash_serialized_3")),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn request() -> impl Strategy<Value = Value> {
    let method = prop_oneof![prop::sample::select(METHODS).prop_map(|name| json!(name)), scalar(),];
    let version = prop_oneof![
        Just(None),
        Just(Some(json!("2.0"))),
        Just(Some(json!("1.0"))),
        scalar().prop_map(Some),
    ];
    let params = prop_oneof![
        Just(None),
        prop::collection::vec(scalar(), 0..4).prop_map(|items| Some(Value::Array(items))),
        value().prop_map(Some),
    ];
    (method, version, params, prop::option::of(value())).prop_map(
        |(method, version, params, id)| {
            let mut fields = serde_json::Map::new();
            fields.insert("method".into(), method);
            if let Some(version) = version {
                fields.insert("jsonrpc".into(), version);
            }
            if let Some(params) = params {
                fields.insert("params".into(), params);
            }
            if let Some(id) = id {
                fields.insert("id".into(), id);
            }
            Value::Object(fields)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_get_a_well_formed_reply(body in prop::collection::vec(any::<u8>(), 0..200)) {
        check_reply(&body, &handler().answer(&body));
    }

    #[test]
    fn well_formed_requests_echo_their_ids(request in request()) {
        let body = serde_json::to_vec(&request).unwrap();
        let reply = handler().answer(&body);
        if let Some(answer) = check_reply(&body, &reply) {
            check_element_reply(&request, &answer);
        }
    }

    #[test]
    fn batches_answer_each_element_in_order(
        elements in prop::collection::vec(prop_oneof![4 => request(), 1 => scalar()], 0..5)
    ) {
        let body = serde_json::to_vec(&elements).unwrap();
        let reply = handler().answer(&body);
        let answer = check_reply(&body, &reply);
        prop_assert!(reply.status == 200 || reply.status == 204);
        let Some(Value::Array(replies)) = answer else { return Ok(()) };
        // Notifications (2.0 without an id) get no reply; a non-object
        // element keeps the id and version of the object before it.
        let (mut version_two, mut has_id) = (false, true);
        let mut answered = Vec::new();
        for element in &elements {
            if let Some(fields) = element.as_object() {
                version_two = fields.get("jsonrpc") == Some(&json!("2.0"));
                has_id = fields.contains_key("id");
            }
            if !version_two || has_id {
                answered.push(element);
            }
        }
        prop_assert_eq!(replies.len(), answered.len());
        for (element, reply) in answered.iter().zip(&replies) {
            check_element_reply(element, reply);
        }
    }

    #[test]
    fn mutated_requests_get_a_well_formed_reply(
        request in request(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6),
    ) {
        let mut body = serde_json::to_vec(&request).unwrap();
        for (at, byte, kind) in edits {
            let position = at.index(body.len() + 1);
            match kind {
                0 if position < body.len() => body[position] = byte,
                1 => body.insert(position, byte),
                _ if position < body.len() => {
                    body.remove(position);
                }
                _ => body.push(byte),
            }
        }
        check_reply(&body, &handler().answer(&body));
    }
}

#[test]
fn deep_nesting_and_many_values_are_refused_with_core_codes() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let reply = handler().answer(deep.as_bytes());
    let answer = check_reply(deep.as_bytes(), &reply).unwrap();
    assert_eq!((reply.status, answer["error"]["code"].clone()), (500, json!(-32700)));
    let many =
        format!(r#"{{"method":"getblockcount","params":[{}1],"id":7}}"#, "1,".repeat(200_000));
    let reply = handler().answer(many.as_bytes());
    let answer = check_reply(many.as_bytes(), &reply).unwrap();
    assert_eq!(reply.status, 400);
    assert_eq!(answer["error"]["code"], -32600);
    assert_eq!(answer["id"], 7, "the id read before the parameters is kept");
    // Keys other than the envelope's are skipped unread, however many.
    let keys: String = (0..50_000).map(|index| format!(r#""k{index}":[1,2],"#)).collect();
    let padded = format!(r#"{{{keys}"method":"getblockcount","id":1}}"#);
    let reply = handler().answer(padded.as_bytes());
    assert_eq!(reply.status, 200);
    // Ids are echoed as written, even numbers no double holds (as Core's
    // UniValue keeps their digits).
    let huge = handler().answer(br#"{"method":"getblockcount","id": 4.4e444420 }"#);
    assert!(String::from_utf8(huge.body).unwrap().ends_with(
        r#","error":null,"id":4.4e444420}
"#
    ));
    // The first `id` counts, as in Core.
    let twice = handler().answer(br#"{"id":1,"method":"getblockcount","id":2}"#);
    assert_eq!(serde_json::from_slice::<Value>(&twice.body).unwrap()["id"], 1);
}

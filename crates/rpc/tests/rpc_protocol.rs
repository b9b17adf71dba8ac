//! JSON-RPC over HTTP as Core speaks it (`httprpc.cpp`, `rpc/request.cpp`,
//! Core's `interface_rpc.py` cases): 1.0 and 2.0 reply shapes and HTTP
//! statuses, notifications, batches with bad elements, malformed
//! envelopes, warmup, `help`, `stop`, `uptime`, the `waitfor*` methods and
//! the network methods.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use support::backend::ChainBackend;
use support::http::{call, post, start, start_with, test_config};
use support::json::{parse, Json};

fn number(value: i64) -> Json {
    Json::Number(value.to_string())
}

fn error_object(code: i64, message: &str) -> Json {
    Json::Object(vec![
        ("code".into(), number(code)),
        ("message".into(), Json::String(message.into())),
    ])
}

fn genesis(test: &support::http::TestServer) -> String {
    test.backend.chain().active()[0].to_hex()
}

#[test]
fn version_1_and_2_reply_shapes_and_statuses() {
    let test = start();
    let tip_height = number(test.backend.chain().active().len() as i64 - 1);
    // 1.0 success: result, error null, id, in that order.
    let reply = post(test.address, r#"{"method":"getblockcount","id":"a"}"#);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert!(reply.text().ends_with("}\n"));
    assert_eq!(reply.json().keys(), ["result", "error", "id"]);
    assert_eq!(reply.json().get("result"), Some(&tip_height));
    // 2.0 success: jsonrpc first, no error key.
    let reply = post(test.address, r#"{"jsonrpc":"2.0","method":"getblockcount","id":7}"#);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json().keys(), ["jsonrpc", "result", "id"]);
    // Errors: 1.0 sets the HTTP status, 2.0 answers 200 with no result.
    let cases = [
        (r#"{"method":"nosuch","id":1}"#, 404, -32601, "Method not found"),
        (
            r#"{"method":"getblockhash","params":[42000],"id":1}"#,
            500,
            -8,
            "Block height out of range",
        ),
    ];
    for (body, status, code, message) in cases {
        let reply = post(test.address, body);
        assert_eq!(reply.status, status, "{body}");
        let expected = Json::Object(vec![
            ("result".into(), Json::Null),
            ("error".into(), error_object(code, message)),
            ("id".into(), number(1)),
        ]);
        assert_eq!(reply.json(), expected);
        let two = body.replacen('{', r#"{"jsonrpc":"2.0","#, 1);
        let reply = post(test.address, &two);
        assert_eq!(reply.status, 200, "{two}");
        let expected = Json::Object(vec![
            ("jsonrpc".into(), Json::String("2.0".into())),
            ("error".into(), error_object(code, message)),
            ("id".into(), number(1)),
        ]);
        assert_eq!(reply.json(), expected);
    }
    // A request without id under 1.0 is answered without id.
    let reply = post(test.address, r#"{"method":"getblockcount"}"#);
    assert_eq!(reply.json().keys(), ["result", "error"]);
    // "jsonrpc":"1.0" is legacy.
    let reply = post(test.address, r#"{"jsonrpc":"1.0","method":"getblockcount","id":1}"#);
    assert_eq!(reply.json().keys(), ["result", "error", "id"]);
}

#[test]
fn malformed_requests() {
    let test = start();
    let parse_error = || {
        Json::Object(vec![
            ("result".into(), Json::Null),
            ("error".into(), error_object(-32700, "Parse error")),
            ("id".into(), Json::Null),
        ])
    };
    for body in ["", "this is bad", "{\"method\":"] {
        let reply = post(test.address, body);
        assert_eq!((reply.status, reply.json()), (500, parse_error()), "{body:?}");
    }
    let reply = post(test.address, "17");
    assert_eq!(reply.status, 500);
    assert_eq!(
        reply.json().get("error"),
        Some(&error_object(-32700, "Top-level object parse error"))
    );
    // Envelope errors: 400, id as read so far (none here).
    let cases = [
        (r#"{"jsonrpc":2,"method":"getblockcount"}"#, "jsonrpc field must be a string"),
        (r#"{"jsonrpc":"3.0","method":"getblockcount"}"#, "JSON-RPC version not supported"),
        (r#"{"params":[]}"#, "Missing method"),
        (r#"{"method":1}"#, "Method must be a string"),
        (r#"{"method":"getblockcount","params":3}"#, "Params must be an array or object"),
    ];
    for (body, message) in cases {
        let reply = post(test.address, body);
        assert_eq!(reply.status, 400, "{body}");
        let expected = Json::Object(vec![
            ("result".into(), Json::Null),
            ("error".into(), error_object(-32600, message)),
        ]);
        assert_eq!(reply.json(), expected, "{body}");
    }
    // A 2.0 envelope error keeps its id and 2.0 shape, still 400.
    let reply = post(test.address, r#"{"jsonrpc":"2.0","id":5}"#);
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json().keys(), ["jsonrpc", "error", "id"]);
}

#[test]
fn notifications_run_and_get_no_content() {
    let test = start();
    let reply = post(test.address, r#"{"jsonrpc":"2.0","method":"stop"}"#);
    assert_eq!((reply.status, reply.body.len()), (204, 0));
    assert!(test.backend.shutdown_requested(), "the notification ran");
    // Even a failing notification gets no reply.
    let reply = post(test.address, r#"{"jsonrpc":"2.0","method":"nosuch"}"#);
    assert_eq!((reply.status, reply.body.len()), (204, 0));
    // An id of null is an id.
    let reply = post(test.address, r#"{"jsonrpc":"2.0","method":"getblockcount","id":null}"#);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json().get("id"), Some(&Json::Null));
}

#[test]
fn batches_as_core_answers_them() {
    let test = start();
    let tip_height = number(test.backend.chain().active().len() as i64 - 1);
    let genesis = Json::String(genesis(&test));
    // Core's interface_rpc.py batch, legacy and 2.0.
    for version in ["", r#""jsonrpc":"2.0","#] {
        let body = format!(
            r#"[{{{version}"id":1,"method":"getblockcount"}},{{{version}"id":2,"method":"invalidmethod"}},{{{version}"id":3,"method":"getblockhash","params":[0]}},{{{version}"id":4,"pizza":"sausage"}}]"#
        );
        let reply = post(test.address, &body);
        assert_eq!(reply.status, 200);
        let Json::Array(replies) = reply.json() else { panic!("an array") };
        assert_eq!(replies.len(), 4);
        assert_eq!(replies[0].get("result"), Some(&tip_height));
        assert_eq!(replies[1].get("error"), Some(&error_object(-32601, "Method not found")));
        assert_eq!(replies[2].get("result"), Some(&genesis));
        assert_eq!(replies[3].get("error"), Some(&error_object(-32600, "Missing method")));
        for (index, one) in replies.iter().enumerate() {
            assert_eq!(one.get("id"), Some(&number(index as i64 + 1)));
            assert_eq!(one.get("jsonrpc").is_some(), !version.is_empty());
            assert_eq!(
                one.get("result").is_some() && one.get("error").is_some(),
                version.is_empty()
            );
        }
    }
    // Notifications inside a batch are left out; all-notification is 204.
    let body = r#"[{"jsonrpc":"2.0","method":"getblockcount"},{"jsonrpc":"2.0","id":9,"method":"getblockcount"}]"#;
    let Json::Array(replies) = post(test.address, body).json() else { panic!("an array") };
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].get("id"), Some(&number(9)));
    let reply = post(test.address, r#"[{"jsonrpc":"2.0","method":"getblockcount"}]"#);
    assert_eq!(reply.status, 204);
    let reply = post(test.address, "[]");
    assert_eq!((reply.status, reply.text()), (200, "[]\n".to_owned()));
    // A non-object element carries the previous element's id and version.
    let reply = post(test.address, r#"[{"id":7,"method":"getblockcount"},17]"#);
    let Json::Array(replies) = reply.json() else { panic!("an array") };
    assert_eq!(replies[1].get("id"), Some(&number(7)));
    assert_eq!(replies[1].get("error"), Some(&error_object(-32600, "Invalid Request object")));
}

#[test]
fn warmup_refuses_calls_until_finished() {
    let backend = std::sync::Arc::new(ChainBackend::new());
    let server = ibex_rpc::RpcServer::start(test_config(), backend).unwrap();
    let address = server.local_addresses()[0];
    let reply = post(address, r#"{"method":"getblockcount","id":1}"#);
    assert_eq!(reply.status, 500);
    assert_eq!(reply.json().get("error"), Some(&error_object(-28, "RPC server started")));
    server.set_warmup_status("Loading block index…");
    let reply = post(address, r#"{"method":"help","id":1}"#);
    assert_eq!(reply.json().get("error"), Some(&error_object(-28, "Loading block index…")));
    let rest = support::http::request(address, "GET", "/rest/chaininfo.json", &[], b"");
    assert_eq!(
        (rest.status, rest.text()),
        (503, "Service temporarily unavailable: Loading block index…\r\n".into())
    );
    server.finish_warmup();
    assert_eq!(post(address, r#"{"method":"getblockcount","id":1}"#).status, 200);
}

#[test]
fn help_uptime_and_stop() {
    let test = start();
    let list = call(test.address, "help", "[]");
    let list = list.as_str().unwrap();
    assert!(list.starts_with(
        "== Blockchain ==\ndumphints \"path\" ( height \"format\" )\ndumptxoutset \"path\" ( \"type\" {\"rollback\":n,\"in_memory\":bool,...} )\ngetbestblockhash\ngetblock \"blockhash\" ( verbosity )\n"
    ));
    for method in [
        "getblockchaininfo",
        "gettxout \"txid\" n ( include_mempool )",
        "waitforblockheight height ( timeout )",
        "== Control ==",
        "uptime",
        "== Network ==",
        "getpeerinfo",
    ] {
        assert!(list.contains(method), "{method}");
    }
    let one = call(test.address, "help", r#"["getblockheader"]"#);
    assert!(one.as_str().unwrap().starts_with("getblockheader \"blockhash\" ( verbose )\n\n"));
    assert_eq!(
        call(test.address, "help", r#"["nosuch"]"#).as_str(),
        Some("help: unknown command: nosuch")
    );
    let Json::Number(uptime) = call(test.address, "uptime", "[]") else { panic!("a number") };
    assert!(uptime.parse::<u64>().unwrap() < 3600);
    assert!(!test.backend.shutdown_requested());
    assert_eq!(call(test.address, "stop", "[]").as_str(), Some("Ibex stopping"));
    assert!(test.backend.shutdown_requested());
}

#[test]
fn waits_return_the_tip_on_change_and_on_timeout() {
    let test = start();
    let chain = test.backend.chain();
    let tip_height = chain.active().len() as u32 - 1;
    test.backend.set_tip_height(tip_height - 2);
    let tip_object = |height: u32| {
        Json::Object(vec![
            ("hash".into(), Json::String(chain.active()[height as usize].to_hex())),
            ("height".into(), number(i64::from(height))),
        ])
    };
    // Timeouts answer the tip as it is.
    let started = Instant::now();
    assert_eq!(call(test.address, "waitfornewblock", "[100]"), tip_object(tip_height - 2));
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert_eq!(
        call(test.address, "waitforblockheight", &format!("[{tip_height}, 50]")),
        tip_object(tip_height - 2)
    );
    // A height already reached answers at once.
    assert_eq!(call(test.address, "waitforblockheight", "[5]"), tip_object(tip_height - 2));
    // A current_tip that is not the tip answers at once.
    let other = chain.active()[3].to_hex();
    assert_eq!(
        call(test.address, "waitfornewblock", &format!(r#"[0, "{other}"]"#)),
        tip_object(tip_height - 2)
    );
    // Tips that move wake the waits (the pauses give both calls time to
    // start waiting).
    let backend = test.backend.clone();
    let mover = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        backend.set_tip_height(tip_height - 1);
        std::thread::sleep(Duration::from_millis(400));
        backend.set_tip_height(tip_height);
    });
    let address = test.address;
    let new_block = std::thread::spawn(move || call(address, "waitfornewblock", "[]"));
    assert_eq!(
        call(test.address, "waitforblockheight", &format!("[{tip_height}]")),
        tip_object(tip_height)
    );
    assert_eq!(new_block.join().unwrap(), tip_object(tip_height - 1));
    mover.join().unwrap();
}

#[test]
fn network_methods_in_core_order() {
    let test = start();
    assert_eq!(call(test.address, "getconnectioncount", "[]"), number(1));
    let info = call(test.address, "getnetworkinfo", "[]");
    assert_eq!(
        info.keys(),
        [
            "version",
            "subversion",
            "protocolversion",
            "localservices",
            "localservicesnames",
            "localrelay",
            "timeoffset",
            "networkactive",
            "connections",
            "connections_in",
            "connections_out",
            "networks",
            "localaddresses",
            "warnings",
        ]
    );
    assert_eq!(info.get("localservices").and_then(Json::as_str), Some("0000000000000c09"));
    let names = parse(r#"["NETWORK","WITNESS","NETWORK_LIMITED","P2P_V2"]"#);
    assert_eq!(info.get("localservicesnames"), Some(&names));
    let Json::Array(networks) = info.get("networks").unwrap() else { panic!("an array") };
    assert_eq!(
        networks[0].keys(),
        ["name", "limited", "reachable", "proxy", "proxy_randomize_credentials"]
    );
    let Json::Array(peers) = call(test.address, "getpeerinfo", "[]") else { panic!("an array") };
    let core_peer_keys = [
        "id",
        "addr",
        "addrbind",
        "network",
        "services",
        "servicesnames",
        "relaytxes",
        "lastsend",
        "lastrecv",
        "last_transaction",
        "last_block",
        "bytessent",
        "bytesrecv",
        "conntime",
        "timeoffset",
        "pingtime",
        "minping",
        "version",
        "subver",
        "inbound",
        "bip152_hb_to",
        "bip152_hb_from",
        "startingheight",
        "presynced_headers",
        "synced_headers",
        "synced_blocks",
        "inflight",
        "addr_relay_enabled",
        "addr_processed",
        "addr_rate_limited",
        "permissions",
        "minfeefilter",
        "bytessent_per_msg",
        "bytesrecv_per_msg",
        "connection_type",
        "transport_protocol_type",
        "session_id",
    ];
    assert_eq!(peers[0].keys(), core_peer_keys);
    assert_eq!(peers[0].get("minfeefilter"), Some(&Json::Number("0.00001000".into())));
    let totals = call(test.address, "getnettotals", "[]");
    assert_eq!(totals.keys(), ["totalbytesrecv", "totalbytessent", "timemillis", "uploadtarget"]);
    // Without networking, Core's -31.
    let offline = start_with(test_config(), ChainBackend::without_networking());
    let reply = post(offline.address, r#"{"method":"getpeerinfo","id":1}"#);
    assert_eq!(
        reply.json().get("error"),
        Some(&error_object(-31, "Error: Peer-to-peer functionality missing or disabled"))
    );
}

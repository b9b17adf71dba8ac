//! The network methods that change or list peers and bans (`addnode`,
//! `disconnectnode`, `getaddednodeinfo`, `getnodeaddresses`, `setban`,
//! `listbanned`, `clearbanned`) over real HTTP: their results in Core's
//! key order, their argument checks and the backend's refusals in Core's
//! codes and words, and Core's -31 without networking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::backend::{ChainBackend, MOCK_PEER};
use support::http::{call, post, start, start_with, test_config};
use support::json::{parse, Json};

/// Asserts `method` with `params` fails with `code` and a message that
/// starts with `message`.
fn assert_error(
    address: std::net::SocketAddr,
    method: &str,
    params: &str,
    code: i64,
    message: &str,
) {
    let reply = post(address, &format!(r#"{{"method":"{method}","params":{params},"id":1}}"#));
    let json = reply.json();
    assert_eq!(json.get("result"), Some(&Json::Null), "{method} {params}");
    let error = json.get("error").unwrap();
    assert_eq!(error.get("code"), Some(&Json::Number(code.to_string())), "{method} {params}");
    let text = error.get("message").and_then(Json::as_str).unwrap();
    assert!(text.starts_with(message), "{method} {params}: {text}");
}

#[test]
fn addnode_and_disconnectnode_as_core() {
    let test = start();
    let address = test.address;
    assert_eq!(call(address, "addnode", r#"["10.0.0.9:8333","add"]"#), Json::Null);
    assert_eq!(call(address, "addnode", r#"["10.0.0.9","onetry",true]"#), Json::Null);
    assert_eq!(call(address, "addnode", &format!(r#"["{MOCK_PEER}","remove"]"#)), Json::Null);
    assert_error(
        address,
        "addnode",
        &format!(r#"["{MOCK_PEER}","add"]"#),
        -23,
        "Error: Node already added",
    );
    assert_error(
        address,
        "addnode",
        r#"["10.0.0.9","remove"]"#,
        -24,
        "Error: Node could not be removed. It has not been added previously.",
    );
    assert_error(
        address,
        "addnode",
        r#"["v2only","onetry",false]"#,
        -8,
        "Error: v2transport requested but not enabled (see -v2transport)",
    );
    // A command Core does not know: its help, as -1; a missing one too.
    assert_error(
        address,
        "addnode",
        r#"["10.0.0.9","bogus"]"#,
        -1,
        "addnode \"node\" \"command\" ( v2transport )\n",
    );
    assert_error(address, "addnode", r#"["10.0.0.9"]"#, -1, "addnode \"node\"");
    assert_error(
        address,
        "addnode",
        r#"[1,"add"]"#,
        -3,
        "Wrong type passed:\n{\n    \"Position 1 (node)\"",
    );
    // Named arguments map as Core's.
    assert_eq!(call(address, "addnode", r#"{"command":"onetry","node":"10.0.0.9"}"#), Json::Null);

    assert_eq!(call(address, "disconnectnode", &format!(r#"["{MOCK_PEER}"]"#)), Json::Null);
    assert_eq!(call(address, "disconnectnode", r#"["",0]"#), Json::Null);
    assert_eq!(call(address, "disconnectnode", r#"[null,0]"#), Json::Null);
    assert_eq!(call(address, "disconnectnode", r#"{"nodeid":0}"#), Json::Null);
    let only_one = "Only one of address and nodeid should be provided.";
    assert_error(address, "disconnectnode", "[]", -32602, only_one);
    assert_error(address, "disconnectnode", &format!(r#"["{MOCK_PEER}",0]"#), -32602, only_one);
    let not_found = "Node not found in connected nodes";
    assert_error(address, "disconnectnode", r#"["10.0.0.9:8333"]"#, -29, not_found);
    assert_error(address, "disconnectnode", r#"["",7]"#, -29, not_found);
    assert_error(address, "disconnectnode", r#"["", 1.5]"#, -1, "JSON integer out of range");
}

#[test]
fn lists_in_core_key_order() {
    let test = start();
    let address = test.address;
    let added = call(address, "getaddednodeinfo", "[]");
    let expected = format!(
        r#"[{{"addednode":"{MOCK_PEER}","connected":true,"addresses":[{{"address":"{MOCK_PEER}","connected":"outbound"}}]}},{{"addednode":"example.invalid","connected":false,"addresses":[]}}]"#
    );
    assert_eq!(added, parse(&expected));
    let one = call(address, "getaddednodeinfo", r#"["example.invalid"]"#);
    let Json::Array(one) = one else { panic!("an array") };
    assert_eq!(one.len(), 1);
    assert_error(
        address,
        "getaddednodeinfo",
        r#"["10.0.0.9"]"#,
        -24,
        "Error: Node has not been added.",
    );

    let Json::Array(addresses) = call(address, "getnodeaddresses", "[]") else {
        panic!("an array")
    };
    assert_eq!(addresses.len(), 1, "one by default");
    assert_eq!(addresses[0].keys(), ["time", "services", "address", "port", "network"]);
    assert_eq!(addresses[0].get("services"), Some(&Json::Number("1033".into())));
    let Json::Array(all) = call(address, "getnodeaddresses", "[0]") else { panic!("an array") };
    assert_eq!(all.len(), 2, "0 is all");
    let Json::Array(ipv6) = call(address, "getnodeaddresses", r#"[0,"IPv6"]"#) else {
        panic!("an array")
    };
    assert_eq!(ipv6.len(), 1);
    assert_eq!(ipv6[0].get("address").and_then(Json::as_str), Some("2a01::1"));
    assert_error(address, "getnodeaddresses", "[-1]", -8, "Address count out of range");
    assert_error(
        address,
        "getnodeaddresses",
        r#"[1,"bogus"]"#,
        -8,
        "Network not recognized: bogus",
    );

    let banned = call(address, "listbanned", "[]");
    let Json::Array(banned) = banned else { panic!("an array") };
    assert_eq!(
        banned[0].keys(),
        ["address", "ban_created", "banned_until", "ban_duration", "time_remaining"]
    );
    assert_eq!(banned[0].get("address").and_then(Json::as_str), Some("10.0.0.1/32"));
    assert_eq!(banned[0].get("ban_duration"), Some(&Json::Number("86400".into())));
    assert_eq!(call(address, "clearbanned", "[]"), Json::Null);
}

#[test]
fn setban_as_core() {
    let test = start();
    let address = test.address;
    assert_eq!(call(address, "setban", r#"["10.0.0.2","add"]"#), Json::Null);
    assert_eq!(call(address, "setban", r#"["10.0.0.2/32","add",3600]"#), Json::Null);
    assert_eq!(call(address, "setban", r#"["10.0.0.2","add",4102444800,true]"#), Json::Null);
    assert_eq!(call(address, "setban", r#"["10.0.0.1","remove"]"#), Json::Null);
    assert_error(
        address,
        "setban",
        r#"["10.0.0.1","add"]"#,
        -23,
        "Error: IP/Subnet already banned",
    );
    assert_error(
        address,
        "setban",
        r#"["10.0.0.2","remove"]"#,
        -30,
        "Error: Unban failed. Requested address/subnet was not previously manually banned.",
    );
    assert_error(address, "setban", r#"["10.0.0.300","add"]"#, -30, "Error: Invalid IP/Subnet");
    assert_error(address, "setban", r#"["10.0.0.2/33","add"]"#, -30, "Error: Invalid IP/Subnet");
    assert_error(
        address,
        "setban",
        r#"["10.0.0.0/24","add"]"#,
        -30,
        "Error: Ibex bans single addresses only",
    );
    assert_error(
        address,
        "setban",
        r#"["10.0.0.2","add",5,true]"#,
        -8,
        "Error: Absolute timestamp is in the past",
    );
    assert_error(
        address,
        "setban",
        r#"["10.0.0.2","ban"]"#,
        -1,
        "setban \"subnet\" \"command\" ( bantime absolute )\n",
    );
}

#[test]
fn without_networking_every_method_is_p2p_disabled() {
    let offline = start_with(test_config(), ChainBackend::without_networking());
    for (method, params) in [
        ("addnode", r#"["10.0.0.9","add"]"#),
        ("disconnectnode", r#"["10.0.0.9:1"]"#),
        ("getaddednodeinfo", "[]"),
        ("getnodeaddresses", "[]"),
        ("setban", r#"["10.0.0.9","add"]"#),
        ("listbanned", "[]"),
        ("clearbanned", "[]"),
    ] {
        assert_error(
            offline.address,
            method,
            params,
            -31,
            "Error: Peer-to-peer functionality missing or disabled",
        );
    }
}

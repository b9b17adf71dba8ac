//! `rpc_request`: the JSON-RPC request parser and the method table behind
//! it. Any POST body goes through [`ibex_rpc::RequestHandler`] (what the
//! server does after authentication) over a node holding only the regtest
//! genesis block. Whatever the body, the reply comes without a panic, with
//! one of the statuses Core gives (200, 204, 400, 404, 500), and, unless it
//! is a 204, is one JSON value ending in a newline; a body that is not JSON
//! gets -32700. Waits end at once, so no body can stall the run.

use std::sync::{Arc, OnceLock};

use ibex_primitives::Network;
use ibex_rpc::RequestHandler;

use crate::genesis_node::GenesisNode;

/// The handler every input goes to, over the genesis-only node (one per
/// process: building the method table is not what is fuzzed).
pub fn genesis_handler() -> &'static RequestHandler {
    static HANDLER: OnceLock<RequestHandler> = OnceLock::new();
    HANDLER.get_or_init(|| {
        RequestHandler::without_waits(Arc::new(GenesisNode::new()), Network::Regtest)
    })
}

/// `rpc_request`: see the module docs.
pub fn rpc_request(data: &[u8]) {
    let reply = genesis_handler().answer(data);
    assert!([200, 204, 400, 404, 500].contains(&reply.status), "status {}", reply.status);
    if reply.status == 204 {
        assert!(reply.body.is_empty());
        return;
    }
    assert_eq!(reply.body.last(), Some(&b'\n'), "replies end with a newline");
    // JSON's grammar, not serde's numbers: an id is echoed as written, and
    // may hold a number no double holds (as Core echoes it).
    assert!(
        serde_json::from_slice::<serde::de::IgnoredAny>(&reply.body).is_ok(),
        "every reply is one JSON value"
    );
    if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err() {
        let answer: serde_json::Value =
            serde_json::from_slice(&reply.body).expect("a parse error's reply has a null id");
        assert_eq!(reply.status, 500);
        assert_eq!(answer["error"]["code"], -32700, "a body that is not JSON is a parse error");
    }
}

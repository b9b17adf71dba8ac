//! The REST interface's parsers (`-rest`): paths, query strings and the
//! `getutxos` body, answered by [`ibex_rpc::RequestHandler::answer_rest`]
//! over a node holding only the regtest genesis block (whose coinbase
//! output is its one coin).

use ibex_rpc::HttpReply;

use crate::rpc::genesis_handler;

/// Statuses a REST reply may have once warmup is over (Core's `rest.cpp`:
/// 400 malformed, 404 unknown block or format, 500 backend failure).
const REST_STATUSES: [u16; 4] = [200, 400, 404, 500];

/// Checks the form every REST reply has: a known status; an error is one
/// `text/plain` line; a JSON reply is one JSON value; a hex reply is hex
/// digits and a newline.
fn check_reply_form(reply: &HttpReply) {
    assert!(REST_STATUSES.contains(&reply.status), "status {}", reply.status);
    if reply.status != 200 {
        assert_eq!(reply.content_type, Some("text/plain"));
        assert!(reply.body.ends_with(b"\r\n"), "an error is one line");
        return;
    }
    match reply.content_type {
        Some("application/json") => {
            assert_eq!(reply.body.last(), Some(&b'\n'));
            assert!(
                serde_json::from_slice::<serde::de::IgnoredAny>(&reply.body).is_ok(),
                "a JSON reply is one JSON value"
            );
        }
        Some("text/plain") => {
            let (newline, digits) = reply.body.split_last().expect("a hex reply is not empty");
            assert_eq!(*newline, b'\n');
            assert!(digits.iter().all(u8::is_ascii_hexdigit), "a hex reply is hex digits");
            assert_eq!(digits.len() % 2, 0);
        }
        Some("application/octet-stream") => {}
        other => panic!("content type {other:?}"),
    }
}

/// `rest_request`: a REST request as the server hands it on. Input: the
/// path and query (up to the first zero byte, read as UTF-8 with stray
/// bytes replaced), then the body. Whatever they hold, a REST route answers
/// with one of Core's statuses, an error as one `text/plain` line, JSON as
/// one JSON value and hex as hex digits; only paths under `/rest/` match a
/// route.
pub fn rest_request(data: &[u8]) {
    let (uri, body) = match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let uri = String::from_utf8_lossy(uri);
    match genesis_handler().answer_rest(&uri, body) {
        Some(reply) => {
            assert!(uri.starts_with("/rest/"));
            check_reply_form(&reply);
        }
        None => assert!(!uri.starts_with("/rest/block/"), "every block path has a route"),
    }
}

/// `getutxos_body`: the input is a `getutxos` POST body, sent as `.bin`
/// and, hex-encoded, as `.hex`. Both answer alike (the hex reply is the
/// binary reply in hex); a body Core reads gets the genesis tip's height
/// and hash and at most 15 outpoints' bitmap; `.json` refuses a body.
pub fn getutxos_body(data: &[u8]) {
    let handler = genesis_handler();
    let binary = handler.answer_rest("/rest/getutxos.bin", data).expect("a route");
    check_reply_form(&binary);
    let hex_body = ibex_primitives::hex::encode(data);
    let hex = handler.answer_rest("/rest/getutxos.hex", hex_body.as_bytes()).expect("a route");
    check_reply_form(&hex);
    assert_eq!(binary.status, hex.status);
    if binary.status == 200 {
        let mut expected = ibex_primitives::hex::encode(&binary.body).into_bytes();
        expected.push(b'\n');
        assert_eq!(hex.body, expected, "the hex reply is the binary reply in hex");
        let (height, rest) = binary.body.split_at(4);
        assert_eq!(height, [0; 4], "the genesis tip's height");
        let genesis = ibex_primitives::Params::regtest().genesis_hash;
        assert_eq!(&rest[..32], genesis.as_bytes());
        let bitmap_bytes = usize::from(rest[32]);
        assert!(bitmap_bytes <= 2, "at most 15 outpoints: {bitmap_bytes} bitmap bytes");
    } else {
        assert_eq!(binary.body, hex.body, "the same error");
    }
    if !data.is_empty() {
        let json = handler.answer_rest("/rest/getutxos.json", data).expect("a route");
        assert_eq!(json.status, 400, "a JSON request takes its outpoints from the path");
    }
}

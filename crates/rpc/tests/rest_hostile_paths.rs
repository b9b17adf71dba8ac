//! REST paths a client crafts to reach the decoders' edges, sent over
//! HTTP to a running server: each gets a 4xx and the server keeps serving.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::http::{request, start};

/// The `getutxos` path the `rest_request` fuzz target found panicking the
/// handler (a byte after `/rest/getutxos` that starts a UTF-8 character),
/// and its neighbours.
#[test]
fn getutxos_paths_starting_inside_a_character_are_refused_and_the_server_serves_on() {
    let test = start();
    for path in
        ["/rest/getutxos\u{e9}/x.bin", "/rest/getutxos\u{2603}.json", "/rest/getutxos%C3%A9.bin"]
    {
        let reply = request(test.address, "GET", path, &[], b"");
        assert_eq!(reply.status, 400, "{path}: {}", reply.text());
    }
    let reply = request(test.address, "GET", "/rest/chaininfo.json", &[], b"");
    assert_eq!(reply.status, 200, "an honest request after them: {}", reply.text());
}

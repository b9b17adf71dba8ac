//! The REST interface as Core's `rest.cpp` serves it, against Core's
//! answers for the shared regtest chain: blocks in the three formats,
//! headers, block hashes by height, chain info, unspent outputs, and the
//! 400/404 text errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::chain::chain_directory;
use support::compare::assert_same_value;
use support::http::{call, request, start, Reply};
use support::json::{parse, Json};

fn get(test: &support::http::TestServer, path: &str) -> Reply {
    request(test.address, "GET", path, &[], b"")
}

fn sample(name: &str) -> Json {
    parse(&std::fs::read_to_string(chain_directory().join("getblock").join(name)).unwrap())
}

fn assert_text_error(reply: &Reply, status: u16, message: &str) {
    assert_eq!(reply.status, status, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("text/plain"));
    assert_eq!(reply.text(), format!("{message}\r\n"));
}

#[test]
fn blocks_in_every_format() {
    let test = start();
    let core = sample("000563.json");
    let hash = core.get("hash").unwrap().as_str().unwrap();
    let bin = get(&test, &format!("/rest/block/{hash}.bin"));
    assert_eq!(bin.status, 200);
    assert_eq!(bin.header("content-type"), Some("application/octet-stream"));
    let raw = core.get("verbosity0").unwrap().as_str().unwrap();
    assert_eq!(ibex_primitives::hex::encode(&bin.body), raw);
    let hex = get(&test, &format!("/rest/block/{hash}.hex"));
    assert_eq!((hex.header("content-type"), hex.text()), (Some("text/plain"), format!("{raw}\n")));
    let json = get(&test, &format!("/rest/block/{hash}.json"));
    assert_eq!(json.header("content-type"), Some("application/json"));
    assert_same_value(&json.json(), core.get("verbosity3").unwrap(), "rest block");
    let ids = get(&test, &format!("/rest/block/notxdetails/{hash}.json"));
    assert_same_value(&ids.json(), core.get("verbosity1").unwrap(), "rest notxdetails");
    let head = request(test.address, "HEAD", &format!("/rest/block/{hash}.bin"), &[], b"");
    assert_eq!(head.status, 200);
}

#[test]
fn block_errors_in_core_words() {
    let test = start();
    let unknown = "00".repeat(32);
    assert_text_error(
        &get(&test, &format!("/rest/block/{unknown}.json")),
        404,
        &format!("{unknown} not found"),
    );
    assert_text_error(&get(&test, "/rest/block/xyz.json"), 400, "Invalid hash: xyz");
    let hash = test.backend.chain().active()[1].to_hex();
    assert_text_error(
        &get(&test, &format!("/rest/block/{hash}.xml")),
        400,
        &format!("Invalid hash: {hash}.xml"),
    );
    assert_text_error(
        &get(&test, &format!("/rest/block/{hash}")),
        404,
        "output format not found (available: .bin, .hex, .json)",
    );
}

#[test]
fn headers_by_count_in_both_path_forms() {
    let test = start();
    let chain = test.backend.chain();
    let start_hash = chain.active()[100].to_hex();
    let json = get(&test, &format!("/rest/headers/{start_hash}.json?count=3"));
    let Json::Array(headers) = json.json() else { panic!("an array") };
    assert_eq!(headers.len(), 3);
    for (offset, header) in headers.iter().enumerate() {
        let hash = chain.active()[100 + offset].to_hex();
        assert_eq!(header, &call(test.address, "getblockheader", &format!(r#"["{hash}"]"#)));
    }
    let old_form = get(&test, &format!("/rest/headers/3/{start_hash}.bin"));
    assert_eq!(old_form.body.len(), 3 * 80);
    let hex = get(&test, &format!("/rest/headers/{start_hash}.hex?count=2"));
    assert_eq!(hex.text(), format!("{}\n", ibex_primitives::hex::encode(&old_form.body[..160])));
    // The default count is 5; the chain's end stops it early.
    let default = get(&test, &format!("/rest/headers/{start_hash}.bin"));
    assert_eq!(default.body.len(), 5 * 80);
    let near_tip = chain.active()[chain.active().len() - 2].to_hex();
    assert_eq!(get(&test, &format!("/rest/headers/{near_tip}.bin?count=10")).body.len(), 2 * 80);
    // A stale block is not in the active chain: no headers.
    let stale = chain.hashes().find(|hash| !chain.is_active(hash)).unwrap().to_hex();
    assert_eq!(get(&test, &format!("/rest/headers/{stale}.json")).text(), "[]\n");
    for count in ["0", "2001", "x", "+3"] {
        assert_text_error(
            &get(&test, &format!("/rest/headers/{start_hash}.json?count={count}")),
            400,
            &format!("Header count is invalid or out of acceptable range (1-2000): {count}"),
        );
    }
    assert_text_error(
        &get(&test, &format!("/rest/headers/1/2/{start_hash}.json")),
        400,
        "Invalid URI format. Expected /rest/headers/<hash>.<ext>?count=<count>",
    );
}

#[test]
fn block_hash_by_height_and_chain_info() {
    let test = start();
    let chain = test.backend.chain();
    let hash = chain.active()[42];
    let hex = get(&test, "/rest/blockhashbyheight/42.hex");
    assert_eq!(hex.text(), format!("{}\n", hash.to_hex()));
    assert_eq!(get(&test, "/rest/blockhashbyheight/42.bin").body, hash.0);
    let json = get(&test, "/rest/blockhashbyheight/42.json").json();
    assert_eq!(json, parse(&format!(r#"{{"blockhash":"{}"}}"#, hash.to_hex())));
    assert_text_error(&get(&test, "/rest/blockhashbyheight/-1.json"), 400, "Invalid height: -1");
    assert_text_error(&get(&test, "/rest/blockhashbyheight/1x!.json"), 400, "Invalid height: 1x!");
    let past_tip = chain.active().len();
    assert_text_error(
        &get(&test, &format!("/rest/blockhashbyheight/{past_tip}.json")),
        404,
        "Block height out of range",
    );
    let info = get(&test, "/rest/chaininfo.json");
    assert_eq!(info.json(), call(test.address, "getblockchaininfo", "[]"));
    assert_text_error(
        &get(&test, "/rest/chaininfo.bin"),
        404,
        "output format not found (available: json)",
    );
}

#[test]
fn unspent_outputs() {
    let test = start();
    let chain = test.backend.chain();
    // Find a spent and an unspent coinbase output among the first blocks.
    let coinbase =
        |height: usize| chain.block(&chain.active()[height]).transaction(0).unwrap().txid();
    let outpoint = |height: usize| ibex_primitives::OutPoint { txid: coinbase(height), vout: 0 };
    let unspent = (1..300).find(|height| chain.unspent(&outpoint(*height)).is_some()).unwrap();
    let spent = (1..300).find(|height| chain.unspent(&outpoint(*height)).is_none()).unwrap();
    let path = format!(
        "/rest/getutxos/checkmempool/{}-0/{}-0.json",
        coinbase(unspent).to_hex(),
        coinbase(spent).to_hex()
    );
    let json = get(&test, &path).json();
    assert_eq!(json.keys(), ["chainHeight", "chaintipHash", "bitmap", "utxos"]);
    assert_eq!(json.get("bitmap").and_then(Json::as_str), Some("10"));
    let Json::Array(utxos) = json.get("utxos").unwrap() else { panic!("an array") };
    assert_eq!(utxos.len(), 1);
    assert_eq!(utxos[0].get("height"), Some(&Json::Number(unspent.to_string())));
    assert_eq!(utxos[0].keys(), ["height", "value", "scriptPubKey"]);
    // Binary: height, tip, bitmap, then the coin.
    let bin = get(&test, &path.replace(".json", ".bin")).body;
    let tip_height = chain.active().len() as u32 - 1;
    assert_eq!(bin[..4], tip_height.to_le_bytes());
    assert_eq!(bin[4..36], chain.active()[tip_height as usize].0);
    assert_eq!(bin[36..38], [1, 0b01]);
    assert_eq!(bin[38], 1, "one coin");
    // Errors.
    assert_text_error(&get(&test, "/rest/getutxos.json"), 400, "Error: empty request");
    assert_text_error(&get(&test, "/rest/getutxos/checkmempool.json"), 400, "Error: empty request");
    assert_text_error(&get(&test, "/rest/getutxos/abc-0.json"), 400, "Parse error");
    let many: Vec<String> =
        (0..16).map(|vout| format!("{}-{vout}", coinbase(1).to_hex())).collect();
    assert_text_error(
        &get(&test, &format!("/rest/getutxos/{}.json", many.join("/"))),
        400,
        "Error: max outpoints exceeded (max: 15, tried: 16)",
    );
}

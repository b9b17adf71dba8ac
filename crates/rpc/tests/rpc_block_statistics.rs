//! `getblockstats` and `getrawtransaction` with a block hash over real
//! HTTP on the shared regtest chain Core made. `getblockstats` for every
//! block of the active chain against the statistics worked out here from
//! the block and the coins its inputs spent (the test's own index of the
//! chain's outputs, not the server's code); `getrawtransaction` against
//! the transactions of Core's own `getblock` samples; the errors in Core's
//! codes and words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;

use ibex_primitives::{BlockHash, Params};
use support::chain::{chain_directory, Chain};
use support::compare::assert_same_value;
use support::http::{call, post, start};
use support::json::{parse, Json};

fn number(value: impl ToString) -> Json {
    Json::Number(value.to_string())
}

/// Asserts a JSON-RPC 1.0 error reply with status 500.
fn assert_error(address: std::net::SocketAddr, method: &str, params: &str, code: i64, text: &str) {
    let body = format!(r#"{{"method":"{method}","params":{params},"id":1}}"#);
    let reply = post(address, &body);
    assert_eq!(reply.status, 500, "{body}: {}", reply.text());
    let error = reply.json().get("error").unwrap().clone();
    assert_eq!(error.get("code"), Some(&number(code)), "{body}");
    assert_eq!(error.get("message").and_then(Json::as_str), Some(text), "{body}");
}

/// A serialised output's size plus 40 bytes of outpoint, height and
/// coinbase flag: what one coin adds to the UTXO set by Core's measure.
fn coin_bytes(script_bytes: usize) -> i64 {
    let prefix = if script_bytes < 253 { 1 } else { 3 };
    (8 + prefix + script_bytes + 40) as i64
}

/// The value at the first cumulative weight reaching each fraction of the
/// total, the fee rates taken in ascending order.
fn weighted_percentiles(mut rates: Vec<(i64, i64)>, total_weight: i64) -> Vec<i64> {
    rates.sort();
    let total = total_weight as f64;
    let marks = [total / 10.0, total / 4.0, total / 2.0, total * 3.0 / 4.0, total * 9.0 / 10.0];
    marks
        .iter()
        .map(|mark| {
            let mut cumulative = 0;
            let found = rates.iter().find(|(_, weight)| {
                cumulative += weight;
                cumulative as f64 >= *mark
            });
            found.or(rates.last()).map_or(0, |(rate, _)| *rate)
        })
        .collect()
}

fn median(mut values: Vec<i64>) -> i64 {
    values.sort();
    match values.len() {
        0 => 0,
        length if length % 2 == 1 => values[length / 2],
        length => (values[length / 2 - 1] + values[length / 2]) / 2,
    }
}

/// Every statistic of the active block at `height`, from its transactions
/// and the coins they spent.
fn expected_stats(chain: &Chain<'_>, height: usize) -> BTreeMap<&'static str, Json> {
    let hash = chain.active()[height];
    let block = chain.block(&hash);
    let spent = chain.spent_coins(&hash);
    let mut spent = spent.iter();
    let (mut ins, mut outs, mut total_out, mut utxos, mut size_change, mut actual_change) =
        (0i64, 0i64, 0i64, 0i64, 0i64, 0i64);
    let (mut fees, mut sizes, mut rates) = (Vec::new(), Vec::new(), Vec::new());
    let (mut segwit, mut segwit_size, mut segwit_weight) = (0i64, 0i64, 0i64);
    for (index, transaction) in block.transactions().enumerate() {
        let outputs: i64 = transaction.outputs().iter().map(|output| output.value).sum();
        for output in transaction.outputs() {
            outs += 1;
            size_change += coin_bytes(output.script_pubkey.len());
            if height > 0 && output.script_pubkey.first() != Some(&0x6a) {
                utxos += 1;
                actual_change += coin_bytes(output.script_pubkey.len());
            }
        }
        if index == 0 {
            continue;
        }
        total_out += outputs;
        let mut inputs = 0;
        for _ in transaction.inputs() {
            let coin = spent.next().unwrap();
            inputs += coin.value.to_sat();
            size_change -= coin_bytes(coin.script_pubkey.len());
            actual_change -= coin_bytes(coin.script_pubkey.len());
            ins += 1;
        }
        let fee = inputs - outputs;
        let (size, weight) = (transaction.total_size() as i64, transaction.weight() as i64);
        if transaction.has_witness() {
            segwit += 1;
            segwit_size += size;
            segwit_weight += weight;
        }
        fees.push(fee);
        sizes.push(size);
        rates.push((fee * 4 / weight, weight));
    }
    assert!(spent.next().is_none(), "every spent coin is used");
    let spending = block.transaction_count() as i64 - 1;
    let total_fee: i64 = fees.iter().sum();
    let total_size: i64 = sizes.iter().sum();
    let total_weight: i64 = rates.iter().map(|(_, weight)| weight).sum();
    let per = |total: i64| if spending > 0 { total / spending } else { 0 };
    let halvings = height as u32 / Params::regtest().subsidy_halving_interval;
    let header = block.header();
    let mut stats = BTreeMap::new();
    let mut put = |name, value: i64| stats.insert(name, number(value));
    put("avgfee", per(total_fee));
    put("avgfeerate", if total_weight > 0 { total_fee * 4 / total_weight } else { 0 });
    put("avgtxsize", per(total_size));
    put("height", height as i64);
    put("ins", ins);
    put("maxfee", fees.iter().copied().max().unwrap_or(0));
    put("maxfeerate", rates.iter().map(|(rate, _)| *rate).max().unwrap_or(0));
    put("maxtxsize", sizes.iter().copied().max().unwrap_or(0));
    put("medianfee", median(fees.clone()));
    put("mediantime", chain.median_time_past(&hash));
    put("mediantxsize", median(sizes.clone()));
    put("minfee", fees.iter().copied().min().unwrap_or(0));
    put("minfeerate", rates.iter().map(|(rate, _)| *rate).min().unwrap_or(0));
    put("mintxsize", sizes.iter().copied().min().unwrap_or(0));
    put("outs", outs);
    put("subsidy", (50 * 100_000_000i64) >> halvings);
    put("swtotal_size", segwit_size);
    put("swtotal_weight", segwit_weight);
    put("swtxs", segwit);
    put("time", i64::from(header.time));
    put("total_out", total_out);
    put("total_size", total_size);
    put("total_weight", total_weight);
    put("totalfee", total_fee);
    put("txs", block.transaction_count() as i64);
    put("utxo_increase", outs - ins);
    put("utxo_size_inc", size_change);
    put("utxo_increase_actual", utxos - ins);
    put("utxo_size_inc_actual", actual_change);
    let percentiles = weighted_percentiles(rates, total_weight);
    stats.insert("feerate_percentiles", Json::Array(percentiles.into_iter().map(number).collect()));
    stats.insert("blockhash", Json::String(hash.to_hex()));
    stats
}

/// Core's order of `getblockstats`' keys with every statistic.
const STATISTICS_ORDER: [&str; 31] = [
    "avgfee",
    "avgfeerate",
    "avgtxsize",
    "blockhash",
    "feerate_percentiles",
    "height",
    "ins",
    "maxfee",
    "maxfeerate",
    "maxtxsize",
    "medianfee",
    "mediantime",
    "mediantxsize",
    "minfee",
    "minfeerate",
    "mintxsize",
    "outs",
    "subsidy",
    "swtotal_size",
    "swtotal_weight",
    "swtxs",
    "time",
    "total_out",
    "total_size",
    "total_weight",
    "totalfee",
    "txs",
    "utxo_increase",
    "utxo_size_inc",
    "utxo_increase_actual",
    "utxo_size_inc_actual",
];

#[test]
fn getblockstats_of_every_block_matches_the_block_and_its_spent_coins() {
    let test = start();
    let chain = test.backend.chain();
    let mut fee_blocks = 0;
    for height in 0..chain.active().len() {
        let ours = call(test.address, "getblockstats", &format!("[{height}]"));
        assert_eq!(ours.keys(), STATISTICS_ORDER, "height {height}");
        let expected = expected_stats(chain, height);
        for (name, value) in &expected {
            assert_eq!(ours.get(name), Some(value), "{name} at height {height}");
        }
        // The wallet's miner claims every fee: coinbase = subsidy + fees.
        let block = chain.block(&chain.active()[height]);
        let coinbase = block.transaction(0).unwrap();
        let claimed: i64 = coinbase.outputs().iter().map(|output| output.value).sum();
        let Json::Number(subsidy) = &expected["subsidy"] else { panic!("a number") };
        let Json::Number(fees) = &expected["totalfee"] else { panic!("a number") };
        if height > 0 {
            assert_eq!(claimed, subsidy.parse::<i64>().unwrap() + fees.parse::<i64>().unwrap());
        }
        fee_blocks += usize::from(fees != "0");
    }
    assert!(fee_blocks > 100, "the chain has blocks with fees: {fee_blocks}");
}

#[test]
fn getblockstats_by_hash_selected_and_in_error() {
    let test = start();
    let chain = test.backend.chain();
    let hash = chain.active()[809].to_hex();
    let by_height = call(test.address, "getblockstats", "[809]");
    let by_hash = call(test.address, "getblockstats", &format!(r#"["{hash}"]"#));
    assert_eq!(by_hash, by_height);
    // Selected statistics come sorted by name, once each.
    let selected = call(
        test.address,
        "getblockstats",
        r#"{"hash_or_height":809,"stats":["txs","utxo_size_inc_actual","height","txs","total_out","totalfee"]}"#,
    );
    assert_eq!(selected.keys(), ["height", "total_out", "totalfee", "txs", "utxo_size_inc_actual"]);
    for name in selected.keys() {
        assert_eq!(selected.get(name), by_height.get(name), "{name}");
    }
    let address = test.address;
    assert_error(address, "getblockstats", "[-1]", -8, "Target block height -1 is negative");
    assert_error(
        address,
        "getblockstats",
        "[1191]",
        -8,
        "Target block height 1191 after current tip 1190",
    );
    assert_error(address, "getblockstats", "[1.5]", -1, "JSON integer out of range");
    assert_error(
        address,
        "getblockstats",
        r#"["00"]"#,
        -8,
        "hash_or_height must be of length 64 (not 2, for '00')",
    );
    let missing = "00".repeat(32);
    assert_error(address, "getblockstats", &format!(r#"["{missing}"]"#), -5, "Block not found");
    assert_error(
        address,
        "getblockstats",
        "[true]",
        -3,
        "JSON value of type bool is not of expected type string",
    );
    assert_error(
        address,
        "getblockstats",
        r#"[1, ["height", "fees", "bogus"]]"#,
        -8,
        "Invalid selected statistic 'bogus'",
    );
    assert_error(
        address,
        "getblockstats",
        "[1, [1]]",
        -3,
        "JSON value of type number is not of expected type string",
    );
    assert_error(
        address,
        "getblockstats",
        r#"[1, "height"]"#,
        -3,
        "Wrong type passed:\n{\n    \"Position 2 (stats)\": \"JSON value of type string is not of expected type array\"\n}",
    );
}

fn samples() -> Vec<Json> {
    let mut paths: Vec<_> = std::fs::read_dir(chain_directory().join("getblock"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    paths.iter().map(|path| parse(&std::fs::read_to_string(path).unwrap())).collect()
}

/// An object without the named keys.
fn without(value: &Json, names: &[&str]) -> Json {
    let Json::Object(fields) = value else { panic!("an object") };
    Json::Object(
        fields.iter().filter(|(name, _)| !names.contains(&name.as_str())).cloned().collect(),
    )
}

#[test]
fn getrawtransaction_with_a_block_matches_cores_getblock_samples() {
    let test = start();
    let chain = test.backend.chain();
    let tip_height = chain.active().len() - 1;
    let mut checked = 0;
    for sample in samples() {
        let hash = sample.get("hash").unwrap().as_str().unwrap().to_owned();
        let height = chain.height(&BlockHash::from_hex(&hash).unwrap()).unwrap() as usize;
        if height == 0 {
            // The genesis coinbase cannot be retrieved (checked below).
            continue;
        }
        let time = chain.block(&chain.active()[height]).header().time;
        let Some(Json::Array(detailed)) = sample.get("verbosity2").unwrap().get("tx") else {
            panic!("transactions")
        };
        let Some(Json::Array(with_prevouts)) = sample.get("verbosity3").unwrap().get("tx") else {
            panic!("transactions")
        };
        for (core_detailed, core_prevouts) in detailed.iter().zip(with_prevouts).take(4) {
            let txid = core_detailed.get("txid").unwrap().as_str().unwrap();
            let params = |verbosity: &str| format!(r#"["{txid}", {verbosity}, "{hash}"]"#);
            let hex = call(test.address, "getrawtransaction", &params("0"));
            assert_eq!(Some(&hex), core_detailed.get("hex"));
            let two = call(test.address, "getrawtransaction", &params("2"));
            let block_fields =
                ["in_active_chain", "blockhash", "confirmations", "time", "blocktime"];
            assert_same_value(&without(&two, &block_fields), core_prevouts, txid);
            let keys = two.keys();
            assert_eq!(keys[0], "in_active_chain");
            assert_eq!(keys[keys.len() - 4..], ["blockhash", "confirmations", "time", "blocktime"]);
            assert_eq!(two.get("in_active_chain"), Some(&Json::Bool(true)));
            assert_eq!(two.get("blockhash").and_then(Json::as_str), Some(hash.as_str()));
            assert_eq!(two.get("confirmations"), Some(&number(tip_height - height + 1)));
            assert_eq!(two.get("time"), Some(&number(time)));
            assert_eq!(two.get("blocktime"), Some(&number(time)));
            // Verbosity 1: no prevouts and no fee.
            let one = call(test.address, "getrawtransaction", &params("true"));
            assert_same_value(
                &without(&one, &block_fields),
                &without(core_detailed, &["fee"]),
                txid,
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked} transactions checked");
}

#[test]
fn getrawtransaction_errors_in_core_words() {
    let test = start();
    let chain = test.backend.chain();
    let block = chain.active()[150].to_hex();
    let other = chain.active()[151].to_hex();
    let txid = chain.block(&chain.active()[150]).transaction(0).unwrap().txid().to_hex();
    let address = test.address;
    assert_error(
        address,
        "getrawtransaction",
        &format!(r#"["{txid}"]"#),
        -5,
        "No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. Use gettransaction for wallet transactions.",
    );
    assert_error(
        address,
        "getrawtransaction",
        &format!(r#"["{txid}", 1, "{other}"]"#),
        -5,
        "No such transaction found in the provided block. Use gettransaction for wallet transactions.",
    );
    let missing = "00".repeat(32);
    assert_error(
        address,
        "getrawtransaction",
        &format!(r#"["{txid}", 1, "{missing}"]"#),
        -5,
        "Block hash not found",
    );
    let genesis_merkle_root = Params::regtest().genesis.header.merkle_root.to_hex();
    assert_error(
        address,
        "getrawtransaction",
        &format!(r#"["{genesis_merkle_root}", 0, "{block}"]"#),
        -5,
        "The genesis block coinbase is not considered an ordinary transaction and cannot be retrieved",
    );
    assert_error(
        address,
        "getrawtransaction",
        &format!(r#"["{txid}", "x", "{block}"]"#),
        -3,
        "JSON value of type string is not of expected type number",
    );
    assert_error(
        address,
        "getrawtransaction",
        r#"["abc"]"#,
        -8,
        "parameter 1 must be of length 64 (not 3, for 'abc')",
    );
    assert_error(
        address,
        "getrawtransaction",
        &format!(r#"["{txid}", 1, "zz"]"#),
        -8,
        "parameter 3 must be of length 64 (not 2, for 'zz')",
    );
    // Verbosity below 0 is hex, above 2 is 2; a coinbase has no prevouts.
    let hex = call(address, "getrawtransaction", &format!(r#"["{txid}", -3, "{block}"]"#));
    assert!(hex.as_str().is_some());
    let high = call(address, "getrawtransaction", &format!(r#"["{txid}", 9, "{block}"]"#));
    let one = call(
        address,
        "getrawtransaction",
        &format!(r#"{{"txid":"{txid}","verbose":true,"blockhash":"{block}"}}"#),
    );
    assert_eq!(high, one, "a coinbase at verbosity 2 is verbosity 1");
}

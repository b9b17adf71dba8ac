//! SwiftSync over P2P on the `utxo-heavy` profile scaled down to CI's
//! time (2,300 blocks of 20,000 WU: ~12 MB, ~74,000 coins at the tip,
//! payouts of 32 outputs a transaction and every script kind the profile
//! spends): node A imports the chain, serves spent coins and writes hints
//! at two heights; node B syncs from A in the assumevalid mode (hints at
//! 250, `-assumevalid` at the tip), node C in the fully validating mode
//! (hints at 2,000, `-assumevalid=0`, every script below 2,000 checked
//! with the coins A serves). Both end on A's coin set, their proof logged.
//! Each client runs with Core's smallest `-dbcache`, so that the staged
//! coins go to the buckets in several sorted chunks merged at the end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::assumeutxo::stop;
use common::debug_log;
use common::swiftsync::{
    client_options, coin_set, hints_at, node, serving_node_on, ChainToServe, ServingNode,
};
use serde_json::json;

const TIP_HEIGHT: u64 = 2_300;
/// More than 2,016 blocks below the tip: `-assumevalid` covers it.
const ASSUMEVALID_TERMINAL_HEIGHT: u32 = 250;
/// The fully validating mode needs no margin.
const FULL_TERMINAL_HEIGHT: u32 = 2_000;
/// Core's smallest cache: the pass's runs of coins at their smallest.
const SMALL_DBCACHE: &str = "-dbcache=4";

/// B or C: synced from A with `options`, its coin set checked against
/// `expected`; its log.
fn synced_client(
    root: &std::path::Path,
    name: &str,
    options: &[String],
    expected: &(serde_json::Value, serde_json::Value),
) -> String {
    let datadir = root.join(name);
    std::fs::create_dir_all(&datadir).unwrap();
    let (client, mut process) = node(&datadir, options);
    client.wait_for_height(TIP_HEIGHT, &mut process);
    assert_eq!(&coin_set(client), expected);
    stop(client, &mut process, &datadir);
    debug_log(&datadir)
}

#[test]
fn both_modes_end_on_the_usual_set_of_a_utxo_heavy_chain() {
    let root = tempfile::tempdir().unwrap();
    let chain = ChainToServe {
        profile: "utxo-heavy",
        tip_height: TIP_HEIGHT,
        seed: "456",
        generator_options: &["--target-weight", "20000"],
    };
    let serving = ["-peerblockspentcoins".to_owned()];
    let ServingNode { endpoint: a, process: mut a_process, datadir: a_datadir, p2p_port, expected } =
        serving_node_on(root.path(), &chain, &serving);
    let tip_hash = a.call("getbestblockhash", json!([]));
    let tip_hash = tip_hash.as_str().unwrap().to_owned();
    let coins_at_tip = a.call("gettxoutsetinfo", json!([]))["txouts"].as_u64().unwrap();
    assert!(coins_at_tip > 50_000, "{coins_at_tip} coins");

    let mut options =
        client_options(p2p_port, &hints_at(a, ASSUMEVALID_TERMINAL_HEIGHT), &tip_hash);
    options.push(SMALL_DBCACHE.to_owned());
    let log = synced_client(root.path(), "b", &options, &expected);
    let proven = format!(
        "[swiftsync] the aggregate is zero: chainstate at height {ASSUMEVALID_TERMINAL_HEIGHT}"
    );
    assert!(log.contains(&proven), "{log}");
    assert!(!log.contains("given up"), "{log}");

    let mut options = client_options(p2p_port, &hints_at(a, FULL_TERMINAL_HEIGHT), "0");
    options.push(SMALL_DBCACHE.to_owned());
    let log = synced_client(root.path(), "c", &options, &expected);
    assert!(log.contains("[swiftsync] fully validating"), "{log}");
    let proven =
        format!("[swiftsync] the aggregate is zero: chainstate at height {FULL_TERMINAL_HEIGHT}");
    assert!(log.contains(&proven), "{log}");
    assert!(!log.contains("given up"), "{log}");
    stop(a, &mut a_process, &a_datadir);
}

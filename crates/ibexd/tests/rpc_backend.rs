//! The node's RPC backend over the engine's reader: every answer agrees
//! with the chainstate it reads, and the real server answers `getblock`
//! through it while the engine serves reads on its own thread; started
//! before the chainstate opens, it answers Core's -28 until the reader is
//! attached.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ibex_chainstate::{
    import_blocks, txoutset_stats, Chainstate, ChainstateOptions, FlushMode, FlushReason,
    ImportSource,
};
use ibex_daemon::rpc_backend::ChainBackend;
use ibex_generator::{generate, GeneratorOptions, Profile};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, BlockView, OutPoint, Params};
use ibex_rpc::backend::{BackendError, BlockData, ChainTipStatus, NodeBackend};
use ibex_rpc::{RpcServer, ServerConfig};

fn imported_chainstate(root: &std::path::Path) -> Chainstate {
    let generated = root.join("generated");
    let mut options = GeneratorOptions::new(Profile::Tiny, 5, generated.clone());
    options.blocks = Some(120);
    options.threads = Some(1);
    generate(&options).unwrap();
    let blocks = root.join("blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for entry in std::fs::read_dir(&generated).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".dat") {
            std::fs::copy(entry.path(), blocks.join(&name)).unwrap();
        }
    }
    let options = ChainstateOptions {
        params: Params::regtest(),
        blocks_directory: blocks,
        chainstate_directory: root.join("chainstate"),
        memory: ibex_chainstate::MemoryBudget::for_coins_bytes(8 << 20, 1 << 20),
        script_threads: 2,
        assume_valid: None,
        periodic_flush_interval: Duration::from_secs(3600),
        stop_at_height: None,
        prune: ibex_chainstate::PruneMode::Disabled,
        fast_prune: false,
    };
    let mut chainstate =
        Chainstate::open(options, Box::new(|_: &ibex_chainstate::ChainEvent| {})).unwrap();
    import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false)).unwrap();
    chainstate
}

/// Runs `work` on another thread while this one serves the engine's reads.
fn while_serving<R: Send + 'static>(
    chainstate: &mut Chainstate,
    work: impl FnOnce() -> R + Send + 'static,
) -> R {
    let worker = std::thread::spawn(work);
    while !worker.is_finished() {
        chainstate.wait_and_serve_reads(Duration::from_millis(10)).unwrap();
    }
    worker.join().unwrap()
}

fn post(address: std::net::SocketAddr, body: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    // user:password in base64.
    let request = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn the_backend_agrees_with_the_chainstate_and_serves_getblock_over_http() {
    let root = tempfile::tempdir().unwrap();
    let mut chainstate = imported_chainstate(root.path());
    let (tip_hash, tip_height) = chainstate.tip().unwrap();
    let tip_block = chainstate.read_block(chainstate.chain().tip().unwrap()).unwrap();
    let input_count = tip_block.view().input_count() - 1;
    let coinbase_txid = tip_block.txids()[0];
    let shutdown = Arc::new(AtomicBool::new(false));
    let backend = Arc::new(ChainBackend::new(
        chainstate.reader(),
        Params::regtest(),
        root.path().join("blocks"),
        shutdown.clone(),
    ));
    let reading = backend.clone();
    let answers = while_serving(&mut chainstate, move || {
        let tip = reading.tip().unwrap();
        let entry = reading.block_entry(&tip.hash).unwrap().unwrap();
        let block = reading.block(&tip.hash, true).unwrap().unwrap();
        let genesis = reading.block_hash_at(0).unwrap().unwrap();
        let first_three = reading.active_chain_entries(&genesis, 3).unwrap();
        let tips = reading.chain_tips().unwrap();
        let info = reading.blockchain_info().unwrap();
        let coins = reading.coins(&[OutPoint { txid: coinbase_txid, vout: 0 }], false).unwrap();
        (tip, entry, block, first_three, tips, info, coins)
    });
    let (tip, entry, block, first_three, tips, info, coins) = answers;
    assert_eq!((tip.hash, tip.height), (tip_hash, tip_height));
    assert!(entry.in_active_chain && entry.next_block_hash.is_none());
    assert_eq!(entry.confirmations(), 1);
    assert_eq!(entry.data, BlockData::Stored { have_undo: true });
    assert_eq!(block.bytes, tip_block.bytes());
    assert_eq!(block.spent_coins.unwrap().len(), input_count);
    assert_eq!(first_three.len(), 3);
    assert_eq!(first_three[2].height, 2);
    assert!(tips.iter().any(|tip| tip.status == ChainTipStatus::Active && tip.hash == tip_hash));
    assert_eq!(info.tip.height, tip_height);
    assert!(info.size_on_disk_bytes > 0);
    assert_eq!(coins.tip.height, tip_height);
    assert_eq!(coins.coins[0].as_ref().unwrap().height, Some(tip_height.into()));

    // The real server over this backend.
    let mut config = ServerConfig::new(ibex_primitives::Network::Regtest);
    config.bind_addresses = vec!["127.0.0.1:0".parse().unwrap()];
    config.rpc_user = "user".into();
    config.rpc_password = "password".into();
    config.cookie_file = None;
    let server = RpcServer::start(config, backend.clone()).unwrap();
    server.finish_warmup();
    let address = server.local_addresses()[0];
    let hash = tip_hash.to_hex();
    let (count, block_json) = while_serving(&mut chainstate, move || {
        let count = post(address, r#"{"jsonrpc":"2.0","id":1,"method":"getblockcount"}"#);
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"getblock","params":["{hash}",1]}}"#);
        (count, post(address, &body))
    });
    assert!(count.contains(&format!("\"result\":{tip_height}")), "{count}");
    let header = BlockView::parse(tip_block.bytes()).unwrap();
    assert!(block_json.contains(&format!("\"height\":{tip_height}")), "{block_json}");
    assert!(block_json.contains(&header.header().merkle_root.to_hex()), "{block_json}");
    assert!(block_json.contains("\"confirmations\":1"), "{block_json}");
    // gettxoutsetinfo at the tip merges the cache's unflushed coins: the
    // same answer as the database alone once flushed.
    assert!(chainstate.cache().dirty_count() > 0, "the import left coins to flush");
    let reading = backend.clone();
    let (merged, deployments) = while_serving(&mut chainstate, move || {
        let merged = reading.txoutset_info(TxOutSetHashType::HashSerialized3).unwrap();
        (merged, reading.deployment_info(None).unwrap().unwrap())
    });
    assert_eq!((merged.height, merged.best_block), (tip_height, tip_hash));
    assert_eq!((deployments.height, deployments.hash), (tip_height, tip_hash));
    assert_eq!(deployments.version_bits[0].deployment.name, "testdummy");
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    assert_eq!(chainstate.cache().dirty_count(), 0);
    let flushed =
        txoutset_stats(chainstate.cache().database(), TxOutSetHashType::HashSerialized3).unwrap();
    assert_eq!(merged.stats, flushed);
    assert!(merged.stats.txouts > 0);
    // `stop` reaches the node's shutdown flag.
    backend.request_shutdown();
    assert!(shutdown.load(Ordering::Acquire));
    server.shutdown();
}

#[test]
fn a_backend_started_before_the_chainstate_answers_loading_until_its_reader_is_attached() {
    let root = tempfile::tempdir().unwrap();
    let shutdown = Arc::new(AtomicBool::new(false));
    let backend = Arc::new(ChainBackend::unattached(
        Params::regtest(),
        root.path().join("blocks"),
        shutdown.clone(),
    ));
    let mut config = ServerConfig::new(ibex_primitives::Network::Regtest);
    config.bind_addresses = vec!["127.0.0.1:0".parse().unwrap()];
    config.rpc_user = "user".into();
    config.rpc_password = "password".into();
    config.cookie_file = None;
    let server = RpcServer::start(config, backend.clone()).unwrap();
    let address = server.local_addresses()[0];
    let count = r#"{"jsonrpc":"2.0","id":1,"method":"getblockcount"}"#;
    // In warmup: Core's -28 with the status the node sets.
    server.set_warmup_status("Verifying blocks…");
    let warming = post(address, count);
    assert!(warming.contains("-28") && warming.contains("Verifying blocks…"), "{warming}");
    // Out of warmup with no chainstate yet: still -28, "Loading block index…".
    server.finish_warmup();
    let loading = post(address, count);
    assert!(loading.contains("-28") && loading.contains("Loading block index"), "{loading}");
    assert!(matches!(backend.tip(), Err(BackendError::NoTip)));
    assert!(matches!(backend.peers(), Err(BackendError::P2pDisabled)));
    assert!(matches!(
        backend.invalidate_block(&BlockHash::ZERO),
        Err(BackendError::ChainControlUnavailable)
    ));
    // The chainstate's reader attached: answered from it.
    let mut chainstate = imported_chainstate(root.path());
    let (_, tip_height) = chainstate.tip().unwrap();
    backend.attach_reader(chainstate.reader());
    let answered = while_serving(&mut chainstate, move || post(address, count));
    assert!(answered.contains(&format!("\"result\":{tip_height}")), "{answered}");
    backend.request_shutdown();
    assert!(shutdown.load(Ordering::Acquire));
    server.shutdown();
}

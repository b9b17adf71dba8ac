//! The engine on its own thread, fed through its bounded command channel as the
//! network side feeds it: headers first, then blocks in a scrambled order from
//! two "peers", blocks with an unknown parent handed back and offered again
//! once the parent is in, a reader querying all along. The result must be the
//! chain imported from files: same tip, same UTXO set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "generated_chains/support.rs"]
mod support;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{RecvTimeoutError, TrySendError};
use std::time::Duration;

use ibex_chainstate::{
    engine_service, AcceptOutcome, BlockSource, EngineCommand, EngineNotice, PreparedBlock,
    ServiceEnd,
};
use ibex_primitives::{BlockBuffers, BlockHash, BlockView, Header, Params};

use support::{import_alone, tip_hex, utxo_stats, with_forks, Node};

/// A deterministic scramble: blocks arrive up to `spread` places away from
/// file order, as parallel downloads from several peers deliver them.
fn scrambled<T>(items: Vec<T>, spread: usize) -> Vec<T> {
    let mut keyed: Vec<(usize, T)> = items
        .into_iter()
        .enumerate()
        .map(|(index, item)| (index + (index * 7919 + 13) % spread, item))
        .collect();
    keyed.sort_by_key(|(key, _)| *key);
    keyed.into_iter().map(|(_, item)| item).collect()
}

fn prepared(bytes: &[u8], params: &Params) -> PreparedBlock {
    let mut buffers = BlockBuffers::default();
    PreparedBlock::prepare(bytes.to_vec(), None, params, &mut buffers).unwrap()
}

#[test]
fn blocks_from_peers_through_the_service_end_as_the_files_do() {
    let chain = with_forks();
    let (expected_tip, expected_stats) = import_alone(chain);
    let blocks = chain.blocks();
    let params = Params::regtest();
    let node = Node::new();
    let mut chainstate = node.open();
    chainstate.ensure_genesis().unwrap();
    let reader = chainstate.reader();
    let (commands, notices, service) = engine_service();
    // The network side's loop: commands go out without ever blocking
    // (`try_send`; a full queue keeps them here), notices are drained all
    // along, so neither side can wait on the other.
    let feeder = std::thread::spawn(move || {
        let headers: Vec<Header> =
            blocks.iter().map(|bytes| *BlockView::parse(bytes).unwrap().header()).collect();
        let mut outbox: VecDeque<EngineCommand> = VecDeque::new();
        outbox.push_back(EngineCommand::OfferHeaders { headers, source: BlockSource::Peer(1) });
        for (index, bytes) in scrambled(blocks, 40).into_iter().enumerate() {
            let source = BlockSource::Peer(1 + (index % 2) as u64);
            let block = Box::new(prepared(&bytes, &params));
            outbox.push_back(EngineCommand::OfferBlock { block, source });
        }
        let mut outstanding = 0usize;
        // Hand-backs: a block whose parent was unknown waits for it, as a
        // peer layer keeps orphans, and is offered again after it.
        let mut waiting: HashMap<BlockHash, Vec<Box<PreparedBlock>>> = HashMap::new();
        let mut headers_added = None;
        let mut full_seen = false;
        while !outbox.is_empty() || outstanding > 0 {
            while let Some(command) = outbox.pop_front() {
                match commands.try_send(command) {
                    Ok(()) => outstanding += 1,
                    Err(TrySendError::Full(command)) => {
                        full_seen = true;
                        outbox.push_front(command);
                        break;
                    }
                    Err(TrySendError::Disconnected(_)) => panic!("engine gone"),
                }
            }
            let notice = match notices.recv_timeout(Duration::from_millis(50)) {
                Ok(notice) => notice,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => panic!("engine gone"),
            };
            outstanding -= 1;
            match notice {
                EngineNotice::HeadersOffered { added, .. } => headers_added = Some(added),
                EngineNotice::BlockOffered { hash, outcome, .. } => {
                    if let AcceptOutcome::UnknownParent(block) = outcome {
                        let parent = block.header().previous_block_hash;
                        waiting.entry(parent).or_default().push(block);
                    }
                    for block in waiting.remove(&hash).unwrap_or_default() {
                        let source = BlockSource::Peer(3);
                        outbox.push_back(EngineCommand::OfferBlock { block, source });
                    }
                }
                notice => panic!("no SwiftSync command was sent: {notice:?}"),
            }
        }
        commands.send(EngineCommand::Stop).unwrap();
        (headers_added, waiting.len(), full_seen)
    });
    let asker = std::thread::spawn(move || {
        let mut heights = Vec::new();
        while let Ok(tip) = reader.settled(Duration::from_secs(120)).tip() {
            let height = tip.map(|tip| tip.height);
            heights.push(height);
            std::thread::sleep(Duration::from_millis(5));
        }
        heights
    });
    let end = chainstate.run_service(&service, &AtomicBool::new(false)).unwrap();
    let (headers_added, orphans_left, full_seen) = feeder.join().unwrap();
    assert_eq!(end, ServiceEnd::Stopped);
    // Every header but genesis (already there) was new; none left waiting.
    assert!(headers_added.unwrap() > 0);
    assert_eq!(orphans_left, 0);
    // The command queue's bound was met: back-pressure, not a pile-up.
    assert!(full_seen, "the command queue never filled");
    assert_eq!(tip_hex(&chainstate), expected_tip);
    assert_eq!(utxo_stats(&mut chainstate), expected_stats);
    drop(service);
    drop(chainstate);
    let heights = asker.join().unwrap();
    assert!(!heights.is_empty(), "the reader was never answered while the service ran");
}

#[test]
fn a_raised_stop_flag_interrupts_with_verdicts_settled() {
    let node = Node::new();
    let mut chainstate = node.open();
    chainstate.ensure_genesis().unwrap();
    let (_commands, _notices, service) = engine_service();
    let stop = AtomicBool::new(true);
    assert_eq!(chainstate.run_service(&service, &stop).unwrap(), ServiceEnd::Interrupted);
    assert_eq!(chainstate.tip().map(|(_, height)| height), Some(0));
}

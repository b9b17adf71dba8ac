//! A small generated chain and a chainstate to feed it to, for the crate's
//! unit tests.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use ibex_generator::{generate, GeneratorOptions, Profile};
use ibex_primitives::{BlockBuffers, Params};

use crate::engine::{Chainstate, ChainstateOptions};
use crate::prepared::PreparedBlock;

/// A six-block chain (genesis and five) and a chainstate on an empty
/// directory.
pub(crate) fn chain_and_chainstate(root: &std::path::Path) -> (Vec<Vec<u8>>, Chainstate) {
    generated_chain_and_chainstate(root, 3, 5)
}

/// A generated chain of genesis and `blocks_above_genesis` blocks from
/// `seed`, and a chainstate on an empty directory.
pub(crate) fn generated_chain_and_chainstate(
    root: &std::path::Path,
    seed: u64,
    blocks_above_genesis: u32,
) -> (Vec<Vec<u8>>, Chainstate) {
    let generated = root.join("generated");
    let mut options = GeneratorOptions::new(Profile::Tiny, seed, generated.clone());
    options.blocks = Some(blocks_above_genesis);
    options.threads = Some(1);
    generate(&options).unwrap();
    let params = Params::regtest();
    let blocks = ibex_generator::replay::read_blocks(&generated, params.message_start).unwrap();
    (blocks, open_chainstate(root, params))
}

/// The options the unit tests open a chainstate with under `root`: a 1 MiB
/// UTXO cache, one script thread, every script checked.
pub(crate) fn chainstate_options(root: &std::path::Path, params: Params) -> ChainstateOptions {
    ChainstateOptions {
        params,
        blocks_directory: root.join("blocks"),
        chainstate_directory: root.join("chainstate"),
        memory: crate::MemoryBudget::for_coins_bytes(1 << 20, 1 << 16),
        script_threads: 1,
        assume_valid: None,
        periodic_flush_interval: Duration::from_secs(3600),
        stop_at_height: None,
        prune: crate::PruneMode::Disabled,
        fast_prune: false,
    }
}

/// A chainstate on `root` with [`chainstate_options`], its events dropped.
pub(crate) fn open_chainstate(root: &std::path::Path, params: Params) -> Chainstate {
    let options = chainstate_options(root, params);
    Chainstate::open(options, Box::new(|_: &crate::ChainEvent| {})).unwrap()
}

/// Accepts `bytes` (indexes and stores it, connects nothing).
pub(crate) fn accept(chainstate: &mut Chainstate, bytes: &[u8]) {
    let params = chainstate.params().clone();
    let mut buffers = BlockBuffers::default();
    let block = PreparedBlock::prepare(bytes.to_vec(), None, &params, &mut buffers).unwrap();
    chainstate.accept_block(block).unwrap();
}

/// [`chain_and_chainstate`] with every block accepted (stored and indexed,
/// nothing connected).
pub(crate) fn accepted_chain(root: &std::path::Path) -> (Vec<Vec<u8>>, Chainstate) {
    let (blocks, mut chainstate) = chain_and_chainstate(root);
    for bytes in &blocks {
        accept(&mut chainstate, bytes);
    }
    (blocks, chainstate)
}

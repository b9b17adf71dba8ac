//! BIP30 on Core's regtest chain (where Core checks it at every height): a
//! block repeating a transaction whose outputs are still unspent is
//! refused as `bad-txns-BIP30`, not for its inputs (Core checks BIP30 for
//! the whole block first; the inputs here are spent), and leaves the UTXO
//! set as it was. Both ways of checking give Core's answer: before the
//! block (BIP34 from block 2) and only once it has failed (regtest's BIP34
//! from block 1: [`ibex_chainstate::connect::Bip30Check::OnFailure`]).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "pipeline/blocks.rs"]
mod blocks;
#[allow(dead_code)]
#[path = "pipeline/node.rs"]
mod node;

use ibex_primitives::owned::Block;
use ibex_primitives::params::RegtestOptions;
use ibex_primitives::Params;

use blocks::{coinbase_child, main_chain, seal};
use node::{accept, import, utxo_stats, Node};

#[test]
fn a_block_repeating_unspent_transactions_fails_bip30() {
    refused_as_bip30(Params::regtest());
}

#[test]
fn checked_before_the_block_it_fails_bip30_too() {
    let params = RegtestOptions::new().test_activation_height("bip34@2").unwrap().build();
    assert!(!params.bip34_from_first_block());
    refused_as_bip30(params);
}

/// The tip's last two transactions repeated in a block on it are refused
/// as `bad-txns-BIP30` under `params`.
fn refused_as_bip30(params: Params) {
    let chain = main_chain();
    let tip = Block::decode(chain.last().unwrap()).unwrap();
    let height = (chain.len() - 1) as u32;
    assert!(tip.transactions.len() >= 3, "the tip block needs two transactions to repeat");
    // The tip's last two transactions again, witnesses dropped (same
    // txids; no witness commitment needed). Their inputs are spent, which
    // Core never gets to: BIP30 comes first, for the first of them.
    let mut repeats: Vec<_> = tip.transactions[1..].iter().rev().take(2).cloned().collect();
    for transaction in &mut repeats {
        for input in &mut transaction.inputs {
            input.witness.clear();
        }
    }
    let mut block = coinbase_child(&tip, height + 1, 9, &params);
    block.transactions.extend(repeats);
    seal(&mut block, &params);

    let mut node = Node::with_blocks(chain);
    node.params = params;
    let mut chainstate = node.open();
    import(&mut chainstate);
    let before = utxo_stats(&mut chainstate);
    accept(&mut chainstate, &block.encode());
    chainstate.activate_best_chain().unwrap();
    let events = node.invalid_events(&block.block_hash());
    assert_eq!(events, vec![("bad-txns-BIP30".to_owned(), true)]);
    assert_eq!(chainstate.tip().unwrap().1, height);
    assert_eq!(utxo_stats(&mut chainstate), before);
}

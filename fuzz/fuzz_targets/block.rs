//! Fuzzes the block decoder: any input either fails with a typed error or
//! decodes to a block whose owned copy re-encodes to exactly the input, with
//! the same sizes, weight, txids, wtxids and merkle root as the zero-copy view.
#![no_main]

use ibex_primitives::merkle::check_witness_commitment;
use ibex_primitives::{Block, BlockView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = BlockView::parse(data) else {
        return;
    };
    assert_eq!(view.bytes(), data);
    let owned = view.to_owned();
    assert_eq!(owned.encode(), data, "the encoding is canonical");
    assert_eq!(Block::decode(data).as_ref(), Ok(&owned));
    assert_eq!(owned.block_hash(), view.block_hash());
    assert_eq!(view.size(), data.len());
    assert_eq!(owned.size(), data.len());
    assert_eq!(owned.stripped_size(), view.stripped_size());
    assert_eq!(owned.weight(), view.weight());
    assert_eq!(owned.transactions.len(), view.transaction_count());
    let mut inputs = 0;
    let mut outputs = 0;
    for (transaction, owned_transaction) in view.transactions().zip(&owned.transactions) {
        assert_eq!(transaction.txid(), owned_transaction.txid());
        assert_eq!(transaction.wtxid(), owned_transaction.wtxid());
        assert_eq!(transaction.base_size(), owned_transaction.base_size());
        assert_eq!(transaction.total_size(), owned_transaction.total_size());
        inputs += transaction.inputs().len();
        outputs += transaction.outputs().len();
    }
    assert_eq!(view.input_count(), inputs);
    assert_eq!(view.output_count(), outputs);
    assert_eq!(view.compute_merkle_root(), owned.compute_merkle_root());
    // Must not panic whatever the coinbase holds.
    let _ = check_witness_commitment(&view);
});

//! A regtest chain built here, block by block, whose coins anyone can
//! spend (coinbases pay `OP_TRUE` or P2WSH(`OP_TRUE`)), so the test can
//! make valid blocks with real transactions on its tip, and the mangled
//! copies a peer could send for them with the same header:
//!
//! - [`Chain::with_sixty_four_byte_twin`]: a two-transaction block whose
//!   two txids, read as 64 bytes, parse as one transaction: a copy holding
//!   only that "transaction" has the same merkle root (found by varying
//!   the coinbase's tag and the spend's fee, ~2^16 tries);
//! - [`duplicated_last_transaction`]: CVE-2012-2459, the last transaction
//!   repeated so an odd level's duplication is spelled out;
//! - [`with_witness`]: the spend's witness stripped or altered (the txids,
//!   so the header, do not change).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_generator::block_builder::{
    build_coinbase, witness_commitment_script, witness_root, CoinbaseSpec,
};
use ibex_primitives::hash::sha256;
use ibex_primitives::{
    merkle_root, Amount, Block, BlockHash, Hash256, Header, OutPoint, Params, ParsedTransaction,
    Transaction, TxInput, TxOutput, Txid, Wtxid,
};

use crate::hostile_peer::forge::{grind, REGTEST_BITS};

/// `OP_TRUE`.
const OP_TRUE: u8 = 0x51;
/// A coinbase's value: regtest's first subsidy.
const SUBSIDY_SATOSHIS: i64 = 50 * 100_000_000;

/// P2WSH of `OP_TRUE`.
pub fn p2wsh_true() -> Vec<u8> {
    let mut script = vec![0x00, 0x20];
    script.extend_from_slice(&sha256(&[OP_TRUE]));
    script
}

/// The chain so far, genesis first.
pub struct Chain {
    /// Every block's bytes, genesis excluded.
    pub blocks: Vec<Vec<u8>>,
    /// Every header, genesis excluded.
    pub headers: Vec<Header>,
    tip: BlockHash,
    time: u32,
}

impl Chain {
    /// Regtest's genesis alone.
    pub fn new() -> Chain {
        let params = Params::regtest();
        Chain {
            blocks: Vec::new(),
            headers: Vec::new(),
            tip: params.genesis_hash,
            time: params.genesis.header.time,
        }
    }

    /// Height of the tip.
    pub fn height(&self) -> u32 {
        self.blocks.len() as u32
    }

    /// The tip's hash.
    pub fn tip(&self) -> BlockHash {
        self.tip
    }

    /// The block at `height` (1 or more).
    pub fn block_at(&self, height: u32) -> &[u8] {
        &self.blocks[height as usize - 1]
    }

    /// Appends `count` coinbase-only blocks paying `OP_TRUE` (even
    /// heights) or P2WSH(`OP_TRUE`) (odd heights).
    pub fn extend_with_coinbases(&mut self, count: u32) {
        for _ in 0..count {
            let height = self.height() + 1;
            let payout = if height % 2 == 0 { vec![OP_TRUE] } else { p2wsh_true() };
            let coinbase = coinbase(height, &[0], payout, false);
            self.push(vec![coinbase]);
        }
    }

    /// The coinbase transaction of the block at `height`.
    pub fn coinbase_at(&self, height: u32) -> Transaction {
        Block::decode(self.block_at(height)).unwrap().transactions.remove(0)
    }

    /// A block of `transactions` (coinbase first) on the tip, not appended.
    pub fn next_block(&self, transactions: Vec<Transaction>) -> Block {
        let txids: Vec<Txid> = transactions.iter().map(Transaction::txid).collect();
        let header = grind(Header {
            version: 0x2000_0000,
            previous_block_hash: self.tip,
            merkle_root: merkle_root(txids.iter().map(|txid| txid.0).collect()).root,
            time: self.time + 1,
            bits: REGTEST_BITS,
            nonce: 0,
        });
        Block { header, transactions }
    }

    /// Appends a block of `transactions`; its hash.
    pub fn push(&mut self, transactions: Vec<Transaction>) -> BlockHash {
        let block = self.next_block(transactions);
        self.append(&block)
    }

    /// Appends `block` (built on the tip); its hash.
    pub fn append(&mut self, block: &Block) -> BlockHash {
        self.tip = block.block_hash();
        self.time = block.header.time;
        self.headers.push(block.header);
        self.blocks.push(block.encode());
        self.tip
    }

    /// A valid block on the tip of a coinbase and one spend of the
    /// `OP_TRUE` coinbase at `spent_height`, ground until its two txids read
    /// as one 64-byte transaction; the block and that 64-byte twin (the
    /// header with the bytes as its only transaction).
    pub fn with_sixty_four_byte_twin(&self, spent_height: u32) -> (Block, Vec<u8>) {
        let height = self.height() + 1;
        for tag in 0u32.. {
            let coinbase = coinbase(height, &tag.to_le_bytes(), vec![OP_TRUE], false);
            let coinbase_txid = coinbase.txid();
            // The node count must read as one input: the only count that
            // leaves room for an input in 64 bytes.
            if coinbase_txid.0[4] != 1 {
                continue;
            }
            for fee in 1..=1_000_000i64 {
                let spend = spend_true(&self.coinbase_at(spent_height), fee);
                let mut pair = [0u8; 64];
                pair[..32].copy_from_slice(&coinbase_txid.0);
                pair[32..].copy_from_slice(&spend.txid().0);
                if reads_as_transaction(&pair) {
                    let block = self.next_block(vec![coinbase, spend]);
                    let mut twin = block.header.encode().to_vec();
                    twin.push(1);
                    twin.extend_from_slice(&pair);
                    return (block, twin);
                }
            }
        }
        unreachable!("tags run out first")
    }
}

impl Default for Chain {
    fn default() -> Chain {
        Chain::new()
    }
}

/// Whether `bytes` parse as exactly one transaction without witness.
fn reads_as_transaction(bytes: &[u8; 64]) -> bool {
    ParsedTransaction::parse(bytes)
        .is_ok_and(|parsed| !parsed.view().has_witness() && parsed.view().base_size() == 64)
}

/// A coinbase at `height` with `tag` in its scriptSig, paying the subsidy
/// to `payout` (the generator's); `committed` adds the witness nonce and a
/// commitment slot (filled by [`commit_witnesses`]).
pub fn coinbase(height: u32, tag: &[u8], payout: Vec<u8>, committed: bool) -> Transaction {
    build_coinbase(&CoinbaseSpec {
        height,
        extra: tag.to_vec(),
        script_pubkey: payout,
        value: Amount::from_sat(SUBSIDY_SATOSHIS).unwrap(),
        witness_root: committed.then_some(Hash256([0; 32])),
    })
}

/// Spends output 0 of `funding` (an `OP_TRUE` or P2WSH(`OP_TRUE`) output)
/// to `OP_TRUE`, paying `fee`.
pub fn spend_true(funding: &Transaction, fee: i64) -> Transaction {
    let witnessed = funding.outputs[0].script_pubkey != [OP_TRUE];
    Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint { txid: funding.txid(), vout: 0 },
            script_sig: Vec::new(),
            sequence: u32::MAX,
            witness: if witnessed { vec![vec![OP_TRUE]] } else { Vec::new() },
        }],
        outputs: vec![TxOutput {
            value: funding.outputs[0].value - fee,
            script_pubkey: vec![OP_TRUE],
        }],
        lock_time: 0,
    }
}

/// Fills the coinbase's commitment slot (its last output) for the block's
/// witnesses (the coinbase's witness nonce is zeros).
pub fn commit_witnesses(transactions: &mut [Transaction]) {
    let wtxids: Vec<Wtxid> = transactions[1..].iter().map(Transaction::wtxid).collect();
    let script = witness_commitment_script(&witness_root(&wtxids));
    let coinbase = &mut transactions[0];
    let slot = coinbase.outputs.len() - 1;
    coinbase.outputs[slot].script_pubkey = script;
}

/// `block`'s bytes with its last transaction twice: the same merkle root
/// (CVE-2012-2459) when the count was odd.
pub fn duplicated_last_transaction(block: &Block) -> Vec<u8> {
    assert!(block.transactions.len() % 2 == 1, "an odd count hides a duplicate");
    let mut copy = block.clone();
    copy.transactions.push(copy.transactions.last().unwrap().clone());
    let bytes = copy.encode();
    assert_eq!(header_root(&bytes), block.header.merkle_root);
    bytes
}

/// `block`'s bytes with the witness of transaction `index`'s first input
/// replaced by `witness` (empty: stripped).
pub fn with_witness(block: &Block, index: usize, witness: Vec<Vec<u8>>) -> Vec<u8> {
    let mut copy = block.clone();
    copy.transactions[index].inputs[0].witness = witness;
    assert_eq!(copy.block_hash(), block.block_hash(), "witnesses are outside the header");
    copy.encode()
}

/// The merkle root of the transactions in `bytes`, duplicates and all.
fn header_root(bytes: &[u8]) -> Hash256 {
    let block = Block::decode(bytes).unwrap();
    let txids: Vec<[u8; 32]> = block.transactions.iter().map(|t| t.txid().0).collect();
    merkle_root(txids).root
}

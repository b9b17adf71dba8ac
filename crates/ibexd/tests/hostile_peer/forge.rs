//! Headers and blocks a hostile peer sends: a header without its proof of
//! work, a chain of real headers with too little work, a large block off
//! the best chain, a block whose parent nobody knows.

use ibex_primitives::pow::check_proof_of_work;
use ibex_primitives::{
    Block, BlockHash, CompactTarget, Hash256, Header, OutPoint, Params, Transaction, TxInput,
    TxOutput,
};

/// Regtest's `nBits`.
pub const REGTEST_BITS: u32 = 0x207f_ffff;
/// `OP_RETURN`.
const OP_RETURN: u8 = 0x6a;

/// Whether `header` meets its own target on regtest.
pub fn meets_target(header: &Header) -> bool {
    check_proof_of_work(&header.block_hash(), CompactTarget(header.bits), &Params::regtest())
}

/// `header` with the first nonce from its own at which it meets its target
/// (regtest's target: one try in two).
pub fn grind(mut header: Header) -> Header {
    while !meets_target(&header) {
        header.nonce = header.nonce.wrapping_add(1);
    }
    header
}

/// `header` with the first nonce at which it misses its target: a header
/// whose proof of work is invalid.
pub fn without_proof_of_work(mut header: Header) -> Header {
    header.nonce = header.nonce.wrapping_add(1);
    while meets_target(&header) {
        header.nonce = header.nonce.wrapping_add(1);
    }
    header
}

/// `count` headers from genesis on a branch of their own (so with the work
/// of `count` regtest blocks), each meeting its target.
pub fn branch_from_genesis(count: u32) -> Vec<Header> {
    let params = Params::regtest();
    let mut previous = params.genesis_hash;
    let mut headers = Vec::with_capacity(count as usize);
    for index in 0..count {
        let time = params.genesis.header.time + 1 + index;
        let mut root = [0x5a; 32];
        root[..4].copy_from_slice(&index.to_le_bytes());
        let header = grind(Header {
            version: 0x2000_0000,
            previous_block_hash: previous,
            merkle_root: Hash256(root),
            time,
            bits: REGTEST_BITS,
            nonce: 0,
        });
        previous = header.block_hash();
        headers.push(header);
    }
    headers
}

/// A coinbase-only block on `parent` whose coinbase carries an unspendable
/// output of `script_bytes` bytes (`OP_RETURN` then `OP_0`s: no signature
/// operations), with a valid merkle root and proof of work: it passes
/// Core's `CheckBlock` while under 1,000,000 bytes.
pub fn coinbase_block(parent: BlockHash, time: u32, script_bytes: usize, tag: u8) -> Vec<u8> {
    let mut script_pubkey = vec![0u8; script_bytes.max(1)];
    script_pubkey[0] = OP_RETURN;
    let coinbase = Transaction {
        version: 1,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig: vec![0x51, tag, 0xc0, 0xde],
            sequence: u32::MAX,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput { value: 0, script_pubkey }],
        lock_time: 0,
    };
    let merkle_root = Hash256(coinbase.txid().0);
    let header = grind(Header {
        version: 0x2000_0000,
        previous_block_hash: parent,
        merkle_root,
        time,
        bits: REGTEST_BITS,
        nonce: 0,
    });
    Block { header, transactions: vec![coinbase] }.encode()
}

//! `ibex block FILE`: a JSON summary of one serialised block.

use ibex_primitives::{check_witness_commitment, BlockDecodeError, BlockView};
use serde_json::{json, Value};

/// Summarises a block the way `getblockheader` and `getblock` name things, plus
/// whether its merkle root and witness commitment check out.
///
/// - `merkle_root_valid`: the txids' merkle root equals the header's and the tree
///   has no duplicated siblings (Core rejects both, `bad-txnmrklroot` and
///   `bad-txns-duplicate`).
/// - `witness_commitment_valid`: `null` when no transaction has witness data;
///   otherwise whether Core's witness commitment check passes.
pub fn block_summary(bytes: &[u8]) -> Result<Value, BlockDecodeError> {
    let block = BlockView::parse(bytes)?;
    let header = block.header();
    let merkle = block.compute_merkle_root();
    let witness_commitment_valid = if block.has_witness() {
        Value::Bool(check_witness_commitment(&block).is_ok())
    } else {
        Value::Null
    };
    Ok(json!({
        "hash": block.block_hash().to_hex(),
        "version": header.version,
        "previousblockhash": header.previous_block_hash.to_hex(),
        "merkleroot": header.merkle_root.to_hex(),
        "merkle_root_valid": merkle.root == header.merkle_root && !merkle.mutated,
        "time": header.time,
        "bits": format!("{:08x}", header.bits),
        "nonce": header.nonce,
        "tx_count": block.transaction_count(),
        "size": block.size(),
        "strippedsize": block.stripped_size(),
        "weight": block.weight(),
        "witness_commitment_valid": witness_commitment_valid,
    }))
}

//! `getblockheader` and `getblock` answers (Core's `blockheaderToJSON` and
//! `blockToJSON`, `rpc/blockchain.cpp`).
//!
//! Header keys in Core's order: `hash`, `confirmations`, `height`,
//! `version`, `versionHex`, `merkleroot`, `time`, `mediantime`, `nonce`,
//! `bits`, `target`, `difficulty`, `chainwork`, `nTx`, then
//! `previousblockhash` (all but genesis) and `nextblockhash` (when the
//! block has a successor in the active chain). A block adds
//! `strippedsize`, `size`, `weight` and `tx`.

use ibex_primitives::pow::CompactTarget;
use ibex_primitives::{BlockView, Header, Network, SpentCoin};

use crate::address::AddressParams;
use crate::context::{BlockContext, BlockVerbosity, TransactionVerbosity};
use crate::error::RpcJsonError;
use crate::hex::write_hex;
use crate::json::{close_object, hash_string, hex_string, key, open_object};
use crate::number::{write_double, write_i64, write_u64};
use crate::transaction_json::write_transaction_fields;

/// Writes `getblockheader`'s verbose answer for `header`.
pub fn write_header_json(out: &mut Vec<u8>, header: &Header, context: &BlockContext) {
    write_header_fields(out, header, context);
    close_object(out);
}

/// Writes `getblockheader`'s answer with `verbose=false`: the 80 bytes as
/// a hex string.
pub fn write_header_hex_json(out: &mut Vec<u8>, header: &Header) {
    hex_string(out, &header.encode());
}

/// Writes `getblock`'s answer at verbosity 0: the block as a hex string.
pub fn write_block_hex_json(out: &mut Vec<u8>, block: &BlockView<'_>) {
    hex_string(out, block.bytes());
}

/// Writes `getblock`'s answer at verbosity 1, 2 or 3.
///
/// `spent_coins` stands for the block's undo data: one coin per input of
/// every transaction after the coinbase, in block order. With it,
/// verbosity 2 gives each transaction its `fee` and verbosity 3 also each
/// input its `prevout`; without it (Core without undo data, a pruned
/// block) neither appears. Verbosity 1 ignores it. On error `out` is left
/// as it was.
pub fn write_block_json(
    out: &mut Vec<u8>,
    block: &BlockView<'_>,
    context: &BlockContext,
    verbosity: BlockVerbosity,
    spent_coins: Option<&[SpentCoin<'_>]>,
    network: Network,
) -> Result<(), RpcJsonError> {
    let start = out.len();
    let result = write_block(out, block, context, verbosity, spent_coins, network);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn write_block(
    out: &mut Vec<u8>,
    block: &BlockView<'_>,
    context: &BlockContext,
    verbosity: BlockVerbosity,
    spent_coins: Option<&[SpentCoin<'_>]>,
    network: Network,
) -> Result<(), RpcJsonError> {
    let spent_coins = match verbosity {
        BlockVerbosity::TransactionIds => None,
        _ => spent_coins,
    };
    if let Some(coins) = spent_coins {
        let coinbase_inputs = block.transaction(0).map_or(0, |coinbase| coinbase.inputs().len());
        let expected = block.input_count() - coinbase_inputs;
        if coins.len() != expected {
            let block_hash = block.block_hash();
            return Err(RpcJsonError::BlockSpentCoinCount {
                block_hash,
                expected,
                given: coins.len(),
            });
        }
    }
    write_header_fields(out, block.header(), context);
    key(out, "strippedsize");
    write_u64(out, block.stripped_size() as u64);
    key(out, "size");
    write_u64(out, block.size() as u64);
    key(out, "weight");
    write_u64(out, block.weight() as u64);
    key(out, "tx");
    out.push(b'[');
    let transaction_verbosity = match verbosity {
        BlockVerbosity::TransactionIds => None,
        BlockVerbosity::Transactions => Some(TransactionVerbosity::Details),
        BlockVerbosity::TransactionsWithPrevouts => Some(TransactionVerbosity::DetailsWithPrevouts),
    };
    let params = AddressParams::for_network(network);
    let mut coins_used = 0;
    for (index, transaction) in block.transactions().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        let Some(transaction_verbosity) = transaction_verbosity else {
            hash_string(out, &transaction.txid().0);
            continue;
        };
        // The coinbase has no undo data (Core: `txundo` is null for i == 0).
        let coins = match spent_coins {
            Some(coins) if index != 0 => {
                let range = coins_used..coins_used + transaction.inputs().len();
                coins_used = range.end;
                coins.get(range)
            }
            _ => None,
        };
        out.push(b'{');
        write_transaction_fields(out, &transaction, coins, transaction_verbosity, &params)?;
        close_object(out);
    }
    out.push(b']');
    close_object(out);
    Ok(())
}

/// The header object's fields, braces open.
fn write_header_fields(out: &mut Vec<u8>, header: &Header, context: &BlockContext) {
    open_object(out, "hash");
    hash_string(out, &header.block_hash().0);
    key(out, "confirmations");
    write_i64(out, context.confirmations);
    key(out, "height");
    write_u64(out, u64::from(context.height));
    key(out, "version");
    write_i64(out, i64::from(header.version));
    key(out, "versionHex");
    // Core's `%08x` of the signed version prints its two's complement.
    write_hex_u32_string(out, header.version as u32);
    key(out, "merkleroot");
    hash_string(out, &header.merkle_root.0);
    key(out, "time");
    write_u64(out, u64::from(header.time));
    key(out, "mediantime");
    write_i64(out, context.median_time_seconds);
    key(out, "nonce");
    write_u64(out, u64::from(header.nonce));
    key(out, "bits");
    write_hex_u32_string(out, header.bits);
    key(out, "target");
    write_target(out, header.bits);
    key(out, "difficulty");
    write_double(out, difficulty(header.bits));
    key(out, "chainwork");
    hash_string(out, &context.chain_work.to_u256().to_le_bytes());
    key(out, "nTx");
    write_u64(out, context.transaction_count);
    if context.height != 0 {
        key(out, "previousblockhash");
        hash_string(out, &header.previous_block_hash.0);
    }
    if let Some(next) = context.next_block_hash {
        key(out, "nextblockhash");
        hash_string(out, &next.0);
    }
}

/// The target `bits` stands for, as a quoted 256-bit hex number. Core's
/// `GetTarget` is `DeriveTarget`, which a block in the index always passes;
/// the number is the compact form expanded.
pub(crate) fn write_target(out: &mut Vec<u8>, bits: u32) {
    hash_string(out, &CompactTarget(bits).expand().value.to_le_bytes());
}

/// `"%08x"` of a 32-bit value, quoted.
pub(crate) fn write_hex_u32_string(out: &mut Vec<u8>, value: u32) {
    out.push(b'"');
    write_hex(out, &value.to_be_bytes());
    out.push(b'"');
}

/// Core's `GetDifficulty`: 0xffff over the mantissa, scaled by 256 per
/// byte of exponent away from 29, step by step as Core does (each step is
/// exact, so the order does not change the result).
pub(crate) fn difficulty(bits: u32) -> f64 {
    let mut shift = (bits >> 24) & 0xff;
    let mut difficulty = f64::from(0xffff) / f64::from(bits & 0x00ff_ffff);
    while shift < 29 {
        difficulty *= 256.0;
        shift += 1;
    }
    while shift > 29 {
        difficulty /= 256.0;
        shift -= 1;
    }
    difficulty
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difficulty_as_core_computes_it() {
        assert_eq!(difficulty(0x1d00_ffff), 1.0);
        // 4.6565423739069247e-10, which 16 significant digits round to
        // the text Core prints (and which does not read back as the same
        // double).
        let mut regtest = Vec::new();
        write_double(&mut regtest, difficulty(0x207f_ffff));
        assert_eq!(regtest, b"4.656542373906925e-10");
        // Mainnet block 413567's bits.
        let mut text = Vec::new();
        write_double(&mut text, difficulty(0x1805_8436));
        assert_eq!(String::from_utf8(text).unwrap(), "199312067531.243");
    }

    #[test]
    fn header_hex_and_version_hex() {
        let header = Header {
            version: -1,
            previous_block_hash: ibex_primitives::BlockHash([0; 32]),
            merkle_root: ibex_primitives::Hash256([0; 32]),
            time: 1,
            bits: 0x207f_ffff,
            nonce: 2,
        };
        let mut hex = Vec::new();
        write_header_hex_json(&mut hex, &header);
        assert_eq!(hex.len(), 2 + 160);
        assert!(hex.starts_with(b"\"ffffffff00"));
        let mut version = Vec::new();
        write_hex_u32_string(&mut version, header.version as u32);
        assert_eq!(version, b"\"ffffffff\"");
    }
}

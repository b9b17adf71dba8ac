//! `getrawtransaction` answers (Core's `getrawtransaction` and `TxToJSON`,
//! `rpc/rawtransaction.cpp`): `in_active_chain` first when the request named
//! a block, the transaction's fields through `hex`, then `blockhash` and,
//! for a block in the index, `confirmations` (0 off the active chain) and
//! `time` and `blocktime` (in the active chain only).

use ibex_primitives::{Network, SpentCoin, TransactionView};

use crate::address::AddressParams;
use crate::context::{ChainPosition, TransactionBlockContext, TransactionVerbosity};
use crate::error::RpcJsonError;
use crate::json::{boolean, close_object, hash_string, hex_string, key};
use crate::number::write_i64;
use crate::transaction_json::write_transaction_fields;

/// Writes `getrawtransaction`'s answer with `verbosity=0`: the hex string.
pub fn write_transaction_hex_json(out: &mut Vec<u8>, transaction: &TransactionView<'_>) {
    hex_string(out, transaction.bytes());
}

/// Writes `getrawtransaction`'s verbose answer. Core gives verbosity 2
/// (`DetailsWithPrevouts`) its prevouts and fee only when it has the
/// block's undo data (never for a coinbase): pass `spent_coins` then,
/// `None` otherwise. `block` is where the transaction was confirmed, `None`
/// for a mempool transaction. On error `out` is left as it was.
pub fn write_transaction_json(
    out: &mut Vec<u8>,
    transaction: &TransactionView<'_>,
    spent_coins: Option<&[SpentCoin<'_>]>,
    verbosity: TransactionVerbosity,
    block: Option<&TransactionBlockContext>,
    network: Network,
) -> Result<(), RpcJsonError> {
    let start = out.len();
    out.push(b'{');
    if let Some(in_active_chain) = block.and_then(|block| block.in_active_chain) {
        out.extend_from_slice(b"\"in_active_chain\":");
        boolean(out, in_active_chain);
        out.push(b',');
    }
    let params = AddressParams::for_network(network);
    if let Err(error) = write_transaction_fields(out, transaction, spent_coins, verbosity, &params)
    {
        out.truncate(start);
        return Err(error);
    }
    if let Some(block) = block {
        key(out, "blockhash");
        hash_string(out, &block.block_hash.0);
        match block.position {
            ChainPosition::Active { confirmations, block_time_seconds } => {
                key(out, "confirmations");
                write_i64(out, confirmations);
                key(out, "time");
                write_i64(out, block_time_seconds);
                key(out, "blocktime");
                write_i64(out, block_time_seconds);
            }
            ChainPosition::NotActive => {
                key(out, "confirmations");
                write_i64(out, 0);
            }
            ChainPosition::Unknown => {}
        }
    }
    close_object(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hex::decode;
    use ibex_primitives::{BlockHash, ParsedTransaction};

    fn transaction_bytes() -> Vec<u8> {
        let outpoint = "22".repeat(32);
        decode(&format!("0200000001{outpoint}0000000000fdffffff01e803000000000000015100000000"))
            .unwrap()
    }

    fn answer(block: Option<&TransactionBlockContext>) -> String {
        let bytes = transaction_bytes();
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let mut out = b"prefix".to_vec();
        write_transaction_json(
            &mut out,
            &parsed.view(),
            None,
            TransactionVerbosity::Details,
            block,
            Network::Regtest,
        )
        .unwrap();
        String::from_utf8(out[b"prefix".len()..].to_vec()).unwrap()
    }

    #[test]
    fn block_fields_follow_the_transaction() {
        let mempool = answer(None);
        assert!(mempool.starts_with("{\"txid\":") && mempool.ends_with("00000000\"}"), "{mempool}");
        let block_hash = BlockHash([0x33; 32]);
        let active = TransactionBlockContext {
            block_hash,
            in_active_chain: Some(true),
            position: ChainPosition::Active { confirmations: 5, block_time_seconds: 1_700_000_000 },
        };
        let text = answer(Some(&active));
        assert!(text.starts_with("{\"in_active_chain\":true,\"txid\":"), "{text}");
        let tail = format!(
            ",\"blockhash\":\"{}\",\"confirmations\":5,\"time\":1700000000,\"blocktime\":1700000000}}",
            "33".repeat(32)
        );
        assert!(text.ends_with(&tail), "{text}");
        let stale = TransactionBlockContext {
            in_active_chain: None,
            position: ChainPosition::NotActive,
            ..active
        };
        assert!(answer(Some(&stale)).ends_with("\"confirmations\":0}"));
        let unknown = TransactionBlockContext { position: ChainPosition::Unknown, ..stale };
        assert!(answer(Some(&unknown)).ends_with(&format!("\"{}\"}}", "33".repeat(32))));
    }

    #[test]
    fn errors_leave_the_buffer_unchanged() {
        let bytes = transaction_bytes();
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let mut out = b"kept".to_vec();
        let result = write_transaction_json(
            &mut out,
            &parsed.view(),
            Some(&[]),
            TransactionVerbosity::DetailsWithPrevouts,
            None,
            Network::Main,
        );
        assert!(result.is_err());
        assert_eq!(out, b"kept");
    }
}

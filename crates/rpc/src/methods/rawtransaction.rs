//! `getrawtransaction` (Core's `rpc/rawtransaction.cpp`) with a block
//! hash: the transaction read from that stored block, as hex (verbosity 0),
//! decoded (1), or decoded with its fee and each input's spent coin from
//! the block's undo data (2). Ibex has no mempool and no `-txindex`, so
//! without a block hash Core's answer for that case is given (-5).

use ibex_primitives::{BlockHash, BlockView, SpentCoin, Txid};

use super::error::{RpcError, RpcErrorCode};
use super::params::{hash, integer, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::{BackendError, BlockData, StoredBlock};
use crate::context::{ChainPosition, TransactionBlockContext, TransactionVerbosity};
use crate::{write_transaction_hex_json, write_transaction_json};

pub(super) const GETRAWTRANSACTION: Method = Method {
    name: "getrawtransaction",
    category: "rawtransactions",
    args: &[
        arg("txid", ArgType::Hex, false, "the transaction id"),
        arg(
            "verbosity|verbose",
            ArgType::Any,
            true,
            "0 (default) for hex, 1 for an object, 2 for an object with the fee and prevouts",
        ),
        arg(
            "blockhash",
            ArgType::Hex,
            true,
            "the block holding the transaction (required: Ibex keeps no mempool or txindex)",
        ),
    ],
    description: "A transaction of a stored block, as hex or decoded.",
    result: "\"hex\" at verbosity 0, {...} above",
    handler: getrawtransaction,
};

/// Core's answer when no block is named and there is neither a mempool
/// transaction nor a transaction index.
const NO_TXINDEX_MESSAGE: &str = "No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. Use gettransaction for wallet transactions.";

fn getrawtransaction(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let txid = Txid(hash(params.get(0), "parameter 1")?);
    if txid.0 == context.params.genesis.header.merkle_root.0 {
        return Err(RpcError::new(
            RpcErrorCode::InvalidAddressOrKey,
            "The genesis block coinbase is not considered an ordinary transaction and cannot be retrieved",
        ));
    }
    let verbosity = match params.optional(1) {
        None => 0,
        Some(serde_json::Value::Bool(verbose)) => i32::from(*verbose),
        Some(value) => integer::<i32>(value)?,
    };
    let Some(block_value) = params.optional(2) else {
        return Err(RpcError::new(RpcErrorCode::InvalidAddressOrKey, NO_TXINDEX_MESSAGE));
    };
    let block_hash = BlockHash(hash(block_value, "parameter 3")?);
    let block_not_found =
        || RpcError::new(RpcErrorCode::InvalidAddressOrKey, "Block hash not found");
    let stored = match context.backend.block(&block_hash, verbosity >= 2) {
        Ok(Some(stored)) => stored,
        Ok(None) => return Err(block_not_found()),
        Err(BackendError::BlockDataUnavailable { .. }) => {
            return Err(RpcError::new(RpcErrorCode::MiscError, "Block not available"))
        }
        Err(other) => return Err(other.into()),
    };
    write_found(context, &stored, &txid, verbosity, out)
}

/// Core's error when undo data it expects cannot be read.
const UNDO_UNREADABLE_MESSAGE: &str = "Undo data expected but can't be read. This could be due to disk corruption or a conflict with a pruning event.";

/// Finds `txid` in the stored block and writes it at `verbosity`.
fn write_found(
    context: &MethodContext,
    stored: &StoredBlock,
    txid: &Txid,
    verbosity: i32,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block = BlockView::parse(&stored.bytes).map_err(|_| {
        RpcError::with_message(
            RpcErrorCode::MiscError,
            format!("Block {} on disk does not parse", stored.entry.hash),
        )
    })?;
    let mut coins_before = 0usize;
    let mut found = None;
    for (index, transaction) in block.transactions().enumerate() {
        if transaction.txid() == *txid {
            found = Some((index, transaction));
            break;
        }
        if index != 0 {
            coins_before += transaction.inputs().len();
        }
    }
    let Some((index, transaction)) = found else {
        return Err(RpcError::new(
            RpcErrorCode::InvalidAddressOrKey,
            "No such transaction found in the provided block. Use gettransaction for wallet transactions.",
        ));
    };
    if verbosity <= 0 {
        write_transaction_hex_json(out, &transaction);
        return Ok(());
    }
    // Core gives prevouts and the fee only past the coinbase, and only for
    // a block with undo data: without it (never connected, or fetched
    // again after a prune) the answer is verbosity 1's.
    let have_undo = matches!(stored.entry.data, BlockData::Stored { have_undo: true });
    let spent = if verbosity >= 2 && index != 0 && have_undo {
        let inputs = transaction.inputs().len();
        Some(spent_coins(stored, coins_before..coins_before + inputs)?)
    } else {
        None
    };
    let verbosity = match spent {
        Some(_) => TransactionVerbosity::DetailsWithPrevouts,
        None => TransactionVerbosity::Details,
    };
    let block_context = block_context(stored);
    write_transaction_json(
        out,
        &transaction,
        spent.as_deref(),
        verbosity,
        Some(&block_context),
        context.network,
    )
    .map_err(|error| RpcError::with_message(RpcErrorCode::InternalError, error.to_string()))
}

/// The coins at `range` of the undo data of a block that has it: Core
/// fails when they cannot be read.
fn spent_coins(
    stored: &StoredBlock,
    range: std::ops::Range<usize>,
) -> Result<Vec<SpentCoin<'_>>, RpcError> {
    let unreadable = || RpcError::new(RpcErrorCode::InternalError, UNDO_UNREADABLE_MESSAGE);
    let coins = stored.spent_coins.as_deref().ok_or_else(unreadable)?;
    let mine = coins.get(range).ok_or_else(unreadable)?;
    Ok(mine.iter().map(|coin| coin.as_spent_coin()).collect())
}

/// Where the transaction was found, as `getrawtransaction` reports it.
fn block_context(stored: &StoredBlock) -> TransactionBlockContext {
    let entry = &stored.entry;
    let position = if entry.in_active_chain {
        ChainPosition::Active {
            confirmations: entry.confirmations(),
            block_time_seconds: i64::from(entry.header.time),
        }
    } else {
        ChainPosition::NotActive
    };
    TransactionBlockContext {
        block_hash: entry.hash,
        in_active_chain: Some(entry.in_active_chain),
        position,
    }
}

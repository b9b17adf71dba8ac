//! Chain methods (Core's `rpc/blockchain.cpp`): `getblockchaininfo`,
//! `getblockcount`, `getbestblockhash`, `getblockhash`, `getblockheader`,
//! `getblock`, `getchaintips`, `getdifficulty`, `gettxout`. Parameter
//! names, defaults, checks and messages follow Core's; results are written
//! in Core's key order.

use ibex_primitives::{BlockHash, BlockView, OutPoint, SpentCoin, Txid};

use super::error::{RpcError, RpcErrorCode};
use super::params::{boolean, hash, integer, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::{BlockchainInfo, StoredBlock};
use crate::block_json::{difficulty, write_hex_u32_string, write_target};
use crate::context::BlockVerbosity;
use crate::json::{
    boolean as json_bool, close_object, escaped_string, hash_string, hex_string, key, open_object,
    plain_string,
};
use crate::number::{write_amount, write_double, write_i64, write_u64};
use crate::script_json::write_script_pub_key;
use crate::{write_block_hex_json, write_block_json, write_header_hex_json, write_header_json};

pub(super) const GETBESTBLOCKHASH: Method = Method {
    name: "getbestblockhash",
    category: "blockchain",
    args: &[],
    description: "The hash of the active chain's tip.",
    result: "\"hex\" (string) the tip's block hash",
    handler: |context, _, out| {
        hash_string(out, &context.backend.tip()?.hash.0);
        Ok(())
    },
};

pub(super) const GETBLOCKCOUNT: Method = Method {
    name: "getblockcount",
    category: "blockchain",
    args: &[],
    description: "The height of the active chain's tip (the genesis block is 0).",
    result: "n (numeric) the tip's height",
    handler: |context, _, out| {
        write_u64(out, u64::from(context.backend.tip()?.height));
        Ok(())
    },
};

pub(super) const GETBLOCKHASH: Method = Method {
    name: "getblockhash",
    category: "blockchain",
    args: &[arg("height", ArgType::Number, false, "a height in the active chain")],
    description: "The hash of the active chain's block at a height.",
    result: "\"hex\" (string) the block hash",
    handler: getblockhash,
};

fn getblockhash(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let height = integer::<i32>(params.get(0))?;
    let out_of_range = || RpcError::invalid_parameter("Block height out of range".to_owned());
    let height = u32::try_from(height).map_err(|_| out_of_range())?;
    let hash = context.backend.block_hash_at(height)?.ok_or_else(out_of_range)?;
    hash_string(out, &hash.0);
    Ok(())
}

pub(super) const GETBLOCKHEADER: Method = Method {
    name: "getblockheader",
    category: "blockchain",
    args: &[
        arg("blockhash", ArgType::Hex, false, "the block hash"),
        arg(
            "verbose",
            ArgType::Bool,
            true,
            "true (default) for an object, false for the 80 bytes in hex",
        ),
    ],
    description: "A block header from the index, as an object or as hex.",
    result: "{...} the header's fields, or \"hex\" with verbose=false",
    handler: getblockheader,
};

fn getblockheader(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block_hash = BlockHash(hash(params.get(0), "hash")?);
    let verbose = params.optional(1).map(boolean).transpose()?.unwrap_or(true);
    let entry = context.backend.block_entry(&block_hash)?.ok_or_else(RpcError::block_not_found)?;
    if verbose {
        write_header_json(out, &entry.header, &entry.context());
    } else {
        write_header_hex_json(out, &entry.header);
    }
    Ok(())
}

pub(super) const GETBLOCK: Method = Method {
    name: "getblock",
    category: "blockchain",
    args: &[
        arg("blockhash", ArgType::Hex, false, "the block hash"),
        arg(
            "verbosity|verbose",
            ArgType::Any,
            true,
            "0 for hex, 1 (default) for an object with txids, 2 with decoded transactions, 3 with their prevouts too",
        ),
    ],
    description: "A stored block, as hex or as an object with its transactions at the verbosity asked.",
    result: "\"hex\" at verbosity 0, {...} above",
    handler: getblock,
};

/// Core's `ParseVerbosity(arg, 1, allow_bool=true)`.
fn verbosity(params: &Params<'_>) -> Result<i32, RpcError> {
    match params.optional(1) {
        None => Ok(1),
        Some(serde_json::Value::Bool(verbose)) => Ok(i32::from(*verbose)),
        Some(value) => integer::<i32>(value),
    }
}

fn getblock(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block_hash = BlockHash(hash(params.get(0), "blockhash")?);
    let verbosity = verbosity(params)?;
    let stored = context
        .backend
        .block(&block_hash, verbosity >= 2)?
        .ok_or_else(RpcError::block_not_found)?;
    let level = match verbosity {
        ..=0 => None,
        1 => Some(BlockVerbosity::TransactionIds),
        2 => Some(BlockVerbosity::Transactions),
        _ => Some(BlockVerbosity::TransactionsWithPrevouts),
    };
    write_stored_block(context, &stored, level, out)
}

/// A stored block as hex (`None`) or an object at `verbosity`.
pub(crate) fn write_stored_block(
    context: &MethodContext,
    stored: &StoredBlock,
    verbosity: Option<BlockVerbosity>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block = BlockView::parse(&stored.bytes).map_err(|_| {
        RpcError::with_message(
            RpcErrorCode::MiscError,
            format!("Block {} on disk does not parse", stored.entry.hash),
        )
    })?;
    let Some(verbosity) = verbosity else {
        write_block_hex_json(out, &block);
        return Ok(());
    };
    let coins: Option<Vec<SpentCoin<'_>>> = stored
        .spent_coins
        .as_ref()
        .map(|coins| coins.iter().map(|coin| coin.as_spent_coin()).collect());
    write_block_json(
        out,
        &block,
        &stored.entry.context(),
        verbosity,
        coins.as_deref(),
        context.network,
    )
    .map_err(|error| RpcError::with_message(RpcErrorCode::InternalError, error.to_string()))
}

pub(super) const GETBLOCKCHAININFO: Method = Method {
    name: "getblockchaininfo",
    category: "blockchain",
    args: &[],
    description:
        "The state of the chain: tip, best header, difficulty, progress, disk use, pruning.",
    result: "{...} Core's fields, in Core's order",
    handler: |context, _, out| {
        write_blockchain_info(context, &context.backend.blockchain_info()?, out)
    },
};

/// `getblockchaininfo`'s object (also REST `chaininfo`).
pub(crate) fn write_blockchain_info(
    context: &MethodContext,
    info: &BlockchainInfo,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let tip = &info.tip;
    open_object(out, "chain");
    plain_string(out, context.network.name().as_bytes());
    key(out, "blocks");
    write_u64(out, u64::from(tip.height));
    key(out, "headers");
    write_i64(out, info.best_header_height.map_or(-1, i64::from));
    key(out, "bestblockhash");
    hash_string(out, &tip.hash.0);
    key(out, "bits");
    write_hex_u32_string(out, tip.header.bits);
    key(out, "target");
    write_target(out, tip.header.bits);
    key(out, "difficulty");
    write_double(out, difficulty(tip.header.bits));
    key(out, "time");
    write_u64(out, u64::from(tip.header.time));
    key(out, "mediantime");
    write_i64(out, tip.median_time_past);
    key(out, "verificationprogress");
    write_double(out, info.verification_progress);
    key(out, "initialblockdownload");
    json_bool(out, info.initial_block_download);
    // Core's `backgroundvalidation`, while a background chainstate
    // validates towards an AssumeUTXO snapshot's block.
    let states = context.backend.assumeutxo_chainstates()?;
    if let Some((states, background)) =
        states.as_ref().and_then(|states| Some((states, states.background.as_ref()?)))
    {
        key(out, "backgroundvalidation");
        open_object(out, "snapshotheight");
        write_u64(out, u64::from(states.snapshot_height));
        key(out, "blocks");
        write_u64(out, u64::from(background.tip.height));
        key(out, "bestblockhash");
        hash_string(out, &background.tip.hash.0);
        key(out, "mediantime");
        write_i64(out, background.tip.median_time_past);
        key(out, "chainwork");
        hash_string(out, &background.tip.chain_work.to_u256().to_le_bytes());
        key(out, "verificationprogress");
        write_double(out, background.verification_progress);
        close_object(out);
    }
    key(out, "chainwork");
    hash_string(out, &tip.chain_work.to_u256().to_le_bytes());
    key(out, "size_on_disk");
    write_u64(out, info.size_on_disk_bytes);
    key(out, "pruned");
    json_bool(out, info.prune.is_some());
    if let Some(prune) = info.prune {
        key(out, "pruneheight");
        write_u64(out, u64::from(prune.prune_height));
        key(out, "automatic_pruning");
        json_bool(out, prune.automatic_target_bytes.is_some());
        if let Some(target) = prune.automatic_target_bytes {
            key(out, "prune_target_size");
            write_u64(out, target);
        }
    }
    if let Some(challenge) = &info.signet_challenge {
        key(out, "signet_challenge");
        hex_string(out, challenge);
    }
    key(out, "warnings");
    write_strings(out, &info.warnings);
    close_object(out);
    Ok(())
}

/// A JSON array of escaped strings.
pub(crate) fn write_strings<Text: AsRef<str>>(out: &mut Vec<u8>, items: &[Text]) {
    out.push(b'[');
    for (index, item) in items.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        escaped_string(out, item.as_ref());
    }
    out.push(b']');
}

pub(super) const GETCHAINTIPS: Method = Method {
    name: "getchaintips",
    category: "blockchain",
    args: &[],
    description: "Every tip of the block tree: the active one and each branch's.",
    result: "[{\"height\",\"hash\",\"branchlen\",\"status\"},...]",
    handler: |context, _, out| {
        let tips = context.backend.chain_tips()?;
        out.push(b'[');
        for (index, tip) in tips.iter().enumerate() {
            if index != 0 {
                out.push(b',');
            }
            open_object(out, "height");
            write_u64(out, u64::from(tip.height));
            key(out, "hash");
            hash_string(out, &tip.hash.0);
            key(out, "branchlen");
            write_u64(out, u64::from(tip.branch_length));
            key(out, "status");
            plain_string(out, tip.status.name().as_bytes());
            close_object(out);
        }
        out.push(b']');
        Ok(())
    },
};

pub(super) const GETDIFFICULTY: Method = Method {
    name: "getdifficulty",
    category: "blockchain",
    args: &[],
    description: "The tip's proof-of-work difficulty, as a multiple of the minimum.",
    result: "n (numeric) the difficulty",
    handler: |context, _, out| {
        let tip = context.backend.tip()?;
        let entry =
            context.backend.block_entry(&tip.hash)?.ok_or(crate::backend::BackendError::NoTip)?;
        write_double(out, difficulty(entry.header.bits));
        Ok(())
    },
};

pub(super) const GETTXOUT: Method = Method {
    name: "gettxout",
    category: "blockchain",
    args: &[
        arg("txid", ArgType::String, false, "the transaction id"),
        arg("n", ArgType::Number, false, "the output index"),
        arg(
            "include_mempool",
            ArgType::Bool,
            true,
            "whether to look in the mempool too (default true)",
        ),
    ],
    description: "An unspent transaction output, or null when spent or unknown.",
    result: "{\"bestblock\",\"confirmations\",\"value\",\"scriptPubKey\",\"coinbase\"} or null",
    handler: gettxout,
};

fn gettxout(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let txid = Txid(hash(params.get(0), "txid")?);
    let vout = integer::<u32>(params.get(1))?;
    let include_mempool = params.optional(2).map(boolean).transpose()?.unwrap_or(true);
    let answer = context.backend.coins(&[OutPoint { txid, vout }], include_mempool)?;
    let Some(Some(coin)) = answer.coins.first() else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    open_object(out, "bestblock");
    hash_string(out, &answer.tip.hash.0);
    key(out, "confirmations");
    // Core: 0 for a mempool coin, else tip height - coin height + 1.
    let confirmations =
        coin.height.map_or(0, |height| i64::from(answer.tip.height) - i64::from(height) + 1);
    write_i64(out, confirmations);
    key(out, "value");
    write_amount(out, coin.value.to_sat());
    key(out, "scriptPubKey");
    write_script_pub_key(out, &coin.script_pubkey, &context.address_params);
    key(out, "coinbase");
    json_bool(out, coin.is_coinbase);
    close_object(out);
    Ok(())
}

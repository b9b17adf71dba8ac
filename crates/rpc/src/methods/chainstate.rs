//! Chainstate methods (Core's `rpc/blockchain.cpp`): `gettxoutsetinfo`
//! (at the tip: Ibex keeps no `coinstatsindex`), `getchainstates` (one
//! chainstate: Ibex loads no snapshot) and `getdeploymentinfo`. Fields in
//! Core's order.

use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::BlockHash;

use super::blockchain::write_strings;
use super::error::{RpcError, RpcErrorCode};
use super::params::{boolean, hash, string, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::{BackendError, ChainstateInfo, TotalAmountOverflow, TxOutSetInfo};
use crate::block_json::{difficulty, write_hex_u32_string, write_target};
use crate::deployment::{Bip9Status, DeploymentInfo};
use crate::json::{
    boolean as json_bool, close_object, hash_string, key, open_object, plain_string,
};
use crate::number::{write_amount, write_double, write_i64, write_u64};

pub(super) const GETTXOUTSETINFO: Method = Method {
    name: "gettxoutsetinfo",
    category: "blockchain",
    args: &[
        arg(
            "hash_type",
            ArgType::String,
            true,
            "'hash_serialized_3' (default), 'muhash' or 'none'",
        ),
        arg(
            "hash_or_height",
            ArgType::HashOrHeight,
            true,
            "a block other than the tip (needs coinstatsindex, which Ibex does not keep)",
        ),
        arg("use_index", ArgType::Bool, true, "use coinstatsindex if available (default true)"),
    ],
    description: "Statistics about the unspent transaction output set at the tip. Walks every coin: may take a while.",
    result: "{\"height\",\"bestblock\",\"txouts\",\"bogosize\",\"hash_serialized_3\"|\"muhash\",\"total_amount\",\"transactions\",\"disk_size\"}",
    handler: gettxoutsetinfo,
};

/// The hash `gettxoutsetinfo`'s `hash_type` names (Core's `ParseHashType`).
pub fn txoutset_hash_type(name: &str) -> Option<TxOutSetHashType> {
    match name {
        "hash_serialized_3" => Some(TxOutSetHashType::HashSerialized3),
        "muhash" => Some(TxOutSetHashType::MuHash),
        "none" => Some(TxOutSetHashType::None),
        _ => None,
    }
}

/// [`txoutset_hash_type`], or Core's -8.
fn parse_hash_type(name: &str) -> Result<TxOutSetHashType, RpcError> {
    txoutset_hash_type(name)
        .ok_or_else(|| RpcError::invalid_parameter(format!("'{name}' is not a valid hash_type")))
}

fn gettxoutsetinfo(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let hash_type = match params.optional(0) {
        Some(value) => parse_hash_type(string(value)?)?,
        None => TxOutSetHashType::HashSerialized3,
    };
    params.optional(2).map(boolean).transpose()?;
    if params.optional(1).is_some() {
        return Err(RpcError::invalid_parameter(
            "Querying specific block heights requires coinstatsindex".to_owned(),
        ));
    }
    let info = context.backend.txoutset_info(hash_type)?;
    write_txoutset_info_json(out, &info).map_err(|TotalAmountOverflow| {
        RpcError::new(RpcErrorCode::InternalError, "Unable to read UTXO set")
    })
}

/// Writes `gettxoutsetinfo`'s object as Core does without
/// `coinstatsindex`; nothing when the total amount overflowed.
pub fn write_txoutset_info_json(
    out: &mut Vec<u8>,
    info: &TxOutSetInfo,
) -> Result<(), TotalAmountOverflow> {
    let stats = &info.stats;
    let total_amount = stats.total_amount.ok_or(TotalAmountOverflow)?;
    open_object(out, "height");
    write_u64(out, u64::from(info.height));
    key(out, "bestblock");
    hash_string(out, &info.best_block.0);
    key(out, "txouts");
    write_u64(out, stats.txouts);
    key(out, "bogosize");
    write_u64(out, stats.bogosize);
    match (stats.hash_type, stats.hash) {
        (TxOutSetHashType::HashSerialized3, Some(hash)) => {
            key(out, "hash_serialized_3");
            hash_string(out, &hash.0);
        }
        (TxOutSetHashType::MuHash, Some(hash)) => {
            key(out, "muhash");
            hash_string(out, &hash.0);
        }
        _ => {}
    }
    key(out, "total_amount");
    write_amount(out, total_amount);
    key(out, "transactions");
    write_u64(out, stats.transactions);
    key(out, "disk_size");
    write_u64(out, info.disk_size_bytes);
    close_object(out);
    Ok(())
}

pub(super) const GETCHAINSTATES: Method = Method {
    name: "getchainstates",
    category: "blockchain",
    args: &[],
    description: "The chainstates, the most-work (active) one last: one validated from genesis, or with an AssumeUTXO snapshot loaded the background chainstate validating towards the snapshot's block, then the snapshot's.",
    result: "{\"headers\",\"chainstates\":[{\"blocks\",\"bestblockhash\",\"bits\",\"target\",\"difficulty\",\"verificationprogress\",\"coins_db_cache_bytes\",\"coins_tip_cache_bytes\",\"snapshot_blockhash\"?,\"validated\"}]}",
    handler: getchainstates,
};

fn getchainstates(
    context: &MethodContext,
    _params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let info = context.backend.blockchain_info()?;
    open_object(out, "headers");
    write_i64(out, info.best_header_height.map_or(-1, i64::from));
    key(out, "chainstates");
    out.push(b'[');
    match context.backend.assumeutxo_chainstates()? {
        None => {
            let caches = context.backend.coins_cache_sizes();
            let active = ChainstateInfo {
                tip: info.tip.clone(),
                verification_progress: info.verification_progress,
                cache: caches,
            };
            write_chainstate(out, &active, None, true);
        }
        Some(states) => {
            if let Some(background) = &states.background {
                write_chainstate(out, background, None, true);
                out.push(b',');
            }
            let base = Some(&states.snapshot_base);
            write_chainstate(out, &states.active, base, states.validated);
        }
    }
    out.push(b']');
    close_object(out);
    Ok(())
}

/// One chainstate's object, in Core's order.
fn write_chainstate(
    out: &mut Vec<u8>,
    chainstate: &ChainstateInfo,
    snapshot_base: Option<&BlockHash>,
    validated: bool,
) {
    let tip = &chainstate.tip;
    open_object(out, "blocks");
    write_u64(out, u64::from(tip.height));
    key(out, "bestblockhash");
    hash_string(out, &tip.hash.0);
    key(out, "bits");
    write_hex_u32_string(out, tip.header.bits);
    key(out, "target");
    write_target(out, tip.header.bits);
    key(out, "difficulty");
    write_double(out, difficulty(tip.header.bits));
    key(out, "verificationprogress");
    write_double(out, chainstate.verification_progress);
    key(out, "coins_db_cache_bytes");
    write_u64(out, chainstate.cache.coins_database_bytes);
    key(out, "coins_tip_cache_bytes");
    write_u64(out, chainstate.cache.coins_tip_bytes);
    if let Some(base) = snapshot_base {
        key(out, "snapshot_blockhash");
        hash_string(out, &base.0);
    }
    key(out, "validated");
    json_bool(out, validated);
    close_object(out);
}

pub(super) const GETDEPLOYMENTINFO: Method = Method {
    name: "getdeploymentinfo",
    category: "blockchain",
    args: &[arg("blockhash", ArgType::Hex, true, "the block to describe (default: the tip)")],
    description: "The script flags and the soft fork deployments' state at a block.",
    result: "{\"hash\",\"height\",\"script_flags\":[...],\"deployments\":{\"name\":{\"type\",\"height\",\"active\",\"bip9\"},...}}",
    handler: getdeploymentinfo,
};

fn getdeploymentinfo(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block_hash = params.optional(0).map(|value| hash(value, "blockhash")).transpose()?;
    let block_hash = block_hash.map(BlockHash);
    let info = match context.backend.deployment_info(block_hash.as_ref())? {
        Some(info) => info,
        None if block_hash.is_some() => return Err(RpcError::block_not_found()),
        None => return Err(BackendError::NoTip.into()),
    };
    write_deployment_info(out, &info);
    Ok(())
}

fn write_deployment_info(out: &mut Vec<u8>, info: &DeploymentInfo) {
    open_object(out, "hash");
    hash_string(out, &info.hash.0);
    key(out, "height");
    write_u64(out, u64::from(info.height));
    key(out, "script_flags");
    write_strings(out, &info.script_flags);
    key(out, "deployments");
    out.push(b'{');
    let mut first = true;
    for buried in &info.buried {
        deployment_key(out, buried.name, &mut first);
        open_object(out, "type");
        plain_string(out, b"buried");
        key(out, "active");
        json_bool(out, buried.active);
        key(out, "height");
        write_u64(out, u64::from(buried.height));
        close_object(out);
    }
    for status in &info.version_bits {
        deployment_key(out, status.deployment.name, &mut first);
        write_bip9(out, status, info.height);
    }
    close_object(out);
    close_object(out);
}

/// `"name":` inside the deployments object.
fn deployment_key(out: &mut Vec<u8>, name: &str, first: &mut bool) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    plain_string(out, name.as_bytes());
    out.push(b':');
}

/// One BIP9 deployment as Core's `SoftForkDescPushBack` writes it.
fn write_bip9(out: &mut Vec<u8>, status: &Bip9Status, height: u32) {
    let deployment = &status.deployment;
    open_object(out, "type");
    plain_string(out, b"bip9");
    if let Some(active_since) = status.active_since {
        key(out, "height");
        write_u64(out, u64::from(active_since));
    }
    key(out, "active");
    let active = status.active_since.is_some_and(|since| since <= height.saturating_add(1));
    json_bool(out, active);
    key(out, "bip9");
    out.push(b'{');
    let mut first_field = true;
    let mut field = |out: &mut Vec<u8>, name: &str| {
        if !first_field {
            out.push(b',');
        }
        first_field = false;
        plain_string(out, name.as_bytes());
        out.push(b':');
    };
    if status.statistics.is_some() {
        field(out, "bit");
        write_u64(out, u64::from(deployment.bit));
    }
    field(out, "start_time");
    write_i64(out, deployment.start_time);
    field(out, "timeout");
    write_i64(out, deployment.timeout);
    field(out, "min_activation_height");
    write_u64(out, u64::from(deployment.min_activation_height));
    field(out, "status");
    plain_string(out, status.current.name().as_bytes());
    field(out, "since");
    write_u64(out, u64::from(status.since));
    field(out, "status_next");
    plain_string(out, status.next.name().as_bytes());
    if let (Some(statistics), Some(signalling)) = (&status.statistics, &status.signalling) {
        field(out, "statistics");
        open_object(out, "period");
        write_u64(out, u64::from(statistics.period));
        key(out, "elapsed");
        write_u64(out, u64::from(statistics.elapsed));
        key(out, "count");
        write_u64(out, u64::from(statistics.count));
        if let Some((threshold, possible)) = statistics.threshold_possible {
            key(out, "threshold");
            write_u64(out, u64::from(threshold));
            key(out, "possible");
            json_bool(out, possible);
        }
        close_object(out);
        field(out, "signalling");
        plain_string(out, signalling.as_bytes());
    }
    close_object(out);
    close_object(out);
}

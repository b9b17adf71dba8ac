//! UTXO snapshot methods (Core's `rpc/blockchain.cpp`): `dumptxoutset`,
//! `loadtxoutset`.

use serde_json::Value;

use super::blockstats::hash_or_height;
use super::error::RpcError;
use super::params::{boolean, string, wrong_type, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::{DumpedTxOutSet, LoadedTxOutSet};
use crate::json::{close_object, escaped_string, hash_string, key, open_object};
use crate::number::write_u64;

/// The names `dumptxoutset`'s options object takes, also as named
/// parameters of their own (Core's `OBJ_NAMED_PARAMS`).
const DUMP_OPTIONS: &[(&str, &str)] = &[("rollback", "n"), ("in_memory", "bool")];

pub(super) const DUMPTXOUTSET: Method = Method {
    name: "dumptxoutset",
    category: "blockchain",
    args: &[
        arg("path", ArgType::String, false, "the output file; relative paths are under the data directory"),
        arg("type", ArgType::String, true, "\"latest\" (the tip) or \"rollback\" (the latest AssumeUTXO block, or the \"rollback\" option's block)"),
        arg(
            "options",
            ArgType::NamedOptions(DUMP_OPTIONS),
            true,
            "{\"rollback\": height or hash of an active-chain block, \"in_memory\": accepted (Ibex's rollback is always in memory)}",
        ),
    ],
    description: "Write the UTXO set to a file in Core's snapshot format, loadable with loadtxoutset where the block is in the AssumeUTXO table. The node keeps validating while the coins are written.",
    result: "{\"coins_written\",\"base_hash\",\"base_height\",\"path\",\"txoutset_hash\",\"nchaintx\"}",
    handler: dumptxoutset,
};

fn dumptxoutset(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let path = string(params.get(0))?;
    let snapshot_type = params.optional(1).map(string).transpose()?.unwrap_or("");
    let options = match params.optional(2) {
        None => None,
        Some(Value::Object(options)) => Some(options),
        Some(other) => return Err(wrong_type(other, "object")),
    };
    if let Some(in_memory) = options.and_then(|options| options.get("in_memory")) {
        boolean(in_memory)?;
    }
    let rollback = options.and_then(|options| options.get("rollback"));
    let target = match (rollback, snapshot_type) {
        (Some(rollback), "" | "rollback") => Some(hash_or_height(context, rollback)?),
        (Some(_), other) => {
            return Err(RpcError::invalid_parameter(format!(
                "Invalid snapshot type \"{other}\" specified with rollback option"
            )))
        }
        (None, "rollback") => {
            let heights = context.backend.assumeutxo_heights();
            let Some(height) = heights.into_iter().max() else {
                return Err(RpcError::invalid_parameter(
                    "This network has no AssumeUTXO block to roll back to".to_owned(),
                ));
            };
            Some(hash_or_height(context, &Value::from(height))?)
        }
        (None, "latest") => None,
        (None, other) => {
            return Err(RpcError::invalid_parameter(format!(
                "Invalid snapshot type \"{other}\" specified. Please specify \"rollback\" or \"latest\""
            )))
        }
    };
    let dumped = context.backend.dump_txoutset(path, target)?;
    write_dumped(out, &dumped);
    Ok(())
}

/// Core's answer, in its order.
fn write_dumped(out: &mut Vec<u8>, dumped: &DumpedTxOutSet) {
    open_object(out, "coins_written");
    write_u64(out, dumped.coins_written);
    key(out, "base_hash");
    hash_string(out, &dumped.base_hash.0);
    key(out, "base_height");
    write_u64(out, u64::from(dumped.base_height));
    key(out, "path");
    escaped_string(out, &dumped.path);
    key(out, "txoutset_hash");
    hash_string(out, &dumped.txoutset_hash.0);
    key(out, "nchaintx");
    write_u64(out, dumped.chain_transaction_count);
    close_object(out);
}

pub(super) const LOADTXOUTSET: Method = Method {
    name: "loadtxoutset",
    category: "blockchain",
    args: &[arg("path", ArgType::String, false, "the snapshot file; relative paths are under the data directory")],
    description: "Load a UTXO snapshot (Core's format) whose block and hash are in the AssumeUTXO table into a second chainstate, which follows the network's tip from the snapshot's block at once, while the original chainstate validates from genesis to that block in the background and then proves the snapshot's hash.",
    result: "{\"coins_loaded\",\"tip_hash\",\"base_height\",\"path\"}",
    handler: |context, params, out| {
        let path = string(params.get(0))?;
        let loaded = context.backend.load_txoutset(path)?;
        write_loaded(out, &loaded);
        Ok(())
    },
};

/// Core's answer, in its order.
fn write_loaded(out: &mut Vec<u8>, loaded: &LoadedTxOutSet) {
    open_object(out, "coins_loaded");
    write_u64(out, loaded.coins_loaded);
    key(out, "tip_hash");
    hash_string(out, &loaded.tip_hash.0);
    key(out, "base_height");
    write_u64(out, u64::from(loaded.base_height));
    key(out, "path");
    escaped_string(out, &loaded.path);
    close_object(out);
}

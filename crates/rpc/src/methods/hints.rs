//! `dumphints "path" ( height "format" )`: writes a SwiftSync hints file
//! (BIP 456 draft) of the active chain at a height, for nodes that sync
//! with `-swiftsync`. Core has no such method; the arguments and answer
//! follow `dumptxoutset`'s (a path under the data directory, never
//! overwritten, written through a temporary file).

use super::error::RpcError;
use super::params::{integer, string, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::DumpedHints;
use crate::json::{close_object, escaped_string, hash_string, key, open_object};
use crate::number::write_u64;
use ibex_primitives::hints::HintsVersion;

pub(super) const DUMPHINTS: Method = Method {
    name: "dumphints",
    category: "blockchain",
    args: &[
        arg("path", ArgType::String, false, "the output file; relative paths are under the data directory; a name ending in .gz is written gzip-compressed"),
        arg("height", ArgType::Number, true, "the terminal height, the last block the hints cover (default: the tip)"),
        arg("format", ArgType::String, true, "\"bip456\" (default: version 0, Elias-Fano records) or \"btcd\" (version 1, btcd's gap lists)"),
    ],
    description: "Write a SwiftSync hints file: for each block from 1 to the height, which of its outputs are unspent at that height. The node keeps validating while the file is written.",
    result: "{\"path\",\"height\",\"hash\",\"version\",\"outputs\",\"unspent\",\"bytes\",\"sha256\"}",
    handler: dumphints,
};

fn dumphints(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let path = string(params.get(0))?;
    let height = match params.optional(1) {
        None => None,
        Some(value) => {
            let height = integer::<i64>(value)?;
            match u32::try_from(height) {
                Ok(height) if height >= 1 => Some(height),
                _ => {
                    return Err(RpcError::invalid_parameter(format!(
                        "Invalid height {height}: hints cover blocks from height 1"
                    )))
                }
            }
        }
    };
    let version = match params.optional(2).map(string).transpose()?.unwrap_or("bip456") {
        "bip456" => HintsVersion::EliasFano,
        "btcd" => HintsVersion::GapList,
        other => {
            return Err(RpcError::invalid_parameter(format!(
                "Invalid format \"{other}\". Please specify \"bip456\" or \"btcd\""
            )))
        }
    };
    let dumped = context.backend.dump_hints(path, height, version)?;
    write_dumped(out, &dumped);
    Ok(())
}

fn write_dumped(out: &mut Vec<u8>, dumped: &DumpedHints) {
    open_object(out, "path");
    escaped_string(out, &dumped.path);
    key(out, "height");
    write_u64(out, u64::from(dumped.height));
    key(out, "hash");
    hash_string(out, &dumped.hash.0);
    key(out, "version");
    write_u64(out, u64::from(dumped.version));
    key(out, "outputs");
    write_u64(out, dumped.outputs);
    key(out, "unspent");
    write_u64(out, dumped.unspent);
    key(out, "bytes");
    write_u64(out, dumped.bytes);
    key(out, "sha256");
    // The file's digest as bytes, not a reversed hash.
    let mut hex = String::with_capacity(64);
    ibex_primitives::hex::encode_to(&dumped.sha256, &mut hex);
    escaped_string(out, &hex);
    close_object(out);
}

//! An operator's verdicts on a block (Core's `rpc/blockchain.cpp`, in its
//! `hidden` category, so `help` does not list them): `invalidateblock`
//! marks a block invalid as if it broke a consensus rule and activates the
//! best chain left; `reconsiderblock` clears the marks of a block, its
//! ancestors and its descendants and activates the best chain. Both answer
//! null once the engine has done it, "Block not found" (-5) for an unknown
//! hash, and Core's messages for a malformed one. `submitheader` (Core's
//! `rpc/mining.cpp`) indexes one header an operator gives.

use ibex_primitives::{BlockHash, Header, HEADER_BYTES};

use super::error::{RpcError, RpcErrorCode};
use super::params::{hash, string, ArgType, Params};
use super::{arg, Method, MethodContext};

/// Core's category for both: not listed by `help`.
pub(crate) const HIDDEN_CATEGORY: &str = "hidden";

pub(super) const INVALIDATEBLOCK: Method = Method {
    name: "invalidateblock",
    category: HIDDEN_CATEGORY,
    args: &[arg("blockhash", ArgType::Hex, false, "the hash of the block to mark invalid")],
    description: "Marks a block invalid for good, as if it broke a consensus rule: it and its descendants leave the active chain, and the best valid chain left becomes active.",
    result: "null (json null)",
    handler: invalidateblock,
};

pub(super) const RECONSIDERBLOCK: Method = Method {
    name: "reconsiderblock",
    category: HIDDEN_CATEGORY,
    args: &[arg("blockhash", ArgType::Hex, false, "the hash of the block to reconsider")],
    description: "Clears the invalid marks of a block, its ancestors and its descendants, and activates the best chain among them: what undoes invalidateblock.",
    result: "null (json null)",
    handler: reconsiderblock,
};

pub(super) const SUBMITHEADER: Method = Method {
    name: "submitheader",
    category: "mining",
    args: &[arg("hexdata", ArgType::String, false, "the hex-encoded 80-byte block header")],
    description: "Index a block header as if it came from a peer; its parent must be known. Throws on an invalid header.",
    result: "null (json null)",
    handler: submitheader,
};

fn submitheader(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let text = string(params.get(0))?;
    let header = ibex_primitives::hex::decode_array::<HEADER_BYTES>(text)
        .ok()
        .map(|bytes| Header::decode(&bytes))
        .ok_or_else(|| {
            RpcError::new(RpcErrorCode::DeserializationError, "Block header decode failed")
        })?;
    context.backend.submit_header(&header)?;
    out.extend_from_slice(b"null");
    Ok(())
}

fn invalidateblock(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block_hash = BlockHash(hash(params.get(0), "blockhash")?);
    context.backend.invalidate_block(&block_hash)?;
    out.extend_from_slice(b"null");
    Ok(())
}

fn reconsiderblock(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block_hash = BlockHash(hash(params.get(0), "blockhash")?);
    context.backend.reconsider_block(&block_hash)?;
    out.extend_from_slice(b"null");
    Ok(())
}

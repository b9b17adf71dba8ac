//! `waitfornewblock` and `waitforblockheight` (Core's
//! `rpc/blockchain.cpp`): wait for the tip to change or reach a height, at
//! most `timeout` milliseconds (0: no limit), and answer the tip then as
//! `{"hash","height"}`, also on timeout and on shutdown.
//!
//! A wait holds a worker thread, as in Core (its `-rpcthreads` are the
//! bound). The backend is asked in slices of at most `WAIT_SLICE_MS`, so
//! a server shutting down ends every wait within that time.

use std::time::{Duration, Instant};

use ibex_primitives::BlockHash;

use super::error::{RpcError, RpcErrorCode};
use super::params::{hash, integer, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::TipRef;
use crate::json::{close_object, hash_string, key, open_object};
use crate::number::write_u64;

/// Longest single wait on the backend: how long a shutdown may wait for a
/// `waitfor*` call to notice it.
pub(crate) const WAIT_SLICE_MS: u64 = 250;

pub(super) const WAITFORNEWBLOCK: Method = Method {
    name: "waitfornewblock",
    category: "blockchain",
    args: &[
        arg(
            "timeout",
            ArgType::Number,
            true,
            "milliseconds to wait at most, 0 (default) for no limit",
        ),
        arg(
            "current_tip",
            ArgType::Hex,
            true,
            "wait for the tip to differ from this hash (default: the tip now)",
        ),
    ],
    description: "Waits for a new tip and returns it (the tip at the time on timeout or shutdown).",
    result: "{\"hash\",\"height\"} the tip",
    handler: waitfornewblock,
};

pub(super) const WAITFORBLOCKHEIGHT: Method = Method {
    name: "waitforblockheight",
    category: "blockchain",
    args: &[
        arg("height", ArgType::Number, false, "the height to wait for"),
        arg("timeout", ArgType::Number, true, "milliseconds to wait at most, 0 (default) for no limit"),
    ],
    description: "Waits for the tip to reach a height and returns it (the tip at the time on timeout or shutdown).",
    result: "{\"hash\",\"height\"} the tip",
    handler: waitforblockheight,
};

/// Core's timeout argument: an `int`, not negative.
fn timeout(params: &Params<'_>, index: usize) -> Result<Option<Duration>, RpcError> {
    let milliseconds = params.optional(index).map(integer::<i32>).transpose()?.unwrap_or(0);
    if milliseconds < 0 {
        return Err(RpcError::new(RpcErrorCode::MiscError, "Negative timeout"));
    }
    Ok((milliseconds > 0).then(|| Duration::from_millis(milliseconds.unsigned_abs().into())))
}

fn waitfornewblock(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let timeout = timeout(params, 0)?;
    let current_tip = params.optional(1).map(|value| hash(value, "current_tip")).transpose()?;
    let current = context.backend.tip()?;
    let known = current_tip.map_or(current.hash, BlockHash);
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    let tip = wait_until(context, known, deadline, |tip| tip.hash != known)?;
    write_tip(out, &tip);
    Ok(())
}

fn waitforblockheight(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let height = integer::<i32>(params.get(0))?;
    let timeout = timeout(params, 1)?;
    let current = context.backend.tip()?;
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    let reached = |tip: &TipRef| i64::from(tip.height) >= i64::from(height);
    let tip = wait_until(context, current.hash, deadline, reached)?;
    write_tip(out, &tip);
    Ok(())
}

/// Waits, slice by slice, until `done` holds for the tip, the deadline
/// passes or the server stops; returns the tip then. `known` is the tip the
/// first slice waits to change from.
fn wait_until(
    context: &MethodContext,
    known: BlockHash,
    deadline: Option<Instant>,
    done: impl Fn(&TipRef) -> bool,
) -> Result<TipRef, RpcError> {
    let mut tip = context.backend.tip()?;
    let mut known = known;
    loop {
        if done(&tip) || context.is_stopping() {
            return Ok(tip);
        }
        let slice_max = Duration::from_millis(WAIT_SLICE_MS);
        let slice = match deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(tip);
                }
                left.min(slice_max)
            }
            None => slice_max,
        };
        tip = context.backend.wait_for_tip_change(&known, slice)?;
        known = tip.hash;
    }
}

fn write_tip(out: &mut Vec<u8>, tip: &TipRef) {
    open_object(out, "hash");
    hash_string(out, &tip.hash.0);
    key(out, "height");
    write_u64(out, u64::from(tip.height));
    close_object(out);
}

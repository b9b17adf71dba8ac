//! The JSON-RPC methods: a table of names, argument specifications and
//! handlers, and [`execute`], which does what Core's `CRPCTable::execute`
//! does for one call: refuse while warming up (-28), find the method
//! (-32601 "Method not found"), map and check the parameters (`params`),
//! run the handler. Handlers write their result straight into the reply
//! buffer: block, header and transaction results through the streaming
//! writer, small objects through the same JSON tokens.

pub mod error;

pub(crate) mod blockchain;
mod blockstats;
pub(crate) mod chainstate;
mod control;
mod hints;
mod invalidate;
mod network;
mod network_control;
pub(crate) mod params;
mod peers;
mod prune;
mod rawtransaction;
mod snapshot;
mod wait;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use ibex_primitives::{Network, Params as ChainParams};
use serde_json::Value;

use crate::address::AddressParams;
use crate::backend::NodeBackend;
use error::{RpcError, RpcErrorCode};
use params::{ArgSpec, ArgType, Params};

/// What every handler may use: the node, the chain parameters, the
/// server's own state.
pub(crate) struct MethodContext {
    /// The node.
    pub backend: Arc<dyn NodeBackend>,
    /// The chain.
    pub network: Network,
    /// The chain's parameters (subsidy, genesis block; a regtest node's
    /// `-testactivationheight` changes nothing methods read from these).
    pub params: ChainParams,
    /// Address encoding for the chain.
    pub address_params: AddressParams,
    /// When the node started.
    pub started_at: Instant,
    /// Set when the server shuts down: waits return at once.
    pub stopping: AtomicBool,
    /// Core's warmup status: `Some` until the node says it is ready.
    warmup: Mutex<Option<String>>,
}

impl MethodContext {
    /// A context in warmup ("RPC server started", as Core starts).
    pub(crate) fn new(
        backend: Arc<dyn NodeBackend>,
        network: Network,
        started_at: Instant,
    ) -> MethodContext {
        MethodContext {
            backend,
            network,
            params: ChainParams::for_network(network),
            address_params: AddressParams::for_network(network),
            started_at,
            stopping: AtomicBool::new(false),
            warmup: Mutex::new(Some("RPC server started".to_owned())),
        }
    }

    /// The warmup status, `None` once finished.
    pub(crate) fn warmup_status(&self) -> Option<String> {
        self.warmup.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Sets the status shown while warming up (`SetRPCWarmupStatus`).
    pub(crate) fn set_warmup_status(&self, status: &str) {
        let mut warmup = self.warmup.lock().unwrap_or_else(PoisonError::into_inner);
        if warmup.is_some() {
            *warmup = Some(status.to_owned());
        }
    }

    /// Ends warmup (`SetRPCWarmupFinished`).
    pub(crate) fn finish_warmup(&self) {
        *self.warmup.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Whether the server is shutting down.
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }
}

/// A handler: reads its parameters, appends its result's JSON to `out`.
type Handler = fn(&MethodContext, &Params<'_>, &mut Vec<u8>) -> Result<(), RpcError>;

/// One method.
pub(crate) struct Method {
    /// Its name.
    pub name: &'static str,
    /// Core's category, for `help`.
    pub category: &'static str,
    /// Its arguments, in order.
    pub args: &'static [ArgSpec],
    /// What it does, for `help <name>`.
    pub description: &'static str,
    /// What it answers, for `help <name>`.
    pub result: &'static str,
    handler: Handler,
}

/// An argument's specification, written short.
const fn arg(
    names: &'static str,
    kind: ArgType,
    optional: bool,
    description: &'static str,
) -> ArgSpec {
    ArgSpec { names, kind, optional, hidden: false, description }
}

/// Every method, sorted by category then name (the order of `help`).
pub(crate) static METHODS: &[Method] = &[
    hints::DUMPHINTS,
    snapshot::DUMPTXOUTSET,
    blockchain::GETBESTBLOCKHASH,
    blockchain::GETBLOCK,
    blockchain::GETBLOCKCHAININFO,
    blockchain::GETBLOCKCOUNT,
    blockchain::GETBLOCKHASH,
    blockchain::GETBLOCKHEADER,
    blockstats::GETBLOCKSTATS,
    chainstate::GETCHAINSTATES,
    blockchain::GETCHAINTIPS,
    chainstate::GETDEPLOYMENTINFO,
    blockchain::GETDIFFICULTY,
    blockchain::GETTXOUT,
    chainstate::GETTXOUTSETINFO,
    snapshot::LOADTXOUTSET,
    prune::PRUNEBLOCKCHAIN,
    wait::WAITFORBLOCKHEIGHT,
    wait::WAITFORNEWBLOCK,
    control::HELP,
    control::STOP,
    control::UPTIME,
    invalidate::INVALIDATEBLOCK,
    invalidate::RECONSIDERBLOCK,
    invalidate::SUBMITHEADER,
    network_control::ADDNODE,
    network_control::CLEARBANNED,
    network_control::DISCONNECTNODE,
    network_control::GETADDEDNODEINFO,
    network::GETCONNECTIONCOUNT,
    network::GETNETTOTALS,
    network::GETNETWORKINFO,
    network_control::GETNODEADDRESSES,
    peers::GETPEERINFO,
    network_control::LISTBANNED,
    network_control::SETBAN,
    rawtransaction::GETRAWTRANSACTION,
];

/// The method called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|method| method.name == name)
}

/// Runs `name` with `params` (an array or object), appending the result's
/// JSON to `out`. On error `out` may hold a partial result: the caller
/// truncates it.
pub(crate) fn execute(
    context: &MethodContext,
    name: &str,
    params: &Value,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    if let Some(status) = context.warmup_status() {
        return Err(RpcError::with_message(RpcErrorCode::InWarmup, status));
    }
    let Some(method) = find(name) else {
        return Err(RpcError::new(RpcErrorCode::MethodNotFound, "Method not found"));
    };
    let params = params::fold_named_options(params, method.args)?;
    let params = params::prepare(&params, method.args, || control::full_help(method))?;
    (method.handler)(context, &params, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_help_and_names_are_unique() {
        let keys: Vec<String> =
            METHODS.iter().map(|method| format!("{}{}", method.category, method.name)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(keys, sorted);
    }
}

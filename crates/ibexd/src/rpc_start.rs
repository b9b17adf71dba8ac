//! Starting the RPC server from the node's options (Core's `-server`,
//! `-rpc*` and `-rest`) over the engine's reader.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ibex_rpc::server::config::ConfigError as RpcConfigError;
use ibex_rpc::{rpc_bind_addresses, RpcServer, ServerConfig, ServerError, Subnet};

use crate::options::NodeOptions;
use crate::rpc_backend::ChainBackend;

/// Why the RPC server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RpcStartError {
    /// An `-rpcbind` or `-rpcallowip` value Core would refuse.
    #[error(transparent)]
    Option(#[from] RpcConfigError),
    /// The server could not start (no address bound, a bad `-rpcauth`).
    #[error(transparent)]
    Server(#[from] ServerError),
}

/// Core's warnings about `-rpcbind` and `-rpcallowip` given alone
/// (`HTTPBindAddresses`): without both, the server binds loopback only, so
/// a non-local `-rpcbind` without `-rpcallowip` is refused (not bound) and
/// said so.
pub fn rpc_option_warnings(options: &NodeOptions) -> Vec<&'static str> {
    let rpc = &options.rpc;
    let mut warnings = Vec::new();
    if rpc.bind.is_empty() || rpc.allow_ip.is_empty() {
        if !rpc.allow_ip.is_empty() {
            warnings.push(
                "Warning: Option -rpcallowip was specified without -rpcbind; this doesn't usually make sense",
            );
        }
        if !rpc.bind.is_empty() {
            warnings.push(
                "Warning: Option -rpcbind was ignored because -rpcallowip was not specified, refusing to allow everyone to connect",
            );
        }
    }
    warnings
}

/// The server's configuration for `options`.
pub fn server_config(options: &NodeOptions) -> Result<ServerConfig, RpcStartError> {
    let rpc = &options.rpc;
    let mut config = ServerConfig::new(options.network);
    config.bind_addresses = rpc_bind_addresses(&rpc.bind, !rpc.allow_ip.is_empty(), rpc.port)?;
    config.allowed_subnets =
        rpc.allow_ip.iter().map(|text| Subnet::parse(text)).collect::<Result<_, _>>()?;
    config.rpc_user = rpc.user.clone().unwrap_or_default();
    config.rpc_password = rpc.password.clone().unwrap_or_default();
    config.rpc_auth = rpc.auth.clone();
    // Core writes a cookie unless a password is set.
    config.cookie_file = match (&rpc.password, &rpc.cookie_file) {
        (None, Some(file)) => Some(options.chain_directory.join(file)),
        _ => None,
    };
    config.threads = rpc.threads;
    config.work_queue_depth = rpc.work_queue;
    config.server_timeout = std::time::Duration::from_secs(rpc.server_timeout_seconds);
    config.rest = rpc.rest;
    Ok(config)
}

/// The running RPC server and the backend the node attaches its parts to
/// as they come up.
pub struct NodeRpc {
    server: RpcServer,
    backend: Arc<ChainBackend>,
}

impl std::fmt::Debug for NodeRpc {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("NodeRpc").field("server", &self.server).finish_non_exhaustive()
    }
}

impl NodeRpc {
    /// The server (its addresses, its warmup).
    pub fn server(&self) -> &RpcServer {
        &self.server
    }

    /// The backend, to attach the chainstate's reader, the P2P side and
    /// the engine service's operator channel as they start.
    pub fn backend(&self) -> &ChainBackend {
        &self.backend
    }

    /// Stops the server (see [`RpcServer::shutdown`]).
    pub fn shutdown(self) {
        self.server.shutdown();
    }
}

/// Starts the server when `-server` is on, before the chainstate opens: it
/// answers -28 with its warmup status ([`RpcServer::set_warmup_status`])
/// until [`RpcServer::finish_warmup`], as Core's does from its start, and
/// reads once the chainstate's reader is attached. `stop` raises
/// `shutdown`.
pub fn start_rpc_server(
    options: &NodeOptions,
    shutdown: Arc<AtomicBool>,
) -> Result<Option<NodeRpc>, RpcStartError> {
    if !options.rpc.server {
        return Ok(None);
    }
    let config = server_config(options)?;
    let backend = Arc::new(
        ChainBackend::unattached(
            options.params.clone(),
            options.blocks_directory.clone(),
            shutdown,
        )
        .with_memory_budget(crate::memory_budget::memory_budget(options))
        .with_prune(options.prune)
        .with_chain_directory(options.chain_directory.clone()),
    );
    let server = RpcServer::start(config, backend.clone())?;
    Ok(Some(NodeRpc { server, backend }))
}

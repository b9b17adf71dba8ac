//! JSON-RPC errors with Core's codes (`rpc/protocol.h`) and messages.

use std::borrow::Cow;

use crate::backend::{BackendError, NetworkRequestError};

/// Core's error codes, those this server gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RpcErrorCode {
    /// -32600: the request object is malformed.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32603: internal error.
    InternalError,
    /// -32700: the body is not JSON.
    ParseError,
    /// -1: `std::exception` thrown by a command (wrong argument count, bad
    /// integer, ...).
    MiscError,
    /// -3: a parameter of the wrong JSON type.
    TypeError,
    /// -5: invalid address or key (block not found).
    InvalidAddressOrKey,
    /// -7: out of memory (a batch whose replies would exceed their bound).
    OutOfMemory,
    /// -8: invalid, missing or duplicate parameter.
    InvalidParameter,
    /// -9: not connected, or shutting down.
    ClientNotConnected,
    /// -20: the database failed (a chain change that could not be made).
    DatabaseError,
    /// -22: data that could not be decoded (a snapshot's metadata).
    DeserializationError,
    /// -25: a block or header that failed verification (`submitheader`).
    VerifyError,
    /// -28: still warming up.
    InWarmup,
    /// -31: no networking.
    ClientP2pDisabled,
    /// -32602: invalid method parameters (`disconnectnode`).
    InvalidParams,
    /// -23: the node (or subnet) is added (banned) already.
    ClientNodeAlreadyAdded,
    /// -24: the node was not added.
    ClientNodeNotAdded,
    /// -29: no such connected node.
    ClientNodeNotConnected,
    /// -30: an invalid IP or subnet.
    ClientInvalidIpOrSubnet,
}

impl RpcErrorCode {
    /// The number on the wire.
    pub const fn number(self) -> i32 {
        match self {
            RpcErrorCode::InvalidRequest => -32600,
            RpcErrorCode::MethodNotFound => -32601,
            RpcErrorCode::InternalError => -32603,
            RpcErrorCode::ParseError => -32700,
            RpcErrorCode::MiscError => -1,
            RpcErrorCode::TypeError => -3,
            RpcErrorCode::InvalidAddressOrKey => -5,
            RpcErrorCode::OutOfMemory => -7,
            RpcErrorCode::InvalidParameter => -8,
            RpcErrorCode::ClientNotConnected => -9,
            RpcErrorCode::DatabaseError => -20,
            RpcErrorCode::DeserializationError => -22,
            RpcErrorCode::VerifyError => -25,
            RpcErrorCode::InWarmup => -28,
            RpcErrorCode::ClientP2pDisabled => -31,
            RpcErrorCode::InvalidParams => -32602,
            RpcErrorCode::ClientNodeAlreadyAdded => -23,
            RpcErrorCode::ClientNodeNotAdded => -24,
            RpcErrorCode::ClientNodeNotConnected => -29,
            RpcErrorCode::ClientInvalidIpOrSubnet => -30,
        }
    }
}

/// An error a JSON-RPC reply carries: a code and Core's message for it.
/// The message is wire text (it may quote what the client sent), not a
/// diagnosis: server-side failures are [`BackendError`]s turned into one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({})", code.number())]
pub struct RpcError {
    /// The code.
    pub code: RpcErrorCode,
    /// The message.
    pub message: Cow<'static, str>,
}

impl RpcError {
    /// An error with a fixed message.
    pub const fn new(code: RpcErrorCode, message: &'static str) -> RpcError {
        RpcError { code, message: Cow::Borrowed(message) }
    }

    /// An error with a composed message.
    pub fn with_message(code: RpcErrorCode, message: String) -> RpcError {
        RpcError { code, message: Cow::Owned(message) }
    }

    /// -8 with Core's message.
    pub fn invalid_parameter(message: String) -> RpcError {
        RpcError::with_message(RpcErrorCode::InvalidParameter, message)
    }

    /// Core's "Block not found" (-5).
    pub const fn block_not_found() -> RpcError {
        RpcError::new(RpcErrorCode::InvalidAddressOrKey, "Block not found")
    }
}

impl From<BackendError> for RpcError {
    fn from(error: BackendError) -> RpcError {
        match error {
            BackendError::NoTip => RpcError::new(RpcErrorCode::InWarmup, "Loading block index…"),
            BackendError::Stopped => {
                RpcError::new(RpcErrorCode::ClientNotConnected, "Shutting down")
            }
            // Core's `CheckBlockDataAvailability`.
            BackendError::BlockDataUnavailable { pruned: true, .. } => {
                RpcError::new(RpcErrorCode::MiscError, "Block not available (pruned data)")
            }
            BackendError::BlockDataUnavailable { pruned: false, .. } => {
                RpcError::new(RpcErrorCode::MiscError, "Block not available (not fully downloaded)")
            }
            BackendError::BlockNotFound { .. } => RpcError::block_not_found(),
            BackendError::NotPruning => RpcError::new(
                RpcErrorCode::MiscError,
                "Cannot prune blocks because node is not in prune mode.",
            ),
            BackendError::RollbackDataPruned => RpcError::new(
                RpcErrorCode::MiscError,
                "Could not roll back to requested height since necessary block data is already pruned.",
            ),
            BackendError::SnapshotPathExists { .. }
            | BackendError::HeightAboveTip { .. }
            | BackendError::SnapshotPathUnwritable { .. }
            | BackendError::SnapshotUnreadable { .. }
            | BackendError::SnapshotLoadRunning => {
                RpcError::with_message(RpcErrorCode::InvalidParameter, error.to_string())
            }
            BackendError::HeaderRefused { .. } => {
                RpcError::with_message(RpcErrorCode::VerifyError, error.to_string())
            }
            // Core's `loadtxoutset` codes and words.
            BackendError::SnapshotMetadataUnparsable { .. } => {
                RpcError::with_message(RpcErrorCode::DeserializationError, error.to_string())
            }
            BackendError::SnapshotNotLoaded { .. } => {
                RpcError::with_message(RpcErrorCode::InternalError, error.to_string())
            }
            // Core's `RPC_DATABASE_ERROR` with the validation state's text.
            BackendError::ChainChangeFailed { .. } => {
                RpcError::with_message(RpcErrorCode::DatabaseError, error_chain(&error))
            }
            BackendError::P2pDisabled => RpcError::new(
                RpcErrorCode::ClientP2pDisabled,
                "Error: Peer-to-peer functionality missing or disabled",
            ),
            BackendError::Network(refusal) => network_request_error(refusal),
            other => RpcError::with_message(RpcErrorCode::MiscError, error_chain(&other)),
        }
    }
}

/// Core's code and words for a request the network side refused.
fn network_request_error(refusal: NetworkRequestError) -> RpcError {
    use RpcErrorCode::{
        ClientInvalidIpOrSubnet, ClientNodeAlreadyAdded, ClientNodeNotAdded,
        ClientNodeNotConnected, InvalidParameter, MiscError,
    };
    match refusal {
        NetworkRequestError::NodeAlreadyAdded => {
            RpcError::new(ClientNodeAlreadyAdded, "Error: Node already added")
        }
        NetworkRequestError::NodeNotAdded => RpcError::new(
            ClientNodeNotAdded,
            "Error: Node could not be removed. It has not been added previously.",
        ),
        NetworkRequestError::NodeNotConnected => {
            RpcError::new(ClientNodeNotConnected, "Node not found in connected nodes")
        }
        NetworkRequestError::V2TransportDisabled => RpcError::new(
            InvalidParameter,
            "Error: v2transport requested but not enabled (see -v2transport)",
        ),
        NetworkRequestError::AlreadyBanned => {
            RpcError::new(ClientNodeAlreadyAdded, "Error: IP/Subnet already banned")
        }
        NetworkRequestError::NotBanned => RpcError::new(
            ClientInvalidIpOrSubnet,
            "Error: Unban failed. Requested address/subnet was not previously manually banned.",
        ),
        other => RpcError::with_message(MiscError, format!("Error: {other}")),
    }
}

/// An error and its sources, joined with `: `.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

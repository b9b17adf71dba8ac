//! JSON-RPC and REST for Ibex: the HTTP server `bitcoin-cli` and
//! explorers talk to ([`server`], over the node's [`NodeBackend`]), and
//! the streaming JSON writer behind `getblock`, `getblockheader` and
//! `getrawtransaction`, giving exactly Bitcoin Core 30's answers (same keys, same order, same number formats) written
//! straight from a zero-copy [`BlockView`](ibex_primitives::BlockView) into
//! a `Vec<u8>`. There is no DOM: every value goes from the block's bytes to
//! the output once, and nothing is allocated per field (Base58, Bech32,
//! numbers and descriptor checksums work on stack buffers; an address in
//! `desc` is copied, not encoded twice, into `address`).
//!
//! - [`write_block_json`] / [`write_block_hex_json`]: `getblock` at
//!   verbosity 1-3 / 0.
//! - [`write_header_json`] / [`write_header_hex_json`]: `getblockheader`.
//! - [`write_transaction_json`] / [`write_transaction_hex_json`]:
//!   `getrawtransaction`.
//!
//! - [`RpcServer`]: HTTP/1.1 JSON-RPC 1.0/2.0 and REST with Core's
//!   authentication, status codes, error codes and messages; the methods
//!   in `methods` (`getblockchaininfo`, `getblock`, `getpeerinfo`, ...).
//!
//! The chain facts a block's bytes do not hold come from the caller:
//! [`BlockContext`] (height, confirmations, median time, chain work, next
//! block, `nTx` from the block index) and
//! [`SpentCoin`](ibex_primitives::SpentCoin)s (the undo data
//! that gives `fee` and `prevout`). Output follows Core's source:
//! `blockheaderToJSON` / `blockToJSON` (`rpc/blockchain.cpp`), `TxToUniv`
//! and `ScriptToUniv` (`core_write.cpp`), `InferDescriptor`
//! (`script/descriptor.cpp`), `Solver` (`script/solver.cpp`),
//! `EncodeDestination` (`key_io.cpp`), UniValue's number formats.
//!
//! # Napkin math
//!
//! Mainnet block 413,567: 999,887 bytes, 1,557 transactions, 4,887 inputs
//! (662 KB of scriptSigs, mostly P2SH multisig spends), 3,581 outputs
//! (2,841 P2PKH, 737 P2SH; 88 KB of scripts), pre-segwit.
//!
//! Bytes: at verbosity 2 each transaction's `hex` is 2 bytes per block
//! byte (2.0 MB); each scriptSig is written twice more, `asm` and `hex`
//! (~2.7 MB); each output is ~280 bytes (`asm`, `desc`, `hex`, `address`,
//! `type`, keys: ~1.0 MB); each input's txid, vout, sequence and keys
//! ~150 bytes (~0.7 MB). Total ~6.5 MB, measured 6.86 MB: about 7 bytes of
//! JSON per block byte. Verbosity 3 adds a ~360-byte `prevout` per input
//! (~1.8 MB): 8.63 MB measured.
//!
//! Time: hex through a byte-pair table writes ~2 GB/s, so ~5 MB of hex is
//! ~2.5 ms at most; the txids are 1 MB of double SHA-256 at 1.75 GB/s
//! (SHA-NI), ~0.6 ms; each of the ~3,600 addresses is a Base58Check (two
//! SHA-256 compressions and ~50 word divisions, ~0.3 us). So verbosity 2
//! should take ~3 ms, bound by writing memory and hashing; measured
//! 3.0 ms (verbosity 3: 4.9 ms, verbosity 1: 0.77 ms, parse included:
//! `benches/block_json.rs`) against Core's 44-61 ms for verbosity 2
//! (`BlockToJsonVerbosity2`, `../shared/anchors.md`), which builds a
//! UniValue tree of ~100,000 heap-allocated nodes and then serialises it
//! (the serialisation alone, `BlockToJsonVerboseWrite`, is 24-29 ms).

pub mod address;
pub mod backend;
pub mod block_json;
pub mod context;
pub mod deployment;
pub mod error;
pub mod raw_transaction;
pub mod script_type;
pub mod server;

mod methods;

mod descriptor;
mod hex;
mod json;
mod number;
mod script_asm;
mod script_json;
mod transaction_json;

pub use address::AddressParams;
pub use backend::{BackendError, NodeBackend};
pub use block_json::{
    write_block_hex_json, write_block_json, write_header_hex_json, write_header_json,
};
pub use context::{
    BlockContext, BlockVerbosity, ChainPosition, TransactionBlockContext, TransactionVerbosity,
};
pub use error::RpcJsonError;
pub use methods::chainstate::{txoutset_hash_type, write_txoutset_info_json};
pub use methods::error::{RpcError, RpcErrorCode};
pub use raw_transaction::{write_transaction_hex_json, write_transaction_json};
pub use script_type::{classify, ScriptType};
pub use server::config::{rpc_bind_addresses, ServerConfig, Subnet};
pub use server::{BindFailure, HttpReply, RequestHandler, RpcServer, ServerError};

//! The engine's stages. Each owns its state and is driven by the engine
//! ([`crate::engine::Chainstate`]), which moves a block from one to the
//! next and is the only code that touches more than one stage.
//!
//! | stage | owns | may touch |
//! |---|---|---|
//! | [`selection`]: headers and chain selection | shared: blocks waiting for a parent's data, the best header, invalid marks; per chainstate: its candidates | reads the block index; writes only status bits (invalid marks) |
//! | [`connector`]: connect, per chainstate | the UTXO cache over its coins database, the block kept from accept, the read-ahead of stored blocks, the prevout prefetch | coins only |
//! | [`script_queue`]: scripts | per chainstate, the blocks pending on the engine's `-par` threads (at most [`script_queue::SCRIPT_PIPELINE_BLOCKS`] + 1) | shared, read-only copies of the blocks and their spent coins |
//! | [`persistence`]: persistence, shared | block files, undo files, the block index database | files and the index database |
//!
//! The block index ([`crate::index::BlockIndex`]) is the engine's shared
//! record, and each chainstate's chain ([`crate::index::ActiveChain`]) its
//! own: every stage is handed what it needs of them, and only the engine
//! changes them, between stages (see [`crate::engine`] for the chainstates).
//!
//! # How a block moves
//! 1. A source (the import reader, a peer, an RPC `submitblock`) parses it
//!    once ([`crate::PreparedBlock`]: bytes, view, hash, txids, the
//!    `CheckBlock` verdict) and offers it to the engine
//!    ([`crate::engine::Chainstate::offer_block`]).
//! 2. Accept: the header's context and `ContextualCheckBlock` against the
//!    index ([`headers`]); persistence appends it to a block file unless it
//!    is in one; selection links it and may make it a candidate.
//! 3. Activate: selection names the best candidate; the connector
//!    disconnects to the fork (undo data read back by persistence) and
//!    connects towards it, each block's prevouts prefetched first.
//! 4. Scripts: each connected block goes to the script queue; its verdict
//!    is settled while later blocks connect. Only then does persistence
//!    write its undo data and the tip is announced (`UpdateTip`); a failure
//!    makes the connector roll back every block above it, newest first.
//! 5. Flush: persistence syncs the files and writes the index, then the
//!    connector's cache writes the coins (in the background while the next
//!    blocks connect).

pub mod block_files;
pub mod connector;
pub mod headers;
pub mod persistence;
pub mod script_queue;
pub mod selection;

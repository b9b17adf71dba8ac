//! Where a block (or a block's spent coins) came from: a type of its own,
//! so that the engine's parts and the SwiftSync pass name it without
//! depending on each other.

/// Where an offered block came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockSource {
    /// A block file: the node's own (`-reindex`, its position known) or an
    /// external one (`-loadblock`).
    File,
    /// A peer, by the P2P layer's identifier.
    Peer(u64),
    /// A local submission (RPC).
    Local,
}

impl std::fmt::Display for BlockSource {
    /// As the log names it (Core's `peer=N` for a peer).
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockSource::File => formatter.write_str("a block file"),
            BlockSource::Peer(id) => write!(formatter, "peer={id}"),
            BlockSource::Local => formatter.write_str("a local submission"),
        }
    }
}

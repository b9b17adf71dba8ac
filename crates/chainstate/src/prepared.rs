//! A block read and checked ahead of the tip: its parse, hash and
//! transaction ids ([`ParsedBlock`], made once) and the verdict of the
//! context-free checks (Core's `CheckBlock`), computed on worker threads so
//! the connecting thread never walks the block's bytes again: accept,
//! prefetch, connect, the script job and a roll back all read the same
//! parse.

use ibex_blockstore::BlockPosition;
use ibex_consensus::{check_block_header, check_block_on_network, BlockError};
use ibex_primitives::{BlockBuffers, BlockHash, BlockView, Header, Params, ParsedBlock, Txid};

/// Why a block's bytes could not even be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undecodable block at {position:?}: {reason}")]
pub struct UndecodableBlock {
    /// Where it was read.
    pub position: Option<BlockPosition>,
    /// The decoding error, as text for the log.
    pub reason: ibex_primitives::BlockDecodeError,
}

/// A parsed and hashed block with its context-free verdict.
#[derive(Debug)]
pub struct PreparedBlock {
    /// The block, parsed once.
    pub block: ParsedBlock,
    /// Where it is stored, when it is already in a block file.
    pub position: Option<BlockPosition>,
    /// Proof of work and `CheckBlock`.
    pub check: Result<(), BlockError>,
    /// The witness commitment was found to match, with segwit active at
    /// the block's height, before the block reached the engine (Core's
    /// `m_checked_witness_commitment`, set by `IsBlockMutated` on a peer's
    /// block): `ContextualCheckBlock` does not hash the witnesses again.
    /// Only the one who checked may set it.
    pub witness_checked: bool,
}

impl PreparedBlock {
    /// Parses, hashes and checks `bytes`.
    pub fn prepare(
        bytes: Vec<u8>,
        position: Option<BlockPosition>,
        params: &Params,
        buffers: &mut BlockBuffers,
    ) -> Result<PreparedBlock, UndecodableBlock> {
        let block = ParsedBlock::parse(bytes, buffers)
            .map_err(|reason| UndecodableBlock { position, reason })?;
        let check = check_block_header(block.header(), &block.hash(), params).and_then(|()| {
            check_block_on_network(block.view(), block.txids(), &block.hash(), params)
        });
        Ok(PreparedBlock { block, position, check, witness_checked: false })
    }

    /// Parses and hashes `bytes` of a block already accepted (read back
    /// from its block file to connect or disconnect it): its `CheckBlock`
    /// verdict is in the index, so it is not computed again.
    pub fn accepted(
        bytes: Vec<u8>,
        position: BlockPosition,
        buffers: &mut BlockBuffers,
    ) -> Result<PreparedBlock, UndecodableBlock> {
        let position = Some(position);
        let block = ParsedBlock::parse(bytes, buffers)
            .map_err(|reason| UndecodableBlock { position, reason })?;
        Ok(PreparedBlock { block, position, check: Ok(()), witness_checked: false })
    }

    /// The parse.
    #[inline]
    pub fn view(&self) -> &BlockView<'_> {
        self.block.view()
    }

    /// The serialisation.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        self.block.bytes()
    }

    /// The header.
    #[inline]
    pub fn header(&self) -> &Header {
        self.block.header()
    }

    /// The block hash.
    #[inline]
    pub fn hash(&self) -> BlockHash {
        self.block.hash()
    }

    /// The transaction ids, in block order.
    #[inline]
    pub fn txids(&self) -> &[Txid] {
        self.block.txids()
    }

    /// Inputs, the coinbase's included.
    #[inline]
    pub fn input_count(&self) -> usize {
        self.block.view().input_count()
    }
}

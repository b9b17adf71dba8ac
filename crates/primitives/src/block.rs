//! Zero-copy block decoding.
//!
//! [`BlockView::parse`] walks the block once and keeps every input and output
//! view of every transaction in two flat vectors (plus one small layout record
//! per transaction); [`BlockView::transaction`] rebuilds a
//! [`TransactionView`] from those in a few instructions. Scripts, witnesses and
//! outpoints stay in the caller's buffer.

use crate::encode::{compact_size_len, Reader};
use crate::error::{BlockDecodeError, Field};
use crate::hash::{sha256_each, sha256_each_32_in_place, BlockHash, Txid};
use crate::header::{Header, HEADER_BYTES};
use crate::limits::WITNESS_SCALE_FACTOR;
use crate::merkle::{merkle_root, MerkleRoot};
use crate::transaction::{
    decode_transaction, InputView, OutputView, TransactionLayout, TransactionView,
    TRANSACTION_BYTES_MIN,
};

/// Rough sizes used only to pre-size the view vectors (not limits).
const BYTES_PER_INPUT_ESTIMATE: usize = 160;
const BYTES_PER_OUTPUT_ESTIMATE: usize = 120;

/// The vectors behind a [`BlockView`], kept between blocks so a pipeline that
/// decodes block after block allocates (and page-faults) them once, not per block.
/// Get them back with [`BlockView::into_buffers`].
#[derive(Debug, Default)]
pub struct BlockBuffers {
    layouts: Vec<TransactionLayout>,
    inputs: Vec<InputView<'static>>,
    outputs: Vec<OutputView<'static>>,
}

/// Empties a vector and changes its element type to one of the same layout,
/// keeping the allocation (std collects a `Vec`'s own iterator in place).
fn recycle<From, To>(mut vector: Vec<From>) -> Vec<To> {
    vector.clear();
    vector.into_iter().filter_map(|_| None).collect()
}

/// A decoded block borrowing its bytes.
#[derive(Debug, Clone)]
pub struct BlockView<'a> {
    bytes: &'a [u8],
    header: Header,
    layouts: Vec<TransactionLayout>,
    inputs: Vec<InputView<'a>>,
    outputs: Vec<OutputView<'a>>,
}

impl<'a> BlockView<'a> {
    /// Decodes a whole block; bytes after the last transaction are an error.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BlockDecodeError> {
        let mut reader = Reader::new(bytes);
        let block = Self::decode(&mut reader)?;
        if reader.remaining() != 0 {
            return Err(BlockDecodeError::TrailingBytes {
                offset: reader.position(),
                count: reader.remaining(),
            });
        }
        Ok(block)
    }

    /// [`BlockView::parse`] reusing the vectors of an earlier block.
    pub fn parse_with_buffers(
        bytes: &'a [u8],
        buffers: BlockBuffers,
    ) -> Result<Self, BlockDecodeError> {
        let mut reader = Reader::new(bytes);
        let block = Self::decode_with_buffers(&mut reader, buffers)?;
        if reader.remaining() != 0 {
            return Err(BlockDecodeError::TrailingBytes {
                offset: reader.position(),
                count: reader.remaining(),
            });
        }
        Ok(block)
    }

    /// Takes the vectors for the next block, leaving this view without
    /// transactions (for an owner that cannot give the view up by value).
    pub fn take_buffers(&mut self) -> BlockBuffers {
        BlockBuffers {
            layouts: recycle(std::mem::take(&mut self.layouts)),
            inputs: recycle(std::mem::take(&mut self.inputs)),
            outputs: recycle(std::mem::take(&mut self.outputs)),
        }
    }

    /// Gives back the vectors for the next block.
    pub fn into_buffers(self) -> BlockBuffers {
        BlockBuffers {
            layouts: recycle(self.layouts),
            inputs: recycle(self.inputs),
            outputs: recycle(self.outputs),
        }
    }

    /// Decodes a block at the reader's position and leaves the reader after it.
    pub fn decode(reader: &mut Reader<'a>) -> Result<Self, BlockDecodeError> {
        Self::decode_with_buffers(reader, BlockBuffers::default())
    }

    /// [`BlockView::decode`] reusing the vectors of an earlier block.
    pub fn decode_with_buffers(
        reader: &mut Reader<'a>,
        buffers: BlockBuffers,
    ) -> Result<Self, BlockDecodeError> {
        let start = reader.position();
        let header_bytes = reader.take_array::<HEADER_BYTES>().map_err(BlockDecodeError::Header)?;
        let header = Header::decode(header_bytes);
        let count = reader
            .read_count(Field::Transactions, TRANSACTION_BYTES_MIN)
            .map_err(BlockDecodeError::Header)?;
        let body_bytes = reader.remaining();
        let mut layouts = buffers.layouts;
        let mut inputs: Vec<InputView<'a>> = recycle(buffers.inputs);
        let mut outputs: Vec<OutputView<'a>> = recycle(buffers.outputs);
        layouts.clear();
        layouts.reserve(count);
        inputs.reserve(body_bytes / BYTES_PER_INPUT_ESTIMATE);
        outputs.reserve(body_bytes / BYTES_PER_OUTPUT_ESTIMATE);
        for index in 0..count {
            let mut layout = decode_transaction(reader, &mut inputs, &mut outputs)
                .map_err(|source| BlockDecodeError::Transaction { index, source })?;
            layout.start -= start;
            layouts.push(layout);
        }
        let bytes = reader.input().get(start..reader.position()).unwrap_or_default();
        Ok(BlockView { bytes, header, layouts, inputs, outputs })
    }

    /// The block's serialisation.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The header.
    #[inline]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The block hash.
    #[inline]
    pub fn block_hash(&self) -> BlockHash {
        self.header.block_hash()
    }

    /// Number of transactions.
    #[inline]
    pub fn transaction_count(&self) -> usize {
        self.layouts.len()
    }

    /// Transaction `index`, if there is one.
    #[inline]
    pub fn transaction(&self, index: usize) -> Option<TransactionView<'_>> {
        let layout = self.layouts.get(index)?;
        Some(TransactionView::from_layout(self.bytes, &self.inputs, &self.outputs, layout))
    }

    /// The transactions in block order.
    pub fn transactions(&self) -> impl ExactSizeIterator<Item = TransactionView<'_>> + '_ {
        self.layouts.iter().map(move |layout| {
            TransactionView::from_layout(self.bytes, &self.inputs, &self.outputs, layout)
        })
    }

    /// Total number of inputs over all transactions.
    #[inline]
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Total number of outputs over all transactions.
    #[inline]
    pub fn output_count(&self) -> usize {
        self.outputs.len()
    }

    /// Serialised size with witness data.
    #[inline]
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// Serialised size without witness data.
    pub fn stripped_size(&self) -> usize {
        let witness_bytes: usize = self
            .transactions()
            .map(|transaction| transaction.total_size() - transaction.base_size())
            .sum();
        self.bytes.len() - witness_bytes
    }

    /// BIP141 weight.
    pub fn weight(&self) -> usize {
        self.stripped_size() * (WITNESS_SCALE_FACTOR - 1) + self.size()
    }

    /// Whether any transaction carries witness data.
    pub fn has_witness(&self) -> bool {
        self.transactions().any(|transaction| transaction.has_witness())
    }

    /// Every transaction's txid, in block order.
    pub fn txids(&self) -> Vec<Txid> {
        let mut txids = Vec::with_capacity(self.layouts.len());
        self.txids_into(&mut txids);
        txids.into_iter().map(Txid).collect()
    }

    /// Every txid in block order into `txids` (cleared first), as raw bytes ready
    /// to be merkle leaves. Both SHA-256s of the transactions run two at a time
    /// with interleaved SHA-NI where the CPU has it ([`sha256_each`] on the
    /// witness-free serialisations, then [`sha256_each_32_in_place`]).
    pub fn txids_into(&self, txids: &mut Vec<[u8; 32]>) {
        let messages: Vec<[&[u8]; 3]> =
            self.transactions().map(|transaction| transaction.base_parts()).collect();
        txids.clear();
        txids.resize(messages.len(), [0; 32]);
        sha256_each(&messages, txids);
        sha256_each_32_in_place(txids);
    }

    /// The merkle root of the txids, with Core's mutation flag.
    pub fn compute_merkle_root(&self) -> MerkleRoot {
        let mut txids = Vec::with_capacity(self.layouts.len());
        self.txids_into(&mut txids);
        merkle_root(txids)
    }

    /// Offset of the first transaction (header plus transaction count).
    pub fn transactions_offset(&self) -> usize {
        HEADER_BYTES + compact_size_len(self.layouts.len() as u64)
    }
}

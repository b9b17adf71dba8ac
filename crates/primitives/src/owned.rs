//! Owned transactions and blocks, for building and changing them (the chain
//! generator, tests, RPC), with exact encoding and sizes computed without writing.
//!
//! Napkin math for encoding: a 1 MB block is ~15,000 inputs and outputs; each
//! is a few `extend_from_slice` calls into a `Vec` sized exactly up front
//! (no growth, no per-byte `Write` calls), so encoding is bounded by copying 1 MB
//! (~0.1 ms) plus per-field overhead.

use crate::block::BlockView;
use crate::encode::{compact_size_len, write_compact_size, write_var_bytes};
use crate::error::BlockDecodeError;
use crate::error::DecodeError;
use crate::hash::{sha256d, BlockHash, Txid, Wtxid};
use crate::header::{Header, HEADER_BYTES};
use crate::limits::WITNESS_SCALE_FACTOR;
use crate::merkle::{merkle_root, MerkleRoot};
use crate::transaction::{OutPoint, ParsedTransaction, TransactionView};

/// An owned transaction input.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxInput {
    /// The output spent.
    pub previous_output: OutPoint,
    /// The unlocking script.
    pub script_sig: Vec<u8>,
    /// nSequence.
    pub sequence: u32,
    /// The witness stack, bottom first.
    pub witness: Vec<Vec<u8>>,
}

/// An owned transaction output.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxOutput {
    /// Value in satoshis.
    pub value: i64,
    /// The locking script.
    pub script_pubkey: Vec<u8>,
}

/// An owned transaction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Transaction {
    /// nVersion.
    pub version: i32,
    /// Inputs.
    pub inputs: Vec<TxInput>,
    /// Outputs.
    pub outputs: Vec<TxOutput>,
    /// nLockTime.
    pub lock_time: u32,
}

impl Default for OutPoint {
    fn default() -> Self {
        OutPoint::NULL
    }
}

fn var_bytes_len(bytes: &[u8]) -> usize {
    compact_size_len(bytes.len() as u64) + bytes.len()
}

impl TxInput {
    fn base_size(&self) -> usize {
        36 + var_bytes_len(&self.script_sig) + 4
    }

    fn witness_size(&self) -> usize {
        compact_size_len(self.witness.len() as u64)
            + self.witness.iter().map(|item| var_bytes_len(item)).sum::<usize>()
    }
}

impl TxOutput {
    fn size(&self) -> usize {
        8 + var_bytes_len(&self.script_pubkey)
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.value.to_le_bytes());
        write_var_bytes(out, &self.script_pubkey);
    }
}

impl Transaction {
    /// Decodes exactly one transaction.
    pub fn decode(bytes: &[u8]) -> Result<Transaction, DecodeError> {
        Ok(ParsedTransaction::parse(bytes)?.view().to_owned())
    }

    /// Whether any input has a witness; such a transaction serialises with the
    /// segwit marker and flag.
    pub fn has_witness(&self) -> bool {
        self.inputs.iter().any(|input| !input.witness.is_empty())
    }

    /// Whether this is a coinbase.
    pub fn is_coinbase(&self) -> bool {
        self.inputs.len() == 1 && self.inputs[0].previous_output.is_null()
    }

    /// Serialised size without witness data.
    pub fn base_size(&self) -> usize {
        4 + compact_size_len(self.inputs.len() as u64)
            + self.inputs.iter().map(TxInput::base_size).sum::<usize>()
            + compact_size_len(self.outputs.len() as u64)
            + self.outputs.iter().map(TxOutput::size).sum::<usize>()
            + 4
    }

    /// Serialised size with witness data.
    pub fn total_size(&self) -> usize {
        if !self.has_witness() {
            return self.base_size();
        }
        self.base_size() + 2 + self.inputs.iter().map(TxInput::witness_size).sum::<usize>()
    }

    /// BIP141 weight.
    pub fn weight(&self) -> usize {
        self.base_size() * (WITNESS_SCALE_FACTOR - 1) + self.total_size()
    }

    /// Appends the serialisation; with `include_witness` and witness data present,
    /// the segwit form.
    pub fn encode_to(&self, out: &mut Vec<u8>, include_witness: bool) {
        let segwit = include_witness && self.has_witness();
        out.extend_from_slice(&self.version.to_le_bytes());
        if segwit {
            out.extend_from_slice(&[0x00, 0x01]);
        }
        write_compact_size(out, self.inputs.len() as u64);
        for input in &self.inputs {
            out.extend_from_slice(&input.previous_output.to_bytes());
            write_var_bytes(out, &input.script_sig);
            out.extend_from_slice(&input.sequence.to_le_bytes());
        }
        write_compact_size(out, self.outputs.len() as u64);
        for output in &self.outputs {
            output.encode_to(out);
        }
        if segwit {
            for input in &self.inputs {
                write_compact_size(out, input.witness.len() as u64);
                for item in &input.witness {
                    write_var_bytes(out, item);
                }
            }
        }
        out.extend_from_slice(&self.lock_time.to_le_bytes());
    }

    /// The full serialisation (segwit form when it has witness data).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.total_size());
        self.encode_to(&mut out, true);
        out
    }

    /// The serialisation without witness data.
    pub fn encode_without_witness(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.base_size());
        self.encode_to(&mut out, false);
        out
    }

    /// The txid.
    pub fn txid(&self) -> Txid {
        Txid(sha256d(&self.encode_without_witness()))
    }

    /// The wtxid.
    pub fn wtxid(&self) -> Wtxid {
        Wtxid(sha256d(&self.encode()))
    }
}

impl TransactionView<'_> {
    /// Copies the view into an owned transaction.
    pub fn to_owned(&self) -> Transaction {
        Transaction {
            version: self.version(),
            inputs: self
                .inputs()
                .iter()
                .map(|input| TxInput {
                    previous_output: input.previous_output(),
                    script_sig: input.script_sig.to_vec(),
                    sequence: input.sequence,
                    witness: input.witness.iter().map(<[u8]>::to_vec).collect(),
                })
                .collect(),
            outputs: self
                .outputs()
                .iter()
                .map(|output| TxOutput {
                    value: output.value,
                    script_pubkey: output.script_pubkey.to_vec(),
                })
                .collect(),
            lock_time: self.lock_time(),
        }
    }
}

/// An owned block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The header.
    pub header: Header,
    /// The transactions, coinbase first.
    pub transactions: Vec<Transaction>,
}

impl Block {
    /// Decodes a whole block.
    pub fn decode(bytes: &[u8]) -> Result<Block, BlockDecodeError> {
        Ok(BlockView::parse(bytes)?.to_owned())
    }

    /// The block hash.
    pub fn block_hash(&self) -> BlockHash {
        self.header.block_hash()
    }

    /// Serialised size with witness data.
    pub fn size(&self) -> usize {
        HEADER_BYTES
            + compact_size_len(self.transactions.len() as u64)
            + self.transactions.iter().map(Transaction::total_size).sum::<usize>()
    }

    /// Serialised size without witness data.
    pub fn stripped_size(&self) -> usize {
        HEADER_BYTES
            + compact_size_len(self.transactions.len() as u64)
            + self.transactions.iter().map(Transaction::base_size).sum::<usize>()
    }

    /// BIP141 weight.
    pub fn weight(&self) -> usize {
        self.stripped_size() * (WITNESS_SCALE_FACTOR - 1) + self.size()
    }

    /// Appends the full serialisation.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.header.encode());
        write_compact_size(out, self.transactions.len() as u64);
        for transaction in &self.transactions {
            transaction.encode_to(out, true);
        }
    }

    /// The full serialisation, allocated once at its exact size.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size());
        self.encode_to(&mut out);
        out
    }

    /// The merkle root of the transactions' txids, with Core's mutation flag.
    pub fn compute_merkle_root(&self) -> MerkleRoot {
        merkle_root(self.transactions.iter().map(|transaction| transaction.txid().0).collect())
    }
}

impl BlockView<'_> {
    /// Copies the view into an owned block.
    pub fn to_owned(&self) -> Block {
        Block {
            header: *self.header(),
            transactions: self.transactions().map(|transaction| transaction.to_owned()).collect(),
        }
    }
}

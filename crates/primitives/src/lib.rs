//! Bitcoin's data structures for Ibex: blocks, headers, transactions, hashes,
//! merkle roots, amounts, heights, spent coins and network parameters.
//!
//! Two representations, one encoding:
//! - **Views** ([`BlockView`], [`TransactionView`], [`InputView`], [`OutputView`])
//!   borrow the serialised bytes. The validation hot path decodes a block into
//!   views with one forward walk and hashes txids straight from the raw bytes.
//! - **Owned** types ([`Block`], [`Transaction`], [`TxInput`], [`TxOutput`]) for
//!   building blocks and transactions, with exact sizes computed without writing.
//!
//! Every decoder takes untrusted bytes and returns a typed [`DecodeError`] or
//! [`BlockDecodeError`]; no input can panic or make it allocate more than the
//! input's own length justifies.

pub mod amount;
pub mod block;
pub mod encode;
pub mod error;
pub mod hash;
pub mod header;
pub mod height;
pub mod hex;
pub mod hints;
pub mod limits;
pub mod lock_time;
pub mod merkle;
pub mod owned;
pub mod parsed_block;
pub mod random;
pub mod spent_coin;
pub mod transaction;

pub use amount::{Amount, AmountError, PackedAmount, COIN, MAX_MONEY};
pub use block::{BlockBuffers, BlockView};
pub use error::{BlockDecodeError, DecodeError, Field};
pub use hash::{BlockHash, Hash256, Txid, Wtxid};
pub use header::{Header, HEADER_BYTES};
pub use height::Height;
pub use merkle::{check_witness_commitment, merkle_root, MerkleRoot, WitnessCommitmentError};
pub use owned::{Block, Transaction, TxInput, TxOutput};
pub use parsed_block::ParsedBlock;
pub use spent_coin::{SpentCoin, SpentCoinBuf};
pub use transaction::{
    InputView, OutPoint, OutputView, ParsedTransaction, TransactionView, WitnessView,
};
pub mod params;
pub mod pow;
pub use params::{Network, Params};
pub use pow::{ChainWork, CompactTarget, Target, U256};
pub mod muhash;
pub mod txoutset;

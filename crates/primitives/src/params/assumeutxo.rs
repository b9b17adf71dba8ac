//! The AssumeUTXO table (Core's `m_assumeutxo_data`): for each network,
//! the blocks whose UTXO set a snapshot may claim, with the set's
//! `hash_serialized_3` and the chain's transaction count there. A snapshot
//! is loaded only when its base block is in this table and its coins hash
//! to the entry's value: the table is the trust, the file is not.
//!
//! The entries are Core's: v30.0's, and the four added for v31
//! (mainnet 935,000, testnet3 4,840,000, testnet4 120,000, signet 290,000)
//! so that the snapshots users share now load.

use super::literal::hash_literal;
use crate::hash::{BlockHash, Hash256};

/// One block a snapshot may be based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssumeUtxoEntry {
    /// The block's height.
    pub height: u32,
    /// The block's hash.
    pub block_hash: BlockHash,
    /// `hash_serialized_3` of the UTXO set after the block.
    pub hash_serialized: Hash256,
    /// Transactions in the chain up to and including the block (Core's
    /// `m_chain_tx_count`).
    pub chain_transaction_count: u64,
}

/// An entry from Core's display-order hex, checked at compile time.
macro_rules! entry {
    ($height:expr, $hash_serialized:literal, $chain_transaction_count:expr, $block_hash:literal) => {
        AssumeUtxoEntry {
            height: $height,
            block_hash: hash_literal!($block_hash),
            hash_serialized: Hash256(hash_literal!($hash_serialized).0),
            chain_transaction_count: $chain_transaction_count,
        }
    };
}

/// Mainnet.
pub const MAIN: [AssumeUtxoEntry; 4] = [
    entry!(
        840_000,
        "a2a5521b1b5ab65f67818e5e8eccabb7171a517f9e2382208f77687310768f96",
        991_032_194,
        "0000000000000000000320283a032748cef8227873ff4872689bf23f1cda83a5"
    ),
    entry!(
        880_000,
        "dbd190983eaf433ef7c15f78a278ae42c00ef52e0fd2a54953782175fbadcea9",
        1_145_604_538,
        "000000000000000000010b17283c3c400507969a9c2afd1dcf2082ec5cca2880"
    ),
    entry!(
        910_000,
        "4daf8a17b4902498c5787966a2b51c613acdab5df5db73f196fa59a4da2f1568",
        1_226_586_151,
        "0000000000000000000108970acb9522ffd516eae17acddcb1bd16469194a821"
    ),
    entry!(
        935_000,
        "e4b90ef9eae834f56c4b64d2d50143cee10ad87994c614d7d04125e2a6025050",
        1_305_397_408,
        "0000000000000000000147034958af1652b2b91bba607beacc5e72a56f0fb5ee"
    ),
];

/// Testnet3.
pub const TESTNET3: [AssumeUtxoEntry; 2] = [
    entry!(
        2_500_000,
        "f841584909f68e47897952345234e37fcd9128cd818f41ee6c3ca68db8071be7",
        66_484_552,
        "0000000000000093bcb68c03a9a168ae252572d348a2eaeba2cdf9231d73206f"
    ),
    entry!(
        4_840_000,
        "ce6bb677bb2ee9789c4a1c9d73e6683c53fc20e8fdbedbdaaf468982a0c8db2a",
        536_078_574,
        "00000000000000f4971a7fb37fbdff89315b69a2e1920c467654a382f0d64786"
    ),
];

/// Testnet4.
pub const TESTNET4: [AssumeUtxoEntry; 2] = [
    entry!(
        90_000,
        "784fb5e98241de66fdd429f4392155c9e7db5c017148e66e8fdbc95746f8b9b5",
        11_347_043,
        "0000000002ebe8bcda020e0dd6ccfbdfac531d2f6a81457191b99fc2df2dbe3b"
    ),
    entry!(
        120_000,
        "10b05d05ad468d0971162e1b222a4aa66caca89da2bb2a93f8f37fb29c4794b0",
        14_141_057,
        "000000000bd2317e51b3c5794981c35ba894ce27d3e772d5c39ecd9cbce01dc8"
    ),
];

/// The global default signet (a custom signet has none).
pub const SIGNET: [AssumeUtxoEntry; 2] = [
    entry!(
        160_000,
        "fe0a44309b74d6b5883d246cb419c6221bcccf0b308c9b59b7d70783dbdf928a",
        2_289_496,
        "0000003ca3c99aff040f2563c2ad8f8ec88bd0fd6b8f0895cfaf1ef90353a62c"
    ),
    entry!(
        290_000,
        "97267e000b4b876800167e71b9123f1529d13b14308abec2888bbd2160d14545",
        28_547_497,
        "0000000577f2741bb30cd9d39d6d71b023afbeb9764f6260786a97969d5c9ac0"
    ),
];

/// Regtest: the chain Core's functional tests mine (`feature_assumeutxo.py`).
pub const REGTEST: [AssumeUtxoEntry; 3] = [
    entry!(
        110,
        "86e9a1205b418b16dde3a18a78c730e30137e28466bda5dbf6b33ab8fc05447c",
        111,
        "135eec25a6fb277884e5824e7aa7d052c4868161c99a5122170b5266f86c273d"
    ),
    entry!(
        200,
        "17dcc016d188d16068907cdeb38b75691a118d43053b8cd6a25969419381d13a",
        201,
        "385901ccbd69dff6bbd00065d01fb8a9e464dede7cfe0372443884f9b1dcf6b9"
    ),
    entry!(
        299,
        "106b2c56233e378a824cf0d5ff2be42ed32c72f1605c9be288d00942908a40ac",
        334,
        "0c552ced4721c249a389eb9b08cb8da261cd46f0e7b5f9d064d48f3113406853"
    ),
];

//! BIP30 (no transaction may overwrite an unspent one) and its mainnet
//! history: two coinbases were duplicated before the rule existed
//! (Core's `IsBIP30Repeat`, `IsBIP30Unspendable` and `ConnectBlock`).

use super::literal::hash_literal;
use super::Params;
use crate::hash::BlockHash;

/// A block by height and hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockAtHeight {
    /// Its height.
    pub height: u32,
    /// Its hash.
    pub hash: BlockHash,
}

/// The two mainnet blocks whose coinbases repeat earlier coinbases' txids
/// (91,842 repeats 91,812's; 91,880 repeats 91,722's). `ConnectBlock` skips
/// the BIP30 check for them.
pub const BIP30_REPEAT_BLOCKS: [BlockAtHeight; 2] = [
    BlockAtHeight {
        height: 91_842,
        hash: hash_literal!("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec"),
    },
    BlockAtHeight {
        height: 91_880,
        hash: hash_literal!("00000000000743f190a18c5577a3c2d2a1f610ae9601ac046a38084ccb7cd721"),
    },
];

/// The two mainnet blocks whose coinbase outputs were overwritten and so
/// can never be spent. `DisconnectBlock` tolerates their missing coins.
pub const BIP30_UNSPENDABLE_BLOCKS: [BlockAtHeight; 2] = [
    BlockAtHeight {
        height: 91_722,
        hash: hash_literal!("00000000000271a2dc26e7667f8419f2e15416dc6955e5a6c6cdf3f2574dd08e"),
    },
    BlockAtHeight {
        height: 91_812,
        hash: hash_literal!("00000000000af0aed4792b1acee3d966af36cf5def14935db8de83d6f9306f2f"),
    },
];

/// From this height on BIP30 is checked again even on a chain through the
/// BIP34 block: some coinbases before BIP34 already commit to this height
/// (Core's `BIP34_IMPLIES_BIP30_LIMIT`).
pub const BIP34_IMPLIES_BIP30_LIMIT: u32 = 1_983_702;

/// Whether the block is one of the two mainnet duplicate-coinbase blocks
/// (Core's `IsBIP30Repeat`; on every network, as in Core).
pub fn is_bip30_repeat(height: u32, hash: &BlockHash) -> bool {
    BIP30_REPEAT_BLOCKS.iter().any(|block| block.height == height && block.hash == *hash)
}

/// Whether the block is one of the two mainnet blocks whose coinbase was
/// overwritten (Core's `IsBIP30Unspendable`).
pub fn is_bip30_unspendable(height: u32, hash: &BlockHash) -> bool {
    BIP30_UNSPENDABLE_BLOCKS.iter().any(|block| block.height == height && block.hash == *hash)
}

impl Params {
    /// Whether connecting the block at `height` with hash `hash` must check
    /// that none of its transactions' outputs already exist (Core's
    /// `ConnectBlock`). `hash_at_bip34_height` is the hash of the block at
    /// [`bip34_height`](Params::bip34_height) on this block's chain when its
    /// parent is at that height or above (`pprev->GetAncestor(BIP34Height)`),
    /// `None` otherwise.
    pub fn bip30_check_required(
        &self,
        height: u32,
        hash: &BlockHash,
        hash_at_bip34_height: Option<&BlockHash>,
    ) -> bool {
        let through_bip34_block = match (hash_at_bip34_height, &self.bip34_hash) {
            (Some(ancestor), Some(bip34_hash)) => ancestor == bip34_hash,
            _ => false,
        };
        let enforce = !is_bip30_repeat(height, hash) && !through_bip34_block;
        enforce || height >= BIP34_IMPLIES_BIP30_LIMIT
    }

    /// Whether BIP34 binds every block after genesis (its height is 0 or
    /// 1: regtest, signet and testnet4 by default): every coinbase then
    /// starts with its own height, so no two coinbases are alike, and a
    /// transaction repeating an earlier one's txid cannot be valid (see
    /// `ibex_chainstate::connect::Bip30Check::OnFailure`). Core still
    /// checks BIP30 there (no `BIP34Hash` is set), at every height.
    pub fn bip34_from_first_block(&self) -> bool {
        self.bip34_height <= 1
    }
}

//! Inventory entries of `inv`, `getdata` and `notfound` (Core's `CInv`):
//! a 4-byte type and a 32-byte hash.

use std::fmt;

use ibex_primitives::Hash256;

use crate::messages::error::{Field, MessageError};
use crate::messages::wire::{LimitCheck, ListRule, PayloadReader};

/// Entries an `inv`, `getdata` or `notfound` message may carry (Core's
/// `MAX_INV_SZ`).
pub const INVENTORY_ENTRIES_MAX: usize = 50_000;
/// Bytes of an inventory entry.
pub const INVENTORY_ENTRY_BYTES: usize = 4 + 32;

/// Core reads the whole vector, then compares its size with MAX_INV_SZ.
pub(crate) const INVENTORY_LIST: ListRule = ListRule {
    field: Field::InventoryEntries,
    limit: INVENTORY_ENTRIES_MAX,
    check: LimitCheck::AfterEntries,
    entry_bytes_min: INVENTORY_ENTRY_BYTES,
};

/// An inventory type. Core keeps the raw `uint32_t` and ignores types it
/// does not know ("Unknown inv type"), so any value decodes and is kept.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InventoryType(u32);

impl InventoryType {
    /// Set on `MSG_TX` and `MSG_BLOCK` to ask for witness data (BIP144).
    pub const WITNESS_FLAG: u32 = 1 << 30;
    /// `MSG_TX`: a transaction by txid.
    pub const TRANSACTION: InventoryType = InventoryType(1);
    /// `MSG_BLOCK`: a block.
    pub const BLOCK: InventoryType = InventoryType(2);
    /// `MSG_FILTERED_BLOCK`: a merkle block (BIP37), only in `getdata`.
    pub const FILTERED_BLOCK: InventoryType = InventoryType(3);
    /// `MSG_CMPCT_BLOCK`: a compact block (BIP152), only in `getdata`.
    pub const COMPACT_BLOCK: InventoryType = InventoryType(4);
    /// `MSG_WTX`: a transaction by wtxid (BIP339).
    pub const WTXID_TRANSACTION: InventoryType = InventoryType(5);
    /// `MSG_WITNESS_BLOCK`: a block with witnesses (BIP144).
    pub const WITNESS_BLOCK: InventoryType = InventoryType(2 | Self::WITNESS_FLAG);
    /// `MSG_WITNESS_TX`: a transaction with witness (BIP144).
    pub const WITNESS_TRANSACTION: InventoryType = InventoryType(1 | Self::WITNESS_FLAG);

    /// The type with these bits.
    pub const fn from_bits(bits: u32) -> InventoryType {
        InventoryType(bits)
    }

    /// The bits as sent.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether this is one of the seven types Core defines.
    pub fn is_known(self) -> bool {
        matches!(
            self,
            Self::TRANSACTION
                | Self::BLOCK
                | Self::FILTERED_BLOCK
                | Self::COMPACT_BLOCK
                | Self::WTXID_TRANSACTION
                | Self::WITNESS_BLOCK
                | Self::WITNESS_TRANSACTION
        )
    }

    /// A request for a block of any kind (Core's `IsGenBlkMsg`).
    pub fn is_block_request(self) -> bool {
        matches!(
            self,
            Self::BLOCK | Self::FILTERED_BLOCK | Self::COMPACT_BLOCK | Self::WITNESS_BLOCK
        )
    }

    /// A transaction of any kind (Core's `IsGenTxMsg`).
    pub fn is_transaction(self) -> bool {
        matches!(self, Self::TRANSACTION | Self::WTXID_TRANSACTION | Self::WITNESS_TRANSACTION)
    }
}

impl fmt::Debug for InventoryType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            Self::TRANSACTION => "TRANSACTION",
            Self::BLOCK => "BLOCK",
            Self::FILTERED_BLOCK => "FILTERED_BLOCK",
            Self::COMPACT_BLOCK => "COMPACT_BLOCK",
            Self::WTXID_TRANSACTION => "WTXID_TRANSACTION",
            Self::WITNESS_BLOCK => "WITNESS_BLOCK",
            Self::WITNESS_TRANSACTION => "WITNESS_TRANSACTION",
            _ => return write!(formatter, "InventoryType({:#x})", self.0),
        };
        write!(formatter, "InventoryType::{name}")
    }
}

/// An inventory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Inventory {
    /// What the hash names.
    pub inventory_type: InventoryType,
    /// A txid, wtxid or block hash, in internal byte order.
    pub hash: Hash256,
}

impl Inventory {
    pub(crate) fn decode(reader: &mut PayloadReader<'_>) -> Result<Inventory, MessageError> {
        let inventory_type = InventoryType(reader.u32(Field::InventoryEntries)?);
        let hash = Hash256(reader.array(Field::InventoryEntries)?);
        Ok(Inventory { inventory_type, hash })
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.inventory_type.bits().to_le_bytes());
        out.extend_from_slice(&self.hash.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_values_match_core() {
        assert_eq!(InventoryType::TRANSACTION.bits(), 1);
        assert_eq!(InventoryType::BLOCK.bits(), 2);
        assert_eq!(InventoryType::FILTERED_BLOCK.bits(), 3);
        assert_eq!(InventoryType::COMPACT_BLOCK.bits(), 4);
        assert_eq!(InventoryType::WTXID_TRANSACTION.bits(), 5);
        assert_eq!(InventoryType::WITNESS_BLOCK.bits(), 0x4000_0002);
        assert_eq!(InventoryType::WITNESS_TRANSACTION.bits(), 0x4000_0001);
    }

    #[test]
    fn unknown_types_are_values_not_errors() {
        let filtered_witness = InventoryType::from_bits(3 | InventoryType::WITNESS_FLAG);
        assert!(!filtered_witness.is_known(), "reserved in BIP144, unused by Core");
        assert!(!InventoryType::from_bits(0).is_known());
        assert_eq!(format!("{filtered_witness:?}"), "InventoryType(0x40000003)");
        assert!(InventoryType::WITNESS_BLOCK.is_block_request());
        assert!(InventoryType::WITNESS_TRANSACTION.is_transaction());
        assert!(!InventoryType::COMPACT_BLOCK.is_transaction());
    }
}

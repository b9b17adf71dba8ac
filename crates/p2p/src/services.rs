//! Service bits (Core's `ServiceFlags`, protocol.h): what a node offers,
//! announced in `version` and in address entries. Unknown bits are kept:
//! they are unauthenticated advertisements, never an error.

use std::fmt;
use std::ops::{BitAnd, BitOr};

/// A set of service bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ServiceFlags(u64);

impl ServiceFlags {
    /// No services.
    pub const NONE: ServiceFlags = ServiceFlags(0);
    /// Serves the whole chain (`NODE_NETWORK`).
    pub const NETWORK: ServiceFlags = ServiceFlags(1 << 0);
    /// Serves bloom-filtered connections, BIP111 (`NODE_BLOOM`).
    pub const BLOOM: ServiceFlags = ServiceFlags(1 << 2);
    /// Serves blocks and transactions with witnesses, BIP144 (`NODE_WITNESS`).
    pub const WITNESS: ServiceFlags = ServiceFlags(1 << 3);
    /// Serves compact block filters, BIP157/158 (`NODE_COMPACT_FILTERS`).
    pub const COMPACT_FILTERS: ServiceFlags = ServiceFlags(1 << 6);
    /// Serves the last 288 blocks, BIP159 (`NODE_NETWORK_LIMITED`).
    pub const NETWORK_LIMITED: ServiceFlags = ServiceFlags(1 << 10);
    /// Speaks the BIP324 v2 transport (`NODE_P2P_V2`).
    pub const P2P_V2: ServiceFlags = ServiceFlags(1 << 11);

    /// The bits as a set.
    pub const fn from_bits(bits: u64) -> ServiceFlags {
        ServiceFlags(bits)
    }

    /// The bits as sent.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: ServiceFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags less `other`'s (Core's `RemoveLocalServices`).
    pub const fn without(self, other: ServiceFlags) -> ServiceFlags {
        ServiceFlags(self.0 & !other.0)
    }

    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for ServiceFlags {
    type Output = ServiceFlags;

    fn bitor(self, other: ServiceFlags) -> ServiceFlags {
        ServiceFlags(self.0 | other.0)
    }
}

impl BitAnd for ServiceFlags {
    type Output = ServiceFlags;

    fn bitand(self, other: ServiceFlags) -> ServiceFlags {
        ServiceFlags(self.0 & other.0)
    }
}

impl fmt::Debug for ServiceFlags {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "ServiceFlags({:#x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_match_core() {
        assert_eq!(ServiceFlags::NETWORK.bits(), 1);
        assert_eq!(ServiceFlags::BLOOM.bits(), 4);
        assert_eq!(ServiceFlags::WITNESS.bits(), 8);
        assert_eq!(ServiceFlags::COMPACT_FILTERS.bits(), 64);
        assert_eq!(ServiceFlags::NETWORK_LIMITED.bits(), 1024);
        assert_eq!(ServiceFlags::P2P_V2.bits(), 2048);
    }

    #[test]
    fn set_operations() {
        let full = ServiceFlags::NETWORK | ServiceFlags::WITNESS;
        assert_eq!(full.bits(), 9);
        assert!(full.contains(ServiceFlags::WITNESS));
        assert!(!full.contains(ServiceFlags::WITNESS | ServiceFlags::P2P_V2));
        assert_eq!(full & ServiceFlags::WITNESS, ServiceFlags::WITNESS);
        assert!(ServiceFlags::NONE.is_empty());
        assert!(ServiceFlags::from_bits(1 << 63).contains(ServiceFlags::NONE));
    }
}

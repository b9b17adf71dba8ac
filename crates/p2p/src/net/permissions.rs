//! A connection's permission flags (Core's `NetPermissionFlags`), granted
//! by `-whitelist` ([`crate::net::whitelist`]).
//!
//! What each does in Ibex:
//! - `noban`: never disconnected or discouraged for misbehaviour, let in
//!   while its address is banned or discouraged, never evicted for a new
//!   inbound connection, its headers taken without the low-work presync,
//!   and a headers download timeout ends its sync without disconnecting
//!   it; implies `download`;
//! - `download`: served `getheaders` while our chain is below the minimum
//!   chain work;
//! - `addr`: its `getaddr` is answered from a fresh sample of the address
//!   manager rather than the cached answer, and its `addr`/`addrv2`
//!   entries are not rate limited;
//! - `bloomfilter`, `relay`, `forcerelay` (implies `relay`), `mempool`:
//!   shown by `getpeerinfo` but with nothing to act on, as Ibex has no
//!   mempool, relays no transactions and serves no BIP37 filters.

/// A set of permission flags (Core's `NetPermissionFlags` bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PeerPermissions(u32);

impl PeerPermissions {
    /// No permission.
    pub const NONE: PeerPermissions = PeerPermissions(0);
    /// May ask for BIP37 filters (nothing to serve in Ibex).
    pub const BLOOM_FILTER: PeerPermissions = PeerPermissions(1 << 1);
    /// Transactions relayed even in blocks-only mode (Ibex relays none).
    pub const RELAY: PeerPermissions = PeerPermissions(1 << 3);
    /// Transactions relayed even if known (Ibex relays none); implies
    /// `relay`.
    pub const FORCE_RELAY: PeerPermissions = PeerPermissions(1 << 2 | 1 << 3);
    /// Headers served below the minimum chain work.
    pub const DOWNLOAD: PeerPermissions = PeerPermissions(1 << 6);
    /// Never punished for misbehaviour; implies `download`.
    pub const NO_BAN: PeerPermissions = PeerPermissions(1 << 4 | 1 << 6);
    /// May ask for the mempool (Ibex has none).
    pub const MEMPOOL: PeerPermissions = PeerPermissions(1 << 5);
    /// `getaddr` answered uncached; `addr` not rate limited.
    pub const ADDR: PeerPermissions = PeerPermissions(1 << 7);
    /// Every permission (`all`).
    pub const ALL: PeerPermissions = PeerPermissions(
        Self::BLOOM_FILTER.0
            | Self::FORCE_RELAY.0
            | Self::NO_BAN.0
            | Self::MEMPOOL.0
            | Self::ADDR.0,
    );
    /// What a `-whitelist` entry without `@` grants (Core's implicit
    /// set with its default `-whitelistrelay=1`, `-whitelistforcerelay=0`).
    pub const IMPLICIT: PeerPermissions =
        PeerPermissions(Self::NO_BAN.0 | Self::MEMPOOL.0 | Self::RELAY.0);

    /// Whether every flag of `other` is set (Core's `HasFlag`).
    pub fn contains(self, other: PeerPermissions) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no flag is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Core's names, in Core's order (`NetPermissions::ToStrings`).
    pub fn names(self) -> Vec<&'static str> {
        [
            (Self::BLOOM_FILTER, "bloomfilter"),
            (Self::NO_BAN, "noban"),
            (Self::FORCE_RELAY, "forcerelay"),
            (Self::RELAY, "relay"),
            (Self::MEMPOOL, "mempool"),
            (Self::DOWNLOAD, "download"),
            (Self::ADDR, "addr"),
        ]
        .into_iter()
        .filter(|(flag, _)| self.contains(*flag))
        .map(|(_, name)| name)
        .collect()
    }
}

impl std::ops::BitOr for PeerPermissions {
    type Output = PeerPermissions;

    fn bitor(self, other: PeerPermissions) -> PeerPermissions {
        PeerPermissions(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for PeerPermissions {
    fn bitor_assign(&mut self, other: PeerPermissions) {
        self.0 |= other.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_core_order_with_implied_flags() {
        assert_eq!(PeerPermissions::NONE.names(), Vec::<&str>::new());
        assert_eq!(PeerPermissions::NO_BAN.names(), ["noban", "download"]);
        assert_eq!(PeerPermissions::FORCE_RELAY.names(), ["forcerelay", "relay"]);
        assert_eq!(PeerPermissions::IMPLICIT.names(), ["noban", "relay", "mempool", "download"]);
        assert_eq!(
            PeerPermissions::ALL.names(),
            ["bloomfilter", "noban", "forcerelay", "relay", "mempool", "download", "addr"]
        );
        assert_eq!(
            (PeerPermissions::ADDR | PeerPermissions::BLOOM_FILTER).names(),
            ["bloomfilter", "addr"]
        );
        assert!(!PeerPermissions::DOWNLOAD.contains(PeerPermissions::NO_BAN));
    }
}

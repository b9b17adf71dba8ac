//! The address manager: the peer addresses a node knows, where they came
//! from, how connecting to them went, and which to try next (Core's
//! `AddrMan`, addrman.cpp), without I/O but its file.
//!
//! | module | job |
//! |---|---|
//! | [`address`] | [`PeerAddress`] (BIP155 networks), [`NetworkSet`], [`AddressPolicy`] (loopback on regtest only) |
//! | [`group`] | [`NetworkGroup`]: Core's /16 (IPv4), /32 (IPv6) groups |
//! | [`buckets`] | the table sizes and the keyed hashes that place an address |
//! | [`record`] | [`AddressCandidate`], [`AddressSource`], Core's `IsTerrible` and `GetChance` |
//! | [`manager`] | [`AddressManager`]: add, good, attempt, connected, select, sample |
//! | [`book`] | [`AddressBook`]: the manager shared by the tasks, the cached `getaddr` answer |
//! | [`file`](mod@file) | the versioned, checksummed file, written atomically |
//! | [`random`] | [`FastRandom`] |
//!
//! # Design and bounds
//!
//! Core's two tables, with Core's sizes: a *new* table of 1,024 buckets of
//! 64 slots for addresses heard of, and a *tried* table of 256 buckets of
//! 64 for addresses we connected to, so at most 81,920 addresses
//! ([`buckets::ADDRESSES_MAX`]). Every address holds exactly one slot; a
//! slot is chosen by keyed hashes (a secret 32-byte key kept in the file):
//!
//! - a new address's bucket depends on its *source's* group and on a hash
//!   of its own group and the source's group taken modulo 64: whatever one
//!   source group sends, its addresses reach 64 buckets, 4,096 slots, 6 %
//!   of the new table;
//! - a tried address's bucket depends on its group and on a hash of the
//!   address modulo 8: one group fills at most 8 of the 256 buckets.
//!
//! Eviction: a new address whose slot is taken replaces the occupant only
//! if that one is terrible (Core's `IsTerrible`: not seen in 30 days, 3
//! failures and never a success, 10 failures and no success in a week, or
//! a time in the future); otherwise the newcomer is dropped. An address
//! that completes a handshake moves to the tried table; if its slot there
//! is taken, Core's test-before-evict applies: the newcomer stays new, the
//! collision is queued (at most 10), and a feeler tests the occupant,
//! which is replaced (going back to the new table, evicting whatever held
//! its new slot) only if it fails the test or none happens within 40
//! minutes; one that connected in the last 4 hours always stays.
//!
//! Simplification against Core, bounding memory the same way: an address
//! lives in one new bucket only (Core lets it be in up to 8 with
//! reference counts). No asmap.
//!
//! # Napkin math
//!
//! A record is about 130 bytes (address 35, four times, attempts, source
//! group, slot), the index about 50 bytes per address, the tables 4 bytes
//! per slot: 81,920 x 180 bytes + 320 kB, about 15 MB at the bound (Core's
//! is of the same order). An `addr` of 1,000 entries costs 3 SHA-256 of
//! under 100 bytes per entry, about 1 ms, under the book's lock. The file
//! is at most 97 bytes an entry, 8 MB at the bound (about 0.6 MB for the
//! ~6,000 addresses a mainnet node typically knows), written in a few ms.

pub mod address;
pub mod book;
pub mod buckets;
pub mod file;
pub mod group;
pub mod manager;
pub mod random;
pub mod record;

#[cfg(test)]
mod collision_tests;
#[cfg(test)]
mod tests;

pub use address::{AddressNetwork, AddressPolicy, NetworkSet, PeerAddress};
pub use book::AddressBook;
pub use file::{AddressFileError, DecodedFile};
pub use group::NetworkGroup;
pub use manager::{AddressInfo, AddressManager, SelectedAddress};
pub use random::FastRandom;
pub use record::{AddressCandidate, AddressSource};

//! Where an address goes: the table sizes and the keyed hashes that pick a
//! bucket and a position (Core's `AddrInfo::GetNewBucket`,
//! `GetTriedBucket`, `GetBucketPosition`, with our own hash: the first 8
//! bytes of SHA-256 over the secret key, a tag and the parts).
//!
//! - New table: the source's group and a hash of (address group, source
//!   group) modulo 64 pick the bucket, so one source group reaches at most
//!   64 of the 1,024 buckets (4,096 of 65,536 slots) whatever it sends.
//! - Tried table: the address's group and a hash of the address modulo 8
//!   pick the bucket, so one group reaches at most 8 of the 256 buckets.
//! - Position: a hash of the table, bucket and address, modulo 64.

use crate::addrman::address::{AddressPolicy, PeerAddress};
use crate::addrman::group::NetworkGroup;
use crate::addrman::record::Slot;

/// Buckets in the new table (Core's `ADDRMAN_NEW_BUCKET_COUNT`).
pub const NEW_BUCKETS: usize = 1024;
/// Buckets in the tried table (Core's `ADDRMAN_TRIED_BUCKET_COUNT`).
pub const TRIED_BUCKETS: usize = 256;
/// Slots per bucket (Core's `ADDRMAN_BUCKET_SIZE`).
pub const BUCKET_SLOTS: usize = 64;
/// New buckets one source group can reach (Core's
/// `ADDRMAN_NEW_BUCKETS_PER_SOURCE_GROUP`).
pub const NEW_BUCKETS_PER_SOURCE_GROUP: u64 = 64;
/// Tried buckets one address group can reach (Core's
/// `ADDRMAN_TRIED_BUCKETS_PER_GROUP`).
pub const TRIED_BUCKETS_PER_GROUP: u64 = 8;
/// The most addresses known at once: one per slot.
pub const ADDRESSES_MAX: usize = (NEW_BUCKETS + TRIED_BUCKETS) * BUCKET_SLOTS;

const _: () = assert!(ADDRESSES_MAX == 81_920);
const _: () = assert!(NEW_BUCKETS_PER_SOURCE_GROUP as usize <= NEW_BUCKETS);

/// The secret key and the hashes made with it.
#[derive(Debug, Clone)]
pub(crate) struct BucketKey {
    key: [u8; 32],
}

impl BucketKey {
    pub fn new(key: [u8; 32]) -> BucketKey {
        BucketKey { key }
    }

    pub fn key(&self) -> &[u8; 32] {
        &self.key
    }

    /// The first 8 bytes of SHA-256(key, tag, each part with its length).
    fn hash(&self, tag: &[u8], parts: &[&[u8]]) -> u64 {
        let mut input = Vec::with_capacity(64 + 8 * parts.len());
        input.extend_from_slice(&self.key);
        input.extend_from_slice(tag);
        for part in parts {
            input.push(part.len() as u8);
            input.extend_from_slice(part);
        }
        let digest = ibex_primitives::hash::sha256(&input);
        let mut first = [0; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }

    /// `address`'s slot in the new table when told by `source`.
    pub fn new_slot(
        &self,
        address: &PeerAddress,
        source: &NetworkGroup,
        policy: AddressPolicy,
    ) -> Slot {
        let group = NetworkGroup::of(address, policy);
        let spread = self.hash(b"new-spread", &[group.as_bytes(), source.as_bytes()])
            % NEW_BUCKETS_PER_SOURCE_GROUP;
        let bucket = self.hash(b"new-bucket", &[source.as_bytes(), &spread.to_le_bytes()])
            % NEW_BUCKETS as u64;
        self.slot(false, bucket as usize, address)
    }

    /// `address`'s slot in the tried table.
    pub fn tried_slot(&self, address: &PeerAddress, policy: AddressPolicy) -> Slot {
        let group = NetworkGroup::of(address, policy);
        let spread = self.hash(b"tried-spread", &[&address_key(address)]) % TRIED_BUCKETS_PER_GROUP;
        let bucket = self.hash(b"tried-bucket", &[group.as_bytes(), &spread.to_le_bytes()])
            % TRIED_BUCKETS as u64;
        self.slot(true, bucket as usize, address)
    }

    fn slot(&self, tried: bool, bucket: usize, address: &PeerAddress) -> Slot {
        let table = [u8::from(tried)];
        let bucket_bytes = (bucket as u16).to_le_bytes();
        let position = self.hash(b"position", &[&table, &bucket_bytes, &address_key(address)])
            % BUCKET_SLOTS as u64;
        Slot { tried, bucket, position: position as usize }
    }
}

/// The address as hashed: network id, bytes, port (at most 35 bytes).
fn address_key(address: &PeerAddress) -> Vec<u8> {
    let mut key = Vec::with_capacity(35);
    key.push(address.network().bip155_id());
    key.extend_from_slice(address.bytes());
    key.extend_from_slice(&address.port().to_be_bytes());
    key
}

//! The 80-byte block header.

use crate::hash::{sha256d, BlockHash, Hash256};

/// Serialised size of a block header.
pub const HEADER_BYTES: usize = 80;

/// A block header. Small and `Copy`: decoding it copies 80 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// nVersion (also carries BIP9 version bits).
    pub version: i32,
    /// Hash of the previous block's header.
    pub previous_block_hash: BlockHash,
    /// Merkle root of the block's transactions.
    pub merkle_root: Hash256,
    /// nTime, seconds since the Unix epoch.
    pub time: u32,
    /// nBits, the compact proof-of-work target.
    pub bits: u32,
    /// nNonce.
    pub nonce: u32,
}

fn array_at<const N: usize>(bytes: &[u8; HEADER_BYTES], start: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[start..start + N]);
    out
}

impl Header {
    /// Decodes the 80-byte serialisation (any 80 bytes are a header).
    #[inline]
    pub fn decode(bytes: &[u8; HEADER_BYTES]) -> Header {
        Header {
            version: i32::from_le_bytes(array_at(bytes, 0)),
            previous_block_hash: BlockHash(array_at(bytes, 4)),
            merkle_root: Hash256(array_at(bytes, 36)),
            time: u32::from_le_bytes(array_at(bytes, 68)),
            bits: u32::from_le_bytes(array_at(bytes, 72)),
            nonce: u32::from_le_bytes(array_at(bytes, 76)),
        }
    }

    /// The 80-byte serialisation.
    #[inline]
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut out = [0u8; HEADER_BYTES];
        out[0..4].copy_from_slice(&self.version.to_le_bytes());
        out[4..36].copy_from_slice(&self.previous_block_hash.0);
        out[36..68].copy_from_slice(&self.merkle_root.0);
        out[68..72].copy_from_slice(&self.time.to_le_bytes());
        out[72..76].copy_from_slice(&self.bits.to_le_bytes());
        out[76..80].copy_from_slice(&self.nonce.to_le_bytes());
        out
    }

    /// The block hash.
    #[inline]
    pub fn block_hash(&self) -> BlockHash {
        BlockHash(sha256d(&self.encode()))
    }
}

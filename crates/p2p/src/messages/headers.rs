//! Header sync messages: `getheaders` and `getblocks` (a block locator and a
//! stop hash) and `headers`.

use ibex_primitives::encode::write_compact_size;
use ibex_primitives::{BlockHash, Header, HEADER_BYTES};

use crate::framing::MESSAGE_PAYLOAD_BYTES_MAX;
use crate::messages::error::{Field, MessageError};
use crate::messages::wire::{LimitCheck, ListRule, PayloadReader};

/// Hashes a locator may hold (Core's `MAX_LOCATOR_SZ`).
pub const LOCATOR_HASHES_MAX: usize = 101;
/// Headers a `headers` message may carry (Core's `MAX_HEADERS_RESULTS`).
pub const HEADERS_PER_MESSAGE_MAX: usize = 2000;
/// The locator version Core writes (`CBlockLocator::DUMMY_VERSION`); Core
/// reads the field and ignores it.
pub const LOCATOR_VERSION: i32 = 70_016;

/// A full `headers` message is far below the payload limit: 2,000 x 81 + 3.
const _: () =
    assert!(HEADERS_PER_MESSAGE_MAX * (HEADER_BYTES + 1) + 3 <= MESSAGE_PAYLOAD_BYTES_MAX);

/// Core reads the count and compares it with MAX_HEADERS_RESULTS before it
/// reads any header. Each entry is a header and a compact size.
pub(crate) const HEADERS_LIST: ListRule = ListRule {
    field: Field::Headers,
    limit: HEADERS_PER_MESSAGE_MAX,
    check: LimitCheck::BeforeEntries,
    entry_bytes_min: HEADER_BYTES + 1,
};

/// The body of `getheaders` and `getblocks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatorRequest {
    /// The locator's version field (Core writes [`LOCATOR_VERSION`] and
    /// ignores what it reads).
    pub locator_version: i32,
    /// Block hashes from the sender's tip back to genesis, densest near the
    /// tip; at most [`LOCATOR_HASHES_MAX`].
    pub locator_hashes: Vec<BlockHash>,
    /// The last block wanted; zero for as many as the reply may hold.
    pub stop_hash: BlockHash,
}

impl LocatorRequest {
    /// Core's order: the locator (version, hashes), then the stop hash, and
    /// only then the hash count against MAX_LOCATOR_SZ, so a too-long locator
    /// that ends early is a read failure (dropped), not a disconnect.
    pub(crate) fn decode(reader: &mut PayloadReader<'_>) -> Result<LocatorRequest, MessageError> {
        let locator_version = reader.i32(Field::LocatorVersion)?;
        let count = reader.compact_size(Field::LocatorHashes)?;
        if count > LOCATOR_HASHES_MAX as u64 {
            // `count <= MAX_SIZE`, so the product cannot overflow.
            let skipped_bytes = count.saturating_mul(32).saturating_add(32);
            let skipped_bytes = usize::try_from(skipped_bytes).unwrap_or(usize::MAX);
            reader.bytes(skipped_bytes, Field::LocatorHashes)?;
            return Err(MessageError::TooMany {
                command: reader.command(),
                field: Field::LocatorHashes,
                count,
                limit: LOCATOR_HASHES_MAX,
            });
        }
        let mut locator_hashes = Vec::with_capacity(count as usize);
        for _ in 0..count {
            locator_hashes.push(BlockHash(reader.array(Field::LocatorHashes)?));
        }
        let stop_hash = BlockHash(reader.array(Field::StopHash)?);
        Ok(LocatorRequest { locator_version, locator_hashes, stop_hash })
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.locator_version.to_le_bytes());
        write_compact_size(out, self.locator_hashes.len() as u64);
        for hash in &self.locator_hashes {
            out.extend_from_slice(&hash.0);
        }
        out.extend_from_slice(&self.stop_hash.0);
    }
}

/// One `headers` entry: a header, then a transaction count that Core reads
/// (canonical, at most MAX_SIZE) and ignores: "ignore tx count; assume it is
/// 0" (net_processing.cpp). A nonzero count is accepted and dropped here too.
pub(crate) fn decode_header(reader: &mut PayloadReader<'_>) -> Result<Header, MessageError> {
    let bytes: [u8; HEADER_BYTES] = reader.array(Field::Headers)?;
    reader.compact_size(Field::TransactionCount)?;
    Ok(Header::decode(&bytes))
}

/// Writes the headers, each with a zero transaction count.
pub(crate) fn encode_headers(headers: &[Header], out: &mut Vec<u8>) {
    write_compact_size(out, headers.len() as u64);
    out.reserve(headers.len() * (HEADER_BYTES + 1));
    for header in headers {
        out.extend_from_slice(&header.encode());
        out.push(0);
    }
}

//! The snapshot file's header (Core's `SnapshotMetadata`, version 2): magic
//! `utxo\xff`, the version as a little-endian `u16`, the network's message
//! start, the base block's hash and the coin count as a little-endian `u64`.

use ibex_primitives::encode::Reader;
use ibex_primitives::{BlockHash, Network, Params};

use super::error::SnapshotError;

/// The five bytes every snapshot starts with (Core's `SNAPSHOT_MAGIC_BYTES`).
pub const SNAPSHOT_MAGIC: [u8; 5] = *b"utxo\xff";
/// The one format version Core v30 writes and reads.
pub const SNAPSHOT_VERSION: u16 = 2;
/// Bytes of the header: magic, version, message start, hash, count.
pub const METADATA_BYTES: usize = 5 + 2 + 4 + 32 + 8;
/// Where the coin count sits in the file: a writer that learns the count
/// only at the end writes it there last.
pub const COIN_COUNT_OFFSET: u64 = (METADATA_BYTES - 8) as u64;

/// What a snapshot says about itself. All of it comes from the file, so
/// nothing here is trusted until the base block and the coins' hash are
/// checked against the network's AssumeUTXO table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotMetadata {
    /// The message start of the network it was made on.
    pub message_start: [u8; 4],
    /// The block whose UTXO set it holds.
    pub base_block: BlockHash,
    /// How many coins follow.
    pub coin_count: u64,
}

impl SnapshotMetadata {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; METADATA_BYTES] {
        let mut bytes = [0u8; METADATA_BYTES];
        bytes[..5].copy_from_slice(&SNAPSHOT_MAGIC);
        bytes[5..7].copy_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        bytes[7..11].copy_from_slice(&self.message_start);
        bytes[11..43].copy_from_slice(self.base_block.as_bytes());
        bytes[43..].copy_from_slice(&self.coin_count.to_le_bytes());
        bytes
    }

    /// Reads the header from the first [`METADATA_BYTES`] of `bytes` and
    /// checks the magic, the version and that it was made for `params`'s
    /// network, in Core's order and with Core's reasons.
    pub fn decode(bytes: &[u8], params: &Params) -> Result<SnapshotMetadata, SnapshotError> {
        let mut reader = Reader::new(bytes);
        let truncated = |_| SnapshotError::TruncatedHeader { length_bytes: bytes.len() };
        let magic = reader.take_array::<5>().map_err(truncated)?;
        if *magic != SNAPSHOT_MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let version = reader.read_u16_le().map_err(truncated)?;
        if version != SNAPSHOT_VERSION {
            return Err(SnapshotError::UnsupportedVersion { version });
        }
        let message_start = *reader.take_array::<4>().map_err(truncated)?;
        if message_start != params.message_start {
            return Err(match network_of_message_start(message_start) {
                Some(network) => SnapshotError::WrongNetwork {
                    snapshot: network.name(),
                    node: params.network.name(),
                },
                None => SnapshotError::UnknownNetwork { message_start },
            });
        }
        let base_block = BlockHash(*reader.take_array::<32>().map_err(truncated)?);
        let coin_count = reader.read_u64_le().map_err(truncated)?;
        Ok(SnapshotMetadata { message_start, base_block, coin_count })
    }
}

/// The network whose default parameters use `message_start` (Core's
/// `GetNetworkForMagic`; a custom signet's is unknown).
fn network_of_message_start(message_start: [u8; 4]) -> Option<Network> {
    Network::ALL
        .into_iter()
        .find(|network| Params::for_network(*network).message_start == message_start)
}

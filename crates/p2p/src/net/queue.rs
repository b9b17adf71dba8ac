//! A peer's outbound queue: messages the node sent, not yet handed to the
//! transport, counted in bytes (Core's `vSendMsg` and `nSendSize`).

use std::collections::VecDeque;

use ibex_primitives::encode::compact_size_len;

use crate::messages::NetworkMessage;

/// Bytes of an inventory entry (type and hash).
const INVENTORY_ENTRY_BYTES: usize = 4 + 32;
/// Bytes of a header in a `headers` message (80 and a zero tx count).
const HEADERS_ENTRY_BYTES: usize = 81;
/// Bytes of an `addr` entry (time and service address).
const ADDRESS_ENTRY_BYTES: usize = 4 + 26;

/// The payload's length; large messages are measured without encoding.
/// A queued message counts its payload and a 24-byte header (v1's; v2
/// differs by a few bytes), so a queue of `n` bytes holds at most `n / 24`
/// messages.
pub fn payload_bytes(message: &NetworkMessage) -> usize {
    let list =
        |count: usize, entry_bytes: usize| compact_size_len(count as u64) + count * entry_bytes;
    match message {
        NetworkMessage::Block(bytes) => bytes.len(),
        NetworkMessage::Headers(headers) => list(headers.len(), HEADERS_ENTRY_BYTES),
        NetworkMessage::GetData(entries)
        | NetworkMessage::Inventory(entries)
        | NetworkMessage::NotFound(entries) => list(entries.len(), INVENTORY_ENTRY_BYTES),
        NetworkMessage::Address(entries) => list(entries.len(), ADDRESS_ENTRY_BYTES),
        // Up to a few MB for a full block: counted, not encoded twice.
        NetworkMessage::SpentCoins(answer) => answer.encoded_bytes(),
        other => {
            // The rest are small (an `addrv2` of 1,000 entries is the
            // largest, 531 kB) and rarely sent: measure by encoding.
            let mut payload = Vec::new();
            other.encode_payload(&mut payload);
            payload.len()
        }
    }
}

/// Messages waiting to be encoded, with their bytes counted.
#[derive(Debug, Default)]
pub(crate) struct OutboundQueue {
    messages: VecDeque<(NetworkMessage, usize)>,
    queued_bytes: usize,
}

impl OutboundQueue {
    /// Adds a message of `bytes` wire bytes.
    pub fn push(&mut self, message: NetworkMessage, bytes: usize) {
        self.queued_bytes += bytes;
        self.messages.push_back((message, bytes));
    }

    /// Takes the oldest message and its wire bytes.
    pub fn pop(&mut self) -> Option<(NetworkMessage, usize)> {
        let (message, bytes) = self.messages.pop_front()?;
        self.queued_bytes -= bytes;
        Some((message, bytes))
    }

    /// Wire bytes queued.
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Drops everything (the peer is gone).
    pub fn clear(&mut self) {
        self.messages.clear();
        self.queued_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::FRAME_HEADER_BYTES;
    use crate::messages::encode_message;
    use crate::Inventory;
    use crate::InventoryType;
    use ibex_primitives::Header;

    fn encoded_bytes(message: &NetworkMessage) -> usize {
        let mut out = Vec::new();
        let encoded = encode_message([0; 4], message, &mut out);
        assert!(encoded.is_ok());
        out.len()
    }

    #[test]
    fn measured_sizes_match_the_encoding() {
        let header = Header {
            version: 1,
            previous_block_hash: Default::default(),
            merkle_root: Default::default(),
            time: 0,
            bits: 0,
            nonce: 0,
        };
        let inventory = Inventory {
            inventory_type: InventoryType::BLOCK,
            hash: ibex_primitives::Hash256([7; 32]),
        };
        let messages = [
            NetworkMessage::Block(vec![1; 1000]),
            NetworkMessage::Headers(vec![header; 300]),
            NetworkMessage::GetData(vec![inventory; 253]),
            NetworkMessage::Inventory(vec![]),
            NetworkMessage::Ping { nonce: 1 },
            NetworkMessage::Verack,
            NetworkMessage::SpentCoins(crate::messages::spent_coins::SpentCoins {
                block_hash: ibex_primitives::BlockHash([3; 32]),
                coins: (0..300u32)
                    .map(|index| crate::messages::spent_coins::IndexedSpentCoin {
                        input_index: index,
                        coin: ibex_primitives::SpentCoinBuf {
                            value: ibex_primitives::Amount::from_sat(i64::from(index) * 977)
                                .unwrap(),
                            script_pubkey: vec![0x51; index as usize % 40],
                            height: ibex_primitives::Height::new(index),
                            is_coinbase: index % 7 == 0,
                        },
                    })
                    .collect(),
            }),
        ];
        for message in &messages {
            assert_eq!(
                FRAME_HEADER_BYTES + payload_bytes(message),
                encoded_bytes(message),
                "{:?}",
                message.command()
            );
        }
    }

    #[test]
    fn queue_counts_bytes() {
        let mut queue = OutboundQueue::default();
        queue.push(NetworkMessage::Verack, 24);
        queue.push(NetworkMessage::Ping { nonce: 2 }, 32);
        assert_eq!(queue.queued_bytes(), 56);
        assert_eq!(queue.pop().map(|(_, bytes)| bytes), Some(24));
        assert_eq!(queue.queued_bytes(), 32);
        queue.clear();
        assert_eq!(queue.queued_bytes(), 0);
        assert!(queue.pop().is_none());
    }
}

//! Reads v2 packets from a byte stream fed in pieces (Core's
//! `ProcessReceivedPacketBytes`): the 3-byte length first, decrypted and
//! checked against [`PACKET_CONTENTS_BYTES_MAX`] before anything is
//! allocated, then the rest of the packet into a buffer that grows with the
//! bytes received, at most
//! [`PAYLOAD_ALLOCATION_STEP_BYTES`](crate::decoder::PAYLOAD_ALLOCATION_STEP_BYTES) ahead (Core's
//! `MAX_RESERVE_AHEAD`), then decryption in place.

use crate::decoder::append_payload;
use crate::transport::cipher::PacketOpener;
use crate::transport::{
    TransportError, HEADER_BYTES, IGNORE_BIT, LENGTH_FIELD_BYTES, PACKET_CONTENTS_BYTES_MAX,
    TAG_BYTES,
};

/// A decrypted packet.
pub(crate) struct Packet {
    /// The header byte followed by the contents (the tag is gone).
    pub plaintext: Vec<u8>,
}

impl Packet {
    /// Whether the ignore bit is set (a decoy). Core tests the bit alone:
    /// the other header bits are reserved and do not matter.
    pub(crate) fn is_decoy(&self) -> bool {
        self.plaintext.first().is_some_and(|header| header & IGNORE_BIT != 0)
    }
}

/// Where the reader is in the current packet.
enum PacketState {
    /// Reading the encrypted length; `received_bytes` of it are in.
    Length { bytes: [u8; LENGTH_FIELD_BYTES], received_bytes: usize },
    /// Reading header, contents and tag.
    Body { contents_bytes: u32, buffer: Vec<u8> },
}

/// Reads packets one at a time from the peer's stream.
pub(crate) struct PacketReader {
    opener: PacketOpener,
    state: PacketState,
}

impl PacketReader {
    pub(crate) fn new(opener: PacketOpener) -> PacketReader {
        PacketReader {
            opener,
            state: PacketState::Length { bytes: [0; LENGTH_FIELD_BYTES], received_bytes: 0 },
        }
    }

    /// Takes bytes from the front of `bytes` up to the end of the current
    /// packet and returns how many, with the packet if it is complete or
    /// the error that ends the connection. Without a packet or an error,
    /// every byte was taken.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> (usize, Option<Result<Packet, TransportError>>) {
        let mut consumed_bytes = 0;
        loop {
            let rest = &bytes[consumed_bytes..];
            match &mut self.state {
                PacketState::Length { bytes: length, received_bytes } => {
                    let taken = rest.len().min(LENGTH_FIELD_BYTES - *received_bytes);
                    length[*received_bytes..*received_bytes + taken]
                        .copy_from_slice(&rest[..taken]);
                    *received_bytes += taken;
                    consumed_bytes += taken;
                    if *received_bytes < LENGTH_FIELD_BYTES {
                        return (consumed_bytes, None);
                    }
                    let contents_bytes = self.opener.decrypt_length(*length);
                    if contents_bytes as usize > PACKET_CONTENTS_BYTES_MAX {
                        let error = TransportError::PacketTooLarge { contents_bytes };
                        return (consumed_bytes, Some(Err(error)));
                    }
                    // Nothing is allocated yet: the buffer grows with the bytes.
                    self.state = PacketState::Body { contents_bytes, buffer: Vec::new() };
                }
                PacketState::Body { contents_bytes, buffer } => {
                    let packet_bytes = *contents_bytes as usize + HEADER_BYTES + TAG_BYTES;
                    consumed_bytes += append_payload(packet_bytes, buffer, rest);
                    if buffer.len() < packet_bytes {
                        return (consumed_bytes, None);
                    }
                    let contents_bytes = *contents_bytes;
                    let plaintext = std::mem::take(buffer);
                    self.state =
                        PacketState::Length { bytes: [0; LENGTH_FIELD_BYTES], received_bytes: 0 };
                    return (consumed_bytes, Some(self.open(contents_bytes, plaintext)));
                }
            }
        }
    }

    /// Sets the first packet's associated data: the garbage received.
    pub(crate) fn set_first_packet_aad(&mut self, garbage: Vec<u8>) {
        self.opener.set_first_packet_aad(garbage);
    }

    fn open(&mut self, contents_bytes: u32, mut buffer: Vec<u8>) -> Result<Packet, TransportError> {
        let packet_index = self.opener.packets_opened();
        if self.opener.open(&mut buffer) {
            Ok(Packet { plaintext: buffer })
        } else {
            Err(TransportError::PacketAuthentication { packet_index, contents_bytes })
        }
    }

    /// Bytes allocated for the packet in progress: at most
    /// [`PAYLOAD_ALLOCATION_STEP_BYTES`](crate::decoder::PAYLOAD_ALLOCATION_STEP_BYTES)
    /// more than the bytes received.
    pub(crate) fn allocated_bytes(&self) -> usize {
        match &self.state {
            PacketState::Length { .. } => 0,
            PacketState::Body { buffer, .. } => buffer.capacity(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoder::PAYLOAD_ALLOCATION_STEP_BYTES;
    use crate::transport::cipher::PacketWriter;

    fn reader_and_writer() -> (PacketReader, PacketWriter) {
        let writer = PacketWriter::new([1; 32], [2; 32], Vec::new());
        (PacketReader::new(PacketOpener::new([1; 32], [2; 32])), writer)
    }

    #[test]
    fn header_bit_seven_alone_marks_a_decoy() {
        let (mut reader, mut writer) = reader_and_writer();
        for (header, decoy) in [(0x00, false), (0x80, true), (0x81, true), (0x7f, false)] {
            let mut wire = Vec::new();
            writer.write_packet(header, &[1], &mut wire);
            let (consumed, packet) = reader.push(&wire);
            assert_eq!(consumed, wire.len());
            let packet = packet.unwrap().unwrap();
            assert_eq!(packet.is_decoy(), decoy, "header {header:#04x}");
            assert_eq!(packet.plaintext, [header, 1]);
        }
    }

    #[test]
    fn body_buffer_grows_with_the_bytes_received() {
        let (mut reader, mut writer) = reader_and_writer();
        let mut wire = Vec::new();
        writer.write_packet(0, &vec![7; 3_000_000], &mut wire);
        let (consumed, packet) = reader.push(&wire[..1000]);
        assert_eq!((consumed, packet.is_none()), (1000, true));
        assert!(reader.allocated_bytes() <= 1000 + PAYLOAD_ALLOCATION_STEP_BYTES);
        let (consumed, packet) = reader.push(&wire[1000..]);
        assert_eq!(consumed, wire.len() - 1000);
        assert_eq!(packet.unwrap().unwrap().plaintext.len(), 3_000_001);
    }
}

//! BIP324's two ciphers with forward secrecy, and the packet layout built on
//! them:
//!
//! | bytes | field | cipher |
//! |---|---|---|
//! | 3 | contents length, little-endian | FSChaCha20 (the length key) |
//! | 1 | header: bit 7 is the ignore (decoy) bit, others reserved | FSChaCha20Poly1305 (the packet key) |
//! | n | contents | same |
//! | 16 | Poly1305 tag over header and contents | same |
//!
//! Both ciphers rekey every [`REKEY_INTERVAL`] uses: FSChaCha20 takes the
//! next 32 bytes of its keystream as its key, FSChaCha20Poly1305 the first
//! 32 bytes of ChaCha20 block 1 under nonce `ff ff ff ff || epoch`. ChaCha20
//! and the AEAD themselves are RustCrypto's `chacha20` and
//! `chacha20poly1305` (AVX2 when the CPU has it, detected at run time; the
//! tag is compared in constant time).

use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use chacha20::ChaCha20;
use chacha20poly1305::{AeadInOut, ChaCha20Poly1305, KeyInit, Nonce, Tag};

use crate::transport::{
    HEADER_BYTES, LENGTH_FIELD_BYTES, PACKET_CONTENTS_BYTES_MAX, PACKET_OVERHEAD_BYTES, TAG_BYTES,
};

/// Packets (and lengths) encrypted under one key before the next rekey.
pub const REKEY_INTERVAL: u64 = 224;

// Every length fits the 3-byte field.
const _: () = assert!(PACKET_CONTENTS_BYTES_MAX < 1 << 24);

/// Bytes of a ChaCha20 block.
const CHACHA_BLOCK_BYTES: u64 = 64;

/// The nonce for use `index` of a key: `prefix` (4 bytes, little-endian)
/// then the number of rekeys so far (8 bytes, little-endian).
fn nonce(prefix: u32, index: u64) -> [u8; 12] {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&prefix.to_le_bytes());
    bytes[4..].copy_from_slice(&(index / REKEY_INTERVAL).to_le_bytes());
    bytes
}

/// ChaCha20 with `key` and `nonce`, its keystream from byte `offset_bytes`.
fn keystream(key: &[u8; 32], nonce: &[u8; 12], offset_bytes: u64) -> ChaCha20 {
    let mut cipher = ChaCha20::new(key.into(), nonce.into());
    cipher.seek(offset_bytes);
    cipher
}

/// Keystream bytes one length key gives: 224 lengths, then the next key.
const LENGTH_KEYSTREAM_BYTES: usize = REKEY_INTERVAL as usize * LENGTH_FIELD_BYTES + 32;

/// FSChaCha20: one ChaCha20 keystream per key, of which each length takes
/// the next 3 bytes and the rekey the 32 after the 224th. The 704 bytes are
/// computed once per key (11 blocks), not a block per 3-byte length.
struct LengthCipher {
    /// The current key's keystream.
    keystream: [u8; LENGTH_KEYSTREAM_BYTES],
    /// Lengths encrypted so far.
    chunk_index: u64,
}

impl LengthCipher {
    fn new(key: [u8; 32]) -> LengthCipher {
        let mut cipher = LengthCipher { keystream: [0; LENGTH_KEYSTREAM_BYTES], chunk_index: 0 };
        cipher.fill_keystream(&key);
        cipher
    }

    /// The keystream of `key` for the rekey epoch of `chunk_index`.
    fn fill_keystream(&mut self, key: &[u8; 32]) {
        self.keystream = [0; LENGTH_KEYSTREAM_BYTES];
        keystream(key, &nonce(0, self.chunk_index), 0).apply_keystream(&mut self.keystream);
    }

    /// Encrypts or decrypts one 3-byte length.
    fn crypt(&mut self, chunk: &mut [u8; LENGTH_FIELD_BYTES]) {
        let offset = (self.chunk_index % REKEY_INTERVAL) as usize * LENGTH_FIELD_BYTES;
        for (byte, key_byte) in chunk.iter_mut().zip(&self.keystream[offset..]) {
            *byte ^= key_byte;
        }
        self.chunk_index += 1;
        if self.chunk_index % REKEY_INTERVAL == 0 {
            let mut next_key = [0u8; 32];
            next_key.copy_from_slice(&self.keystream[LENGTH_KEYSTREAM_BYTES - 32..]);
            self.fill_keystream(&next_key);
        }
    }
}

/// FSChaCha20Poly1305: the RFC 8439 AEAD with a nonce made of the packet's
/// index, rekeyed every [`REKEY_INTERVAL`] packets.
struct PacketAead {
    key: [u8; 32],
    packet_index: u64,
}

impl PacketAead {
    fn new(key: [u8; 32]) -> PacketAead {
        PacketAead { key, packet_index: 0 }
    }

    fn current_nonce(&self) -> Nonce {
        Nonce::from(nonce((self.packet_index % REKEY_INTERVAL) as u32, self.packet_index))
    }

    fn encrypt(&mut self, aad: &[u8], text: &mut [u8]) -> [u8; TAG_BYTES] {
        let aead = ChaCha20Poly1305::new(&self.key.into());
        let result = aead.encrypt_inout_detached(&self.current_nonce(), aad, text.into());
        // It refuses only texts above 256 GiB.
        assert!(result.is_ok(), "a packet is far below ChaCha20-Poly1305's limit");
        let tag: Tag = result.unwrap_or_default();
        self.advance();
        tag.into()
    }

    /// Decrypts in place if the tag matches; the state moves on only then
    /// (a failure ends the connection anyway).
    fn decrypt(&mut self, aad: &[u8], text: &mut [u8], tag: [u8; TAG_BYTES]) -> bool {
        let aead = ChaCha20Poly1305::new(&self.key.into());
        let tag = Tag::from(tag);
        if aead.decrypt_inout_detached(&self.current_nonce(), aad, text.into(), &tag).is_err() {
            return false;
        }
        self.advance();
        true
    }

    fn advance(&mut self) {
        if (self.packet_index + 1) % REKEY_INTERVAL == 0 {
            // The AEAD encryption of 32 zero bytes: keystream block 1.
            let nonce = nonce(u32::MAX, self.packet_index);
            let mut next_key = [0u8; 32];
            keystream(&self.key, &nonce, CHACHA_BLOCK_BYTES).apply_keystream(&mut next_key);
            self.key = next_key;
        }
        self.packet_index += 1;
    }
}

/// Encrypts the packets we send.
pub(crate) struct PacketWriter {
    length_cipher: LengthCipher,
    packet_aead: PacketAead,
    /// The first packet's associated data: the garbage we sent.
    first_packet_aad: Vec<u8>,
}

impl PacketWriter {
    pub(crate) fn new(length_key: [u8; 32], packet_key: [u8; 32], garbage: Vec<u8>) -> Self {
        PacketWriter {
            length_cipher: LengthCipher::new(length_key),
            packet_aead: PacketAead::new(packet_key),
            first_packet_aad: garbage,
        }
    }

    /// Starts a packet with header byte `header` at the end of `out` and
    /// returns where it starts; the caller appends the contents in place (so
    /// a 4 MB block is written once), then calls
    /// [`seal_packet`](Self::seal_packet).
    pub(crate) fn begin_packet(&self, header: u8, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        out.extend_from_slice(&[0; LENGTH_FIELD_BYTES]);
        out.push(header);
        start
    }

    /// Encrypts the packet begun at `start` in place and appends its tag.
    /// Its contents must not exceed [`PACKET_CONTENTS_BYTES_MAX`]: callers
    /// check the payload first (Core's peer would disconnect).
    pub(crate) fn seal_packet(&mut self, start: usize, out: &mut Vec<u8>) {
        let contents_bytes = out.len() - start - LENGTH_FIELD_BYTES - HEADER_BYTES;
        assert!(contents_bytes <= PACKET_CONTENTS_BYTES_MAX, "packet contents within the limit");
        let aad = std::mem::take(&mut self.first_packet_aad);
        let tag = self.packet_aead.encrypt(&aad, &mut out[start + LENGTH_FIELD_BYTES..]);
        out.extend_from_slice(&tag);
        let mut length = [0u8; LENGTH_FIELD_BYTES];
        length.copy_from_slice(&(contents_bytes as u32).to_le_bytes()[..LENGTH_FIELD_BYTES]);
        self.length_cipher.crypt(&mut length);
        out[start..start + LENGTH_FIELD_BYTES].copy_from_slice(&length);
        debug_assert_eq!(out.len() - start, contents_bytes + PACKET_OVERHEAD_BYTES);
    }

    /// Appends a whole packet with header byte `header` and `contents`.
    #[cfg(test)]
    pub(crate) fn write_packet(&mut self, header: u8, contents: &[u8], out: &mut Vec<u8>) {
        let start = self.begin_packet(header, out);
        out.extend_from_slice(contents);
        self.seal_packet(start, out);
    }
}

/// Decrypts the packets we receive.
pub(crate) struct PacketOpener {
    length_cipher: LengthCipher,
    packet_aead: PacketAead,
    /// The first packet's associated data: the peer's garbage.
    first_packet_aad: Vec<u8>,
}

impl PacketOpener {
    pub(crate) fn new(length_key: [u8; 32], packet_key: [u8; 32]) -> Self {
        PacketOpener {
            length_cipher: LengthCipher::new(length_key),
            packet_aead: PacketAead::new(packet_key),
            first_packet_aad: Vec::new(),
        }
    }

    /// Sets the first packet's associated data (the garbage received).
    pub(crate) fn set_first_packet_aad(&mut self, garbage: Vec<u8>) {
        self.first_packet_aad = garbage;
    }

    /// Packets opened so far.
    pub(crate) fn packets_opened(&self) -> u64 {
        self.packet_aead.packet_index
    }

    /// The contents length of the next packet, from its 3 encrypted bytes.
    pub(crate) fn decrypt_length(&mut self, mut length: [u8; LENGTH_FIELD_BYTES]) -> u32 {
        self.length_cipher.crypt(&mut length);
        u32::from_le_bytes([length[0], length[1], length[2], 0])
    }

    /// Decrypts `packet` (header, contents, tag) in place and drops the tag;
    /// false if the tag does not match. The associated data is cleared after
    /// the first packet that opens, as Core clears `m_recv_aad`.
    pub(crate) fn open(&mut self, packet: &mut Vec<u8>) -> bool {
        let Some(text_bytes) = packet.len().checked_sub(TAG_BYTES) else {
            return false;
        };
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&packet[text_bytes..]);
        if !self.packet_aead.decrypt(&self.first_packet_aad, &mut packet[..text_bytes], tag) {
            return false;
        }
        self.first_packet_aad = Vec::new();
        packet.truncate(text_bytes);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (PacketWriter, PacketOpener) {
        (
            PacketWriter::new([1; 32], [2; 32], b"garbage".to_vec()),
            PacketOpener::new([1; 32], [2; 32]),
        )
    }

    /// Writes `count` packets and opens each, returning the last plaintext.
    fn round_trips(count: usize) {
        let (mut writer, mut opener) = pair();
        opener.set_first_packet_aad(b"garbage".to_vec());
        for index in 0..count {
            let contents = (index as u32).to_le_bytes();
            let mut wire = Vec::new();
            writer.write_packet(0, &contents, &mut wire);
            let mut length = [0u8; 3];
            length.copy_from_slice(&wire[..3]);
            assert_eq!(opener.decrypt_length(length), 4, "packet {index}");
            let mut packet = wire[3..].to_vec();
            assert!(opener.open(&mut packet), "packet {index}");
            assert_eq!(packet[0], 0);
            assert_eq!(&packet[1..], &contents);
        }
    }

    #[test]
    fn packets_round_trip_across_rekeys() {
        round_trips(3 * REKEY_INTERVAL as usize + 5);
    }

    #[test]
    fn first_packet_needs_the_garbage_as_associated_data() {
        let (mut writer, mut opener) = pair();
        let mut wire = Vec::new();
        writer.write_packet(0, &[], &mut wire);
        let mut packet = wire[3..].to_vec();
        assert!(!opener.open(&mut packet), "no associated data given");
        opener.set_first_packet_aad(b"garbage".to_vec());
        let mut packet = wire[3..].to_vec();
        assert!(opener.open(&mut packet));
        assert_eq!(opener.packets_opened(), 1);
    }

    #[test]
    fn rekeyed_ciphers_differ_from_the_initial_ones() {
        let mut fresh = LengthCipher::new([4; 32]);
        let mut used = LengthCipher::new([4; 32]);
        for _ in 0..REKEY_INTERVAL {
            used.crypt(&mut [0; 3]);
        }
        let (mut first, mut later) = ([0u8; 3], [0u8; 3]);
        fresh.crypt(&mut first);
        used.crypt(&mut later);
        assert_ne!(first, later, "new key, new epoch");
        assert_eq!(used.chunk_index, REKEY_INTERVAL + 1);
    }
}

//! Block-file XOR obfuscation, as Bitcoin Core applies it to `blk`/`rev` files.
//!
//! Core (since v28) writes a random 8-byte key to `blocks/xor.dat` and XORs every
//! byte at file offset `p` with `key[p % 8]`. An all-zero key means no obfuscation.
//!
//! Napkin math: Core's XOR runs at ~23 GB/s here (0.04 ns/byte). We rotate the key
//! to the buffer's file offset once, then XOR whole `u64` words (the compiler turns
//! the word loop into SIMD); a 1 MB block costs ~40 us, a 128 MiB file ~6 ms.

/// Bytes in an obfuscation key.
pub const KEY_BYTES: usize = 8;

/// An 8-byte XOR key (Core's `Obfuscation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Obfuscation {
    key: [u8; KEY_BYTES],
}

impl Obfuscation {
    /// A key from its 8 bytes as stored in `xor.dat`.
    pub const fn new(key: [u8; KEY_BYTES]) -> Self {
        Obfuscation { key }
    }

    /// The key bytes.
    pub const fn key(&self) -> [u8; KEY_BYTES] {
        self.key
    }

    /// Whether the key is all zeros (obfuscation off).
    pub fn is_identity(&self) -> bool {
        self.key == [0; KEY_BYTES]
    }

    /// XORs `data` in place, where `data[0]` sits at `file_offset` in its file.
    /// Applying it twice restores the input.
    pub fn apply(&self, data: &mut [u8], file_offset: u64) {
        if self.is_identity() {
            return;
        }
        let shift = (file_offset % KEY_BYTES as u64) as usize;
        let mut rotated = self.key;
        rotated.rotate_left(shift);
        let word = u64::from_ne_bytes(rotated);
        let mut chunks = data.chunks_exact_mut(KEY_BYTES);
        for chunk in &mut chunks {
            let mut bytes = [0u8; KEY_BYTES];
            bytes.copy_from_slice(chunk);
            chunk.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ word).to_ne_bytes());
        }
        for (byte, key_byte) in chunks.into_remainder().iter_mut().zip(rotated) {
            *byte ^= key_byte;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, byte by byte, to check the word-wise version against.
    fn reference(key: [u8; 8], data: &mut [u8], file_offset: u64) {
        for (index, byte) in data.iter_mut().enumerate() {
            *byte ^= key[((file_offset + index as u64) % 8) as usize];
        }
    }

    #[test]
    fn matches_bytewise_definition_at_every_alignment() {
        let key = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
        let obfuscation = Obfuscation::new(key);
        for offset in 0..16u64 {
            for length in [0, 1, 7, 8, 9, 31, 64, 100] {
                let original: Vec<u8> = (0..length).map(|i| (i * 7 + 3) as u8).collect();
                let mut fast = original.clone();
                let mut slow = original.clone();
                obfuscation.apply(&mut fast, offset);
                reference(key, &mut slow, offset);
                assert_eq!(fast, slow, "offset {offset} length {length}");
                obfuscation.apply(&mut fast, offset);
                assert_eq!(fast, original);
            }
        }
    }
}

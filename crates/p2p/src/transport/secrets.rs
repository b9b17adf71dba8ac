//! What one side brings to a BIP324 handshake: its role, its ephemeral key
//! with the ElligatorSwift encoding it sends, and the garbage it sends after.

use std::fmt;

use secp256k1::ellswift::ElligatorSwift;
use secp256k1::{Secp256k1, SecretKey};

use crate::transport::{TransportError, ELLSWIFT_KEY_BYTES, GARBAGE_BYTES_MAX};

/// Which side of the connection this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// We opened the connection (Core: an outbound peer); we send first.
    Initiator,
    /// The peer opened it (Core: an inbound peer); we first tell a v1 peer
    /// from a v2 one.
    Responder,
}

/// Secret keys drawn from the OS are retried this many times: a draw is
/// invalid with probability about 2^-128 (Core's `MakeNewKey` loops).
const KEY_DRAWS_MAX: usize = 4;

/// One handshake's secrets: an ephemeral secp256k1 key, its 64-byte
/// ElligatorSwift encoding (what goes on the wire), and the garbage sent
/// after it (at most [`GARBAGE_BYTES_MAX`] bytes). Use each for one
/// connection only. `Debug` shows neither the key nor the garbage.
#[derive(Clone)]
pub struct HandshakeSecrets {
    secret_key: SecretKey,
    public_key: [u8; ELLSWIFT_KEY_BYTES],
    garbage: Vec<u8>,
}

impl HandshakeSecrets {
    /// Secrets from given bytes (for tests and reproducible runs). The
    /// encoding is libsecp256k1's `ellswift_create` with
    /// `encoding_randomness` as its auxiliary randomness, as Core's
    /// `CKey::EllSwiftCreate` does, so a fresh random value makes the 64
    /// bytes indistinguishable from random ones.
    pub fn new(
        secret_key_bytes: [u8; 32],
        encoding_randomness: [u8; 32],
        garbage: Vec<u8>,
    ) -> Result<HandshakeSecrets, TransportError> {
        if garbage.len() > GARBAGE_BYTES_MAX {
            return Err(TransportError::GarbageTooLong { garbage_bytes: garbage.len() });
        }
        let secret_key = SecretKey::from_byte_array(secret_key_bytes)
            .map_err(|_| TransportError::InvalidSecretKey)?;
        // Not `ElligatorSwift::new`: it passes libsecp256k1's static context,
        // which `ellswift_create` refuses by aborting the process.
        let context = Secp256k1::new();
        let public_key =
            ElligatorSwift::from_seckey(&context, secret_key, Some(encoding_randomness)).to_array();
        Ok(HandshakeSecrets { secret_key, public_key, garbage })
    }

    /// Secrets as Core makes them for every v2 connection
    /// (`GenerateRandomKey`, `GetRandHash` for the encoding,
    /// `GenerateRandomGarbage`): a random key and encoding, and garbage of a
    /// uniformly random length in `0..=4095` with random bytes, all from the
    /// operating system's random source.
    pub fn from_os_random() -> Result<HandshakeSecrets, TransportError> {
        let mut random = [0u8; 32 + 32 + 2];
        let mut garbage = Vec::new();
        for _ in 0..KEY_DRAWS_MAX {
            fill_random(&mut random)?;
            let (key_part, rest) = random.split_at(32);
            let (encoding_part, length_part) = rest.split_at(32);
            // 65,536 is a multiple of 4,096: the length is uniform.
            let garbage_bytes = usize::from(u16::from_le_bytes([length_part[0], length_part[1]]))
                % (GARBAGE_BYTES_MAX + 1);
            garbage.resize(garbage_bytes, 0);
            fill_random(&mut garbage)?;
            let mut secret_key_bytes = [0u8; 32];
            let mut encoding_randomness = [0u8; 32];
            secret_key_bytes.copy_from_slice(key_part);
            encoding_randomness.copy_from_slice(encoding_part);
            match HandshakeSecrets::new(secret_key_bytes, encoding_randomness, garbage.clone()) {
                Err(TransportError::InvalidSecretKey) => continue,
                result => return result,
            }
        }
        Err(TransportError::InvalidSecretKey)
    }

    /// The 64-byte ElligatorSwift encoding of our public key, the first
    /// bytes we send.
    pub fn public_key(&self) -> &[u8; ELLSWIFT_KEY_BYTES] {
        &self.public_key
    }

    /// The garbage sent after the key.
    pub fn garbage(&self) -> &[u8] {
        &self.garbage
    }

    pub(crate) fn secret_key(&self) -> &SecretKey {
        &self.secret_key
    }

    /// Takes the garbage out once it is no longer needed (it is the first
    /// packet's associated data).
    pub(crate) fn take_garbage(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.garbage)
    }
}

impl fmt::Debug for HandshakeSecrets {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("HandshakeSecrets")
            .field("garbage_bytes", &self.garbage.len())
            .finish_non_exhaustive()
    }
}

fn fill_random(buffer: &mut [u8]) -> Result<(), TransportError> {
    getrandom::fill(buffer).map_err(|source| TransportError::RandomSource { source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_limit_and_invalid_keys_are_refused() {
        let key = [7u8; 32];
        assert!(HandshakeSecrets::new(key, [0; 32], vec![0; GARBAGE_BYTES_MAX]).is_ok());
        assert_eq!(
            HandshakeSecrets::new(key, [0; 32], vec![0; GARBAGE_BYTES_MAX + 1]).unwrap_err(),
            TransportError::GarbageTooLong { garbage_bytes: 4096 }
        );
        assert_eq!(
            HandshakeSecrets::new([0; 32], [0; 32], Vec::new()).unwrap_err(),
            TransportError::InvalidSecretKey
        );
        assert_eq!(
            HandshakeSecrets::new([0xff; 32], [0; 32], Vec::new()).unwrap_err(),
            TransportError::InvalidSecretKey,
            "above the group order"
        );
    }

    #[test]
    fn encoding_depends_on_the_randomness_and_os_secrets_differ() {
        let key = [9u8; 32];
        let first = HandshakeSecrets::new(key, [1; 32], Vec::new()).unwrap();
        let second = HandshakeSecrets::new(key, [2; 32], Vec::new()).unwrap();
        assert_ne!(first.public_key(), second.public_key(), "one key, many encodings");
        let drawn = HandshakeSecrets::from_os_random().unwrap();
        let again = HandshakeSecrets::from_os_random().unwrap();
        assert_ne!(drawn.public_key(), again.public_key());
        assert!(drawn.garbage().len() <= GARBAGE_BYTES_MAX);
        assert!(!format!("{drawn:?}").contains("secret_key"));
    }
}

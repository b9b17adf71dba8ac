//! BIP324's key schedule: an x-only ECDH on the two ElligatorSwift keys,
//! then HKDF-SHA256 with salt `"bitcoin_v2_shared_secret"` followed by the
//! network magic, expanded into the session id, two keys per direction
//! (lengths `_L`, packets `_P`) and the two garbage terminators.

use hkdf::Hkdf;
use secp256k1::ellswift::{ElligatorSwift, Party};
use sha2::Sha256;

use crate::framing::MAGIC_BYTES;
use crate::transport::{HandshakeSecrets, Role, ELLSWIFT_KEY_BYTES, GARBAGE_TERMINATOR_BYTES};

/// The HKDF salt's prefix; the network magic follows it.
const SALT_PREFIX: &[u8; 24] = b"bitcoin_v2_shared_secret";

/// What both sides derive from the key exchange, seen from one side.
pub(crate) struct SessionKeys {
    /// The session id (Core shows it in `getpeerinfo`).
    pub session_id: [u8; 32],
    /// FSChaCha20 key for the lengths we send.
    pub send_length_key: [u8; 32],
    /// FSChaCha20Poly1305 key for the packets we send.
    pub send_packet_key: [u8; 32],
    /// FSChaCha20 key for the lengths we receive.
    pub receive_length_key: [u8; 32],
    /// FSChaCha20Poly1305 key for the packets we receive.
    pub receive_packet_key: [u8; 32],
    /// The terminator we send after our garbage.
    pub send_garbage_terminator: [u8; GARBAGE_TERMINATOR_BYTES],
    /// The terminator that ends the peer's garbage.
    pub receive_garbage_terminator: [u8; GARBAGE_TERMINATOR_BYTES],
}

/// Derives the session keys from our secrets and the peer's 64-byte key.
/// Any 64 bytes are a valid ElligatorSwift encoding, so this cannot fail.
pub(crate) fn derive_session_keys(
    role: Role,
    magic: [u8; MAGIC_BYTES],
    secrets: &HandshakeSecrets,
    peer_public_key: &[u8; ELLSWIFT_KEY_BYTES],
) -> SessionKeys {
    let ours = ElligatorSwift::from_array(*secrets.public_key());
    let theirs = ElligatorSwift::from_array(*peer_public_key);
    // The ECDH hash covers the initiator's encoding first.
    let (initiator_key, responder_key, party) = match role {
        Role::Initiator => (ours, theirs, Party::Initiator),
        Role::Responder => (theirs, ours, Party::Responder),
    };
    let shared_secret = ElligatorSwift::shared_secret(
        initiator_key,
        responder_key,
        *secrets.secret_key(),
        party,
        None,
    );
    let mut salt = [0u8; SALT_PREFIX.len() + MAGIC_BYTES];
    salt[..SALT_PREFIX.len()].copy_from_slice(SALT_PREFIX);
    salt[SALT_PREFIX.len()..].copy_from_slice(&magic);
    let hkdf = Hkdf::<Sha256>::new(Some(&salt), shared_secret.as_secret_bytes());

    let terminators = expand_32(&hkdf, b"garbage_terminators");
    let mut initiator_terminator = [0u8; GARBAGE_TERMINATOR_BYTES];
    let mut responder_terminator = [0u8; GARBAGE_TERMINATOR_BYTES];
    initiator_terminator.copy_from_slice(&terminators[..GARBAGE_TERMINATOR_BYTES]);
    responder_terminator.copy_from_slice(&terminators[GARBAGE_TERMINATOR_BYTES..]);
    let initiator_length_key = expand_32(&hkdf, b"initiator_L");
    let initiator_packet_key = expand_32(&hkdf, b"initiator_P");
    let responder_length_key = expand_32(&hkdf, b"responder_L");
    let responder_packet_key = expand_32(&hkdf, b"responder_P");
    let session_id = expand_32(&hkdf, b"session_id");
    match role {
        Role::Initiator => SessionKeys {
            session_id,
            send_length_key: initiator_length_key,
            send_packet_key: initiator_packet_key,
            receive_length_key: responder_length_key,
            receive_packet_key: responder_packet_key,
            send_garbage_terminator: initiator_terminator,
            receive_garbage_terminator: responder_terminator,
        },
        Role::Responder => SessionKeys {
            session_id,
            send_length_key: responder_length_key,
            send_packet_key: responder_packet_key,
            receive_length_key: initiator_length_key,
            receive_packet_key: initiator_packet_key,
            send_garbage_terminator: responder_terminator,
            receive_garbage_terminator: initiator_terminator,
        },
    }
}

/// HKDF-Expand to 32 bytes (Core's `CHKDF_HMAC_SHA256_L32::Expand32`).
fn expand_32(hkdf: &Hkdf<Sha256>, info: &[u8]) -> [u8; 32] {
    let mut output = [0u8; 32];
    // HKDF-SHA256 refuses only outputs above 255 x 32 bytes.
    let expanded = hkdf.expand(info, &mut output);
    assert!(expanded.is_ok(), "HKDF-SHA256 expands to 32 bytes");
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAINNET: [u8; 4] = [0xf9, 0xbe, 0xb4, 0xd9];

    fn secrets(seed: u8) -> HandshakeSecrets {
        HandshakeSecrets::new([seed; 32], [seed.wrapping_add(1); 32], Vec::new()).unwrap()
    }

    #[test]
    fn both_sides_derive_mirrored_keys() {
        let initiator = secrets(3);
        let responder = secrets(5);
        let on_initiator =
            derive_session_keys(Role::Initiator, MAINNET, &initiator, responder.public_key());
        let on_responder =
            derive_session_keys(Role::Responder, MAINNET, &responder, initiator.public_key());
        assert_eq!(on_initiator.session_id, on_responder.session_id);
        assert_eq!(on_initiator.send_length_key, on_responder.receive_length_key);
        assert_eq!(on_initiator.send_packet_key, on_responder.receive_packet_key);
        assert_eq!(on_initiator.receive_packet_key, on_responder.send_packet_key);
        assert_eq!(on_initiator.send_garbage_terminator, on_responder.receive_garbage_terminator);
        assert_eq!(on_initiator.receive_garbage_terminator, on_responder.send_garbage_terminator);
        assert_ne!(on_initiator.send_packet_key, on_initiator.receive_packet_key);
    }

    #[test]
    fn the_magic_is_in_the_salt() {
        let initiator = secrets(3);
        let responder = secrets(5);
        let regtest = [0xfa, 0xbf, 0xb5, 0xda];
        let mainnet =
            derive_session_keys(Role::Initiator, MAINNET, &initiator, responder.public_key());
        let other =
            derive_session_keys(Role::Initiator, regtest, &initiator, responder.public_key());
        assert_ne!(mainnet.session_id, other.session_id);
    }
}

//! Bitcoin Core's compact coin encoding: amount and script compression.
//!
//! The format is Core's (`compressor.cpp`), so a coins database written by
//! Ibex stores each output in the same bytes Core's chainstate does:
//!
//! - **Amount**: trailing decimal zeros are folded into an exponent `e` (at most
//!   9); below 9 the last non-zero digit `d` is split off, giving
//!   `1 + 10 * (9 * n + d - 1) + e`, else `1 + 10 * (n - 1) + 9`; zero stays 0.
//!   A round 50 BTC reward becomes the 1-byte VARINT 0x32.
//! - **Script**: six special forms stored as a 1-byte tag plus a payload
//!   (0: P2PKH hash160, 1: P2SH hash160, 2/3: compressed P2PK x coordinate,
//!   4/5: uncompressed P2PK stored as its compressed form, the tag carrying
//!   the parity of y); any other script as `VARINT(length + 6)` and its bytes.
//!   Uncompressed P2PK is only special when the key is on the curve, because
//!   decoding has to recompute y with libsecp256k1.
//!
//! Decoding reads untrusted bytes: every failure is a [`CoinDecodeError`].

use ibex_primitives::encode::{write_varint, Reader};
use ibex_primitives::limits::SCRIPT_BYTES_MAX;
use ibex_primitives::MAX_MONEY;
use ibex_script::opcodes::{OP_CHECKSIG, OP_DUP, OP_EQUAL, OP_EQUALVERIFY, OP_HASH160, OP_RETURN};
use secp256k1::PublicKey;

use crate::error::CoinDecodeError;

/// Number of special script forms (Core's `nSpecialScripts`).
const SPECIAL_SCRIPT_COUNT: u64 = 6;
/// Hash160 payload of the P2PKH and P2SH forms.
const HASH160_BYTES: usize = 20;
/// X-coordinate payload of the P2PK forms.
const KEY_X_BYTES: usize = 32;

pub use ibex_primitives::amount::{compress_amount, decompress_amount};

/// Decodes a compressed amount and checks it against `MAX_MONEY`.
pub(crate) fn read_amount(reader: &mut Reader<'_>) -> Result<i64, CoinDecodeError> {
    let compressed = reader.read_varint()?;
    decompress_amount(compressed)
        .and_then(|satoshis| i64::try_from(satoshis).ok())
        .filter(|satoshis| *satoshis <= MAX_MONEY)
        .ok_or(CoinDecodeError::AmountOutOfRange { compressed })
}

/// The special form of `script`, if it has one: tag byte and payload.
fn special_form(script: &[u8]) -> Option<(u8, &[u8])> {
    match script {
        [OP_DUP, OP_HASH160, 20, hash @ .., OP_EQUALVERIFY, OP_CHECKSIG]
            if hash.len() == HASH160_BYTES =>
        {
            Some((0x00, hash))
        }
        [OP_HASH160, 20, hash @ .., OP_EQUAL] if hash.len() == HASH160_BYTES => Some((0x01, hash)),
        [33, key @ .., OP_CHECKSIG] if key.len() == 33 && matches!(key[0], 0x02 | 0x03) => {
            Some((key[0], &key[1..]))
        }
        [65, key @ .., OP_CHECKSIG] if key.len() == 65 && key[0] == 0x04 => {
            // Core's IsFullyValid: only keys on the curve can be recomputed.
            PublicKey::from_slice(key).ok()?;
            Some((0x04 | (key[64] & 0x01), &key[1..33]))
        }
        _ => None,
    }
}

/// Appends Core's `ScriptCompression` encoding of `script`.
pub fn write_script(out: &mut Vec<u8>, script: &[u8]) {
    if let Some((tag, payload)) = special_form(script) {
        out.push(tag);
        out.extend_from_slice(payload);
        return;
    }
    write_varint(out, script.len() as u64 + SPECIAL_SCRIPT_COUNT);
    out.extend_from_slice(script);
}

/// Bytes [`write_script`] appends for `script`.
pub fn script_encoded_bytes(script: &[u8]) -> usize {
    match special_form(script) {
        Some((_, payload)) => 1 + payload.len(),
        None => {
            ibex_primitives::encode::varint_len(script.len() as u64 + SPECIAL_SCRIPT_COUNT)
                + script.len()
        }
    }
}

/// Decodes a compressed script. Like Core, a length above
/// [`SCRIPT_BYTES_MAX`] is skipped and read as the one-byte `OP_RETURN`.
pub fn read_script(reader: &mut Reader<'_>) -> Result<Vec<u8>, CoinDecodeError> {
    let mut script = Vec::new();
    read_script_into(reader, &mut script)?;
    Ok(script)
}

/// [`read_script`] into `script` (cleared first), without allocating when
/// it has room: the whole-set walks decode every coin into one buffer.
pub fn read_script_into(
    reader: &mut Reader<'_>,
    script: &mut Vec<u8>,
) -> Result<(), CoinDecodeError> {
    script.clear();
    let code = reader.read_varint()?;
    if code > u64::from(u32::MAX) {
        return Err(CoinDecodeError::ScriptSizeOutOfRange { code });
    }
    if code < SPECIAL_SCRIPT_COUNT {
        return read_special(reader, code as u8, script);
    }
    let length = (code - SPECIAL_SCRIPT_COUNT) as usize;
    let bytes = reader.take(length)?;
    if length > SCRIPT_BYTES_MAX {
        script.push(OP_RETURN);
    } else {
        script.extend_from_slice(bytes);
    }
    Ok(())
}

fn read_special(
    reader: &mut Reader<'_>,
    tag: u8,
    script: &mut Vec<u8>,
) -> Result<(), CoinDecodeError> {
    match tag {
        0x00 => {
            let hash = reader.take(HASH160_BYTES)?;
            script.extend_from_slice(&[OP_DUP, OP_HASH160, 20]);
            script.extend_from_slice(hash);
            script.extend_from_slice(&[OP_EQUALVERIFY, OP_CHECKSIG]);
        }
        0x01 => {
            let hash = reader.take(HASH160_BYTES)?;
            script.extend_from_slice(&[OP_HASH160, 20]);
            script.extend_from_slice(hash);
            script.push(OP_EQUAL);
        }
        0x02 | 0x03 => {
            let x = reader.take(KEY_X_BYTES)?;
            script.extend_from_slice(&[33, tag]);
            script.extend_from_slice(x);
            script.push(OP_CHECKSIG);
        }
        _ => {
            let x = reader.take(KEY_X_BYTES)?;
            let mut compressed = [0u8; 33];
            compressed[0] = tag - 2;
            compressed[1..].copy_from_slice(x);
            let key = PublicKey::from_slice(&compressed)
                .map_err(|_| CoinDecodeError::InvalidPublicKey)?;
            script.push(65);
            script.extend_from_slice(&key.serialize_uncompressed());
            script.push(OP_CHECKSIG);
        }
    }
    Ok(())
}

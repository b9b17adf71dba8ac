//! REST `getutxos` (BIP64, Core's `rest_getutxos`): up to 15 outpoints, in
//! the URI (`/rest/getutxos[/checkmempool]/<txid>-<n>/....<ext>`) or, for
//! `.bin` and `.hex`, in the POST body; the answer is the tip's height and
//! hash, a bitmap of which outpoints are unspent, and those outputs.
//!
//! The body is read exactly as Core reads it, quirk included: Core writes
//! the body *as a string* into a stream (so with its length in front) and
//! then reads a bool and a vector of outpoints from that stream. The bool
//! is the first byte of the length (so `checkmempool` is always on for a
//! body), and the outpoint count is read from the body's first bytes.

use ibex_primitives::encode::write_compact_size;
use ibex_primitives::{Height, OutPoint, Txid};

use super::jsonrpc::HttpReply;
use super::rest::{
    backend_failure, binary, format_not_found, hex_text, json, parse_format, parse_hash,
    parse_integral, rest_error, Format,
};
use crate::backend::{CoinsAnswer, UnspentOutput};
use crate::json::{close_object, hash_string, key, open_object, plain_string};
use crate::methods::MethodContext;
use crate::number::{write_amount, write_i64, write_u64};
use crate::script_json::write_script_pub_key;

/// Most outpoints one request may ask (Core's `MAX_GETUTXOS_OUTPOINTS`).
pub(crate) const GETUTXOS_OUTPOINTS_MAX: usize = 15;
/// Serialised outpoint: txid and index.
const OUTPOINT_BYTES: usize = 36;
/// Core's `MAX_SIZE`, the largest compact size it reads.
const COMPACT_SIZE_MAX: u64 = 0x0200_0000;
/// The height Core gives a mempool coin (`MEMPOOL_HEIGHT`).
const MEMPOOL_HEIGHT: u32 = 0x7fff_ffff;

pub(crate) fn rest_getutxos(context: &MethodContext, uri_part: &str, body: &[u8]) -> HttpReply {
    let (param, format) = parse_format(uri_part);
    // Core splits what follows the first byte (the `/`). When that byte
    // starts a longer UTF-8 character, the first part holds the rest of
    // it, which is neither `checkmempool` nor an outpoint: Core's parse error.
    let uri_parts: Vec<&str> = match param.get(1..) {
        _ if param.len() <= 1 => Vec::new(),
        Some(rest) => rest.split('/').collect(),
        None => return rest_error(400, "Parse error"),
    };
    if body.is_empty() && uri_parts.is_empty() {
        return rest_error(400, "Error: empty request");
    }
    let mut check_mempool = false;
    let mut outpoints = Vec::new();
    if let Some(first) = uri_parts.first() {
        check_mempool = *first == "checkmempool";
        for part in uri_parts.iter().skip(usize::from(check_mempool)) {
            let Some(outpoint) = parse_uri_outpoint(part) else {
                return rest_error(400, "Parse error");
            };
            outpoints.push(outpoint);
        }
        if outpoints.is_empty() {
            return rest_error(400, "Error: empty request");
        }
    }
    let input_parsed = !outpoints.is_empty();
    match format {
        Format::Hex | Format::Binary => {
            let decoded;
            let body = if format == Format::Hex {
                decoded = parse_hex(body).unwrap_or_default();
                decoded.as_slice()
            } else {
                body
            };
            if !body.is_empty() {
                if input_parsed {
                    return rest_error(
                        400,
                        "Combination of URI scheme inputs and raw post data is not allowed",
                    );
                }
                match read_body_as_core_does(body) {
                    Some((mempool, read)) => {
                        check_mempool = mempool;
                        outpoints = read;
                    }
                    None => return rest_error(400, "Parse error"),
                }
            }
        }
        Format::Json if !input_parsed => return rest_error(400, "Error: empty request"),
        Format::Json => {}
        Format::Undefined => return format_not_found(),
    }
    if outpoints.len() > GETUTXOS_OUTPOINTS_MAX {
        return rest_error(
            400,
            &format!(
                "Error: max outpoints exceeded (max: {GETUTXOS_OUTPOINTS_MAX}, tried: {})",
                outpoints.len()
            ),
        );
    }
    let answer = match context.backend.coins(&outpoints, check_mempool) {
        Ok(answer) => answer,
        Err(error) => return backend_failure(&error),
    };
    match format {
        Format::Json => json(utxos_json(context, &answer)),
        Format::Hex => hex_text(&utxos_binary(&answer)),
        _ => binary(utxos_binary(&answer)),
    }
}

/// `<txid>-<n>`: exactly one dash, 64 hex digits, a `uint32`.
fn parse_uri_outpoint(text: &str) -> Option<OutPoint> {
    let mut pieces = text.split('-');
    let (txid, vout) = (pieces.next()?, pieces.next()?);
    if pieces.next().is_some() {
        return None;
    }
    Some(OutPoint { txid: Txid(parse_hash(txid)?), vout: parse_integral::<u32>(vout)? })
}

/// Core's `TryParseHex`: pairs of hex digits, whitespace allowed between
/// them; anything else fails the whole string.
fn parse_hex(text: &[u8]) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(text.len() / 2);
    let mut digits = text.iter().copied().filter(|byte| !byte.is_ascii_whitespace()).peekable();
    while digits.peek().is_some() {
        let high = char::from(digits.next()?).to_digit(16)?;
        let low = char::from(digits.next()?).to_digit(16)?;
        bytes.push(u8::try_from(high << 4 | low).ok()?);
    }
    Some(bytes)
}

/// A stream over bytes, reading as Core's `DataStream` does.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, count: usize) -> Option<&[u8]> {
        let (taken, rest) = self.bytes.split_at_checked(count)?;
        self.bytes = rest;
        Some(taken)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|bytes| bytes[0])
    }

    /// Core's `ReadCompactSize`: canonical, at most `MAX_SIZE`.
    fn compact_size(&mut self) -> Option<u64> {
        let (value, minimum) = match self.byte()? {
            0xfd => (u64::from(u16::from_le_bytes(self.take(2)?.try_into().ok()?)), 0xfd),
            0xfe => (u64::from(u32::from_le_bytes(self.take(4)?.try_into().ok()?)), 0x1_0000),
            0xff => (u64::from_le_bytes(self.take(8)?.try_into().ok()?), 0x1_0000_0000),
            small => return Some(u64::from(small)),
        };
        (value >= minimum && value <= COMPACT_SIZE_MAX).then_some(value)
    }
}

/// Reads `bool checkmempool` then `vector<COutPoint>` from the body with
/// its compact-size length in front (see the module docs). The count is
/// checked against the bytes there before anything is allocated.
fn read_body_as_core_does(body: &[u8]) -> Option<(bool, Vec<OutPoint>)> {
    let mut stream = Vec::with_capacity(body.len() + 9);
    write_compact_size(&mut stream, body.len() as u64);
    stream.extend_from_slice(body);
    let mut reader = Reader { bytes: &stream };
    let check_mempool = reader.byte()? != 0;
    let count = usize::try_from(reader.compact_size()?).ok()?;
    if count > reader.bytes.len() / OUTPOINT_BYTES {
        return None;
    }
    let mut outpoints = Vec::with_capacity(count);
    for _ in 0..count {
        let txid: [u8; 32] = reader.take(32)?.try_into().ok()?;
        let vout = u32::from_le_bytes(reader.take(4)?.try_into().ok()?);
        outpoints.push(OutPoint { txid: Txid(txid), vout });
    }
    Some((check_mempool, outpoints))
}

fn coin_height(coin: &UnspentOutput) -> u32 {
    coin.height.map_or(MEMPOOL_HEIGHT, Height::to_u32)
}

/// BIP64's binary answer: height (`int32`), tip hash, bitmap (a byte
/// vector), then the unspent outputs as Core's `CCoin` (a zero `uint32`,
/// the height, the output).
fn utxos_binary(answer: &CoinsAnswer) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&answer.tip.height.to_le_bytes());
    out.extend_from_slice(&answer.tip.hash.0);
    let mut bitmap = vec![0u8; answer.coins.len().div_ceil(8)];
    for (index, coin) in answer.coins.iter().enumerate() {
        if coin.is_some() {
            bitmap[index / 8] |= 1 << (index % 8);
        }
    }
    write_compact_size(&mut out, bitmap.len() as u64);
    out.extend_from_slice(&bitmap);
    let found: Vec<&UnspentOutput> = answer.coins.iter().flatten().collect();
    write_compact_size(&mut out, found.len() as u64);
    for coin in found {
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&coin_height(coin).to_le_bytes());
        out.extend_from_slice(&coin.value.to_sat().to_le_bytes());
        write_compact_size(&mut out, coin.script_pubkey.len() as u64);
        out.extend_from_slice(&coin.script_pubkey);
    }
    out
}

fn utxos_json(context: &MethodContext, answer: &CoinsAnswer) -> Vec<u8> {
    let mut out = Vec::new();
    open_object(&mut out, "chainHeight");
    write_u64(&mut out, u64::from(answer.tip.height));
    key(&mut out, "chaintipHash");
    hash_string(&mut out, &answer.tip.hash.0);
    key(&mut out, "bitmap");
    let bitmap: String =
        answer.coins.iter().map(|coin| if coin.is_some() { '1' } else { '0' }).collect();
    plain_string(&mut out, bitmap.as_bytes());
    key(&mut out, "utxos");
    out.push(b'[');
    for (index, coin) in answer.coins.iter().flatten().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        open_object(&mut out, "height");
        write_i64(&mut out, i64::from(coin_height(coin)));
        key(&mut out, "value");
        write_amount(&mut out, coin.value.to_sat());
        key(&mut out, "scriptPubKey");
        write_script_pub_key(&mut out, &coin.script_pubkey, &context.address_params);
        close_object(&mut out);
    }
    out.push(b']');
    close_object(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_read_as_core_reads_it() {
        // Core's functional test body: 0x01 0x02 then two outpoints. Core
        // reads a count of 1 from the first byte, then one outpoint from
        // the next 36 bytes, and checks the mempool.
        let mut body = vec![0x01, 0x02];
        body.extend_from_slice(&[0xaa; 36]);
        body.extend_from_slice(&[0xbb; 36]);
        let (check_mempool, outpoints) = read_body_as_core_does(&body).unwrap();
        assert!(check_mempool);
        assert_eq!(outpoints.len(), 1);
        assert_eq!(outpoints[0].txid.0[0], 0x02);
        assert_eq!(outpoints[0].vout, u32::from_le_bytes([0xaa; 4]));
        // A count the bytes cannot hold is refused before allocating.
        assert!(read_body_as_core_does(&[0xfe, 0xff, 0xff, 0xff, 0x01]).is_none());
        assert!(read_body_as_core_does(&[0x05, 0x00]).is_none());
        assert_eq!(parse_hex(b"0a 0B\n").unwrap(), vec![0x0a, 0x0b]);
        assert!(parse_hex(b"0a0").is_none() && parse_hex(b"zz").is_none());
        assert!(parse_uri_outpoint(&format!("{}-1", "ab".repeat(32))).is_some());
        assert!(parse_uri_outpoint(&format!("{}-1-2", "ab".repeat(32))).is_none());
        assert!(parse_uri_outpoint(&format!("{}-+1", "ab".repeat(32))).is_none());
    }
}

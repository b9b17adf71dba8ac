//! The few JSON tokens the writers need, appended to a `Vec<u8>` the way
//! Core's `UniValue::write` prints a reply: no whitespace, keys in the order
//! they were pushed.
//!
//! Every key is a literal of this crate and every string value is hex, an
//! address, a descriptor, script assembly or a type name: none holds a
//! character JSON would escape (quote, backslash, control), so strings are
//! copied as they are. [`debug_assert_plain`] checks that in tests.

use crate::hex::{write_hex, write_hex_reversed};

/// Opens an object with its first key: `{"key":`.
#[inline]
pub(crate) fn open_object(out: &mut Vec<u8>, first_key: &str) {
    out.extend_from_slice(b"{\"");
    out.extend_from_slice(first_key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// A key after the first: `,"key":`.
#[inline]
pub(crate) fn key(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Closes an object.
#[inline]
pub(crate) fn close_object(out: &mut Vec<u8>) {
    out.push(b'}');
}

/// A string value that needs no escaping.
#[inline]
pub(crate) fn plain_string(out: &mut Vec<u8>, text: &[u8]) {
    debug_assert_plain(text);
    out.push(b'"');
    out.extend_from_slice(text);
    out.push(b'"');
}

/// A string value of hex digits.
#[inline]
pub(crate) fn hex_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    write_hex(out, bytes);
    out.push(b'"');
}

/// A hash or 256-bit number in display order, as a string.
#[inline]
pub(crate) fn hash_string(out: &mut Vec<u8>, bytes: &[u8; 32]) {
    out.push(b'"');
    write_hex_reversed(out, bytes);
    out.push(b'"');
}

/// `true` or `false`.
#[inline]
pub(crate) fn boolean(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

/// A string value escaped as UniValue's `JSONQuote` does: `"` and `\\`
/// backslashed, `\b \f \n \r \t` by name, other control bytes and DEL as
/// `\u00XX`; every other byte (UTF-8 included) copied. For text a client or
/// an operator chose (error messages quoting a parameter, help, peers' user
/// agents).
pub(crate) fn escaped_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut copied = 0;
    for (index, byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f | 0x7f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[copied..index]);
        copied = index + 1;
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            crate::hex::write_hex(out, &[*byte]);
        } else {
            out.extend_from_slice(escape);
        }
    }
    out.extend_from_slice(&bytes[copied..]);
    out.push(b'"');
}

/// In debug builds, checks `text` holds nothing JSON would escape.
#[inline]
pub(crate) fn debug_assert_plain(text: &[u8]) {
    debug_assert!(
        text.iter().all(|byte| *byte >= 0x20 && *byte != b'"' && *byte != b'\\'),
        "string needs JSON escaping"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let mut out = Vec::new();
        open_object(&mut out, "a");
        hex_string(&mut out, &[0xab]);
        key(&mut out, "b");
        boolean(&mut out, true);
        key(&mut out, "c");
        plain_string(&mut out, b"OP_RETURN [ALL]");
        key(&mut out, "d");
        hash_string(&mut out, &[1; 32]);
        close_object(&mut out);
        escaped_string(&mut out, "a\"b\\c\n\u{1}\u{7f}é");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "{{\"a\":\"ab\",\"b\":true,\"c\":\"OP_RETURN [ALL]\",\"d\":\"{}\"}}{}",
                "01".repeat(32),
                r#""a\"b\\c\n\u0001\u007fé""#
            )
        );
    }
}

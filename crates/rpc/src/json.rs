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
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "{{\"a\":\"ab\",\"b\":true,\"c\":\"OP_RETURN [ALL]\",\"d\":\"{}\"}}",
                "01".repeat(32)
            )
        );
    }
}

//! Numbers as Core's UniValue writes them: integers in decimal, amounts as
//! `ValueFromAmount` (`%d.%08d` bitcoins, so `12.50000000` and `0.00000000`)
//! and doubles as `UniValue::setFloat` (`std::setprecision(16)` on an
//! `ostringstream`, which is printf's `%.16g`).
//!
//! Nothing here allocates: digits go through small stack buffers.

use ibex_primitives::COIN;

/// Appends `value` in decimal.
#[inline]
pub(crate) fn write_u64(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// Appends `value` in decimal, with a minus sign when negative.
#[inline]
pub(crate) fn write_i64(out: &mut Vec<u8>, value: i64) {
    if value < 0 {
        out.push(b'-');
    }
    write_u64(out, value.unsigned_abs());
}

/// Appends an amount of satoshis as Core's `ValueFromAmount`: a sign for
/// negative amounts, whole bitcoins, a point and exactly eight decimals.
#[inline]
pub(crate) fn write_amount(out: &mut Vec<u8>, satoshis: i64) {
    if satoshis < 0 {
        out.push(b'-');
    }
    let magnitude = satoshis.unsigned_abs();
    let coin = COIN.unsigned_abs();
    write_u64(out, magnitude / coin);
    out.push(b'.');
    let mut remainder = magnitude % coin;
    let mut decimals = [b'0'; 8];
    for digit in decimals.iter_mut().rev() {
        *digit = b'0' + (remainder % 10) as u8;
        remainder /= 10;
    }
    out.extend_from_slice(&decimals);
}

/// Significant digits of Core's doubles (`std::setprecision(16)`).
const DOUBLE_SIGNIFICANT_DIGITS: i32 = 16;

/// A fixed-size `fmt::Write` target on the stack.
struct StackText {
    bytes: [u8; 40],
    length: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let end = self.length + text.len();
        let slot = self.bytes.get_mut(self.length..end).ok_or(std::fmt::Error)?;
        slot.copy_from_slice(text.as_bytes());
        self.length = end;
        Ok(())
    }
}

/// Appends `value` as printf's `%.16g`, which is how Core's UniValue writes
/// a double (the `difficulty` field): 16 significant digits, trailing zeros
/// removed, scientific notation (`e-10`, two exponent digits at least) when
/// the exponent is below -4 or at least 16. Infinity and NaN are written as
/// the C library writes them (`inf`, `nan`), as Core would; no valid header
/// produces them.
pub(crate) fn write_double(out: &mut Vec<u8>, value: f64) {
    if !value.is_finite() {
        let text: &[u8] = match (value.is_nan(), value < 0.0) {
            (true, _) => b"nan",
            (false, true) => b"-inf",
            (false, false) => b"inf",
        };
        out.extend_from_slice(text);
        return;
    }
    // Rust's `{:.15e}` rounds exactly (ties to even, as glibc does) to 16
    // significant digits: `d.ddddddddddddddde<exponent>`.
    let mut text = StackText { bytes: [0; 40], length: 0 };
    if std::fmt::write(&mut text, format_args!("{:.15e}", value.abs())).is_err() {
        return;
    }
    let formatted = text.bytes.get(..text.length).unwrap_or_default();
    let Some(exponent_at) = formatted.iter().position(|byte| *byte == b'e') else { return };
    let (mantissa, exponent_text) = formatted.split_at(exponent_at);
    let exponent = parse_exponent(exponent_text.get(1..).unwrap_or_default());
    let mut digits = [b'0'; 16];
    for (slot, digit) in digits.iter_mut().zip(mantissa.iter().filter(|byte| byte.is_ascii_digit()))
    {
        *slot = *digit;
    }
    if value.is_sign_negative() {
        out.push(b'-');
    }
    if (-4..DOUBLE_SIGNIFICANT_DIGITS).contains(&exponent) {
        write_fixed(out, &digits, exponent);
    } else {
        write_scientific(out, &digits, exponent);
    }
}

fn parse_exponent(text: &[u8]) -> i32 {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let magnitude = digits.iter().fold(0i32, |total, digit| total * 10 + i32::from(digit - b'0'));
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// The significant digits without trailing zeros (at least one digit).
fn trimmed(digits: &[u8; 16]) -> &[u8] {
    let length = digits.iter().rposition(|digit| *digit != b'0').map_or(1, |last| last + 1);
    digits.get(..length).unwrap_or_default()
}

/// `%g`'s fixed form for -4 <= exponent < 16.
fn write_fixed(out: &mut Vec<u8>, digits: &[u8; 16], exponent: i32) {
    let significant = trimmed(digits);
    if exponent < 0 {
        out.extend_from_slice(b"0.");
        for _ in 0..(-exponent - 1) {
            out.push(b'0');
        }
        out.extend_from_slice(significant);
        return;
    }
    let integer_digits = (exponent + 1) as usize;
    let (integer, fraction) = digits.split_at(integer_digits.min(digits.len()));
    out.extend_from_slice(integer);
    if significant.len() > integer_digits {
        out.push(b'.');
        out.extend_from_slice(
            fraction.get(..significant.len() - integer_digits).unwrap_or_default(),
        );
    }
}

/// `%g`'s scientific form: `d[.ddd]e±XX`.
fn write_scientific(out: &mut Vec<u8>, digits: &[u8; 16], exponent: i32) {
    let significant = trimmed(digits);
    out.extend_from_slice(significant.get(..1).unwrap_or_default());
    if significant.len() > 1 {
        out.push(b'.');
        out.extend_from_slice(significant.get(1..).unwrap_or_default());
    }
    out.push(b'e');
    out.push(if exponent < 0 { b'-' } else { b'+' });
    let magnitude = exponent.unsigned_abs();
    if magnitude < 10 {
        out.push(b'0');
    }
    write_u64(out, u64::from(magnitude));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(write: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        write(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn integers() {
        assert_eq!(text(|out| write_u64(out, 0)), "0");
        assert_eq!(text(|out| write_u64(out, u64::MAX)), "18446744073709551615");
        assert_eq!(text(|out| write_i64(out, i64::MIN)), "-9223372036854775808");
        assert_eq!(text(|out| write_i64(out, 4_294_967_294)), "4294967294");
    }

    #[test]
    fn amounts_have_eight_decimals() {
        assert_eq!(text(|out| write_amount(out, 0)), "0.00000000");
        assert_eq!(text(|out| write_amount(out, 1_250_000_000)), "12.50000000");
        assert_eq!(text(|out| write_amount(out, 5_121)), "0.00005121");
        assert_eq!(text(|out| write_amount(out, -1)), "-0.00000001");
        assert_eq!(text(|out| write_amount(out, 2_100_000_000_000_000)), "21000000.00000000");
        assert_eq!(text(|out| write_amount(out, i64::MIN)), "-92233720368.54775808");
    }

    #[test]
    fn doubles_match_printf_16g() {
        // Expected strings as glibc's printf("%.16g") writes them.
        let cases: [(f64, &str); 16] = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (4.656542373906925e-10, "4.656542373906925e-10"),
            (194_254_820_283.444, "194254820283.444"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (1e15, "1000000000000000"),
            (1e16, "1e+16"),
            (123_456_789_012_345_680.0, "1.234567890123457e+17"),
            (0.1, "0.1"),
            (2.0 / 3.0, "0.6666666666666666"),
            (1.5e300, "1.5e+300"),
            (5e-324, "4.940656458412465e-324"),
            (-2.5, "-2.5"),
            (1e100, "1e+100"),
        ];
        for (value, expected) in cases {
            assert_eq!(text(|out| write_double(out, value)), expected, "{value:e}");
        }
        assert_eq!(text(|out| write_double(out, f64::INFINITY)), "inf");
    }

    #[test]
    fn regtest_and_mainnet_difficulties() {
        // Core's GetDifficulty for bits 0x207fffff (regtest) and 0x1d00ffff.
        let regtest = f64::from(0xffff) / f64::from(0x7f_ffff) / 256f64.powi(3);
        assert_eq!(text(|out| write_double(out, regtest)), "4.656542373906925e-10");
        assert_eq!(text(|out| write_double(out, 1.0)), "1");
    }
}

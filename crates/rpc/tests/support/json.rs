//! A small JSON reader for the tests: objects keep their key order (to
//! check ours against Core's) and numbers keep their text (to compare them
//! as exact decimals: Core's sample files were re-serialised by Python, so
//! `12.50000000` there reads `12.5` and `0.00005121` reads `5.121e-05`).
//! Not serde_json: its `preserve_order` and `arbitrary_precision` features
//! would change it for every crate of a workspace build.

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The number's text.
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Keys in document order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of `name` in an object.
    pub fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(key, _)| key == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(text) => Some(text),
            _ => None,
        }
    }

    /// An object's keys in order.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            Json::Object(fields) => fields.iter().map(|(key, _)| key.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

/// Parses a whole document; panics on malformed input (test data).
pub fn parse(text: &str) -> Json {
    let mut parser = Parser { bytes: text.as_bytes(), position: 0 };
    let value = parser.value();
    parser.skip_whitespace();
    assert_eq!(parser.position, parser.bytes.len(), "trailing characters");
    value
}

struct Parser<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Parser<'_> {
    fn skip_whitespace(&mut self) {
        while self.bytes.get(self.position).is_some_and(|byte| byte.is_ascii_whitespace()) {
            self.position += 1;
        }
    }

    fn peek(&mut self) -> u8 {
        self.skip_whitespace();
        *self.bytes.get(self.position).expect("unexpected end of JSON")
    }

    fn expect(&mut self, byte: u8) {
        assert_eq!(self.peek(), byte, "at {}", self.position);
        self.position += 1;
    }

    fn literal(&mut self, word: &str, value: Json) -> Json {
        assert!(self.bytes[self.position..].starts_with(word.as_bytes()), "at {}", self.position);
        self.position += word.len();
        value
    }

    fn value(&mut self) -> Json {
        match self.peek() {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => Json::String(self.string()),
            b't' => self.literal("true", Json::Bool(true)),
            b'f' => self.literal("false", Json::Bool(false)),
            b'n' => self.literal("null", Json::Null),
            _ => self.number(),
        }
    }

    fn object(&mut self) -> Json {
        self.expect(b'{');
        let mut fields = Vec::new();
        if self.peek() == b'}' {
            self.position += 1;
            return Json::Object(fields);
        }
        loop {
            let key = self.string();
            self.expect(b':');
            fields.push((key, self.value()));
            match self.peek() {
                b',' => self.position += 1,
                b'}' => {
                    self.position += 1;
                    return Json::Object(fields);
                }
                other => panic!("unexpected {:?} at {}", other as char, self.position),
            }
        }
    }

    fn array(&mut self) -> Json {
        self.expect(b'[');
        let mut items = Vec::new();
        if self.peek() == b']' {
            self.position += 1;
            return Json::Array(items);
        }
        loop {
            items.push(self.value());
            match self.peek() {
                b',' => self.position += 1,
                b']' => {
                    self.position += 1;
                    return Json::Array(items);
                }
                other => panic!("unexpected {:?} at {}", other as char, self.position),
            }
        }
    }

    fn string(&mut self) -> String {
        self.expect(b'"');
        let mut text = String::new();
        loop {
            let byte = self.bytes[self.position];
            self.position += 1;
            match byte {
                b'"' => return text,
                b'\\' => {
                    let escaped = self.bytes[self.position];
                    self.position += 1;
                    text.push(match escaped {
                        b'n' => '\n',
                        b't' => '\t',
                        b'u' => {
                            let hex =
                                std::str::from_utf8(&self.bytes[self.position..][..4]).unwrap();
                            self.position += 4;
                            char::from_u32(u32::from_str_radix(hex, 16).unwrap()).unwrap()
                        }
                        other => other as char,
                    });
                }
                _ => {
                    // Multi-byte UTF-8 is copied byte by byte through a slice.
                    let start = self.position - 1;
                    let width = utf8_width(byte);
                    text.push_str(std::str::from_utf8(&self.bytes[start..start + width]).unwrap());
                    self.position = start + width;
                }
            }
        }
    }

    fn number(&mut self) -> Json {
        let start = self.position;
        while self
            .bytes
            .get(self.position)
            .is_some_and(|byte| byte.is_ascii_digit() || b"+-.eE".contains(byte))
        {
            self.position += 1;
        }
        assert!(self.position > start, "not a value at {start}");
        Json::Number(String::from_utf8(self.bytes[start..self.position].to_vec()).unwrap())
    }
}

fn utf8_width(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// A JSON number as an exact decimal: sign, significant digits without
/// leading or trailing zeros, and the power of ten of the last digit.
pub fn exact_decimal(text: &str) -> (bool, String, i64) {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().unwrap()),
        None => (unsigned, 0),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = format!("{integer}{fraction}").trim_start_matches('0').to_string();
    let mut power = exponent - fraction.len() as i64;
    if digits.is_empty() {
        return (false, "0".to_string(), 0);
    }
    while digits.ends_with('0') {
        digits.pop();
        power += 1;
    }
    (negative, digits, power)
}

#[test]
fn exact_decimals() {
    assert_eq!(exact_decimal("12.50000000"), exact_decimal("12.5"));
    assert_eq!(exact_decimal("0.00005121"), exact_decimal("5.121e-05"));
    assert_eq!(exact_decimal("0.00000000"), exact_decimal("0.0"));
    assert_eq!(exact_decimal("-0"), exact_decimal("0"));
    assert_ne!(exact_decimal("4.656542373906925e-10"), exact_decimal("4.6565423739069247e-10"));
    assert_eq!(exact_decimal("1e+16"), exact_decimal("10000000000000000"));
    let parsed = parse(r#" {"b": [1, "x\"y", true, null], "a": {}} "#);
    assert_eq!(parsed.keys(), ["b", "a"]);
}

//! Reading a JSON-RPC body without letting its size multiply in memory.
//!
//! A naive parse of a body into `serde_json::Value` costs 20 to 60 times
//! the body: 30 MB of `[1,1,...]` is 15 M values of 32 bytes each in
//! vectors that double as they grow (measured: 1.7 GB for one 30 MB
//! request; Core's UniValue is larger still). Here a body is read in three
//! steps, none of which holds more than a bounded multiple of it:
//!
//! 1. [`check_body`]: the whole body is checked to be JSON with nothing
//!    kept (serde's `IgnoredAny`) and at most [`NESTING_DEPTH_MAX`] deep,
//!    so nothing runs unless all of it parses (Core parses first too).
//! 2. A batch is walked element by element ([`for_each_element`]): each
//!    element is borrowed from the body as raw text, run, and its reply
//!    written before the next is read.
//! 3. An element's envelope ([`read_envelope`]) keeps only `id`, `jsonrpc`,
//!    `method` and `params` as raw text (the first of each, as Core's
//!    `find_value`; other keys are skipped unread), and these are turned
//!    into values with at most [`REQUEST_JSON_VALUES_MAX`] values between
//!    them ([`bounded_value`]).
//!
//! So a request's parsed form is at most ~100,000 values (a few MB) per
//! worker, whatever the body holds.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// Deepest nesting of arrays and objects accepted (serde_json's own limit
/// when it builds values; Core's UniValue allows 512).
pub(crate) const NESTING_DEPTH_MAX: usize = 128;
/// JSON values a request element may hold in its `id`, `jsonrpc`, `method`
/// and `params` together. No method takes more than a few dozen; a client
/// sending more is refused rather than given gigabytes of parse trees.
pub(crate) const REQUEST_JSON_VALUES_MAX: usize = 100_000;

/// Why a body or an element could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadFailure {
    /// Not JSON, or nested too deep.
    Parse,
    /// More than [`REQUEST_JSON_VALUES_MAX`] values.
    TooManyValues,
    /// An element that is not an object.
    NotAnObject,
}

/// Checks `body` is one JSON value at most [`NESTING_DEPTH_MAX`] deep,
/// keeping nothing of it.
pub(crate) fn check_body(body: &[u8]) -> Result<(), ReadFailure> {
    serde_json::from_slice::<IgnoredAny>(body).map_err(|_| ReadFailure::Parse)?;
    if nesting_depth(body) > NESTING_DEPTH_MAX {
        return Err(ReadFailure::Parse);
    }
    Ok(())
}

/// The deepest nesting of arrays and objects in valid JSON text.
fn nesting_depth(body: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in body {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The top-level value's kind, from its first byte (the body is valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopLevel {
    /// `{`: one request.
    Object,
    /// `[`: a batch.
    Array,
    /// Anything else.
    Other,
}

/// What a checked body holds at the top.
pub(crate) fn top_level(body: &[u8]) -> TopLevel {
    match body.iter().find(|byte| !byte.is_ascii_whitespace()) {
        Some(b'{') => TopLevel::Object,
        Some(b'[') => TopLevel::Array,
        _ => TopLevel::Other,
    }
}

/// Calls `handle` with each element of the checked batch `body`, in order,
/// each borrowed from the body.
pub(crate) fn for_each_element(
    body: &[u8],
    handle: impl FnMut(&RawValue),
) -> Result<(), ReadFailure> {
    struct Elements<F>(F);
    impl<'de, F: FnMut(&RawValue)> Visitor<'de> for Elements<F> {
        type Value = ();
        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a JSON-RPC batch")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            while let Some(element) = seq.next_element::<&'de RawValue>()? {
                (self.0)(element);
            }
            Ok(())
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    de::Deserializer::deserialize_seq(&mut deserializer, Elements(handle))
        .map_err(|_| ReadFailure::Parse)
}

/// An element's envelope fields, as raw text (`None`: the key is absent).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RawEnvelope<'a> {
    /// `id`.
    pub id: Option<&'a RawValue>,
    /// `jsonrpc`.
    pub version: Option<&'a RawValue>,
    /// `method`.
    pub method: Option<&'a RawValue>,
    /// `params`.
    pub params: Option<&'a RawValue>,
}

/// Reads an element's envelope; [`ReadFailure::NotAnObject`] for any other
/// JSON value.
pub(crate) fn read_envelope(element: &RawValue) -> Result<RawEnvelope<'_>, ReadFailure> {
    struct Fields;
    impl<'de> Visitor<'de> for Fields {
        type Value = Option<RawEnvelope<'de>>;
        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a JSON-RPC request object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut envelope = RawEnvelope::default();
            while let Some(name) = map.next_key::<FieldName>()? {
                let slot = match name {
                    FieldName::Id => &mut envelope.id,
                    FieldName::Version => &mut envelope.version,
                    FieldName::Method => &mut envelope.method,
                    FieldName::Params => &mut envelope.params,
                    FieldName::Other => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                let value = map.next_value::<&'de RawValue>()?;
                // The first occurrence counts, as Core's `find_value`.
                slot.get_or_insert(value);
            }
            Ok(Some(envelope))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(element.get());
    de::Deserializer::deserialize_any(&mut deserializer, Fields)
        .map_err(|_| ReadFailure::Parse)?
        .ok_or(ReadFailure::NotAnObject)
}

/// An envelope key, compared without keeping it.
enum FieldName {
    Id,
    Version,
    Method,
    Params,
    Other,
}

impl<'de> de::Deserialize<'de> for FieldName {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = FieldName;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<FieldName, E> {
                Ok(match name {
                    "id" => FieldName::Id,
                    "jsonrpc" => FieldName::Version,
                    "method" => FieldName::Method,
                    "params" => FieldName::Params,
                    _ => FieldName::Other,
                })
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// How many more values an element's fields may hold.
#[derive(Debug)]
pub(crate) struct ValueBudget {
    remaining: Cell<usize>,
    exhausted: Cell<bool>,
}

impl ValueBudget {
    /// A budget of `values` values.
    pub(crate) fn new(values: usize) -> ValueBudget {
        ValueBudget { remaining: Cell::new(values), exhausted: Cell::new(false) }
    }

    /// Values left.
    #[cfg(test)]
    fn remaining(&self) -> usize {
        self.remaining.get()
    }
}

/// `raw` as a value, taking its values from `budget`;
/// [`ReadFailure::TooManyValues`] when the budget runs out.
pub(crate) fn bounded_value(raw: &RawValue, budget: &ValueBudget) -> Result<Value, ReadFailure> {
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    let value = BoundedValue { budget }.deserialize(&mut deserializer);
    match value {
        Ok(value) => Ok(value),
        Err(_) if budget.exhausted.get() => Err(ReadFailure::TooManyValues),
        Err(_) => Err(ReadFailure::Parse),
    }
}

/// Builds a [`Value`] as serde_json does, one unit of `budget` a value.
#[derive(Clone, Copy)]
struct BoundedValue<'b> {
    budget: &'b ValueBudget,
}

impl BoundedValue<'_> {
    fn take<E: de::Error>(&self) -> Result<(), E> {
        match self.budget.remaining.get().checked_sub(1) {
            Some(left) => {
                self.budget.remaining.set(left);
                Ok(())
            }
            None => {
                self.budget.exhausted.set(true);
                Err(E::custom("too many JSON values"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for BoundedValue<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BoundedValue<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        self.take()?;
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut fields = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            self.take()?;
            let value = map.next_value_seed(self)?;
            fields.insert(name, value);
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn bodies_are_checked_whole_and_for_depth() {
        assert_eq!(check_body(b" [1, {\"a\": [\"]]]\"]}] "), Ok(()));
        assert_eq!(check_body(b"[1,"), Err(ReadFailure::Parse));
        assert_eq!(check_body(b""), Err(ReadFailure::Parse));
        assert_eq!(check_body(b"{} {}"), Err(ReadFailure::Parse));
        let deep = format!("{}{}", "[".repeat(NESTING_DEPTH_MAX), "]".repeat(NESTING_DEPTH_MAX));
        assert_eq!(check_body(deep.as_bytes()), Ok(()));
        let deeper = format!("[{deep}]");
        assert_eq!(check_body(deeper.as_bytes()), Err(ReadFailure::Parse));
        assert_eq!(nesting_depth(br#"["[[[", {"\"[": 1}]"#), 2);
        assert_eq!(top_level(b" \n[]"), TopLevel::Array);
        assert_eq!(top_level(b"{}"), TopLevel::Object);
        assert_eq!(top_level(b"\"x\""), TopLevel::Other);
    }

    #[test]
    fn batches_are_walked_in_order_and_envelopes_keep_the_first_key() {
        let mut seen = Vec::new();
        for_each_element(br#"[ {"id":1}, 7 , "x" ]"#, |element| {
            seen.push(element.get().to_owned())
        })
        .unwrap();
        assert_eq!(seen, [r#"{"id":1}"#, "7", r#""x""#]);
        let envelope =
            read_envelope(raw(r#"{"x":[1,2],"id":null,"method":"a","id":2,"params":{}}"#)).unwrap();
        assert_eq!(envelope.id.unwrap().get(), "null");
        assert_eq!(envelope.method.unwrap().get(), r#""a""#);
        assert_eq!(envelope.params.unwrap().get(), "{}");
        assert!(envelope.version.is_none());
        assert_eq!(read_envelope(raw("[1]")).unwrap_err(), ReadFailure::NotAnObject);
        assert_eq!(read_envelope(raw("null")).unwrap_err(), ReadFailure::NotAnObject);
    }

    #[test]
    fn values_are_counted_against_the_budget() {
        // An array, its three items, the object's key and its value: 6.
        let budget = ValueBudget::new(6);
        let value = bounded_value(raw(r#"[1,"a",{"k":true}]"#), &budget).unwrap();
        assert_eq!(value, serde_json::json!([1, "a", {"k": true}]));
        assert_eq!(budget.remaining(), 0);
        assert_eq!(
            bounded_value(raw(r#"[1,"a",{"k":true}]"#), &ValueBudget::new(5)),
            Err(ReadFailure::TooManyValues)
        );
        let many = format!("[{}1]", "1,".repeat(REQUEST_JSON_VALUES_MAX));
        let budget = ValueBudget::new(REQUEST_JSON_VALUES_MAX);
        assert_eq!(bounded_value(raw(&many), &budget), Err(ReadFailure::TooManyValues));
        let wrong = bounded_value(raw("[1, 1e400]"), &ValueBudget::new(9));
        assert_eq!(wrong, Err(ReadFailure::Parse), "1e400 is out of a double's range");
        let numbers =
            bounded_value(raw("[-1, 18446744073709551615, 1.5]"), &ValueBudget::new(9)).unwrap();
        assert_eq!(numbers, serde_json::json!([-1, 18446744073709551615u64, 1.5]));
    }
}

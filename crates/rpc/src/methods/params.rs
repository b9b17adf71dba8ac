//! Parameters as Core's `RPCHelpMan` checks them, before a method runs:
//! named parameters mapped to positions by the method's argument names
//! (`transformNamedArguments`, `rpc/server.cpp`), the count checked
//! (`IsValidNumArgs`: a wrong count answers the method's help, -1), each
//! argument's JSON type checked (`RPCArg::MatchesType`: -3 "Wrong type
//! passed"), then read with UniValue's rules (`getInt`, `get_bool`,
//! `ParseHashV`).

use serde_json::{Map, Value};

use super::error::{RpcError, RpcErrorCode};

/// The JSON type an argument must have (Core's `RPCArg::Type`, as far as
/// `MatchesType` tells them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgType {
    /// `STR`.
    String,
    /// `STR_HEX`.
    Hex,
    /// `NUM`.
    Number,
    /// `BOOL`.
    Bool,
    /// `ARR`.
    Array,
    /// A hash or a height, not checked before the method runs (Core's
    /// `skip_type_check` with `type_str` "string or numeric").
    HashOrHeight,
    /// Not checked before the method runs (`skip_type_check`).
    Any,
    /// `OBJ_NAMED_PARAMS`: an object of options whose keys (these names,
    /// each with its type as Core's synopsis writes it: `n`, `bool`) may
    /// also be given as named parameters of their own
    /// ([`fold_named_options`]).
    NamedOptions(&'static [(&'static str, &'static str)]),
}

impl ArgType {
    /// The UniValue type name `MatchesType` expects, if it checks one.
    fn expected_name(self) -> Option<&'static str> {
        match self {
            ArgType::String | ArgType::Hex => Some("string"),
            ArgType::Number => Some("number"),
            ArgType::Bool => Some("bool"),
            ArgType::Array => Some("array"),
            ArgType::NamedOptions(_) => Some("object"),
            ArgType::HashOrHeight | ArgType::Any => None,
        }
    }
}

/// One argument of a method.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgSpec {
    /// Its name, then aliases after `|` (`verbosity|verbose`).
    pub names: &'static str,
    /// Its type.
    pub kind: ArgType,
    /// Whether it may be left out.
    pub optional: bool,
    /// Left out of help (stop's `wait`).
    pub hidden: bool,
    /// What it is, for help.
    pub description: &'static str,
}

impl ArgSpec {
    /// The first name.
    pub(crate) fn name(&self) -> &'static str {
        self.names.split('|').next().unwrap_or(self.names)
    }
}

/// UniValue's `uvTypeName`.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON null, for positions a request left out.
pub(crate) static NULL: Value = Value::Null;

/// Positional parameters after the named ones were mapped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Params<'a> {
    values: Vec<&'a Value>,
}

impl<'a> Params<'a> {
    /// How many were given (holes filled with null count).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// The value at `index`, null when left out.
    pub(crate) fn get(&self, index: usize) -> &'a Value {
        self.values.get(index).copied().unwrap_or(&NULL)
    }

    /// The value at `index`, `None` when left out or null (Core's
    /// `isNull()` test for an optional argument).
    pub(crate) fn optional(&self, index: usize) -> Option<&'a Value> {
        Some(self.get(index)).filter(|value| !value.is_null())
    }
}

/// Maps `params` (an array or object) to positions for `args`, checks the
/// count and the types.
pub(crate) fn prepare<'a>(
    params: &'a Value,
    args: &[ArgSpec],
    help: impl FnOnce() -> String,
) -> Result<Params<'a>, RpcError> {
    let values = match params {
        Value::Object(named) => from_named(named, args)?,
        Value::Array(items) => items.iter().collect(),
        _ => Vec::new(),
    };
    let required = args.iter().rposition(|arg| !arg.optional).map_or(0, |index| index + 1);
    if values.len() < required || values.len() > args.len() {
        return Err(RpcError::with_message(RpcErrorCode::MiscError, help()));
    }
    let params = Params { values };
    check_types(&params, args)?;
    Ok(params)
}

/// Core's `transformNamedArguments` for named-only options: named
/// parameters that are keys of an [`ArgType::NamedOptions`] argument move
/// into that argument's object (made for them), so `-named dumptxoutset
/// utxo.dat rollback=110` reads as `["utxo.dat", null, {"rollback": 110}]`.
/// Giving the object itself and one of its keys is Core's -8. Borrowed
/// unchanged when there is nothing to move.
pub(crate) fn fold_named_options<'a>(
    params: &'a Value,
    args: &[ArgSpec],
) -> Result<std::borrow::Cow<'a, Value>, RpcError> {
    let Value::Object(named) = params else { return Ok(std::borrow::Cow::Borrowed(params)) };
    let mut folded: Option<Map<String, Value>> = None;
    for arg in args {
        let ArgType::NamedOptions(keys) = arg.kind else { continue };
        let mut options = Map::new();
        for (option, _) in keys.iter().filter(|(option, _)| named.contains_key(*option)) {
            if named.contains_key(arg.name()) {
                return Err(RpcError::invalid_parameter(format!(
                    "Parameter {} conflicts with parameter {option}",
                    arg.name()
                )));
            }
            let object = folded.get_or_insert_with(|| named.clone());
            if let Some(value) = object.remove(*option) {
                options.insert((*option).to_owned(), value);
            }
        }
        if !options.is_empty() {
            if let Some(object) = folded.as_mut() {
                object.insert(arg.name().to_owned(), Value::Object(options));
            }
        }
    }
    Ok(match folded {
        Some(object) => std::borrow::Cow::Owned(Value::Object(object)),
        None => std::borrow::Cow::Borrowed(params),
    })
}

/// Core's `transformNamedArguments` (named-only options folded first by
/// [`fold_named_options`]
/// methods): each argument takes the first of its names given; holes before
/// a given argument become null, those after the last are left out; an
/// `args` array supplies leading positions.
fn from_named<'a>(
    named: &'a Map<String, Value>,
    args: &[ArgSpec],
) -> Result<Vec<&'a Value>, RpcError> {
    let mut unused: Vec<&String> = named.keys().collect();
    let mut values = Vec::new();
    let mut hole = 0;
    let mut initial_hole = 0;
    let mut first_given: Option<&'static str> = None;
    for arg in args {
        let found = arg.names.split('|').find_map(|name| named.get_key_value(name));
        match found {
            Some((key, value)) => {
                values.extend(std::iter::repeat_n(&NULL, hole));
                hole = 0;
                first_given.get_or_insert(arg.names);
                values.push(value);
                unused.retain(|name| *name != key);
            }
            None => {
                hole += 1;
                if values.is_empty() {
                    initial_hole = hole;
                }
            }
        }
    }
    if let Some(position) = unused.iter().position(|name| *name == "args") {
        unused.remove(position);
        if let Some(Value::Array(positional)) = named.get("args") {
            if let Some(name) = first_given.filter(|_| initial_hole < positional.len()) {
                return Err(RpcError::invalid_parameter(format!(
                    "Parameter {name} specified twice both as positional and named argument"
                )));
            }
            let named_values = std::mem::take(&mut values);
            values = positional.iter().collect();
            values.extend(named_values.into_iter().skip(positional.len()));
        }
    }
    if let Some(name) = unused.first() {
        return Err(RpcError::invalid_parameter(format!("Unknown named parameter {name}")));
    }
    Ok(values)
}

/// Core's type check before a method runs: every mismatch, as a JSON object
/// printed with four-space indentation, in one -3 error.
fn check_types(params: &Params<'_>, args: &[ArgSpec]) -> Result<(), RpcError> {
    let mut mismatches = Vec::new();
    for (index, arg) in args.iter().enumerate() {
        let value = params.get(index);
        let Some(expected) = arg.kind.expected_name() else { continue };
        if (arg.optional && value.is_null()) || type_name(value) == expected {
            continue;
        }
        mismatches.push(format!(
            "    \"Position {} ({})\": \"JSON value of type {} is not of expected type {expected}\"",
            index + 1,
            arg.names,
            type_name(value),
        ));
    }
    if mismatches.is_empty() {
        return Ok(());
    }
    let listed = mismatches.join(",\n");
    Err(RpcError::with_message(
        RpcErrorCode::TypeError,
        format!("Wrong type passed:\n{{\n{listed}\n}}"),
    ))
}

/// UniValue's `type_error` for a value read as the wrong type (-3).
pub(crate) fn wrong_type(value: &Value, expected: &str) -> RpcError {
    RpcError::with_message(
        RpcErrorCode::TypeError,
        format!("JSON value of type {} is not of expected type {expected}", type_name(value)),
    )
}

/// UniValue's `getInt<T>`: a number whose text is a whole integer within
/// `T`'s range; otherwise "JSON integer out of range" (-1).
pub(crate) fn integer<T: TryFrom<i64> + TryFrom<u64>>(value: &Value) -> Result<T, RpcError> {
    let Value::Number(number) = value else { return Err(wrong_type(value, "number")) };
    let out_of_range = || RpcError::new(RpcErrorCode::MiscError, "JSON integer out of range");
    if let Some(signed) = number.as_i64() {
        return T::try_from(signed).map_err(|_| out_of_range());
    }
    if let Some(unsigned) = number.as_u64() {
        return T::try_from(unsigned).map_err(|_| out_of_range());
    }
    Err(out_of_range())
}

/// UniValue's `get_bool`.
pub(crate) fn boolean(value: &Value) -> Result<bool, RpcError> {
    value.as_bool().ok_or_else(|| wrong_type(value, "bool"))
}

/// UniValue's `get_str`.
pub(crate) fn string(value: &Value) -> Result<&str, RpcError> {
    value.as_str().ok_or_else(|| wrong_type(value, "string"))
}

/// Core's `ParseHashV`: 64 hex digits in display order, or -8 naming
/// `name` and quoting what was given.
pub(crate) fn hash(value: &Value, name: &str) -> Result<[u8; 32], RpcError> {
    let text = string(value)?;
    if text.len() != 64 {
        return Err(RpcError::invalid_parameter(format!(
            "{name} must be of length 64 (not {}, for '{text}')",
            text.len()
        )));
    }
    let Ok(mut bytes) = ibex_primitives::hex::decode_array::<32>(text) else {
        return Err(RpcError::invalid_parameter(format!(
            "{name} must be hexadecimal string (not '{text}')"
        )));
    };
    bytes.reverse();
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GETBLOCK: [ArgSpec; 2] = [
        ArgSpec {
            names: "blockhash",
            kind: ArgType::Hex,
            optional: false,
            hidden: false,
            description: "",
        },
        ArgSpec {
            names: "verbosity|verbose",
            kind: ArgType::Any,
            optional: true,
            hidden: false,
            description: "",
        },
    ];
    const TWO_OPTIONAL: [ArgSpec; 2] = [
        ArgSpec {
            names: "a",
            kind: ArgType::Number,
            optional: true,
            hidden: false,
            description: "",
        },
        ArgSpec {
            names: "b",
            kind: ArgType::Number,
            optional: true,
            hidden: false,
            description: "",
        },
    ];

    fn prepared(params: &Value, args: &[ArgSpec]) -> Result<Vec<Value>, RpcError> {
        let params = prepare(params, args, || "help".to_owned())?;
        Ok((0..params.len()).map(|index| params.get(index).clone()).collect())
    }

    #[test]
    fn named_parameters_map_to_positions() {
        let named = json!({"verbose": false, "blockhash": "ab"});
        assert_eq!(prepared(&named, &GETBLOCK).unwrap(), vec![json!("ab"), json!(false)]);
        assert_eq!(prepared(&json!({"b": 2}), &TWO_OPTIONAL).unwrap(), vec![Value::Null, json!(2)]);
        assert_eq!(prepared(&json!({"a": 1}), &TWO_OPTIONAL).unwrap(), vec![json!(1)]);
        assert_eq!(
            prepared(&json!({"args": [1], "b": 2}), &TWO_OPTIONAL).unwrap(),
            vec![json!(1), json!(2)]
        );
        let twice = prepared(&json!({"args": [1], "a": 2}), &TWO_OPTIONAL).unwrap_err();
        assert_eq!(
            twice.message,
            "Parameter a specified twice both as positional and named argument"
        );
        let unknown = prepared(&json!({"c": 1}), &TWO_OPTIONAL).unwrap_err();
        assert_eq!(
            (unknown.code, unknown.message.as_ref()),
            (RpcErrorCode::InvalidParameter, "Unknown named parameter c")
        );
    }

    #[test]
    fn counts_and_types_as_core_checks_them() {
        let few = prepared(&json!([]), &GETBLOCK).unwrap_err();
        assert_eq!((few.code, few.message.as_ref()), (RpcErrorCode::MiscError, "help"));
        assert!(prepared(&json!(["ab", 1, 2]), &GETBLOCK).is_err());
        let wrong = prepared(&json!([1, "x"]), &GETBLOCK).unwrap_err();
        assert_eq!(wrong.code, RpcErrorCode::TypeError);
        assert_eq!(
            wrong.message,
            "Wrong type passed:\n{\n    \"Position 1 (blockhash)\": \"JSON value of type number is not of expected type string\"\n}"
        );
        let both = prepared(&json!(["1", true]), &TWO_OPTIONAL).unwrap_err();
        assert!(both.message.contains("Position 1 (a)\": \"JSON value of type string is not of expected type number\",\n    \"Position 2 (b)"));
        assert!(prepared(&json!([null, 2]), &TWO_OPTIONAL).is_ok());
    }

    #[test]
    fn values_read_as_univalue_reads_them() {
        assert_eq!(integer::<i32>(&json!(-5)).unwrap(), -5);
        assert_eq!(integer::<i32>(&json!(1.5)).unwrap_err().message, "JSON integer out of range");
        assert_eq!(
            integer::<i32>(&json!(1u64 << 40)).unwrap_err().message,
            "JSON integer out of range"
        );
        assert_eq!(integer::<u32>(&json!(-1)).unwrap_err().message, "JSON integer out of range");
        assert_eq!(integer::<i32>(&json!("1")).unwrap_err().code, RpcErrorCode::TypeError);
        let short = hash(&json!("abc"), "hash").unwrap_err();
        assert_eq!(short.message, "hash must be of length 64 (not 3, for 'abc')");
        let not_hex = hash(&json!("z".repeat(64)), "blockhash").unwrap_err();
        assert_eq!(
            not_hex.message,
            format!("blockhash must be hexadecimal string (not '{}')", "z".repeat(64))
        );
        let mut expected = [0u8; 32];
        expected[0] = 1;
        assert_eq!(hash(&json!(format!("{}01", "0".repeat(62))), "hash").unwrap(), expected);
    }
}

//! Comparing our JSON with Core's by value.

use super::json::{exact_decimal, Json};

/// Compares our value with Core's: same key sets, equal strings and
/// booleans, numbers equal as exact decimals.
pub fn assert_same_value(ours: &Json, core: &Json, path: &str) {
    match (ours, core) {
        (Json::Object(our_fields), Json::Object(core_fields)) => {
            let mut our_keys = ours.keys();
            let mut core_keys = core.keys();
            our_keys.sort_unstable();
            core_keys.sort_unstable();
            assert_eq!(our_keys, core_keys, "keys at {path}");
            for (name, value) in our_fields {
                let core_value = core_fields.iter().find(|(key, _)| key == name).unwrap();
                assert_same_value(value, &core_value.1, &format!("{path}.{name}"));
            }
        }
        (Json::Array(our_items), Json::Array(core_items)) => {
            assert_eq!(our_items.len(), core_items.len(), "length at {path}");
            for (index, (mine, theirs)) in our_items.iter().zip(core_items).enumerate() {
                assert_same_value(mine, theirs, &format!("{path}[{index}]"));
            }
        }
        (Json::Number(mine), Json::Number(theirs)) => {
            assert_eq!(exact_decimal(mine), exact_decimal(theirs), "{mine} vs {theirs} at {path}");
        }
        _ => assert_eq!(ours, core, "at {path}"),
    }
}

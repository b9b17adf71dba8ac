//! The raw settings store behind [`super::node`]: every value given on the
//! command line and in the configuration file, merged with the precedence
//! rules of Bitcoin Core's `common/settings.cpp`, quirks included:
//!
//! - the command line beats the chain's section of the file, which beats the
//!   file's top level;
//! - on the command line the last value wins, in the file the first one does
//!   (except for the chain-selection options);
//! - a negation (`-nofoo`) hides the values before it in the same source, and
//!   for single options also everything of lower precedence;
//! - values are converted to numbers the way C's `atoi` does (leading
//!   digits, 0 when there are none, saturating).

use std::collections::BTreeMap;

/// One value of an option as Core stores it: text, or a boolean from a
/// negation (`-nofoo` is `false`, the double negative `-nofoo=0` is `true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingValue {
    /// `-foo=text`, or `-foo` alone (empty text).
    Text(String),
    /// A negated option.
    Bool(bool),
}

impl SettingValue {
    /// Core's `SettingToString`: booleans read as `"0"` and `"1"`.
    pub fn to_text(&self) -> String {
        match self {
            SettingValue::Text(text) => text.clone(),
            SettingValue::Bool(value) => if *value { "1" } else { "0" }.to_owned(),
        }
    }

    /// Core's `SettingToBool`: empty text is true, other text is its `atoi`.
    pub fn to_bool(&self) -> bool {
        match self {
            SettingValue::Text(text) => interpret_bool(text),
            SettingValue::Bool(value) => *value,
        }
    }

    /// Core's `SettingToInt`: text through `atoi`, booleans as 0 and 1.
    pub fn to_integer(&self) -> i64 {
        match self {
            SettingValue::Text(text) => locale_independent_atoi(text),
            SettingValue::Bool(value) => i64::from(*value),
        }
    }

    /// The value as Core's `LogArgs` writes it: a JSON string or boolean.
    pub fn to_json(&self) -> String {
        match self {
            SettingValue::Text(text) => {
                serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
            }
            SettingValue::Bool(value) => value.to_string(),
        }
    }

    fn is_false(&self) -> bool {
        *self == SettingValue::Bool(false)
    }
}

/// Core's `InterpretBool`: empty is true, otherwise `atoi(text) != 0`
/// (so `"yes"` is false).
pub fn interpret_bool(text: &str) -> bool {
    text.is_empty() || locale_independent_atoi(text) != 0
}

/// Core's `LocaleIndependentAtoi<int64_t>`: surrounding white space is
/// ignored, one `+` or `-` may lead, digits are read up to the first other
/// character; no digits gives 0, out of range saturates.
pub fn locale_independent_atoi(text: &str) -> i64 {
    let trimmed = text.trim_matches([' ', '\x0c', '\n', '\r', '\t', '\x0b']);
    let unsigned = match trimmed.strip_prefix('+') {
        // `from_chars` takes no sign after the `+` atoi already consumed.
        Some(rest) if rest.starts_with('-') || rest.starts_with('+') => return 0,
        Some(rest) => rest,
        None => trimmed,
    };
    let (negative, digits) = match unsigned.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, unsigned),
    };
    let digit_count = digits.bytes().take_while(u8::is_ascii_digit).count();
    if digit_count == 0 {
        return 0;
    }
    let mut value: i64 = 0;
    for digit in digits.bytes().take(digit_count) {
        let digit = i64::from(digit - b'0');
        let next = value.checked_mul(10).and_then(|shifted| {
            if negative {
                shifted.checked_sub(digit)
            } else {
                shifted.checked_add(digit)
            }
        });
        match next {
            Some(next) => value = next,
            None => return if negative { i64::MIN } else { i64::MAX },
        }
    }
    value
}

/// Where a value came from, in decreasing precedence (Core's `Source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    CommandLine,
    NetworkSection,
    DefaultSection,
}

/// How many values of a list come before and with its last negation:
/// the values that count are the ones after (Core's `SettingsSpan`).
fn negated_count(values: &[SettingValue]) -> usize {
    values.iter().rposition(SettingValue::is_false).map_or(0, |position| position + 1)
}

fn last_negated(values: &[SettingValue]) -> bool {
    values.last().is_some_and(SettingValue::is_false)
}

/// Every value given, by option name (and by section for the file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Command-line values by option name, in order.
    pub command_line: BTreeMap<String, Vec<SettingValue>>,
    /// Configuration file values by section (`""` for the top level), then
    /// by option name, in file order.
    pub config_file: BTreeMap<String, BTreeMap<String, Vec<SettingValue>>>,
}

impl Settings {
    /// Adds a configuration file value.
    pub fn add_config_value(&mut self, section: &str, name: &str, value: SettingValue) {
        let section = self.config_file.entry(section.to_owned()).or_default();
        section.entry(name.to_owned()).or_default().push(value);
    }

    /// The sources for `name` in precedence order (Core's `MergeSettings`).
    fn sources<'a>(
        &'a self,
        section: &str,
        name: &str,
    ) -> impl Iterator<Item = (Source, &'a [SettingValue])> {
        let command_line = self.command_line.get(name).map(|values| (Source::CommandLine, values));
        let network = (!section.is_empty())
            .then(|| self.config_file.get(section).and_then(|map| map.get(name)))
            .flatten()
            .map(|values| (Source::NetworkSection, values));
        let default = self
            .config_file
            .get("")
            .and_then(|map| map.get(name))
            .map(|values| (Source::DefaultSection, values));
        [command_line, network, default]
            .into_iter()
            .flatten()
            .map(|(source, values)| (source, values.as_slice()))
    }

    /// The value of a single-valued option for chain `section` (Core's
    /// `GetSetting`); `chain_type` selects the rules Core uses for the
    /// chain-selection options (last value wins in the file too, negations
    /// are skipped).
    pub fn value(&self, section: &str, name: &str, chain_type: bool) -> Option<SettingValue> {
        for (source, values) in self.sources(section, name) {
            if chain_type && last_negated(values) {
                continue;
            }
            let from_file = source != Source::CommandLine;
            let span = &values[negated_count(values)..];
            if let (Some(first), Some(last)) = (span.first(), span.last()) {
                // Core keeps the first value of the file, for compatibility.
                return Some(if from_file && !chain_type { first } else { last }.clone());
            }
            if last_negated(values) {
                return Some(SettingValue::Bool(false));
            }
        }
        None
    }

    /// Every value of a repeatable option for chain `section` (Core's
    /// `GetSettingsList`): command line, then chain section, then top level.
    /// A negation stops lower sources, except that file values come back
    /// when a later command-line value follows the negation.
    pub fn values(&self, section: &str, name: &str) -> Vec<SettingValue> {
        let mut result = Vec::new();
        let mut done = false;
        let mut previous_negated_empty = false;
        for (source, values) in self.sources(section, name) {
            let zombie = source != Source::CommandLine && !previous_negated_empty;
            if !done || zombie {
                result.extend(values[negated_count(values)..].iter().cloned());
            }
            done |= negated_count(values) > 0;
            previous_negated_empty |= last_negated(values) && result.is_empty();
        }
        result
    }

    /// Whether the option's effective value is a negation (`IsArgNegated`).
    pub fn is_negated(&self, section: &str, name: &str) -> bool {
        self.value(section, name, false) == Some(SettingValue::Bool(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &str) -> SettingValue {
        SettingValue::Text(value.to_owned())
    }

    #[test]
    fn atoi_like_core() {
        let cases = [
            ("", 0),
            ("12", 12),
            ("  12  ", 12),
            ("12abc", 12),
            ("abc", 0),
            ("+7", 7),
            ("-7", -7),
            ("+-7", 0),
            ("--7", 0),
            ("-", 0),
            ("0x10", 0),
            ("99999999999999999999", i64::MAX),
            ("-99999999999999999999", i64::MIN),
            ("1.5", 1),
        ];
        for (input, expected) in cases {
            assert_eq!(locale_independent_atoi(input), expected, "{input:?}");
        }
        assert!(interpret_bool(""));
        assert!(!interpret_bool("yes"));
        assert!(interpret_bool("2"));
    }

    #[test]
    fn command_line_last_wins_file_first_wins() {
        let mut settings = Settings::default();
        settings.command_line.insert("par".into(), vec![text("1"), text("2")]);
        settings.add_config_value("", "dbcache", text("100"));
        settings.add_config_value("", "dbcache", text("200"));
        assert_eq!(settings.value("", "par", false), Some(text("2")));
        assert_eq!(settings.value("", "dbcache", false), Some(text("100")));
        // Chain options take the file's last value.
        assert_eq!(settings.value("", "dbcache", true), Some(text("200")));
    }

    #[test]
    fn sections_and_negations() {
        let mut settings = Settings::default();
        settings.add_config_value("", "dbcache", text("100"));
        settings.add_config_value("regtest", "dbcache", text("300"));
        assert_eq!(settings.value("regtest", "dbcache", false), Some(text("300")));
        assert_eq!(settings.value("main", "dbcache", false), Some(text("100")));
        settings.command_line.insert("dbcache".into(), vec![SettingValue::Bool(false)]);
        assert!(settings.is_negated("regtest", "dbcache"));
        assert_eq!(settings.value("regtest", "dbcache", false).unwrap().to_integer(), 0);
        // A negated chain option on the command line is skipped.
        settings.command_line.insert("regtest".into(), vec![SettingValue::Bool(false)]);
        settings.add_config_value("", "regtest", text("1"));
        assert_eq!(settings.value("", "regtest", true), Some(text("1")));
    }

    #[test]
    fn lists_merge_with_zombies() {
        let mut settings = Settings::default();
        settings.add_config_value("", "loadblock", text("c"));
        settings.add_config_value("regtest", "loadblock", text("b"));
        settings.command_line.insert("loadblock".into(), vec![text("a")]);
        assert_eq!(settings.values("regtest", "loadblock"), [text("a"), text("b"), text("c")]);
        // A trailing negation on the command line drops everything.
        settings
            .command_line
            .insert("loadblock".into(), vec![text("a"), SettingValue::Bool(false)]);
        assert_eq!(settings.values("regtest", "loadblock"), []);
        // A value after the negation brings the file values back.
        settings
            .command_line
            .insert("loadblock".into(), vec![text("a"), SettingValue::Bool(false), text("d")]);
        assert_eq!(settings.values("regtest", "loadblock"), [text("d"), text("b"), text("c")]);
    }

    #[test]
    fn conversions() {
        assert_eq!(SettingValue::Bool(false).to_text(), "0");
        assert_eq!(SettingValue::Bool(true).to_integer(), 1);
        assert_eq!(text("").to_json(), "\"\"");
        assert_eq!(text("a\"b").to_json(), "\"a\\\"b\"");
        assert_eq!(SettingValue::Bool(false).to_json(), "false");
    }
}

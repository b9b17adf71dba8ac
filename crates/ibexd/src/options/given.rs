//! A number option's text as given, beside the number Core reads from it
//! (`LocaleIndependentAtoi`), so a warning can show both.

use std::fmt;

use super::settings::SettingValue;

/// An integer option as given, and as Core reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenValue {
    /// The text given (`"0"` for a negation such as `-nodbcache`).
    pub text: String,
    /// Core's reading of it ([`SettingValue::to_integer`]).
    pub read: i64,
}

impl GivenValue {
    /// The value of `setting`.
    pub fn from_setting(setting: &SettingValue) -> GivenValue {
        GivenValue { text: setting.to_text(), read: setting.to_integer() }
    }

    /// Whether the text is exactly the number read (not `abc`, `12abc`, an
    /// empty value or an out-of-range number that saturated).
    pub fn is_whole_number(&self) -> bool {
        self.text.parse::<i64>() == Ok(self.read)
    }
}

impl fmt::Display for GivenValue {
    /// The text, and the number read when the text is not that number.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_whole_number() {
            write!(formatter, "{}", self.text)
        } else {
            write!(formatter, "{} (read as {})", self.text, self.read)
        }
    }
}

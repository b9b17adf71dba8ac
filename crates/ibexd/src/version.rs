//! The client's name and version, as the log, `-version` and the data
//! directory lock's message give them.

/// The client name in the log and `-version`.
pub const CLIENT_NAME: &str = "Ibex";

/// `v` and the crate version, as Core's `FormatFullVersion`.
pub fn version_string() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_has_a_v() {
        assert_eq!(version_string(), format!("v{}", env!("CARGO_PKG_VERSION")));
    }
}

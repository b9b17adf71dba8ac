//! Prometheus' text exposition format (version 0.0.4), written by hand:
//! for each family a `# HELP` and a `# TYPE` line, then its samples, one
//! `name{label="value",...} number` a line.

use std::fmt::Write;

/// The `Content-Type` of the format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A family's type, as its `# TYPE` line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up (Prometheus takes its `rate()`); named `..._total`.
    Counter,
    /// A level that goes up and down.
    Gauge,
    /// Counts in cumulative buckets (`_bucket{le=...}`, `_sum`, `_count`).
    Histogram,
}

impl MetricKind {
    fn name(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

/// A metric family: its name, type and help text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The name (`ibex_blocks_connected_total`).
    pub name: &'static str,
    /// The type.
    pub kind: MetricKind,
    /// One line of help.
    pub help: &'static str,
}

/// Whether `name` is a valid metric or label name (`[a-zA-Z_:][a-zA-Z0-9_:]*`;
/// label names take no colon, which ours never have).
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes.next().is_some_and(|byte| byte.is_ascii_alphabetic() || byte == b'_');
    first_ok && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b':')
}

/// A page of the text format being written.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// An empty page.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Starts `family`: its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, family: &Family) {
        debug_assert!(is_valid_name(family.name), "metric name {}", family.name);
        let _ = writeln!(self.text, "# HELP {} {}", family.name, escape_help(family.help));
        let _ = writeln!(self.text, "# TYPE {} {}", family.name, family.kind.name());
    }

    /// A sample of `name` (the family's, or its `_bucket`/`_sum`/`_count`)
    /// with `labels`.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (position, (label, label_value)) in labels.iter().enumerate() {
                debug_assert!(is_valid_name(label), "label name {label}");
                if position > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{label}=\"{}\"", escape_label_value(label_value));
            }
            self.text.push('}');
        }
        self.text.push(' ');
        self.text.push_str(&format_value(value));
        self.text.push('\n');
    }

    /// A whole family with one unlabelled sample.
    pub fn single(&mut self, family: &Family, value: f64) {
        self.family(family);
        self.sample(family.name, &[], value);
    }

    /// The page.
    pub fn finish(self) -> String {
        self.text
    }
}

/// A value as the format writes it: Go's float syntax, `+Inf`, `-Inf`,
/// `NaN`; whole numbers without a fraction.
pub fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

/// Help text escapes backslashes and line feeds.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Label values also escape double quotes.
fn escape_label_value(text: &str) -> String {
    escape_help(text).replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_families_and_samples_in_the_text_format() {
        let family = Family {
            name: "ibex_example_bytes",
            kind: MetricKind::Gauge,
            help: "Bytes held\nby \\ the example.",
        };
        let mut page = Exposition::new();
        page.family(&family);
        page.sample(family.name, &[("queue", "a\"b\\c\nd")], 12.0);
        page.sample(family.name, &[("queue", "x"), ("kind", "y")], 0.25);
        page.single(
            &Family { name: "ibex_other_total", kind: MetricKind::Counter, help: "Other." },
            3.0,
        );
        assert_eq!(
            page.finish(),
            "# HELP ibex_example_bytes Bytes held\\nby \\\\ the example.\n\
             # TYPE ibex_example_bytes gauge\n\
             ibex_example_bytes{queue=\"a\\\"b\\\\c\\nd\"} 12\n\
             ibex_example_bytes{queue=\"x\",kind=\"y\"} 0.25\n\
             # HELP ibex_other_total Other.\n\
             # TYPE ibex_other_total counter\n\
             ibex_other_total 3\n"
        );
    }

    #[test]
    fn values_and_names_follow_the_format() {
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(-1.0), "-1");
        assert_eq!(format_value(1e21), "1000000000000000000000");
        assert!(is_valid_name("ibex_flush_duration_seconds_bucket"));
        assert!(is_valid_name("_x:y"));
        assert!(!is_valid_name("9lives") && !is_valid_name("") && !is_valid_name("a-b"));
    }
}

//! One side's figures: printed for people, and as a `RESULT` line of
//! `key=value` fields that the parent process reads back from its children.

use std::fmt;

/// Which implementation imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Side {
    /// Ibex's chainstate (`import_blocks`).
    Ibex,
    /// Bitcoin Core's libbitcoinkernel (`ChainstateManager::import_blocks`).
    Core,
    /// Both, each in a child process of its own.
    Both,
}

impl fmt::Display for Side {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Side::Ibex => "ibex",
            Side::Core => "core",
            Side::Both => "both",
        })
    }
}

impl Side {
    fn from_name(name: &str) -> Option<Side> {
        match name {
            "ibex" => Some(Side::Ibex),
            "core" => Some(Side::Core),
            _ => None,
        }
    }
}

/// The figures of one whole import.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The side measured.
    pub side: Side,
    /// Blocks connected (genesis included).
    pub blocks: u64,
    /// Transactions in them.
    pub transactions: u64,
    /// Inputs in them, coinbases excluded.
    pub inputs: u64,
    /// Inputs whose scripts were checked.
    pub scripts_checked: u64,
    /// Wall-clock seconds, opening and the final flush included.
    pub seconds: f64,
    /// Peak resident memory of the process (`VmHWM`), in KiB.
    pub peak_rss_kib: u64,
    /// Coins flushes (Ibex only: the kernel reports none).
    pub flushes: Option<u64>,
    /// Longest coins flush, in milliseconds (Ibex only).
    pub longest_flush_ms: Option<u64>,
}

/// The prefix of the machine-readable line.
pub const RESULT_PREFIX: &str = "RESULT";

impl Measurement {
    /// Blocks per second.
    pub fn blocks_per_second(&self) -> f64 {
        self.blocks as f64 / self.seconds.max(f64::MIN_POSITIVE)
    }

    /// Inputs per second.
    pub fn inputs_per_second(&self) -> f64 {
        self.inputs as f64 / self.seconds.max(f64::MIN_POSITIVE)
    }

    /// The line for people.
    pub fn human_line(&self) -> String {
        let flush = match (self.flushes, self.longest_flush_ms) {
            (Some(count), Some(longest)) => format!("{count} flushes, longest {longest} ms"),
            _ => "flushes not reported by the kernel".to_owned(),
        };
        format!(
            "{:<4}: {} blocks, {} transactions, {} inputs ({} scripts checked), {:.2} s, \
             {:.1} blocks/s, {:.0} inputs/s, peak RSS {:.1} MiB, {flush}",
            self.side,
            self.blocks,
            self.transactions,
            self.inputs,
            self.scripts_checked,
            self.seconds,
            self.blocks_per_second(),
            self.inputs_per_second(),
            self.peak_rss_kib as f64 / 1024.0,
        )
    }

    /// The machine-readable line.
    pub fn result_line(&self) -> String {
        let mut line = format!(
            "{RESULT_PREFIX} side={} blocks={} transactions={} inputs={} scripts_checked={} \
             seconds={} peak_rss_kib={}",
            self.side,
            self.blocks,
            self.transactions,
            self.inputs,
            self.scripts_checked,
            self.seconds,
            self.peak_rss_kib
        );
        if let (Some(count), Some(longest)) = (self.flushes, self.longest_flush_ms) {
            line.push_str(&format!(" flushes={count} longest_flush_ms={longest}"));
        }
        line
    }

    /// Reads back a [`result_line`](Self::result_line); `None` for any
    /// other line.
    pub fn parse_result_line(line: &str) -> Option<Measurement> {
        let mut fields = line.split_whitespace();
        if fields.next()? != RESULT_PREFIX {
            return None;
        }
        let pairs: Vec<(&str, &str)> = fields.filter_map(|field| field.split_once('=')).collect();
        let get = |key: &str| pairs.iter().find(|(name, _)| *name == key).map(|(_, value)| *value);
        let number = |key: &str| get(key).and_then(|value| value.parse::<u64>().ok());
        Some(Measurement {
            side: Side::from_name(get("side")?)?,
            blocks: number("blocks")?,
            transactions: number("transactions")?,
            inputs: number("inputs")?,
            scripts_checked: number("scripts_checked")?,
            seconds: get("seconds")?.parse().ok()?,
            peak_rss_kib: number("peak_rss_kib")?,
            flushes: number("flushes"),
            longest_flush_ms: number("longest_flush_ms"),
        })
    }
}

/// This process's peak resident memory (`VmHWM` in `/proc/self/status`),
/// in KiB; 0 where that file does not exist.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_round_trip() {
        let ibex = Measurement {
            side: Side::Ibex,
            blocks: 2_001,
            transactions: 90_000,
            inputs: 150_000,
            scripts_checked: 120_000,
            seconds: 12.5,
            peak_rss_kib: 300_000,
            flushes: Some(3),
            longest_flush_ms: Some(420),
        };
        assert_eq!(Measurement::parse_result_line(&ibex.result_line()), Some(ibex.clone()));
        let core = Measurement { side: Side::Core, flushes: None, longest_flush_ms: None, ..ibex };
        assert_eq!(Measurement::parse_result_line(&core.result_line()), Some(core));
        assert_eq!(Measurement::parse_result_line("ibex: 1 blocks"), None);
    }

    #[test]
    fn peak_rss_is_read() {
        assert!(peak_rss_kib() > 0);
    }
}

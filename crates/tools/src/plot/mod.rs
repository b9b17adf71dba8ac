//! `ibex plot`: IBD progress from Bitcoin Core's or Ibex's `debug.log` files,
//! drawn the way Core's performance work shows it: sync time by height,
//! speed-up over a baseline run, blocks/s, transactions/s and the UTXO cache
//! by height, plus a CSV and a text summary; with an `ibex gen` manifest,
//! the time per block against the UTXO set's size ([`cost_growth`]).
//!
//! [`parse`] is a pure parser of log lines into one run's series,
//! [`metrics`] and [`cost_growth`] derive the figures, [`draw`] draws the charts on any
//! plotters backend, [`output`] writes them as SVG and PNG (with the font
//! [`font`] finds on the system), and [`command`] ties them to the command
//! line.

pub mod command;
pub mod cost_growth;
pub mod draw;
pub mod font;
pub mod metrics;
pub mod output;
pub mod parse;

use std::path::PathBuf;

/// What can go wrong while plotting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// A log could not be opened or read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The log.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A log has no `UpdateTip` line in the part plotted.
    #[error("{}: no UpdateTip lines (at or above the height asked, after the shutdown if asked)", path.display())]
    NoTips {
        /// The log.
        path: PathBuf,
    },
    /// `--baseline` names no run.
    #[error("baseline {name} is not one of the runs")]
    UnknownBaseline {
        /// The name given.
        name: String,
    },
    /// The `--utxo-counts` manifest cannot give the UTXO set's sizes.
    #[error("{}: {reason}", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An output file could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The output file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A chart could not be drawn.
    #[error("{}: cannot draw: {source}", path.display())]
    Draw {
        /// The chart file.
        path: PathBuf,
        /// The cause, from the drawing library.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

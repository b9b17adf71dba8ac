//! Everything `ibexd` is told, in Bitcoin Core's syntax: the command line
//! and `bitcoin.conf`, merged by Core's rules into a typed [`NodeOptions`].
//! The bottom of the daemon: these modules import one another, top to
//! bottom in the table, and nothing else of the daemon; every other part
//! reads the options it is given.
//!
//! | module | job |
//! |---|---|
//! | [`node`] | [`CommandLine`] and [`NodeOptions`]: the command line parsed, the configuration file read, each option typed for the chain |
//! | [`file`](mod@file) | `bitcoin.conf` and its includes into the settings ([`ConfigFileStatus`]) |
//! | [`network`], [`metrics`], [`numeric`] | the P2P and RPC options, `-metrics`, the numeric options, with Core's defaults and interplay |
//! | [`rules`] | Core's rules for one value: known names, negations, paths, the chain options |
//! | [`error`] | [`ConfigError`] and [`ConfigWarning`], with Core's messages |
//! | [`file_syntax`] | one configuration file's lines |
//! | [`given`], [`values`] | a number as given and as read; hashes, chain work and hex as Core reads them |
//! | [`settings`] | the raw store: every value given, merged with Core's precedence |
//! | [`table`] | every option `ibexd` knows, with its help text |
//! | [`defaults`] | defaults and bounds that other parts of the daemon read too |

pub mod defaults;
pub mod error;
pub mod file;
pub mod file_syntax;
pub mod given;
pub mod metrics;
pub mod network;
pub mod node;
pub mod numeric;
pub mod rules;
pub mod settings;
pub mod table;
pub mod values;

pub use error::{ConfigError, ConfigWarning};
pub use file::ConfigFileStatus;
pub use node::{parse_options, CommandLine, NodeOptions};
pub use table::OPTIONS;
pub use values::AssumeValid;

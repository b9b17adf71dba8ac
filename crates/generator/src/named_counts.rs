//! Counts keyed by name, the manifest's form for every histogram (script
//! types, spend ages, shapes).

use std::collections::BTreeMap;

use serde::Serialize;

/// Counts keyed by name, for the manifest.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NamedCounts(pub BTreeMap<String, u64>);

//! Helpers shared by the vector tests.

use std::path::PathBuf;

/// Path of a file in Core's vector directory.
pub fn vector_path(name: &str) -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/vectors/bitcoin-core")
    .join(name)
}

/// Parses a vector file as JSON.
pub fn load_json(name: &str) -> serde_json::Value {
    let path = vector_path(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Decodes hex.
pub fn hex(text: &str) -> Vec<u8> {
    assert!(text.len() % 2 == 0, "odd hex {text}");
    (0..text.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(&text[index..index + 2], 16).unwrap())
        .collect()
}

/// Decodes 32 bytes of hex.
pub fn hex32(text: &str) -> [u8; 32] {
    hex(text).try_into().unwrap()
}

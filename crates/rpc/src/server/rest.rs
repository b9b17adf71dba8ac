//! The REST interface (`-rest`), as Core's `rest.cpp` serves it: no
//! authentication, each route answering `.bin`, `.hex` or `.json`, errors
//! as `text/plain` lines with Core's status codes and words (400 for a
//! malformed request, 404 for an unknown block or format, 503 while warming
//! up).
//!
//! Routes, matched by prefix in Core's order: `/rest/block/notxdetails/`,
//! `/rest/block/` (JSON with every transaction and its prevouts: `getblock`
//! verbosity 3), `/rest/chaininfo`, `/rest/headers/` (`<hash>.<ext>?count=N`
//! and the older `<count>/<hash>.<ext>`), `/rest/getutxos` (in
//! `super::rest_utxos`), `/rest/blockhashbyheight/`. Core's `tx`,
//! `mempool`, `blockfilter`, `blockfilterheaders`, `deploymentinfo` and
//! `spenttxouts` routes are not served (404, as Core answers a route it has
//! no handler for).

use ibex_primitives::BlockHash;

use super::jsonrpc::HttpReply;
use super::rest_utxos::rest_getutxos;
use crate::backend::BackendError;
use crate::context::BlockVerbosity;
use crate::hex::write_hex;
use crate::json::{close_object, hash_string, open_object};
use crate::methods::blockchain::{write_blockchain_info, write_stored_block};
use crate::methods::MethodContext;
use crate::write_header_json;

/// Most headers one `/rest/headers` request returns (Core's
/// `MAX_REST_HEADERS_RESULTS`).
pub(crate) const REST_HEADERS_COUNT_MAX: usize = 2000;

/// A REST route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `/rest/block/notxdetails/`.
    BlockTransactionIds,
    /// `/rest/block/`.
    Block,
    /// `/rest/chaininfo`.
    ChainInfo,
    /// `/rest/headers/`.
    Headers,
    /// `/rest/getutxos`.
    GetUtxos,
    /// `/rest/blockhashbyheight/`.
    BlockHashByHeight,
}

const ROUTES: [(&str, Route); 6] = [
    ("/rest/block/notxdetails/", Route::BlockTransactionIds),
    ("/rest/block/", Route::Block),
    ("/rest/chaininfo", Route::ChainInfo),
    ("/rest/headers/", Route::Headers),
    ("/rest/getutxos", Route::GetUtxos),
    ("/rest/blockhashbyheight/", Route::BlockHashByHeight),
];

/// The route `uri` (path and query, as sent) falls under.
pub(crate) fn route(uri: &str) -> Option<Route> {
    ROUTES.iter().find(|(prefix, _)| uri.starts_with(prefix)).map(|(_, route)| *route)
}

/// The output format a path asks for (Core's `RESTResponseFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// No known suffix.
    Undefined,
    /// `.bin`.
    Binary,
    /// `.hex`.
    Hex,
    /// `.json`.
    Json,
}

/// Core's `ParseDataFormat`: the query string cut off at the last `?`,
/// then a known suffix after the last `.` cut off and returned (an unknown
/// suffix stays part of the parameter).
pub(crate) fn parse_format(uri_part: &str) -> (&str, Format) {
    let param = uri_part.rfind('?').map_or(uri_part, |at| &uri_part[..at]);
    let Some(dot) = param.rfind('.') else { return (param, Format::Undefined) };
    let format = match &param[dot + 1..] {
        "" => Format::Undefined,
        "bin" => Format::Binary,
        "hex" => Format::Hex,
        "json" => Format::Json,
        _ => return (param, Format::Undefined),
    };
    (&param[..dot], format)
}

/// Core's `RESTERR`: a `text/plain` line.
pub(crate) fn rest_error(status: u16, message: &str) -> HttpReply {
    HttpReply {
        status,
        content_type: Some("text/plain"),
        body: format!("{message}\r\n").into_bytes(),
    }
}

/// The 404 for a path without a known format.
pub(crate) fn format_not_found() -> HttpReply {
    rest_error(404, "output format not found (available: .bin, .hex, .json)")
}

pub(crate) fn binary(body: Vec<u8>) -> HttpReply {
    HttpReply { status: 200, content_type: Some("application/octet-stream"), body }
}

pub(crate) fn hex_text(bytes: &[u8]) -> HttpReply {
    let mut body = Vec::with_capacity(2 * bytes.len() + 1);
    write_hex(&mut body, bytes);
    body.push(b'\n');
    HttpReply { status: 200, content_type: Some("text/plain"), body }
}

pub(crate) fn json(mut body: Vec<u8>) -> HttpReply {
    body.push(b'\n');
    HttpReply { status: 200, content_type: Some("application/json"), body }
}

/// A backend failure other than the ones a route words itself.
pub(crate) fn backend_failure(error: &BackendError) -> HttpReply {
    rest_error(500, &error.to_string())
}

/// Core's `uint256::FromHex`: exactly 64 hex digits, display order.
pub(crate) fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut bytes = ibex_primitives::hex::decode_array::<32>(text).ok()?;
    bytes.reverse();
    Some(bytes)
}

/// Core's `ToIntegral`: optional `-` for signed types, then digits only
/// (no `+`, no spaces), within range.
pub(crate) fn parse_integral<T: std::str::FromStr>(text: &str) -> Option<T> {
    if text.starts_with('+') {
        return None;
    }
    text.parse().ok()
}

/// Answers a REST request under `route`; `uri` is the path and query as
/// sent, `body` the request body (read for `getutxos` only).
pub(crate) fn handle(context: &MethodContext, route: Route, uri: &str, body: &[u8]) -> HttpReply {
    if let Some(status) = context.warmup_status() {
        return rest_error(503, &format!("Service temporarily unavailable: {status}"));
    }
    let prefix_length =
        ROUTES.iter().find(|(_, known)| *known == route).map_or(0, |(p, _)| p.len());
    let uri_part = uri.get(prefix_length..).unwrap_or("");
    match route {
        Route::BlockTransactionIds => rest_block(context, uri_part, BlockVerbosity::TransactionIds),
        Route::Block => rest_block(context, uri_part, BlockVerbosity::TransactionsWithPrevouts),
        Route::ChainInfo => rest_chaininfo(context, uri_part),
        Route::Headers => rest_headers(context, uri, uri_part),
        Route::GetUtxos => rest_getutxos(context, uri_part, body),
        Route::BlockHashByHeight => rest_blockhash_by_height(context, uri_part),
    }
}

fn rest_block(context: &MethodContext, uri_part: &str, verbosity: BlockVerbosity) -> HttpReply {
    let (hash_text, format) = parse_format(uri_part);
    let Some(hash) = parse_hash(hash_text) else {
        return rest_error(400, &format!("Invalid hash: {hash_text}"));
    };
    let with_coins = format == Format::Json && verbosity != BlockVerbosity::TransactionIds;
    let stored = match context.backend.block(&BlockHash(hash), with_coins) {
        Ok(Some(stored)) => stored,
        Ok(None) => return rest_error(404, &format!("{hash_text} not found")),
        Err(BackendError::BlockDataUnavailable { pruned, .. }) => {
            let why = if pruned { "pruned data" } else { "not fully downloaded" };
            return rest_error(404, &format!("{hash_text} not available ({why})"));
        }
        Err(error) => return backend_failure(&error),
    };
    match format {
        Format::Binary => binary(stored.bytes),
        Format::Hex => hex_text(&stored.bytes),
        Format::Json => {
            let mut body = Vec::new();
            match write_stored_block(context, &stored, Some(verbosity), &mut body) {
                Ok(()) => json(body),
                Err(error) => rest_error(500, &error.message),
            }
        }
        Format::Undefined => format_not_found(),
    }
}

fn rest_chaininfo(context: &MethodContext, uri_part: &str) -> HttpReply {
    if parse_format(uri_part).1 != Format::Json {
        return rest_error(404, "output format not found (available: json)");
    }
    let info = match context.backend.blockchain_info() {
        Ok(info) => info,
        Err(error) => return backend_failure(&error),
    };
    let mut body = Vec::new();
    match write_blockchain_info(context, &info, &mut body) {
        Ok(()) => json(body),
        Err(error) => rest_error(500, &error.message),
    }
}

/// The first value of `key` in the URI's query string, percent-decoded, as
/// libevent's `evhttp_parse_query_str` finds it (a pair without `=` or with
/// an empty key spoils the whole query).
pub(crate) fn query_parameter(uri: &str, key: &str) -> Option<String> {
    let query = uri.split_once('?')?.1;
    let query = query.split_once('#').map_or(query, |(query, _)| query);
    let mut found = None;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=')?;
        if name.is_empty() {
            return None;
        }
        if found.is_none() && percent_decode(name) == key {
            found = Some(percent_decode(value));
        }
    }
    found
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = bytes.get(index + 1..index + 3).and_then(|digits| {
            std::str::from_utf8(digits).ok().and_then(|digits| u8::from_str_radix(digits, 16).ok())
        });
        match (bytes[index], escaped) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

fn rest_headers(context: &MethodContext, uri: &str, uri_part: &str) -> HttpReply {
    let (param, format) = parse_format(uri_part);
    let path: Vec<&str> = param.split('/').collect();
    let (raw_count, hash_text) = match path.as_slice() {
        [count, hash] => ((*count).to_owned(), *hash),
        [hash] => (query_parameter(uri, "count").unwrap_or_else(|| "5".to_owned()), *hash),
        _ => {
            return rest_error(
                400,
                "Invalid URI format. Expected /rest/headers/<hash>.<ext>?count=<count>",
            )
        }
    };
    let Some(count) = parse_integral::<usize>(&raw_count)
        .filter(|count| (1..=REST_HEADERS_COUNT_MAX).contains(count))
    else {
        return rest_error(
            400,
            &format!(
                "Header count is invalid or out of acceptable range (1-{REST_HEADERS_COUNT_MAX}): {raw_count}"
            ),
        );
    };
    let Some(hash) = parse_hash(hash_text) else {
        return rest_error(400, &format!("Invalid hash: {hash_text}"));
    };
    let entries = match context.backend.active_chain_entries(&BlockHash(hash), count) {
        Ok(entries) => entries,
        Err(error) => return backend_failure(&error),
    };
    match format {
        Format::Binary | Format::Hex => {
            let bytes: Vec<u8> = entries.iter().flat_map(|entry| entry.header.encode()).collect();
            if format == Format::Binary {
                binary(bytes)
            } else {
                hex_text(&bytes)
            }
        }
        Format::Json => {
            let mut body = vec![b'['];
            for (index, entry) in entries.iter().enumerate() {
                if index != 0 {
                    body.push(b',');
                }
                write_header_json(&mut body, &entry.header, &entry.context());
            }
            body.push(b']');
            json(body)
        }
        Format::Undefined => format_not_found(),
    }
}

/// Core's `SanitizeString(text, SAFE_CHARS_URI)`.
fn sanitize_uri(text: &str) -> String {
    const SAFE: &str = "!*'();:@&=+$,/?#[]-_.~%";
    text.chars().filter(|c| c.is_ascii_alphanumeric() || SAFE.contains(*c)).collect()
}

fn rest_blockhash_by_height(context: &MethodContext, uri_part: &str) -> HttpReply {
    let (height_text, format) = parse_format(uri_part);
    let Some(height) =
        parse_integral::<i32>(height_text).and_then(|height| u32::try_from(height).ok())
    else {
        return rest_error(400, &format!("Invalid height: {}", sanitize_uri(height_text)));
    };
    let hash = match context.backend.block_hash_at(height) {
        Ok(Some(hash)) => hash,
        Ok(None) => return rest_error(404, "Block height out of range"),
        Err(error) => return backend_failure(&error),
    };
    match format {
        Format::Binary => binary(hash.0.to_vec()),
        Format::Hex => {
            let mut body = Vec::with_capacity(65);
            body.extend_from_slice(hash.to_hex().as_bytes());
            body.push(b'\n');
            HttpReply { status: 200, content_type: Some("text/plain"), body }
        }
        Format::Json => {
            let mut body = Vec::new();
            open_object(&mut body, "blockhash");
            hash_string(&mut body, &hash.0);
            close_object(&mut body);
            json(body)
        }
        Format::Undefined => format_not_found(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_query_strings_as_core_reads_them() {
        assert_eq!(parse_format("abc.json?count=2"), ("abc", Format::Json));
        assert_eq!(parse_format("abc.xml"), ("abc.xml", Format::Undefined));
        assert_eq!(parse_format("abc."), ("abc", Format::Undefined));
        assert_eq!(parse_format("a.b.bin"), ("a.b", Format::Binary));
        assert_eq!(parse_format("abc"), ("abc", Format::Undefined));
        assert_eq!(
            query_parameter("/rest/headers/x.json?count=7&count=8", "count").as_deref(),
            Some("7")
        );
        assert_eq!(query_parameter("/x?a=1&count=%32", "count").as_deref(), Some("2"));
        assert_eq!(query_parameter("/x?count", "count"), None);
        assert_eq!(query_parameter("/x", "count"), None);
        assert_eq!(parse_integral::<usize>("+5"), None);
        assert_eq!(parse_integral::<i32>("-5"), Some(-5));
        assert_eq!(parse_integral::<usize>(" 5"), None);
        assert_eq!(sanitize_uri("12<script>"), "12script");
        assert_eq!(route("/rest/block/notxdetails/00.json"), Some(Route::BlockTransactionIds));
        assert_eq!(route("/rest/block/00.json"), Some(Route::Block));
        assert_eq!(route("/rest/tx/00.json"), None);
    }
}

//! The JSON-RPC layer over HTTP, as Core's `HTTPReq_JSONRPC`
//! (`httprpc.cpp`), `JSONRPCRequest::parse` and `JSONRPCReplyObj`
//! (`rpc/request.cpp`) do it.
//!
//! - A request without `"jsonrpc"` (or with `"1.0"`) is legacy 1.0/1.1: its
//!   reply holds both `result` and `error`, one of them null, and an error
//!   also sets the HTTP status (-32600 400, -32601 404, anything else 500).
//! - `"jsonrpc":"2.0"`: the reply has `"jsonrpc":"2.0"` first and only one of
//!   `result` and `error`; errors from running the method come back with 200;
//!   a request without `id` is a notification: run, answered 204 with no
//!   body. Malformed envelopes still take the legacy path (400).
//! - `id` is echoed when the request has one (even null), as the client
//!   wrote it (numbers keep their digits, as UniValue keeps them; strings
//!   are re-escaped as Core writes them).
//! - A batch (array) always answers 200, one reply per element that is not a
//!   notification, 204 when all were; an empty batch answers `[]`. As in
//!   Core, an element that is not an object keeps the previous element's id
//!   and version (Core reuses one request object across the batch).
//!
//! Results go straight into the reply buffer after `{"result":`; on error
//! the buffer is cut back and the error written instead. Every reply ends
//! with a newline, as Core's.
//!
//! Bodies are read by `request` so that their parsed form stays small: a
//! batch is run element by element, and an element holds at most
//! `request::REQUEST_JSON_VALUES_MAX` values (-32600 beyond).

use serde_json::value::RawValue;
use serde_json::Value;

use super::request::{
    bounded_value, check_body, for_each_element, read_envelope, top_level, ReadFailure, TopLevel,
    ValueBudget, REQUEST_JSON_VALUES_MAX,
};

use super::reply_budget::{ReplyBudget, ReplyReservation, REPLY_BYTES_IN_FLIGHT_MAX};
use crate::json::escaped_string;
use crate::methods::error::{RpcError, RpcErrorCode};
use crate::methods::{execute, MethodContext};
use crate::number::write_i64;

/// A batch's reply at most, bytes. Each element's reply is checked before
/// it is written, from what is known then (its echoed id, which Core
/// repeats for every element that is not an object, plus
/// [`REPLY_ENVELOPE_BYTES_MAX`]), and again once its result is written
/// (a result is bounded by its method): past the bound the batch is
/// refused with -7 (Core's `RPC_OUT_OF_MEMORY`) and its replies dropped.
/// Core has no such bound and builds the whole reply (an id of 1 MiB
/// echoed for 15 million elements: terabytes).
pub(crate) const BATCH_REPLY_BYTES_MAX: usize = 128 << 20;
/// An element's reply besides its id and result: the envelope and the
/// longest of this layer's error messages.
const REPLY_ENVELOPE_BYTES_MAX: usize = 256;
/// Steps in which a growing batch reply takes room from the reply budget
/// (fewer locks than one per element).
const BATCH_RESERVATION_STEP_BYTES: usize = 1 << 20;

/// What the HTTP side sends back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<&'static str>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpReply {
    /// A reply with a plain-text body (Core's `WriteReply(status, text)`,
    /// which sets no content type).
    pub(crate) fn text(status: u16, text: &str) -> HttpReply {
        HttpReply { status, content_type: None, body: text.as_bytes().to_vec() }
    }

    fn json(status: u16, body: Vec<u8>) -> HttpReply {
        HttpReply { status, content_type: Some("application/json"), body }
    }
}

/// JSON-RPC's version, as the request gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    Legacy,
    Two,
}

/// What a request object said, as far as it was read (Core's
/// `JSONRPCRequest`: id first, then version, method, params).
#[derive(Debug, Clone)]
struct Envelope {
    /// The id's JSON text to echo; `None`: no `id` key (a notification
    /// under 2.0).
    id: Option<Vec<u8>>,
    version: Version,
}

impl Envelope {
    /// Before anything is read: id null, legacy.
    fn legacy() -> Envelope {
        Envelope { id: Some(b"null".to_vec()), version: Version::Legacy }
    }

    fn is_notification(&self) -> bool {
        self.version == Version::Two && self.id.is_none()
    }
}

/// A method call read from an envelope.
struct Call {
    method: String,
    params: Value,
}

/// The error for an element that could not be read.
fn read_error(failure: ReadFailure) -> RpcError {
    match failure {
        ReadFailure::Parse => RpcError::new(RpcErrorCode::ParseError, "Parse error"),
        ReadFailure::NotAnObject => {
            RpcError::new(RpcErrorCode::InvalidRequest, "Invalid Request object")
        }
        ReadFailure::TooManyValues => RpcError::with_message(
            RpcErrorCode::InvalidRequest,
            format!("Request too large: more than {REQUEST_JSON_VALUES_MAX} JSON values"),
        ),
    }
}

/// The JSON text a reply echoes for the request id `raw`: a string
/// re-escaped as Core writes strings, anything else as the client wrote it
/// without the whitespace between tokens.
fn echoed_id(raw: &RawValue) -> Vec<u8> {
    let text = raw.get();
    let mut echo = Vec::with_capacity(text.len());
    if let Ok(string) = serde_json::from_str::<String>(text) {
        escaped_string(&mut echo, &string);
        return echo;
    }
    let mut in_string = false;
    let mut escaped = false;
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if byte == b'"' {
            in_string = true;
        } else if byte.is_ascii_whitespace() {
            continue;
        }
        echo.push(byte);
    }
    echo
}

/// Reads one request element into `envelope` (updated as far as it gets,
/// so errors carry the id and version read).
fn parse_envelope(element: &RawValue, envelope: &mut Envelope) -> Result<Call, RpcError> {
    let invalid = |message| RpcError::new(RpcErrorCode::InvalidRequest, message);
    let fields = read_envelope(element).map_err(read_error)?;
    let budget = ValueBudget::new(REQUEST_JSON_VALUES_MAX);
    let value_of = |raw: Option<&RawValue>| {
        raw.map(|raw| bounded_value(raw, &budget)).transpose().map_err(read_error)
    };
    envelope.id = fields.id.map(echoed_id);
    envelope.version = Version::Legacy;
    match value_of(fields.version)? {
        None | Some(Value::Null) => {}
        Some(Value::String(version)) if version == "1.0" => {}
        Some(Value::String(version)) if version == "2.0" => envelope.version = Version::Two,
        Some(Value::String(_)) => return Err(invalid("JSON-RPC version not supported")),
        Some(_) => return Err(invalid("jsonrpc field must be a string")),
    }
    let method = match value_of(fields.method)? {
        None | Some(Value::Null) => return Err(invalid("Missing method")),
        Some(Value::String(method)) => method,
        Some(_) => return Err(invalid("Method must be a string")),
    };
    let params = match value_of(fields.params)? {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(params @ (Value::Array(_) | Value::Object(_))) => params,
        Some(_) => return Err(invalid("Params must be an array or object")),
    };
    Ok(Call { method, params })
}

/// Opens a reply object: `{` or `{"jsonrpc":"2.0",`.
fn open_reply(out: &mut Vec<u8>, version: Version) {
    out.extend_from_slice(match version {
        Version::Legacy => b"{",
        Version::Two => b"{\"jsonrpc\":\"2.0\",",
    });
}

/// Closes a reply object with its id, if the request had one.
fn close_reply(out: &mut Vec<u8>, id: Option<&Vec<u8>>) {
    if let Some(id) = id {
        out.extend_from_slice(b",\"id\":");
        out.extend_from_slice(id);
    }
    out.push(b'}');
}

/// Appends an error reply.
fn write_error_reply(out: &mut Vec<u8>, envelope: &Envelope, error: &RpcError) {
    open_reply(out, envelope.version);
    if envelope.version == Version::Legacy {
        out.extend_from_slice(b"\"result\":null,");
    }
    out.extend_from_slice(b"\"error\":{\"code\":");
    write_i64(out, i64::from(error.code.number()));
    out.extend_from_slice(b",\"message\":");
    escaped_string(out, &error.message);
    out.push(b'}');
    close_reply(out, envelope.id.as_ref());
}

/// Runs a call and appends its reply: the result, or (when the method
/// fails and `catch_errors`) the error reply. Without `catch_errors` the
/// error is returned with nothing appended.
fn execute_call(
    context: &MethodContext,
    call: &Call,
    envelope: &Envelope,
    catch_errors: bool,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let start = out.len();
    open_reply(out, envelope.version);
    out.extend_from_slice(b"\"result\":");
    match execute(context, &call.method, &call.params, out) {
        Ok(()) => {
            if envelope.version == Version::Legacy {
                out.extend_from_slice(b",\"error\":null");
            }
            close_reply(out, envelope.id.as_ref());
            Ok(())
        }
        Err(error) => {
            out.truncate(start);
            if !catch_errors {
                return Err(error);
            }
            write_error_reply(out, envelope, &error);
            Ok(())
        }
    }
}

/// Core's `JSONErrorReply`: the HTTP status an error maps to.
fn error_status(error: &RpcError) -> u16 {
    match error.code {
        RpcErrorCode::InvalidRequest => 400,
        RpcErrorCode::MethodNotFound => 404,
        _ => 500,
    }
}

fn error_http_reply(envelope: &Envelope, error: &RpcError) -> HttpReply {
    let mut body = Vec::new();
    write_error_reply(&mut body, envelope, error);
    body.push(b'\n');
    HttpReply::json(error_status(error), body)
}

/// Methods that read only the engine's published snapshot
/// ([`crate::NodeBackend::tip`], [`crate::NodeBackend::block_hash_at`]) or
/// the clock. A single request for one of them is answered on the HTTP
/// thread, not queued behind slow work: with every worker writing a 12 MB
/// block of JSON (REST at 12 clients), a queued `getblockcount` waited
/// 156 ms at the median and 237 ms at the 99th percentile; Core, which
/// queues everything, 68 and 160 ms.
const FAST_LANE_METHODS: [&str; 4] =
    ["getblockcount", "getbestblockhash", "getblockhash", "uptime"];
/// Bodies longer than this always go to the work queue.
const FAST_LANE_BODY_BYTES_MAX: usize = 512;

/// Whether `body` is one small request for a [`FAST_LANE_METHODS`] method.
/// Bodies with a backslash (an escaped key could hide a second `method`)
/// or more than one `"method"` go to the queue, so the method the parser
/// in [`handle`] picks is the one checked here.
pub(crate) fn is_fast_lane(body: &[u8]) -> bool {
    if body.len() > FAST_LANE_BODY_BYTES_MAX || body.contains(&b'\\') {
        return false;
    }
    if body.windows(8).filter(|window| *window == b"\"method\"").count() != 1 {
        return false;
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(request)) => request
            .get("method")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|method| FAST_LANE_METHODS.contains(&method)),
        _ => false,
    }
}

/// Answers a JSON-RPC POST body; a batch's reply comes with the room it
/// took from `budget` while it grew.
pub(crate) fn handle(
    context: &MethodContext,
    body: &[u8],
    budget: &ReplyBudget,
) -> (HttpReply, Option<ReplyReservation>) {
    let legacy = Envelope::legacy();
    if let Err(failure) = check_body(body) {
        return (error_http_reply(&legacy, &read_error(failure)), None);
    }
    match top_level(body) {
        TopLevel::Object => match serde_json::from_slice::<&RawValue>(body) {
            Ok(request) => (handle_single(context, request), None),
            Err(_) => (error_http_reply(&legacy, &read_error(ReadFailure::Parse)), None),
        },
        TopLevel::Array => match handle_batch(context, body, budget) {
            Ok((reply, reservation)) => (reply, Some(reservation)),
            Err(error) => (error_http_reply(&legacy, &error), None),
        },
        TopLevel::Other => (
            error_http_reply(
                &legacy,
                &RpcError::new(RpcErrorCode::ParseError, "Top-level object parse error"),
            ),
            None,
        ),
    }
}

fn handle_single(context: &MethodContext, request: &RawValue) -> HttpReply {
    let mut envelope = Envelope::legacy();
    let call = match parse_envelope(request, &mut envelope) {
        Ok(call) => call,
        Err(error) => return error_http_reply(&envelope, &error),
    };
    let catch_errors = envelope.version == Version::Two;
    let mut body = Vec::new();
    if let Err(error) = execute_call(context, &call, &envelope, catch_errors, &mut body) {
        return error_http_reply(&envelope, &error);
    }
    if envelope.is_notification() {
        return HttpReply { status: 204, content_type: None, body: Vec::new() };
    }
    body.push(b'\n');
    HttpReply::json(200, body)
}

/// Why a batch's reply stopped growing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchTooLarge {
    /// Past [`BATCH_REPLY_BYTES_MAX`].
    Batch,
    /// No room left in the reply budget.
    InFlight,
}

impl BatchTooLarge {
    fn error(self) -> RpcError {
        let message = match self {
            BatchTooLarge::Batch => {
                format!("Batch reply too large: more than {BATCH_REPLY_BYTES_MAX} bytes")
            }
            BatchTooLarge::InFlight => format!(
                "Batch reply too large: replies in flight exceed {REPLY_BYTES_IN_FLIGHT_MAX} bytes"
            ),
        };
        RpcError::with_message(RpcErrorCode::OutOfMemory, message)
    }
}

/// A batch's reply as it grows, within its bound and the reply budget.
struct BatchReply {
    body: Vec<u8>,
    reservation: ReplyReservation,
    too_large: Option<BatchTooLarge>,
}

impl BatchReply {
    /// Takes room for the reply to reach `bytes`, or drops it and records
    /// why not.
    fn make_room(&mut self, bytes: usize) -> bool {
        if self.too_large.is_some() {
            return false;
        }
        let reason = if bytes > BATCH_REPLY_BYTES_MAX {
            Some(BatchTooLarge::Batch)
        } else {
            let step = bytes.next_multiple_of(BATCH_RESERVATION_STEP_BYTES);
            let grown = self.reservation.try_grow_to(step.min(BATCH_REPLY_BYTES_MAX));
            (!grown).then_some(BatchTooLarge::InFlight)
        };
        if reason.is_some() {
            self.too_large = reason;
            // Nothing more is written: give the memory back now.
            self.body = Vec::new();
        }
        reason.is_none()
    }
}

fn handle_batch(
    context: &MethodContext,
    request: &[u8],
    budget: &ReplyBudget,
) -> Result<(HttpReply, ReplyReservation), RpcError> {
    let mut envelope = Envelope::legacy();
    let mut reply = BatchReply { body: vec![b'['], reservation: budget.empty(), too_large: None };
    let mut replies = 0usize;
    let mut elements = 0usize;
    let walked = for_each_element(request, |element| {
        elements += 1;
        if reply.too_large.is_some() {
            return;
        }
        let call = parse_envelope(element, &mut envelope);
        // Bounded before it is written: the echoed id and the envelope.
        let id_bytes = envelope.id.as_ref().map_or(0, Vec::len);
        if !reply.make_room(reply.body.len() + 1 + id_bytes + REPLY_ENVELOPE_BYTES_MAX) {
            return;
        }
        let body = &mut reply.body;
        let start = body.len();
        if replies != 0 {
            body.push(b',');
        }
        let outcome = call.and_then(|call| execute_call(context, &call, &envelope, true, body));
        if let Err(error) = outcome {
            write_error_reply(body, &envelope, &error);
        }
        if envelope.is_notification() {
            body.truncate(start);
        } else {
            replies += 1;
        }
        let written = reply.body.len();
        reply.make_room(written);
    });
    if walked.is_err() {
        return Err(read_error(ReadFailure::Parse));
    }
    if let Some(too_large) = reply.too_large {
        return Err(too_large.error());
    }
    if replies == 0 && elements != 0 {
        let empty = HttpReply { status: 204, content_type: None, body: Vec::new() };
        return Ok((empty, reply.reservation));
    }
    reply.body.extend_from_slice(b"]\n");
    Ok((HttpReply::json(200, reply.body), reply.reservation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_single_small_snapshot_requests_take_the_fast_lane() {
        assert!(is_fast_lane(br#"{"method":"getblockcount","id":1}"#));
        assert!(is_fast_lane(br#"{"jsonrpc":"2.0","method":"getblockhash","params":[5]}"#));
        assert!(!is_fast_lane(br#"{"method":"getblock","params":["00"]}"#));
        assert!(!is_fast_lane(br#"[{"method":"getblockcount"}]"#), "batches queue");
        // A second method key (the parser keeps the first) or an escaped
        // one could differ from what is checked here: queued.
        assert!(!is_fast_lane(br#"{"method":"getblock","method":"getblockcount"}"#));
        assert!(!is_fast_lane(br#"{"\u006dethod":"getblock","method":"getblockcount"}"#));
        let padding = "x".repeat(600);
        let long = format!(r#"{{"method":"getblockcount","id":"{padding}"}}"#);
        assert!(!is_fast_lane(long.as_bytes()));
        assert!(!is_fast_lane(b"not json"));
    }

    #[test]
    fn ids_are_echoed_as_written() {
        let echo = |text: &str| {
            let raw: &RawValue = serde_json::from_str(text).unwrap();
            String::from_utf8(echoed_id(raw)).unwrap()
        };
        assert_eq!(echo("1.50"), "1.50");
        assert_eq!(echo("6.4795866095661505e-121"), "6.4795866095661505e-121");
        assert_eq!(echo(r#""a\u0041\n""#), r#""aA\n""#);
        assert_eq!(echo(" [ 1 , { \"k \" : null } ] "), r#"[1,{"k ":null}]"#);
        assert_eq!(echo("null"), "null");
    }
}

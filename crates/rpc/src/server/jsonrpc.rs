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
//! - `id` is echoed when the request has one (even null).
//! - A batch (array) always answers 200, one reply per element that is not a
//!   notification, 204 when all were; an empty batch answers `[]`. As in
//!   Core, an element that is not an object keeps the previous element's id
//!   and version (Core reuses one request object across the batch).
//!
//! Results go straight into the reply buffer after `{"result":`; on error
//! the buffer is cut back and the error written instead. Every reply ends
//! with a newline, as Core's.

use serde_json::Value;

use crate::json::{escaped_string, write_value};
use crate::methods::error::{RpcError, RpcErrorCode};
use crate::methods::{execute, MethodContext};
use crate::number::write_i64;

/// A reply's bytes past which a batch stops running its elements (each
/// element's reply is bounded by its method; a batch of many large replies
/// is what this bounds). Core has no such limit.
pub(crate) const REPLY_BYTES_MAX: usize = 1 << 30;

/// What the HTTP side sends back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpReply {
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
struct Envelope<'a> {
    /// `None`: no `id` key (a notification under 2.0).
    id: Option<&'a Value>,
    version: Version,
}

impl Envelope<'_> {
    fn is_notification(&self) -> bool {
        self.version == Version::Two && self.id.is_none()
    }
}

/// A method call read from an envelope.
struct Call<'a> {
    method: &'a str,
    params: &'a Value,
}

static EMPTY_PARAMS: Value = Value::Array(Vec::new());
static NULL_ID: Value = Value::Null;

/// Reads one request element into `envelope` (updated as far as it gets,
/// so errors carry the id and version read).
fn parse_envelope<'a>(
    element: &'a Value,
    envelope: &mut Envelope<'a>,
) -> Result<Call<'a>, RpcError> {
    let invalid = |message| RpcError::new(RpcErrorCode::InvalidRequest, message);
    let Value::Object(fields) = element else { return Err(invalid("Invalid Request object")) };
    envelope.id = fields.get("id");
    envelope.version = Version::Legacy;
    match fields.get("jsonrpc") {
        None | Some(Value::Null) => {}
        Some(Value::String(version)) if version == "1.0" => {}
        Some(Value::String(version)) if version == "2.0" => envelope.version = Version::Two,
        Some(Value::String(_)) => return Err(invalid("JSON-RPC version not supported")),
        Some(_) => return Err(invalid("jsonrpc field must be a string")),
    }
    let method = match fields.get("method") {
        None | Some(Value::Null) => return Err(invalid("Missing method")),
        Some(Value::String(method)) => method.as_str(),
        Some(_) => return Err(invalid("Method must be a string")),
    };
    let params = match fields.get("params") {
        None | Some(Value::Null) => &EMPTY_PARAMS,
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
fn close_reply(out: &mut Vec<u8>, id: Option<&Value>) {
    if let Some(id) = id {
        out.extend_from_slice(b",\"id\":");
        write_value(out, id);
    }
    out.push(b'}');
}

/// Appends an error reply.
fn write_error_reply(out: &mut Vec<u8>, envelope: &Envelope<'_>, error: &RpcError) {
    open_reply(out, envelope.version);
    if envelope.version == Version::Legacy {
        out.extend_from_slice(b"\"result\":null,");
    }
    out.extend_from_slice(b"\"error\":{\"code\":");
    write_i64(out, i64::from(error.code.number()));
    out.extend_from_slice(b",\"message\":");
    escaped_string(out, &error.message);
    out.push(b'}');
    close_reply(out, envelope.id);
}

/// Runs a call and appends its reply: the result, or (when the method
/// fails and `catch_errors`) the error reply. Without `catch_errors` the
/// error is returned with nothing appended.
fn execute_call(
    context: &MethodContext,
    call: &Call<'_>,
    envelope: &Envelope<'_>,
    catch_errors: bool,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let start = out.len();
    open_reply(out, envelope.version);
    out.extend_from_slice(b"\"result\":");
    match execute(context, call.method, call.params, out) {
        Ok(()) => {
            if envelope.version == Version::Legacy {
                out.extend_from_slice(b",\"error\":null");
            }
            close_reply(out, envelope.id);
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

fn error_http_reply(envelope: &Envelope<'_>, error: &RpcError) -> HttpReply {
    let mut body = Vec::new();
    write_error_reply(&mut body, envelope, error);
    body.push(b'\n');
    HttpReply::json(error_status(error), body)
}

/// Answers a JSON-RPC POST body.
pub(crate) fn handle(context: &MethodContext, body: &[u8]) -> HttpReply {
    let legacy = Envelope { id: Some(&NULL_ID), version: Version::Legacy };
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error_http_reply(&legacy, &RpcError::new(RpcErrorCode::ParseError, "Parse error"));
    };
    match &request {
        Value::Object(_) => handle_single(context, &request),
        Value::Array(elements) => handle_batch(context, elements),
        _ => error_http_reply(
            &legacy,
            &RpcError::new(RpcErrorCode::ParseError, "Top-level object parse error"),
        ),
    }
}

fn handle_single(context: &MethodContext, request: &Value) -> HttpReply {
    let mut envelope = Envelope { id: Some(&NULL_ID), version: Version::Legacy };
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

fn handle_batch(context: &MethodContext, elements: &[Value]) -> HttpReply {
    let mut envelope = Envelope { id: Some(&NULL_ID), version: Version::Legacy };
    let mut body = vec![b'['];
    let mut replies = 0usize;
    for element in elements {
        if body.len() > REPLY_BYTES_MAX {
            let error = RpcError::new(RpcErrorCode::InternalError, "Batch reply too large");
            return error_http_reply(
                &Envelope { id: Some(&NULL_ID), version: Version::Legacy },
                &error,
            );
        }
        let start = body.len();
        if replies != 0 {
            body.push(b',');
        }
        let outcome = parse_envelope(element, &mut envelope)
            .and_then(|call| execute_call(context, &call, &envelope, true, &mut body));
        if let Err(error) = outcome {
            write_error_reply(&mut body, &envelope, &error);
        }
        if envelope.is_notification() {
            body.truncate(start);
        } else {
            replies += 1;
        }
    }
    if replies == 0 && !elements.is_empty() {
        return HttpReply { status: 204, content_type: None, body: Vec::new() };
    }
    body.extend_from_slice(b"]\n");
    HttpReply::json(200, body)
}

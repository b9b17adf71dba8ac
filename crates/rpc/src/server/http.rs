//! One HTTP request, from hyper to a worker and back, in the order Core's
//! `http_request_cb` and `HTTPReq_JSONRPC` check things: the client's
//! address (403), the HTTP method (405 for anything but GET, POST, HEAD,
//! PUT), the path (`/` for JSON-RPC, `/rest/...` when REST is on, 404
//! otherwise); for JSON-RPC, POST only (405 "JSONRPC server handles only
//! POST requests") and Basic credentials (401 with `WWW-Authenticate`, after
//! 250 ms when they are wrong). The body is read within the size and time
//! limits, then the work goes to the queue (503 "Work queue depth
//! exceeded" when full) and the reply comes back on a oneshot channel.
//!
//! Differences from Core, all cheaper under load: credentials are checked
//! before the body is read and before the work queue (Core reads the body,
//! queues, then checks), the 250 ms penalty is a timer on the HTTP
//! thread, not a sleeping worker, and a single small request for a method
//! that reads only the published snapshot (`getblockcount`, ...) is
//! answered on the HTTP thread instead of queueing behind slow work
//! (`jsonrpc::is_fast_lane`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};

use super::auth::Authenticator;
use super::config::ServerConfig;
use super::jsonrpc::{self, HttpReply};
use super::rest;
use super::work_queue::{Job, WorkQueue};
use crate::methods::MethodContext;

/// Core's `WWW-Authenticate` value.
const WWW_AUTHENTICATE_VALUE: &str = "Basic realm=\"jsonrpc\"";
/// How long a wrong password waits for its 401 (Core's brute-force
/// deterrent).
const FAILED_AUTH_DELAY_MS: u64 = 250;

/// Request bodies held at once (read, queued or being run), in KiB: each
/// body reserves its size before it is read, so many clients sending
/// large bodies wait for each other instead of holding
/// `connections_max` x 32 MiB.
pub(crate) const BODY_KIB_IN_FLIGHT_MAX: u32 = 128 * 1024;

/// What every request handler shares.
pub(crate) struct Shared {
    /// The body budget, `BODY_KIB_IN_FLIGHT_MAX` permits of 1 KiB.
    pub body_budget: Arc<tokio::sync::Semaphore>,
    /// What methods see.
    pub context: Arc<MethodContext>,
    /// The accepted credentials.
    pub authenticator: Authenticator,
    /// The work queue.
    pub queue: WorkQueue,
    /// Limits, allowed clients, REST switch.
    pub config: ServerConfig,
}

/// The body hyper sends.
pub(crate) type ReplyBody = Full<Bytes>;

/// Answers one request.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Result<Response<ReplyBody>, Infallible> {
    Ok(route(&shared, peer, request).await)
}

async fn route(
    shared: &Shared,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Response<ReplyBody> {
    if !shared.config.client_allowed(peer.ip()) {
        return empty(StatusCode::FORBIDDEN);
    }
    let method = request.method();
    if ![Method::GET, Method::POST, Method::HEAD, Method::PUT].contains(method) {
        return empty(StatusCode::METHOD_NOT_ALLOWED);
    }
    let uri = request.uri().path_and_query().map_or("/", |path| path.as_str()).to_owned();
    if uri == "/" {
        return json_rpc(shared, request).await;
    }
    let Some(route) = rest::route(&uri).filter(|_| shared.config.rest) else {
        return empty(StatusCode::NOT_FOUND);
    };
    let (body, reservation) = if route == rest::Route::GetUtxos {
        match read_body(shared, request).await {
            Ok((body, reservation)) => (body, Some(reservation)),
            Err(response) => return response,
        }
    } else {
        (Bytes::new(), None)
    };
    submit(shared, move |context| {
        let reply = rest::handle(context, route, &uri, &body);
        drop(reservation);
        reply
    })
    .await
}

async fn json_rpc(shared: &Shared, request: Request<Incoming>) -> Response<ReplyBody> {
    if request.method() != Method::POST {
        return reply(HttpReply::text(405, "JSONRPC server handles only POST requests"));
    }
    let Some(credentials) = request.headers().get(AUTHORIZATION) else {
        return unauthorized();
    };
    if !shared.authenticator.check(credentials.as_bytes()) {
        tokio::time::sleep(Duration::from_millis(FAILED_AUTH_DELAY_MS)).await;
        return unauthorized();
    }
    let (body, reservation) = match read_body(shared, request).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if jsonrpc::is_fast_lane(&body) {
        // Snapshot reads only: microseconds, never blocking.
        return reply(jsonrpc::handle(&shared.context, &body));
    }
    submit(shared, move |context| {
        let reply = jsonrpc::handle(context, &body);
        drop(reservation);
        reply
    })
    .await
}

/// Reads the body within `request_body_bytes_max` and the server timeout,
/// first reserving its size (`Content-Length`, else the limit) from the
/// body budget: 413 when too large (at once when `Content-Length` says so),
/// 408 when too slow, 400 when the connection breaks. The reservation is
/// held until the reply is made.
async fn read_body(
    shared: &Shared,
    request: Request<Incoming>,
) -> Result<(Bytes, tokio::sync::OwnedSemaphorePermit), Response<ReplyBody>> {
    let limit = shared.config.request_body_bytes_max;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(empty(StatusCode::PAYLOAD_TOO_LARGE));
    }
    let reserved_bytes = declared.map_or(limit as u64, |length| length.min(limit as u64));
    let reserved_kib =
        u32::try_from(reserved_bytes / 1024 + 1).unwrap_or(u32::MAX).min(BODY_KIB_IN_FLIGHT_MAX);
    let Ok(reservation) = shared.body_budget.clone().acquire_many_owned(reserved_kib).await else {
        return Err(empty(StatusCode::SERVICE_UNAVAILABLE));
    };
    let collect = Limited::new(request.into_body(), limit).collect();
    match tokio::time::timeout(shared.config.server_timeout, collect).await {
        Ok(Ok(collected)) => Ok((collected.to_bytes(), reservation)),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            Err(empty(StatusCode::PAYLOAD_TOO_LARGE))
        }
        Ok(Err(_)) => Err(empty(StatusCode::BAD_REQUEST)),
        Err(_) => Err(empty(StatusCode::REQUEST_TIMEOUT)),
    }
}

/// Queues `work` and waits for its reply (503 when the queue is full).
fn submit(
    shared: &Shared,
    work: impl FnOnce(&MethodContext) -> HttpReply + Send + 'static,
) -> impl std::future::Future<Output = Response<ReplyBody>> + Send + 'static {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let context = shared.context.clone();
    let job: Job = Box::new(move || {
        // The client may have gone: nobody to answer then.
        let _ = sender.send(work(&context));
    });
    let queued = shared.queue.try_submit(job);
    async move {
        if queued.is_err() {
            return reply(HttpReply::text(503, "Work queue depth exceeded"));
        }
        match receiver.await {
            Ok(answer) => reply(answer),
            // The job died without answering (a bug): Core's words for a
            // request left without a reply.
            Err(_) => reply(HttpReply::text(500, "Unhandled request")),
        }
    }
}

fn reply(answer: HttpReply) -> Response<ReplyBody> {
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(content_type) = answer.content_type {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    }
    response
}

fn empty(status: StatusCode) -> Response<ReplyBody> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn unauthorized() -> Response<ReplyBody> {
    let mut response = empty(StatusCode::UNAUTHORIZED);
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static(WWW_AUTHENTICATE_VALUE));
    response
}

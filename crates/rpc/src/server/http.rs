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
//! queues, then checks), the 250 ms penalty holds one of `-rpcthreads`
//! failed-authentication slots rather than a worker (so guessing is bounded
//! as in Core, at most `-rpcthreads` x 1000 / [`FAILED_AUTH_DELAY_MS`]
//! failed attempts per second, 64/s at the default 16 threads, while
//! honest calls keep every worker), and a single small request for a method
//! that reads only the published snapshot (`getblockcount`, ...) is
//! answered on the HTTP thread instead of queueing behind slow work
//! (`jsonrpc::is_fast_lane`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};

use super::auth::Authenticator;
use super::config::ServerConfig;
use super::jsonrpc::{self, HttpReply};
pub(crate) use super::reply_body::ReplyBody;
use super::reply_budget::{
    ReplyBudget, ReplyReservation, REPLY_BUDGET_WAIT_MS, REST_BLOCK_REPLY_BYTES_ESTIMATE,
    UNCOUNTED_REPLY_BYTES_MAX,
};
use super::rest;
use super::work_queue::{Job, WorkQueue};
use crate::methods::MethodContext;

/// Core's `WWW-Authenticate` value.
const WWW_AUTHENTICATE_VALUE: &str = "Basic realm=\"jsonrpc\"";
/// How long a wrong password waits for its 401 (Core's brute-force
/// deterrent), holding one of [`Shared::failed_auth_slots`].
pub(crate) const FAILED_AUTH_DELAY_MS: u64 = 250;

/// JSON-RPC request bodies held at once (read, queued or being run), in
/// KiB: each body reserves its size before it is read, so many clients
/// sending large bodies wait for each other instead of holding
/// `connections_max` x 32 MiB.
pub(crate) const BODY_KIB_IN_FLIGHT_MAX: u32 = 128 * 1024;
/// REST `getutxos` bodies held at once, in KiB: a budget of their own, so
/// that unauthenticated REST clients declaring 32 MiB bodies and trickling
/// them cannot take the budget JSON-RPC bodies wait for. A real `getutxos`
/// body is at most ~1 KiB (15 outpoints, hex).
pub(crate) const REST_BODY_KIB_IN_FLIGHT_MAX: u32 = 64 * 1024;
/// A body declaring at most this many bytes is read without a reservation:
/// such bodies (every ordinary call) never wait behind large ones, and are
/// bounded by `connections_max` x 64 KiB (64 MiB at the default).
pub(crate) const UNRESERVED_BODY_BYTES_MAX: usize = 64 * 1024;
/// The 503's words when a body budget stays full (Core has no such limit;
/// the words follow its "Work queue depth exceeded").
const BODY_BUDGET_EXCEEDED: &str = "Request bodies in flight exceeded";
/// The 503's words when a finished reply finds no room in the reply
/// budget within `REPLY_BUDGET_WAIT_MS`.
const REPLY_BUDGET_EXCEEDED: &str = "Replies in flight exceeded";
/// Longest wait for room in a body budget before the request is answered
/// 503, milliseconds: a client waits behind at most this much of others'
/// trickled bodies.
pub(crate) const BODY_BUDGET_WAIT_MS: u64 = 5_000;

/// What every request handler shares.
pub(crate) struct Shared {
    /// The JSON-RPC body budget, [`BODY_KIB_IN_FLIGHT_MAX`] permits of
    /// 1 KiB.
    pub body_budget: Arc<tokio::sync::Semaphore>,
    /// The REST body budget, [`REST_BODY_KIB_IN_FLIGHT_MAX`] permits of
    /// 1 KiB.
    pub rest_body_budget: Arc<tokio::sync::Semaphore>,
    /// One permit per `-rpcthreads` worker: a failed authentication holds
    /// one for [`FAILED_AUTH_DELAY_MS`], as Core's `HTTPReq_JSONRPC` holds
    /// its worker thread in `UninterruptibleSleep`, so however many
    /// connections guess, at most `-rpcthreads` x 1000 /
    /// [`FAILED_AUTH_DELAY_MS`] guesses are answered per second.
    pub failed_auth_slots: tokio::sync::Semaphore,
    /// What methods see.
    pub context: Arc<MethodContext>,
    /// Room for replies until the socket takes them.
    pub reply_budget: ReplyBudget,
    /// The accepted credentials.
    pub authenticator: Authenticator,
    /// The work queue.
    pub queue: WorkQueue,
    /// Limits, allowed clients, REST switch.
    pub config: ServerConfig,
}

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
        match read_body(shared, &shared.rest_body_budget, request).await {
            Ok((body, reservation)) => (body, reservation),
            Err(response) => return response,
        }
    } else {
        (Bytes::new(), None)
    };
    submit(shared, move |context, budget| {
        let answer = rest_reply(context, budget, route, &uri, &body);
        drop(reservation);
        answer
    })
    .await
}

/// Runs a REST route on a worker. A block's reply first takes
/// [`REST_BLOCK_REPLY_BYTES_ESTIMATE`] from the reply budget (503 when
/// there is no room within [`REPLY_BUDGET_WAIT_MS`]), resized to the reply
/// once built.
fn rest_reply(
    context: &MethodContext,
    budget: &ReplyBudget,
    route: rest::Route,
    uri: &str,
    body: &[u8],
) -> (HttpReply, Option<ReplyReservation>) {
    let wait = Duration::from_millis(REPLY_BUDGET_WAIT_MS);
    let refused = || (HttpReply::text(503, REPLY_BUDGET_EXCEEDED), None);
    if !matches!(route, rest::Route::Block | rest::Route::BlockTransactionIds) {
        return (rest::handle(context, route, uri, body), None);
    }
    let Some(mut counted) = budget.reserve(REST_BLOCK_REPLY_BYTES_ESTIMATE, wait) else {
        return refused();
    };
    let answer = rest::handle(context, route, uri, body);
    if !counted.resize_waiting(answer.body.len(), wait) {
        return refused();
    }
    (answer, Some(counted))
}

async fn json_rpc(shared: &Shared, request: Request<Incoming>) -> Response<ReplyBody> {
    if request.method() != Method::POST {
        return reply(HttpReply::text(405, "JSONRPC server handles only POST requests"));
    }
    let Some(credentials) = request.headers().get(AUTHORIZATION) else {
        return unauthorized();
    };
    if !shared.authenticator.check(credentials.as_bytes()) {
        // Waiting for a slot is bounded by the guessers ahead (each holds
        // one for the delay); a guesser that hangs up stops waiting.
        let slot = shared.failed_auth_slots.acquire().await;
        tokio::time::sleep(Duration::from_millis(FAILED_AUTH_DELAY_MS)).await;
        drop(slot);
        return unauthorized();
    }
    let (body, reservation) = match read_body(shared, &shared.body_budget, request).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if jsonrpc::is_fast_lane(&body) {
        // Snapshot reads only: microseconds, never blocking.
        let (answer, counted) = jsonrpc::handle(&shared.context, &body, &shared.reply_budget);
        return reply_counted(answer, counted);
    }
    submit(shared, move |context, budget| {
        let answer = jsonrpc::handle(context, &body, budget);
        drop(reservation);
        answer
    })
    .await
}

/// Reads the body within `request_body_bytes_max` and the server timeout,
/// first reserving its size (`Content-Length`, else the limit) from
/// `budget` unless it declares at most [`UNRESERVED_BODY_BYTES_MAX`]: 413
/// when too large (at once when `Content-Length` says so), 503 when the
/// budget has no room within [`BODY_BUDGET_WAIT_MS`], 408 when too slow,
/// 400 when the connection breaks. The reservation is held until the reply
/// is made.
async fn read_body(
    shared: &Shared,
    budget: &Arc<tokio::sync::Semaphore>,
    request: Request<Incoming>,
) -> Result<(Bytes, Option<tokio::sync::OwnedSemaphorePermit>), Response<ReplyBody>> {
    let limit = shared.config.request_body_bytes_max;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(empty(StatusCode::PAYLOAD_TOO_LARGE));
    }
    let reservation = match declared {
        // hyper reads exactly the declared length, no more.
        Some(length) if length <= UNRESERVED_BODY_BYTES_MAX as u64 => None,
        _ => Some(reserve_body(budget, declared.unwrap_or(limit as u64)).await?),
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

/// Reserves `bytes` (at most the smaller budget's size) from `budget`,
/// waiting at most [`BODY_BUDGET_WAIT_MS`]; 503 otherwise.
async fn reserve_body(
    budget: &Arc<tokio::sync::Semaphore>,
    bytes: u64,
) -> Result<tokio::sync::OwnedSemaphorePermit, Response<ReplyBody>> {
    let budget_kib_max = BODY_KIB_IN_FLIGHT_MAX.min(REST_BODY_KIB_IN_FLIGHT_MAX);
    let kib = u32::try_from(bytes / 1024 + 1).unwrap_or(u32::MAX).min(budget_kib_max);
    let wait = Duration::from_millis(BODY_BUDGET_WAIT_MS);
    match tokio::time::timeout(wait, budget.clone().acquire_many_owned(kib)).await {
        Ok(Ok(reservation)) => Ok(reservation),
        _ => Err(reply(HttpReply::text(503, BODY_BUDGET_EXCEEDED))),
    }
}

/// Queues `work` and waits for its reply (503 when the queue is full). A
/// reply over [`UNCOUNTED_REPLY_BYTES_MAX`] that `work` did not count is
/// counted here, on the worker, which waits at most
/// [`REPLY_BUDGET_WAIT_MS`] for room (503 then: the reply is dropped).
fn submit(
    shared: &Shared,
    work: impl FnOnce(&MethodContext, &ReplyBudget) -> (HttpReply, Option<ReplyReservation>)
        + Send
        + 'static,
) -> impl std::future::Future<Output = Response<ReplyBody>> + Send + 'static {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let context = shared.context.clone();
    let budget = shared.reply_budget.clone();
    let job: Job = Box::new(move || {
        let (answer, counted) = work(&context, &budget);
        let counted = match counted {
            Some(counted) => Some(counted),
            None if answer.body.len() <= UNCOUNTED_REPLY_BYTES_MAX => None,
            None => {
                let wait = Duration::from_millis(REPLY_BUDGET_WAIT_MS);
                match budget.reserve(answer.body.len(), wait) {
                    Some(counted) => Some(counted),
                    None => {
                        // The client may have gone: nobody to answer then.
                        let _ = sender.send((HttpReply::text(503, REPLY_BUDGET_EXCEEDED), None));
                        return;
                    }
                }
            }
        };
        let _ = sender.send((answer, counted));
    });
    let queued = shared.queue.try_submit(job);
    async move {
        if queued.is_err() {
            return reply(HttpReply::text(503, "Work queue depth exceeded"));
        }
        match receiver.await {
            Ok((answer, counted)) => reply_counted(answer, counted),
            // The job died without answering (a bug): Core's words for a
            // request left without a reply.
            Err(_) => reply(HttpReply::text(500, "Unhandled request")),
        }
    }
}

fn reply(answer: HttpReply) -> Response<ReplyBody> {
    reply_counted(answer, None)
}

/// The response for `answer`, whose body keeps `counted` until the socket
/// has taken it.
fn reply_counted(answer: HttpReply, counted: Option<ReplyReservation>) -> Response<ReplyBody> {
    let mut response = Response::new(ReplyBody::new(Bytes::from(answer.body), counted));
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
    let mut response = Response::new(ReplyBody::empty());
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

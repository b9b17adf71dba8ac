//! The HTTP JSON-RPC and REST server: what `bitcoin-cli`, dashboards and
//! explorers talk to, behaving as Bitcoin Core's `httpserver.cpp`,
//! `httprpc.cpp` and `rest.cpp` do (see `http`, `jsonrpc`, `rest`).
//!
//! # Shape
//! A tokio runtime of `HTTP_THREADS` threads (`ibex-rpc-io`, driven from
//! `ibex-rpc-http`) accepts connections and drives HTTP/1.1 (keep-alive,
//! Core's 8 KiB header limit, `-rpcservertimeout` for idle and slow
//! clients); `-rpcthreads` worker threads, ten nice levels lower, run the
//! methods from a queue of at most `-rpcworkqueue` waiting jobs
//! (`work_queue`), because the node may block them (engine queries, block
//! files, `waitfornewblock`). The same split as Core's libevent thread and
//! its `httpworker` threads, except that single requests for the
//! snapshot-only methods are answered on the HTTP threads (the fast lane,
//! `jsonrpc::is_fast_lane`).
//!
//! # Why hyper and not axum
//! Routing here is two rules (`/` exactly, or a `/rest/` prefix) and the
//! checks Core makes in a fixed order; axum would add a router, tower
//! layers, extractors and a boxed body per request, for nothing this server
//! uses. hyper 1.x's HTTP/1 connection driver is the part of that stack
//! that does the work, and is used directly: per request, one header map,
//! one `Bytes` body and one oneshot channel to the worker.
//!
//! # Napkin math
//! Small calls (`getblockcount`, `getbestblockhash`, `getblockhash`) answer
//! from the engine's snapshot: a read lock, no engine round trip. Their
//! cost is HTTP parsing (~1-2 us in hyper) and a ~100-byte reply, with no
//! queue hand-off (the fast lane; batches and long bodies pay two thread
//! wake-ups, ~5-10 us each): the
//! target is over 20,000 requests/s on keep-alive connections on one of the
//! two cores, and the worker hand-off, not JSON, is the bound. A client
//! opening a connection per call (`bitcoin-cli`) adds a TCP handshake on
//! loopback, ~20-30 us.
//!
//! REST block JSON (`/rest/block/<hash>.json`) is `getblock` at verbosity
//! 3: for mainnet block 413,567 (1 MB), 8.6 MB of JSON in 4.9 ms
//! (`benches/block_json.rs`), about 1.8 GB/s of JSON per worker, or ~200
//! such blocks/s before the block and undo reads (~1 ms each from the page
//! cache); loopback takes ~5 GB/s, so with two cores the writer and the
//! reads, not the socket, are the bound: ~300 blocks/s, ~2.5 GB/s of JSON.
//! Core's cost for the same JSON on this machine kind is 49-64 ms per block
//! (`BlockToJsonVerbosity3`, `../shared/anchors.md`), 16-20 blocks/s per
//! thread (~140-175 MB/s of JSON), a tenth of Ibex's writer alone.
//!
//! Measured (2-core VM, client on the same machine, keep-alive, against
//! the in-memory test backend, and Core v31.99's `bitcoind -rest` on the
//! same chain in the same minutes): `getblockcount` 12,500-22,700
//! requests/s with one client and ~28,000 with two (Core: 6,300 and
//! 23,400); REST block JSON for the chain's largest block (54 KB, 430 KB of
//! JSON) 1,320 requests/s, 570 MB/s (Core: 181 requests/s, 78 MB/s, 7.3x
//! slower); `notxdetails` 4,800 requests/s (Core: 38, every small reply of
//! its REST stalling ~26 ms). The backend's block and undo reads, here
//! from memory, are what a node adds.
//!
//! # Memory
//! A request body is at most 32 MiB (Core's `MAX_SIZE`; a larger
//! `Content-Length` is refused before any of it is read), and bodies held
//! at once at most 128 MiB for JSON-RPC (`http::BODY_KIB_IN_FLIGHT_MAX`)
//! and, separately, 64 MiB for REST (`http::REST_BODY_KIB_IN_FLIGHT_MAX`),
//! so unauthenticated REST clients cannot make JSON-RPC wait; a request
//! waits at most 5 s (`http::BODY_BUDGET_WAIT_MS`) for room, then is
//! answered 503. A body is not
//! parsed into one tree (which costs 20-60 times its text: 1.7 GB for 30 MB
//! of numbers): `request` checks it whole without keeping anything, walks a
//! batch one element at a time and bounds an element's parsed fields to
//! `request::REQUEST_JSON_VALUES_MAX` values. Each worker holds one reply; a reply
//! is bounded by its method (a 4 MB block at verbosity 3 is ~40 MB of JSON)
//! and a batch's reply by `jsonrpc::BATCH_REPLY_BYTES_MAX` (128 MiB),
//! checked before each element's reply is written. Replies over 64 KiB,
//! built or growing, share `reply_budget::REPLY_BYTES_IN_FLIGHT_MAX`
//! (128 MiB) until the socket has taken them (`reply_body`), and a reply
//! the client does not read for `-rpcservertimeout` ends its connection
//! (`write_timeout`), so clients that never read hold at most that much,
//! whatever their number. Connections are
//! bounded by [`ServerConfig::connections_max`], each reading through a
//! buffer of at most 64 KiB.

pub mod auth;
pub mod config;
mod http;
mod jsonrpc;
mod reply_body;
mod reply_budget;
mod request;
mod rest;
mod rest_utxos;
mod write_timeout;
/// Threads of the HTTP runtime (connections, parsing, replies to sockets).
const HTTP_THREADS: usize = 2;
/// Task polls between two polls of the HTTP runtime's I/O driver (tokio's
/// default is 61).
const IO_EVENT_INTERVAL_POLLS: u32 = 4;
/// A connection's kernel send buffer, as asked of `SO_SNDBUF` (Linux
/// doubles it). A reply task's poll copies at most this much to its socket
/// before yielding, so a 12 MB reply is written in ~100 us slices instead
/// of multi-millisecond copies that a short call's task would wait behind;
/// loopback still moves gigabytes per second with it.
const SEND_BUFFER_BYTES: usize = 128 * 1024;

/// Caps the socket's send buffer ([`SEND_BUFFER_BYTES`]); a failure leaves
/// the kernel's default, which is only slower for short calls under load.
fn limit_send_buffer(stream: &TcpStream) {
    let _ = socket2::SockRef::from(stream).set_send_buffer_size(SEND_BUFFER_BYTES);
}

mod work_queue;
mod worker_priority;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};

use crate::backend::NodeBackend;
use crate::methods::MethodContext;
use auth::{AuthError, Authenticator, CookieFile};
use config::{ServerConfig, REQUEST_HEADER_BYTES_MAX};
use http::Shared;
pub use jsonrpc::HttpReply;
use reply_budget::{ReplyBudget, REPLY_BYTES_IN_FLIGHT_MAX};
use work_queue::WorkQueue;
use write_timeout::WriteTimeoutStream;

/// How long [`RpcServer::shutdown`] waits for open requests to finish
/// before closing their connections anyway.
const SHUTDOWN_REQUESTS_WAIT_SECONDS: u64 = 30;
/// A connection's read buffer at most (headers are at most 8 KiB; bodies
/// stream through it).
const CONNECTION_BUFFER_BYTES_MAX: usize = 64 * 1024;
/// Pause after a failed `accept` (out of file descriptors) before trying
/// again.
const ACCEPT_RETRY_MS: u64 = 100;

/// An address that could not be bound.
#[derive(Debug)]
pub struct BindFailure {
    /// The address.
    pub address: SocketAddr,
    /// Why.
    pub error: std::io::Error,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Authentication could not be set up (bad `-rpcauth`, cookie file).
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// No address could be bound.
    #[error("unable to bind any endpoint for the RPC server ({} tried)", failures.len())]
    NoEndpoint {
        /// Each address and why it failed.
        failures: Vec<BindFailure>,
    },
    /// A thread or the runtime could not be started.
    #[error("could not start the RPC server's threads")]
    Threads(#[source] std::io::Error),
}

/// A running server. Stops on [`RpcServer::shutdown`] or when dropped.
pub struct RpcServer {
    local_addresses: Vec<SocketAddr>,
    bind_failures: Vec<BindFailure>,
    shared: Arc<Shared>,
    stop: Option<watch::Sender<bool>>,
    http_thread: Option<JoinHandle<()>>,
    cookie: Option<CookieFile>,
}

impl std::fmt::Debug for RpcServer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RpcServer")
            .field("local_addresses", &self.local_addresses)
            .finish_non_exhaustive()
    }
}

impl RpcServer {
    /// Sets up authentication (writing the cookie), binds every address it
    /// can (failing only when none binds, as Core), starts the workers and
    /// the HTTP thread. The server starts in warmup: calls get -28 until
    /// [`RpcServer::finish_warmup`].
    pub fn start(
        config: ServerConfig,
        backend: Arc<dyn NodeBackend>,
    ) -> Result<RpcServer, ServerError> {
        let (authenticator, cookie) = Authenticator::new(&config)?;
        let remove_cookie =
            |cookie: &Option<CookieFile>| cookie.iter().for_each(CookieFile::remove);
        let mut listeners = Vec::new();
        let mut bind_failures = Vec::new();
        for address in &config.bind_addresses {
            let bound = std::net::TcpListener::bind(address).and_then(|listener| {
                listener.set_nonblocking(true)?;
                Ok(listener)
            });
            match bound {
                Ok(listener) => listeners.push(listener),
                Err(error) => bind_failures.push(BindFailure { address: *address, error }),
            }
        }
        if listeners.is_empty() {
            remove_cookie(&cookie);
            return Err(ServerError::NoEndpoint { failures: bind_failures });
        }
        let local_addresses =
            listeners.iter().filter_map(|listener| listener.local_addr().ok()).collect();
        let started = Self::start_threads(config, backend, authenticator, listeners);
        let (shared, stop, http_thread) = match started {
            Ok(started) => started,
            Err(error) => {
                remove_cookie(&cookie);
                return Err(ServerError::Threads(error));
            }
        };
        Ok(RpcServer {
            local_addresses,
            bind_failures,
            shared,
            stop: Some(stop),
            http_thread: Some(http_thread),
            cookie,
        })
    }

    fn start_threads(
        config: ServerConfig,
        backend: Arc<dyn NodeBackend>,
        authenticator: Authenticator,
        listeners: Vec<std::net::TcpListener>,
    ) -> std::io::Result<(Arc<Shared>, watch::Sender<bool>, JoinHandle<()>)> {
        let queue = WorkQueue::start(config.threads, config.work_queue_depth)?;
        let context = Arc::new(MethodContext::new(backend, config.network, config.started_at));
        let body_budget = Arc::new(Semaphore::new(http::BODY_KIB_IN_FLIGHT_MAX as usize));
        let rest_body_budget = Arc::new(Semaphore::new(http::REST_BODY_KIB_IN_FLIGHT_MAX as usize));
        let failed_auth_slots = Semaphore::new(config.threads.max(1));
        let shared = Arc::new(Shared {
            body_budget,
            rest_body_budget,
            failed_auth_slots,
            reply_budget: ReplyBudget::new(REPLY_BYTES_IN_FLIGHT_MAX),
            context,
            authenticator,
            queue,
            config,
        });
        // Two threads: one can answer a short request while the other
        // copies a large reply to its socket (a 12 MB block of JSON takes
        // milliseconds); with one, `getblockcount` waited behind them.
        // The I/O driver is polled every few task polls, not tokio's 61:
        // while large replies keep both threads busy, a `getblockcount`
        // arriving on an idle connection is seen sooner, which keeps its
        // latency low under load.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(HTTP_THREADS)
            .event_interval(IO_EVENT_INTERVAL_POLLS)
            .on_thread_start(worker_priority::ask_short_time_slice)
            .thread_name("ibex-rpc-io")
            .enable_all()
            .build()?;
        let (stop, stopped) = watch::channel(false);
        let for_thread = shared.clone();
        let http_thread = std::thread::Builder::new()
            .name("ibex-rpc-http".to_owned())
            .spawn(move || runtime.block_on(run(for_thread, listeners, stopped)))?;
        Ok((shared, stop, http_thread))
    }

    /// The addresses listened on (with the ports chosen for port 0).
    pub fn local_addresses(&self) -> &[SocketAddr] {
        &self.local_addresses
    }

    /// The addresses that could not be bound (Core logs and carries on).
    pub fn bind_failures(&self) -> &[BindFailure] {
        &self.bind_failures
    }

    /// The status -28 errors carry while warming up (Core's
    /// `SetRPCWarmupStatus`: "Loading block index…", "Verifying blocks…").
    pub fn set_warmup_status(&self, status: &str) {
        self.shared.context.set_warmup_status(status);
    }

    /// Ends warmup: calls run from now on.
    pub fn finish_warmup(&self) {
        self.shared.context.finish_warmup();
    }

    /// Stops: waits end, no new connections, open requests finish (up to
    /// 30 s), queued jobs run, the workers are
    /// joined and the cookie file is deleted.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.shared.context.stopping.store(true, Ordering::Release);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.http_thread.take() {
            let _ = thread.join();
        }
        self.shared.queue.stop();
        if let Some(cookie) = self.cookie.take() {
            cookie.remove();
        }
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// JSON-RPC and REST without HTTP: the reply the server gives a POST body
/// or a REST path, for fuzzing the parsers and for tests that need no
/// sockets.
pub struct RequestHandler {
    context: MethodContext,
    reply_budget: ReplyBudget,
}

impl std::fmt::Debug for RequestHandler {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("RequestHandler").finish_non_exhaustive()
    }
}

impl RequestHandler {
    /// A handler over `backend` for `network`, out of warmup. Waits end at
    /// once (`waitfornewblock`, `stop`'s delay), as on a server shutting
    /// down, so that no body can hold the caller.
    pub fn without_waits(backend: Arc<dyn NodeBackend>, network: ibex_primitives::Network) -> Self {
        let context = MethodContext::new(backend, network, std::time::Instant::now());
        context.finish_warmup();
        context.stopping.store(true, Ordering::Release);
        RequestHandler { context, reply_budget: ReplyBudget::new(REPLY_BYTES_IN_FLIGHT_MAX) }
    }

    /// The reply to a JSON-RPC POST body from an authenticated client.
    pub fn answer(&self, body: &[u8]) -> HttpReply {
        jsonrpc::handle(&self.context, body, &self.reply_budget).0
    }

    /// The reply to a REST request for `uri` (path and query, as sent) with
    /// `body` (read for `getutxos` only), as the server gives it with
    /// `-rest` on; `None` when no REST route matches, which the server
    /// answers with an empty 404.
    pub fn answer_rest(&self, uri: &str, body: &[u8]) -> Option<HttpReply> {
        let route = rest::route(uri)?;
        let body = if route == rest::Route::GetUtxos { body } else { &[] };
        Some(rest::handle(&self.context, route, uri, body))
    }
}

/// The HTTP thread: accepts on every listener, serves each connection as a
/// task, and on stop closes idle connections and waits for busy ones.
async fn run(
    shared: Arc<Shared>,
    listeners: Vec<std::net::TcpListener>,
    mut stop: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(shared.config.connections_max.max(1)));
    let (accepted_sender, mut accepted) = mpsc::channel(1);
    let mut accept_tasks = Vec::new();
    for listener in listeners {
        if let Ok(listener) = TcpListener::from_std(listener) {
            accept_tasks.push(tokio::spawn(accept(
                listener,
                permits.clone(),
                accepted_sender.clone(),
            )));
        }
    }
    drop(accepted_sender);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(shared.config.server_timeout)
        .max_header_size(REQUEST_HEADER_BYTES_MAX)
        .max_buf_size(CONNECTION_BUFFER_BYTES_MAX)
        .keep_alive(true);
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            next = accepted.recv() => {
                let Some((stream, peer, permit)) = next else { break };
                let for_connection = shared.clone();
                let service = service_fn(move |request| http::serve(for_connection.clone(), peer, request));
                let stream = WriteTimeoutStream::new(stream, shared.config.server_timeout);
                let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
                tokio::spawn(async move {
                    // A client that breaks its connection is no server error.
                    let _ = connection.await;
                    drop(permit);
                });
            }
        }
    }
    for task in accept_tasks {
        task.abort();
    }
    let wait = Duration::from_secs(SHUTDOWN_REQUESTS_WAIT_SECONDS);
    let _ = tokio::time::timeout(wait, graceful.shutdown()).await;
}

/// Accepts connections while a connection permit is free.
async fn accept(
    listener: TcpListener,
    permits: Arc<Semaphore>,
    accepted: mpsc::Sender<(TcpStream, SocketAddr, OwnedSemaphorePermit)>,
) {
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else { return };
        match listener.accept().await {
            Ok((stream, peer)) => {
                // As Core sets on its listening sockets: replies go out at once.
                let _ = stream.set_nodelay(true);
                limit_send_buffer(&stream);
                if accepted.send((stream, peer, permit)).await.is_err() {
                    return;
                }
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(ACCEPT_RETRY_MS)).await,
        }
    }
}

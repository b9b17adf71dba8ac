//! The metrics endpoint: `GET /metrics` answers the page
//! ([`NodeMetrics::render`]) as `text/plain; version=0.0.4`; any other
//! path is 404 and any other method on `/metrics` 405.
//!
//! # Shape and bounds
//! One thread (`ibex-metrics`) runs a single-threaded tokio runtime and
//! hyper's HTTP/1.1 connection driver, as the RPC server does. It binds
//! before the chainstate opens (a port in use stops the node at once) and
//! serves from then on, through the import and the P2P sync.
//! - At most [`METRICS_CONNECTIONS_MAX`] connections at once. A connection
//!   arriving when all are taken closes the one open longest, so no client
//!   can hold the slots (idle, or sending its headers a byte at a time)
//!   and keep a scrape waiting: a scrape is accepted at once and answered
//!   as soon as its headers are in, before the next connection is accepted
//!   (the accept loop yields to it), and only [`METRICS_CONNECTIONS_MAX`]
//!   newer connections can close it. Connections wait in the listener's
//!   backlog only while the thread is busy answering.
//! - No request body is read. Headers are at most hyper's 8 KiB minimum
//!   buffer ([`METRICS_CONNECTION_BUFFER_BYTES_MAX`]), and must arrive
//!   within [`METRICS_HEADER_READ_TIMEOUT_MS`].
//! - A connection lives at most [`METRICS_CONNECTION_LIFETIME_MS`], so
//!   idle keep-alive clients cannot hold the slots (Prometheus reconnects).
//! - The reply is one page, ~4.5 KB.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::exposition::CONTENT_TYPE as EXPOSITION_CONTENT_TYPE;
use super::NodeMetrics;

/// Connections served at once; a new one past this closes the oldest.
pub const METRICS_CONNECTIONS_MAX: usize = 8;
/// A connection's read buffer at most (hyper's smallest; headers must fit).
pub const METRICS_CONNECTION_BUFFER_BYTES_MAX: usize = 8 * 1024;
/// Time for a request's headers to arrive.
pub const METRICS_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// A connection's whole life at most.
pub const METRICS_CONNECTION_LIFETIME_MS: u64 = 60_000;
/// Pause after a failed `accept` (out of file descriptors) before trying again.
const ACCEPT_RETRY_MS: u64 = 100;

/// Why the endpoint did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsServerError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen for -metrics on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The thread or its runtime could not be started.
    #[error("cannot start the metrics thread: {0}")]
    Threads(std::io::Error),
}

/// The running endpoint; stops when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    local_address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `address` and serves `metrics` there on a thread of its own.
    pub fn start(
        address: SocketAddr,
        metrics: Arc<NodeMetrics>,
    ) -> Result<MetricsServer, MetricsServerError> {
        let bind_error = |source| MetricsServerError::Bind { address, source };
        let listener = std::net::TcpListener::bind(address).map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        let local_address = listener.local_addr().map_err(bind_error)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(MetricsServerError::Threads)?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("ibex-metrics".to_owned())
            .spawn(move || runtime.block_on(serve(listener, metrics, stopped)))
            .map_err(MetricsServerError::Threads)?;
        Ok(MetricsServer { local_address, stop: Some(stop), thread: Some(thread) })
    }

    /// The address listened on (with the port the system chose for port 0).
    pub fn local_address(&self) -> SocketAddr {
        self.local_address
    }

    /// Stops serving and waits for the thread (open connections are closed).
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Accepts connections until `stopped`, closing the oldest when all
/// [`METRICS_CONNECTIONS_MAX`] slots are taken; the connections still open
/// end with the runtime.
async fn serve(
    listener: std::net::TcpListener,
    metrics: Arc<NodeMetrics>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else { return };
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(METRICS_HEADER_READ_TIMEOUT_MS))
        .max_buf_size(METRICS_CONNECTION_BUFFER_BYTES_MAX)
        .keep_alive(true);
    // Each open connection's closer, oldest first; dropping one closes its
    // connection, and one whose connection has ended is closed already.
    let mut open: VecDeque<oneshot::Sender<()>> = VecDeque::new();
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(ACCEPT_RETRY_MS)).await;
                    continue;
                }
            },
        };
        open.retain(|closer| !closer.is_closed());
        if open.len() >= METRICS_CONNECTIONS_MAX {
            open.pop_front();
        }
        let (closer, closed) = oneshot::channel::<()>();
        open.push_back(closer);
        let metrics = metrics.clone();
        let service = service_fn(move |request: Request<Incoming>| {
            let reply = respond(&metrics, &request);
            async move { Ok::<_, Infallible>(reply) }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let lifetime = Duration::from_millis(METRICS_CONNECTION_LIFETIME_MS);
            // A client that breaks, outstays or is closed for a newer
            // connection is no error.
            tokio::select! {
                _ = tokio::time::timeout(lifetime, connection) => {}
                _ = closed => {}
            }
        });
        // The new connection reads its request (and is answered, if its
        // headers are in) before another connection can be accepted.
        tokio::task::yield_now().await;
    }
}

/// The reply to `request`, its body unread.
fn respond(metrics: &NodeMetrics, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    if request.uri().path() != "/metrics" {
        return reply(StatusCode::NOT_FOUND, "text/plain; charset=utf-8", "not found\n".into());
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response =
            reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", "only GET\n".into());
        response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    reply(StatusCode::OK, EXPOSITION_CONTENT_TYPE, metrics.render())
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

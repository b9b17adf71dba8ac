//! The serving node of the p2p mode: started once on its prepared data
//! directory, listening on a loopback port, stopped (`SIGTERM`, then
//! `SIGKILL` after [`SERVER_STOP_TIMEOUT_MS`]) when the benchmark ends,
//! however it ends.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::measure::send_signal;
use super::node_kind::BenchNode;
use super::{io_error, BenchError};

/// The longest wait for the serving node to accept connections, in
/// milliseconds (it loads its block index and coins database first).
pub const SERVER_READY_TIMEOUT_MS: u64 = 600_000;
/// The longest wait for the serving node to stop after `SIGTERM`.
pub const SERVER_STOP_TIMEOUT_MS: u64 = 120_000;
/// How often readiness and exit are polled.
const POLL_INTERVAL_MS: u64 = 50;
/// The limit of one connection attempt.
const CONNECT_TIMEOUT_MS: u64 = 1_000;

/// A loopback TCP port that was free a moment ago.
pub fn free_loopback_port() -> Result<u16, BenchError> {
    let path = PathBuf::from("127.0.0.1:0");
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io_error(&path))?;
    Ok(listener.local_addr().map_err(io_error(&path))?.port())
}

/// The running serving node.
#[derive(Debug)]
pub struct ServingNode {
    name: String,
    child: Child,
    port: u16,
}

impl ServingNode {
    /// Starts `node` with `options` (see `node_kind::serving_options`),
    /// its error output into `stderr_path`, and waits until `port` accepts
    /// connections.
    pub fn start(
        node: &BenchNode,
        options: &[String],
        nice: Option<i32>,
        port: u16,
        stderr_path: &Path,
    ) -> Result<ServingNode, BenchError> {
        let stderr = std::fs::File::create(stderr_path).map_err(io_error(stderr_path))?;
        let child = super::measure::niced_command(&node.path, nice)
            .args(options)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|source| BenchError::Spawn { path: node.path.clone(), source })?;
        let mut server = ServingNode { name: node.name.clone(), child, port };
        server.wait_ready()?;
        Ok(server)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn error(&self, reason: String) -> BenchError {
        BenchError::Server { name: self.name.clone(), reason }
    }

    fn wait_ready(&mut self) -> Result<(), BenchError> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.error(format!("exited ({status}) before listening")));
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(CONNECT_TIMEOUT_MS))
                .is_ok()
            {
                return Ok(());
            }
            if started.elapsed() > Duration::from_millis(SERVER_READY_TIMEOUT_MS) {
                let seconds = SERVER_READY_TIMEOUT_MS / 1_000;
                return Err(self.error(format!("not listening on {address} after {seconds} s")));
            }
            std::thread::sleep(Duration::from_millis(POLL_INTERVAL_MS));
        }
    }

    /// Whether it is still running (it should be, between runs).
    pub fn check_running(&mut self) -> Result<(), BenchError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.error(format!("exited ({status}) during the benchmark"))),
            Err(error) => Err(self.error(error.to_string())),
        }
    }

    /// Stops it: `SIGTERM`, then `SIGKILL` if it has not exited in time.
    pub fn stop(&mut self) -> Result<(), BenchError> {
        let _ = send_signal(&mut self.child, libc::SIGTERM);
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(SERVER_STOP_TIMEOUT_MS) {
            match self.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => std::thread::sleep(Duration::from_millis(POLL_INTERVAL_MS)),
                Err(error) => return Err(self.error(error.to_string())),
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err(self
            .error(format!("did not stop within {} s of SIGTERM", SERVER_STOP_TIMEOUT_MS / 1_000)))
    }
}

impl Drop for ServingNode {
    /// A benchmark ended by an error leaves no node behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.stop();
        }
    }
}

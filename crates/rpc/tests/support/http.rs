//! A small HTTP/1.1 client over `std::net::TcpStream` for the server tests
//! (no client crate: requests are written byte for byte, so the tests can
//! also send what a well-behaved client would not), and a server started
//! on a free loopback port over the in-memory backend.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use ibex_primitives::Network;
use ibex_rpc::{RpcServer, ServerConfig};

use super::backend::ChainBackend;
use super::json::{parse, Json};

/// The test server's credentials.
pub const USER: &str = "user";
/// The test server's password.
pub const PASSWORD: &str = "pass";

/// A reply.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value (names compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    /// The body parsed.
    pub fn json(&self) -> Json {
        parse(&self.text())
    }
}

/// An open connection (keep-alive).
pub struct Connection {
    reader: BufReader<TcpStream>,
}

impl Connection {
    pub fn open(address: SocketAddr) -> Connection {
        let stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream.set_nodelay(true).unwrap();
        Connection { reader: BufReader::new(stream) }
    }

    /// Sends a request and reads its reply.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        // One write: a second small one would wait for the server's
        // delayed acknowledgement (Nagle), 40 ms a request.
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        self.reader.get_mut().write_all(&bytes).unwrap();
        self.read_reply(method == "HEAD")
    }

    fn read_reply(&mut self, head_only: bool) -> Reply {
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).unwrap();
        let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        let mut reply = Reply { status, headers, body: Vec::new() };
        if head_only || status == 204 {
            return reply;
        }
        match reply.header("content-length").map(|length| length.parse::<usize>().unwrap()) {
            Some(length) => {
                reply.body = vec![0; length];
                self.reader.read_exact(&mut reply.body).unwrap();
            }
            None => {
                self.reader.read_to_end(&mut reply.body).unwrap();
            }
        }
        reply
    }
}

/// One request on a new connection.
pub fn request(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    Connection::open(address).send(method, path, headers, body)
}

/// `Basic` credentials for `user:password`.
pub fn basic(user_password: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(user_password))
}

/// A JSON-RPC POST to `/` with the test credentials.
pub fn post(address: SocketAddr, body: &str) -> Reply {
    let credentials = basic(&format!("{USER}:{PASSWORD}"));
    request(
        address,
        "POST",
        "/",
        &[("Authorization", &credentials), ("Content-Type", "application/json")],
        body.as_bytes(),
    )
}

/// Calls `method` with `params` (JSON text) as JSON-RPC 1.0 and returns
/// the reply's `result`, asserting there was no error.
pub fn call(address: SocketAddr, method: &str, params: &str) -> Json {
    let reply = post(address, &format!(r#"{{"method":"{method}","params":{params},"id":1}}"#));
    let json = reply.json();
    assert_eq!(json.get("error"), Some(&Json::Null), "{method} {params}: {}", reply.text());
    assert_eq!(reply.status, 200);
    json.get("result").unwrap().clone()
}

/// A configuration for a test server: loopback, a free port, the test
/// credentials, REST on, two workers.
pub fn test_config() -> ServerConfig {
    let mut config = ServerConfig::new(Network::Regtest);
    config.bind_addresses = vec!["127.0.0.1:0".parse().unwrap()];
    config.rpc_user = USER.to_owned();
    config.rpc_password = PASSWORD.to_owned();
    config.threads = 2;
    config.work_queue_depth = 16;
    config.rest = true;
    config
}

/// A running test server, out of warmup.
pub struct TestServer {
    pub server: RpcServer,
    pub address: SocketAddr,
    pub backend: Arc<ChainBackend>,
}

/// Starts a server with `config` over `backend`, out of warmup.
pub fn start_with(config: ServerConfig, backend: ChainBackend) -> TestServer {
    let backend = Arc::new(backend);
    let server = RpcServer::start(config, backend.clone()).unwrap();
    server.finish_warmup();
    let address = server.local_addresses()[0];
    TestServer { server, address, backend }
}

/// Starts the default test server.
pub fn start() -> TestServer {
    start_with(test_config(), ChainBackend::new())
}

//! Helpers shared by the integration tests: running the built `parley` binary, a
//! server on a free loopback port, and a minimal HTTP/1.1 client over `TcpStream`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_parley");

/// A forum file in a fresh temporary directory.
pub struct TempForum {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
}

impl TempForum {
    pub fn new() -> TempForum {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("forum.redb");
        TempForum { dir, db }
    }

    /// Runs `parley --db <db> ARGS` with `PARLEY_*` variables cleared.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run parley")
    }

    /// Runs `parley --db <db> ARGS` with `token` in `PARLEY_TOKEN` (a token on the
    /// command line would be visible to other users, and `--token` says so).
    pub fn run_as(&self, token: &str, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        cmd.env("PARLEY_TOKEN", token);
        cmd.output().expect("run parley")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("--db").arg(&self.db).args(args);
        for var in ["PARLEY_DB", "PARLEY_TOKEN", "PARLEY_SETTINGS"] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// `parley token create HANDLE EXTRA…`; returns the secret.
    pub fn token(&self, handle: &str, extra: &[&str]) -> String {
        let mut args = vec!["token", "create", handle];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "token create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let secret = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            secret.lines().count(),
            1,
            "the secret alone on stdout: {secret:?}"
        );
        secret.trim().to_string()
    }
}

/// A running `parley serve --http 127.0.0.1:0`.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
}

impl Server {
    pub fn start(db: &Path, settings: Option<&str>, extra: &[&str]) -> Server {
        let mut cmd = Command::new(BIN);
        cmd.arg("--db").arg(db);
        if let Some(settings) = settings {
            cmd.arg("--settings").arg(settings);
        }
        cmd.args(["serve", "--http", "127.0.0.1:0"]).args(extra);
        for var in ["PARLEY_DB", "PARLEY_TOKEN", "PARLEY_SETTINGS", "RUST_LOG"] {
            cmd.env_remove(var);
        }
        Server::spawn(cmd)
    }

    /// Starts `cmd`, a `parley … serve --http ADDR` command, and waits for the
    /// address it reports.
    pub fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn server");
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).unwrap_or_else(|_| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server did not report its address");
            });
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest.split_whitespace().next().unwrap().parse().unwrap();
                return Server {
                    child,
                    addr,
                    stderr: rx,
                };
            }
        }
    }

    /// Sends SIGTERM and waits (bounded) for a clean exit; returns the stderr lines.
    pub fn terminate(self) -> Vec<String> {
        self.stop("TERM")
    }

    /// Sends SIGINT (Ctrl-C) and waits (bounded) for a clean exit.
    pub fn interrupt(self) -> Vec<String> {
        self.stop("INT")
    }

    fn stop(mut self, signal: &str) -> Vec<String> {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        let exit = loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                break exit;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not stop after SIG{signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(exit.success(), "the server exited with {exit}");
        // The reader thread ends at the pipe's end, which the exit has closed.
        let mut lines = Vec::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            lines.push(line);
        }
        lines
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> Response {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        http(self.addr, "GET", path, &headers, None)
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &str) -> Response {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        headers.push(("Content-Type", "application/json"));
        http(self.addr, "POST", path, &headers, Some(body.as_bytes()))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The refusal reason of a REST error body.
    pub fn reason(&self) -> String {
        self.json()["error"]["reason"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Response {
    try_http(addr, method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

pub fn try_http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> std::io::Result<Response> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.set_write_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    if let Some(body) = body {
        // The server may answer (413) and close before reading a large body.
        let _ = stream.write_all(body);
    }
    let mut raw = Vec::new();
    match stream.read_to_end(&mut raw) {
        Ok(_) => {}
        Err(e) if !raw.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => return Err(e),
    }
    parse_response(&raw).ok_or_else(|| {
        std::io::Error::other(format!(
            "malformed response: {:?}",
            String::from_utf8_lossy(&raw)
        ))
    })
}

fn parse_response(raw: &[u8]) -> Option<Response> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body)?;
    }
    Some(Response {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(
            std::str::from_utf8(&data[..line_end])
                .ok()?
                .split(';')
                .next()?
                .trim(),
            16,
        )
        .ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

/// A JSON-RPC request body.
pub fn rpc(id: u64, method: &str, params: Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A raw connection to `addr`, with generous timeouts so that a hang fails the test
/// rather than the run.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream
}

/// Sends `raw` (a whole request, written by the test) on a fresh connection and reads
/// the response until the server closes the connection.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Response> {
    let mut stream = connect(addr);
    stream.write_all(raw)?;
    let mut data = Vec::new();
    match stream.read_to_end(&mut data) {
        Ok(_) => {}
        Err(e) if !data.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => return Err(e),
    }
    parse_response(&data).ok_or_else(|| {
        std::io::Error::other(format!(
            "malformed response: {:?}",
            String::from_utf8_lossy(&data)
        ))
    })
}

/// A `GET` with the given `Host` header (none when `host` is `None`), on a fresh
/// connection that the server closes after answering.
pub fn get_with_host(addr: SocketAddr, path: &str, host: Option<&str>) -> Response {
    let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
    let raw = format!("GET {path} HTTP/1.1\r\n{host}Connection: close\r\n\r\n");
    exchange(addr, raw.as_bytes()).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// A `POST` with the given `Host` header, token and body.
pub fn post_with_host(
    addr: SocketAddr,
    path: &str,
    host: &str,
    token: Option<&str>,
    body: &[u8],
) -> Response {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let mut raw = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    exchange(addr, &raw).unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

/// Sends one request on a kept-alive connection and reads its response, which must
/// carry a `Content-Length` (every answer of this server does).
pub fn request_on(stream: &mut TcpStream, raw: &[u8]) -> std::io::Result<Response> {
    stream.write_all(raw)?;
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(split) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&data[..split])
                .map_err(|_| std::io::Error::other("a response head that is not UTF-8"))?;
            let length: usize = head
                .split("\r\n")
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse().ok())
                .ok_or_else(|| std::io::Error::other(format!("no Content-Length: {head}")))?;
            if data.len() >= split + 4 + length {
                data.truncate(split + 4 + length);
                return parse_response(&data)
                    .ok_or_else(|| std::io::Error::other("malformed response"));
            }
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "closed mid-response after {:?}",
                    String::from_utf8_lossy(&data)
                ),
            ));
        }
        data.extend_from_slice(&chunk[..n]);
    }
}

/// How a connection ended, as the client saw it.
#[derive(Debug)]
pub enum Ending {
    /// The server closed it; these are the bytes it sent before (possibly none).
    Closed(Vec<u8>),
    /// Still open when the bound ran out.
    Open,
}

/// Reads from `stream` until the server closes it (end of stream or a reset), at
/// most for `bound`; a bound is a "does not hang" limit, never a measure.
pub fn wait_for_close(stream: &mut TcpStream, bound: Duration) -> Ending {
    let deadline = Instant::now() + bound;
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    while Instant::now() < deadline {
        match stream.read(&mut chunk) {
            Ok(0) => return Ending::Closed(data),
            Ok(n) => data.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::BrokenPipe
                ) =>
            {
                return Ending::Closed(data)
            }
            Err(e) => panic!("reading a connection: {e}"),
        }
    }
    Ending::Open
}

/// Parses a response the test read itself.
pub fn parse(raw: &[u8]) -> Option<Response> {
    parse_response(raw)
}

//! A hand-written HTTP/1.1 client for the server's tests, shared by the in-process
//! tests (`server/tests/support`) and the end-to-end tests of the binary
//! (`bindings/cli/tests/common`): exchanges byte for byte as a client sends them,
//! malformed ones included, which no client library would send.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

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

/// Sends the head of a `POST path` declaring a 1000-byte body, and one byte of it.
pub fn stall(addr: SocketAddr, path: &str, host: &str, token: Option<&str>) -> TcpStream {
    let mut stream = connect(addr);
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream
}

/// Reads until the server closes `stream`; the response it sent, if any.
pub fn closed(stream: &mut TcpStream, bound: Duration) -> Option<Response> {
    match wait_for_close(stream, bound) {
        Ending::Open => panic!("the connection is still open after {bound:?}"),
        Ending::Closed(data) if data.is_empty() => None,
        Ending::Closed(data) => Some(parse(&data).expect("an HTTP response")),
    }
}

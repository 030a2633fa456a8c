//! Figure 9: REST `POST /v1/messages` through the `parley` server, sixteen
//! keep-alive loopback clients, against sixteen in-process writer threads.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::measure::{median, per_second, rounds};
use crate::report::{Row, Target};
use crate::workload::{concurrently, open, post_rate, settings, Cast};
use crate::{Res, Sizes};

pub const CLIENTS: usize = 16;

/// A keep-alive HTTP/1.1 connection: just what the benchmark sends and reads.
pub struct Conn {
    addr: String,
    reader: Option<BufReader<TcpStream>>,
}

impl Conn {
    pub fn new(addr: &str) -> Conn {
        Conn {
            addr: addr.into(),
            reader: None,
        }
    }

    fn stream(&mut self) -> Res<&mut BufReader<TcpStream>> {
        if self.reader.is_none() {
            let s = TcpStream::connect(&self.addr)
                .map_err(|e| format!("connect {}: {e}", self.addr))?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            s.set_read_timeout(Some(Duration::from_secs(60)))
                .map_err(|e| e.to_string())?;
            self.reader = Some(BufReader::new(s));
        }
        Ok(self.reader.as_mut().expect("just connected"))
    }

    /// Sends one request and reads the whole response: `(status, body)`.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> Res<(u16, Vec<u8>)> {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        if let Some(t) = token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        if !body.is_empty() {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        head.push_str(body);
        let r = self.stream()?;
        r.get_mut()
            .write_all(head.as_bytes())
            .map_err(|e| format!("send: {e}"))?;
        let outcome = read_response(r);
        if !matches!(outcome, Ok((_, _, true))) {
            // The server closes, or the stream is in an unknown state: start afresh next time.
            self.reader = None;
        }
        outcome.map(|(status, body, _)| (status, body))
    }
}

/// Reads one response; the flag says whether the connection stays usable.
fn read_response(r: &mut BufReader<TcpStream>) -> Res<(u16, Vec<u8>, bool)> {
    let io = |e: std::io::Error| format!("receive: {e}");
    let mut line = String::new();
    r.read_line(&mut line).map_err(io)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {line:?}"))?;
    let (mut length, mut chunked, mut keep) = (None, false, true);
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(io)? == 0 {
            return Err("connection closed inside the headers".into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':').unwrap_or((l, ""));
        let (name, value) = (
            name.trim().to_ascii_lowercase(),
            value.trim().to_ascii_lowercase(),
        );
        match name.as_str() {
            "content-length" => length = value.parse::<usize>().ok(),
            "transfer-encoding" => chunked = value.contains("chunked"),
            "connection" => keep = value != "close",
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line).map_err(io)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| format!("bad chunk size {line:?}"))?;
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk).map_err(io)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body).map_err(io)?;
    } else {
        r.read_to_end(&mut body).map_err(io)?;
        keep = false;
    }
    Ok((status, body, keep))
}

/// The `parley` binary: `PARLEY_BIN`, else beside this one, else the release build.
pub fn parley_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PARLEY_BIN") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let beside = std::env::current_exe().ok()?.with_file_name("parley");
    if beside.is_file() {
        return Some(beside);
    }
    let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/parley");
    release.is_file().then_some(release)
}

/// The server process, killed when dropped.
pub struct Server(Child);

impl Server {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Res<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

fn start(bin: &Path, db: &Path, log: &Path) -> Res<(Server, String)> {
    start_with(bin, db, log, &settings(true), &[])
}

/// Starts `parley serve --http` on a free loopback port with these settings and
/// extra flags; returns it once it answers, with its address.
pub fn start_with(
    bin: &Path,
    db: &Path,
    log: &Path,
    settings: &Value,
    extra: &[&str],
) -> Res<(Server, String)> {
    let addr = format!("127.0.0.1:{}", free_port()?);
    let log = std::fs::File::create(log).map_err(|e| format!("server log: {e}"))?;
    let child = Command::new(bin)
        .arg("--db")
        .arg(db)
        .arg("--settings")
        .arg(settings.to_string())
        .args(["serve", "--http", &addr])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", bin.display()))?;
    let mut server = Server(child);
    for _ in 0..200 {
        if let Some(status) = server.0.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("parley serve exited with {status}"));
        }
        if let Ok((200, _)) = Conn::new(&addr).request("GET", "/v1/manifest", None, "") {
            return Ok((server, addr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("parley serve did not answer on {addr} within 10 s"))
}

/// Posts the batches over HTTP, client `i` posting batch `i`; returns posts/s.
pub fn http_rate(addr: &str, cast: &Cast, batches: &[Vec<Value>]) -> Res<f64> {
    let count: usize = batches.iter().map(Vec::len).sum();
    let bodies: Vec<Vec<String>> = batches
        .iter()
        .map(|b| b.iter().map(Value::to_string).collect())
        .collect();
    let elapsed = concurrently(&bodies, |w, posts| {
        let mut conn = Conn::new(addr);
        for body in posts {
            let (status, resp) =
                conn.request("POST", "/v1/messages", Some(&cast.writers[w]), body)?;
            if !(200..300).contains(&status) {
                return Err(format!(
                    "POST /v1/messages: {status} {}",
                    String::from_utf8_lossy(&resp)
                ));
            }
        }
        Ok(())
    })?;
    Ok(per_second(elapsed, count))
}

/// Figure 9.
pub fn http(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "9",
        "HTTP POST /v1/messages, 16 clients, durable",
        "in-process durable posts, 16 threads",
        "posts/s",
        Target::RatioAtLeast(0.5),
    );
    let Some(bin) = parley_bin() else {
        return Ok(row.skip(
            "no parley binary: run `cargo build --release -p parley-cli` (or set PARLEY_BIN)",
        ));
    };
    let served_db = dir.join("fig9-served.redb");
    let served_cast = {
        let forum = open(&served_db, true)?;
        Cast::new(&forum, CLIENTS, 64)?
    };
    let (_server, addr) = start(&bin, &served_db, &dir.join("fig9-server.log"))?;
    let forum = open(&dir.join("fig9-inproc.redb"), true)?;
    let cast = Cast::new(&forum, CLIENTS, 64)?;
    let per = sizes.http_per_client;
    http_rate(&addr, &served_cast, &served_cast.batch(CLIENTS, 2))?;
    post_rate(&forum, &cast, &cast.batch(CLIENTS, 2))?;
    let mut m_http = || http_rate(&addr, &served_cast, &served_cast.batch(CLIENTS, per));
    let mut m_local = || post_rate(&forum, &cast, &cast.batch(CLIENTS, per));
    let series = rounds(sizes.reps, &mut [&mut m_http, &mut m_local])?;
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({ "clients": CLIENTS, "posts_per_client_per_rep": per, "binary": bin, "series": series })))
}

//! Figures 13-15: listening over HTTP through the `parley` server.
//!
//! - 13: how soon a listener hears of a post, by long-poll (`GET /v1/inbox` with
//!   `wait_ms`) and by Server-Sent Events (`GET /v1/inbox/stream`), measured from
//!   the moment the poster has its answer, against an HTTP GET of the manifest.
//! - 14: durable posts/s of sixteen clients on a server holding idle long-polls,
//!   against the same on a server holding none.
//! - 15: the server's resident memory holding idle long-polls, against the server
//!   idle.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fig_http::{http_rate, parley_bin, start_with, Conn, Server, CLIENTS};
use crate::measure::{median, rounds};
use crate::report::{Row, Target};
use crate::workload::{open, settings, str_at, Cast};
use crate::{Res, Sizes};

const NO_BINARY: &str =
    "no parley binary: run `cargo build --release -p parley-cli` (or set PARLEY_BIN)";

/// How long an idle waiter waits: longer than any figure runs.
const IDLE_WAIT_MS: u64 = 600_000;

fn percentile(xs: &mut [f64], p: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let at = ((xs.len() as f64 - 1.0) * p).round() as usize;
    xs[at]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Durable settings that let a waiter wait as long as [`IDLE_WAIT_MS`].
fn listen_settings() -> Value {
    let mut s = settings(true);
    s["limits"]["wait_max_ms"] = json!(IDLE_WAIT_MS);
    s
}

fn ok_json(what: &str, (status, body): (u16, Vec<u8>)) -> Res<Value> {
    if !(200..300).contains(&status) {
        return Err(format!(
            "{what}: {status} {}",
            String::from_utf8_lossy(&body)
        ));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{what}: {e}"))
}

/// An asker and a listener on a fresh forum file.
fn pair(db: &Path) -> Res<(String, String)> {
    let forum = open(db, true)?;
    let token = |h: &str| {
        forum
            .create_token(&parley_forum::TokenSpec::llm(
                h,
                &[parley_forum::Right::Read, parley_forum::Right::Write],
            ))
            .map_err(|e| e.to_string())
    };
    Ok((token("asker")?, token("listener")?))
}

/// The cursor after everything in `token`'s inbox now.
fn end_of_inbox(conn: &mut Conn, token: &str) -> Res<String> {
    let mut path = "/v1/inbox?limit=200".to_string();
    loop {
        let page = ok_json(
            "GET /v1/inbox",
            conn.request("GET", &path, Some(token), "")?,
        )?;
        let cursor = str_at(&page, &["cursor"])?;
        if page["more"] != true {
            return Ok(cursor);
        }
        path = format!("/v1/inbox?limit=200&since={cursor}");
    }
}

/// One round's times, in ms: the listener's wake after the poster's answer, and a
/// manifest GET.
struct Round {
    wake: f64,
    post: f64,
    manifest: f64,
}

fn manifest_rtt(conn: &mut Conn) -> Res<f64> {
    let t = Instant::now();
    ok_json(
        "GET /v1/manifest",
        conn.request("GET", "/v1/manifest", None, "")?,
    )?;
    Ok(ms(t.elapsed()))
}

/// Posts the round's question; returns when it was sent and when answered.
fn ask(conn: &mut Conn, asker: &str, i: usize) -> Res<(Instant, Instant)> {
    let sent = Instant::now();
    let body = json!({ "kind": "ask", "to": "ainotes:listener", "body": format!("round {i}: your turn?") });
    ok_json(
        "POST /v1/messages",
        conn.request("POST", "/v1/messages", Some(asker), &body.to_string())?,
    )?;
    Ok((sent, Instant::now()))
}

/// Long-poll rounds: the listener's `GET /v1/inbox?since=…&wait_ms=…` returns
/// with the question of the round.
fn long_poll_rounds(addr: &str, asker: &str, listener: &str, n: usize) -> Res<Vec<Round>> {
    let mut poster = Conn::new(addr);
    let mut probe = Conn::new(addr);
    let mut cursor = end_of_inbox(&mut poster, listener)?;
    let (go, todo) = mpsc::channel::<Option<String>>();
    let (woke, done) = mpsc::channel::<Res<(Instant, String)>>();
    let listen = {
        let (addr, listener) = (addr.to_string(), listener.to_string());
        std::thread::spawn(move || {
            let mut conn = Conn::new(&addr);
            while let Ok(Some(cursor)) = todo.recv() {
                let path = format!("/v1/inbox?since={cursor}&wait_ms=10000");
                let result = conn
                    .request("GET", &path, Some(&listener), "")
                    .and_then(|r| {
                        let at = Instant::now();
                        let page = ok_json("GET /v1/inbox (waiting)", r)?;
                        if page["items"].as_array().is_none_or(Vec::is_empty) {
                            return Err("the wait ended without the item".into());
                        }
                        Ok((at, str_at(&page, &["cursor"])?))
                    });
                if woke.send(result).is_err() {
                    break;
                }
            }
        })
    };
    let mut out = Vec::new();
    for i in 0..n + 3 {
        go.send(Some(cursor.clone())).map_err(|e| e.to_string())?;
        // Let the listener reach its wait (a commit before it is seen at once).
        std::thread::sleep(Duration::from_millis(2));
        let (sent, answered) = ask(&mut poster, asker, i)?;
        let (at, next) = done.recv().map_err(|e| e.to_string())??;
        cursor = next;
        let manifest = manifest_rtt(&mut probe)?;
        if i >= 3 {
            out.push(Round {
                wake: signed_ms(at, answered),
                post: ms(answered - sent),
                manifest,
            });
        }
    }
    let _ = go.send(None);
    let _ = listen.join();
    Ok(out)
}

/// `at - since` in ms, negative when `at` came first.
fn signed_ms(at: Instant, since: Instant) -> f64 {
    match at.checked_duration_since(since) {
        Some(d) => ms(d),
        None => -ms(since.duration_since(at)),
    }
}

/// Opens an event stream and hands each item's arrival time to `arrived`.
fn stream_reader(addr: &str, path: &str, token: &str, arrived: mpsc::Sender<Instant>) -> Res<()> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the stream closed in its head".into());
        }
        if line.starts_with("HTTP/1.1 ") && !line.starts_with("HTTP/1.1 200") {
            return Err(format!("GET {path}: {}", line.trim()));
        }
        if line == "\r\n" {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut size = String::new();
        loop {
            size.clear();
            if r.read_line(&mut size).unwrap_or(0) == 0 {
                return;
            }
            let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
                return;
            };
            let mut chunk = vec![0; n + 2];
            if n == 0 || r.read_exact(&mut chunk).is_err() {
                return;
            }
            let at = Instant::now();
            let text = String::from_utf8_lossy(&chunk[..n]);
            for _ in text.lines().filter(|l| l.starts_with("data: ")) {
                if arrived.send(at).is_err() {
                    return;
                }
            }
        }
    });
    Ok(())
}

/// SSE rounds: the listener's inbox stream carries the question of the round.
fn sse_rounds(addr: &str, asker: &str, listener: &str, n: usize) -> Res<Vec<Round>> {
    let mut poster = Conn::new(addr);
    let mut probe = Conn::new(addr);
    // Past the questions of the long-poll rounds, which still wait for the listener.
    let cursor = end_of_inbox(&mut poster, listener)?;
    let (arrived, arrivals) = mpsc::channel();
    stream_reader(
        addr,
        &format!("/v1/inbox/stream?since={cursor}"),
        listener,
        arrived,
    )?;
    let mut out = Vec::new();
    for i in 0..n + 3 {
        std::thread::sleep(Duration::from_millis(2));
        let (sent, answered) = ask(&mut poster, asker, i)?;
        let at = arrivals
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "the stream did not carry the item within 10 s".to_string())?;
        let manifest = manifest_rtt(&mut probe)?;
        if i >= 3 {
            out.push(Round {
                wake: signed_ms(at, answered),
                post: ms(answered - sent),
                manifest,
            });
        }
    }
    Ok(out)
}

fn wake_row(id: &str, how: &str, mut rounds: Vec<Round>) -> Row {
    let mut wakes: Vec<f64> = rounds.iter().map(|r| r.wake).collect();
    let mut posts: Vec<f64> = rounds.iter().map(|r| r.post).collect();
    let mut gets: Vec<f64> = rounds.drain(..).map(|r| r.manifest).collect();
    let (wake_p50, get_p50) = (percentile(&mut wakes, 0.5), percentile(&mut gets, 0.5));
    let (wake_p99, get_p99) = (percentile(&mut wakes, 0.99), percentile(&mut gets, 0.99));
    Row::new(
        id,
        &format!("HTTP wake latency, {how}, after the post's answer (p99)"),
        "HTTP GET /v1/manifest (p99)",
        "ms",
        Target::AboveAtMost(5.0),
    )
    .measured(wake_p99, Some(get_p99))
    .with_detail(json!({
        "rounds": wakes.len(),
        "wake_p50_ms": wake_p50, "wake_p99_ms": wake_p99,
        "manifest_p50_ms": get_p50, "manifest_p99_ms": get_p99,
        "post_p50_ms": percentile(&mut posts, 0.5), "post_p99_ms": percentile(&mut posts, 0.99),
    }))
}

/// Figure 13: two rows, `13` (long-poll) and `13-sse`.
pub fn wake(dir: &Path, sizes: &Sizes) -> Res<Vec<Row>> {
    let rows = |r: &dyn Fn(&str, &str) -> Row| vec![r("13", "long-poll"), r("13-sse", "SSE")];
    let Some(bin) = parley_bin() else {
        return Ok(rows(&|id, how| {
            Row::new(
                id,
                &format!("HTTP wake latency, {how}"),
                "-",
                "ms",
                Target::AboveAtMost(5.0),
            )
            .skip(NO_BINARY)
        }));
    };
    let db = dir.join("fig13.redb");
    let (asker, listener) = pair(&db)?;
    let (_server, addr) = start_with(
        &bin,
        &db,
        &dir.join("fig13-server.log"),
        &settings(true),
        &[],
    )?;
    let polled = long_poll_rounds(&addr, &asker, &listener, sizes.wake_rounds)?;
    let streamed = sse_rounds(&addr, &asker, &listener, sizes.wake_rounds)?;
    Ok(vec![
        wake_row("13", "long-poll", polled),
        wake_row("13-sse", "SSE", streamed),
    ])
}

/// Connections each sending one long-poll that waits [`IDLE_WAIT_MS`] on an inbox
/// nothing comes to; they stay open until dropped.
fn idle_waiters(addr: &str, token: &str, cursor: &str, n: usize) -> Res<Vec<TcpStream>> {
    let path = format!("/v1/inbox?since={cursor}&wait_ms={IDLE_WAIT_MS}");
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).map_err(|e| {
                format!("connect {addr}: {e} (a thousand waiters need `ulimit -n` above 2100)")
            })?;
            let head = format!(
                "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
            );
            s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
            Ok(s)
        })
        .collect()
}

/// Until every place for waits is held by `waiters` (the server started with
/// `--max-waits` their number): one more wait is then refused with 503. A probe
/// that takes a place for its millisecond can make a waiter arriving then be
/// refused; such a waiter (its answer is there to read) is sent again.
fn until_all_wait(addr: &str, token: &str, cursor: &str, waiters: &mut [TcpStream]) -> Res<()> {
    let mut probe = Conn::new(addr);
    let path = format!("/v1/inbox?since={cursor}&wait_ms=1");
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        for waiter in waiters.iter_mut() {
            if answered(waiter)? {
                *waiter = idle_waiters(addr, token, cursor, 1)?.remove(0);
            }
        }
        if probe.request("GET", &path, Some(token), "")?.0 == 503 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err("the idle waiters did not all reach their wait within 60 s".into())
}

/// Whether the server has answered (or closed) a waiter's connection.
fn answered(waiter: &TcpStream) -> Res<bool> {
    waiter.set_nonblocking(true).map_err(|e| e.to_string())?;
    let peeked = waiter.peek(&mut [0u8; 1]);
    waiter.set_nonblocking(false).map_err(|e| e.to_string())?;
    match peeked {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
        Err(_) => Ok(true),
    }
}

/// The flags of a server for `waiters` idle waiters.
fn waiter_flags(waiters: usize) -> (String, String) {
    ((2 * waiters + 256).to_string(), waiters.max(1).to_string())
}

/// A forum with the posting cast and an idle identity; its end-of-inbox cursor.
fn idle_forum(db: &Path) -> Res<(Cast, String, String)> {
    let forum = open(db, true)?;
    let cast = Cast::new(&forum, CLIENTS, 64)?;
    let idle = forum
        .create_token(&parley_forum::TokenSpec::llm(
            "idle",
            &[parley_forum::Right::Read],
        ))
        .map_err(|e| e.to_string())?;
    // The cast's questions are in every inbox: the cursor goes past them all.
    let mut args = json!({ "limit": 200 });
    let cursor = loop {
        let page = forum
            .call(Some(&idle), "get_inbox", &args)
            .map_err(|e| e.to_string())?;
        let cursor = str_at(&page, &["cursor"])?;
        if page["more"] != true {
            break cursor;
        }
        args["since"] = json!(cursor);
    };
    Ok((cast, idle, cursor))
}

/// Figure 14.
pub fn busy(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let n = sizes.idle_waiters;
    let row = Row::new(
        "14",
        &format!("HTTP POST, 16 clients, with {n} idle HTTP waiters"),
        "the same, no waiters (another server)",
        "posts/s",
        Target::RatioAtLeast(0.9),
    );
    let Some(bin) = parley_bin() else {
        return Ok(row.skip(NO_BINARY));
    };
    let (max_conn, max_waits) = waiter_flags(n);
    // One token holds every idle wait: its share is the whole cap.
    let flags = [
        "--max-connections",
        &max_conn,
        "--max-waits",
        &max_waits,
        "--max-waits-per-token",
        &max_waits,
    ];
    let quiet_db = dir.join("fig14-quiet.redb");
    let watched_db = dir.join("fig14-watched.redb");
    let (quiet_cast, _, _) = idle_forum(&quiet_db)?;
    let (watched_cast, idle, cursor) = idle_forum(&watched_db)?;
    let s = listen_settings();
    let (quiet_server, quiet) =
        start_with(&bin, &quiet_db, &dir.join("fig14-quiet.log"), &s, &flags)?;
    let (watched_server, watched) = start_with(
        &bin,
        &watched_db,
        &dir.join("fig14-watched.log"),
        &s,
        &flags,
    )?;
    let mut waiters = idle_waiters(&watched, &idle, &cursor, n)?;
    until_all_wait(&watched, &idle, &cursor, &mut waiters)?;
    http_rate(&quiet, &quiet_cast, &quiet_cast.batch(CLIENTS, 2))?;
    http_rate(&watched, &watched_cast, &watched_cast.batch(CLIENTS, 2))?;
    let per = sizes.http_per_client;
    let posts = (CLIENTS * per) as f64;
    // Each server's CPU time per post, beside the rate: the cost of the waiters
    // even where the rate hides it behind the disk.
    let (mut cpu_watched, mut cpu_quiet) = (Vec::new(), Vec::new());
    let mut m_watched = || {
        let before = cpu_ms(watched_server.pid())?;
        let rate = http_rate(&watched, &watched_cast, &watched_cast.batch(CLIENTS, per))?;
        cpu_watched.push((cpu_ms(watched_server.pid())? - before) / posts);
        Ok::<f64, String>(rate)
    };
    let mut m_quiet = || {
        let before = cpu_ms(quiet_server.pid())?;
        let rate = http_rate(&quiet, &quiet_cast, &quiet_cast.batch(CLIENTS, per))?;
        cpu_quiet.push((cpu_ms(quiet_server.pid())? - before) / posts);
        Ok::<f64, String>(rate)
    };
    let series = rounds(sizes.reps, &mut [&mut m_watched, &mut m_quiet])?;
    drop(waiters);
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "waiters": n, "clients": CLIENTS, "posts_per_client_per_rep": per, "series": series,
            "server_cpu_ms_per_post": { "with_waiters": median(&cpu_watched), "without": median(&cpu_quiet) },
        })))
}

/// The CPU time process `pid` has used so far (user and system), in ms.
fn cpu_ms(pid: u32) -> Res<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // The fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
    let (Some(user), Some(system)) = (ticks(11), ticks(12)) else {
        return Err(format!("{path}: no utime/stime"));
    };
    // Clock ticks are 100 a second on Linux (USER_HZ).
    Ok((user + system) * 10.0)
}

/// The resident set of process `pid`, in MiB.
fn rss_mib(pid: u32) -> Res<f64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("no VmRSS in {path}"))?;
    Ok(kib as f64 / 1024.0)
}

/// Figure 15.
pub fn memory(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let n = sizes.idle_waiters;
    let row = Row::new(
        "15",
        &format!("server RSS with {n} idle HTTP waiters"),
        "the server idle, after a warm-up",
        "MiB",
        Target::AboveAtMost(64.0),
    );
    let Some(bin) = parley_bin() else {
        return Ok(row.skip(NO_BINARY));
    };
    let (max_conn, max_waits) = waiter_flags(n);
    // One token holds every idle wait: its share is the whole cap.
    let flags = [
        "--max-connections",
        &max_conn,
        "--max-waits",
        &max_waits,
        "--max-waits-per-token",
        &max_waits,
    ];
    let db = dir.join("fig15.redb");
    let (cast, idle, cursor) = idle_forum(&db)?;
    let (server, addr): (Server, String) = start_with(
        &bin,
        &db,
        &dir.join("fig15-server.log"),
        &listen_settings(),
        &flags,
    )?;
    // A warm-up: the posting cast, and a short wait, so that what every request
    // allocates once is in the baseline.
    http_rate(&addr, &cast, &cast.batch(CLIENTS, 4))?;
    let mut warm = Conn::new(&addr);
    let path = format!("/v1/inbox?since={cursor}&wait_ms=10");
    ok_json("a short wait", warm.request("GET", &path, Some(&idle), "")?)?;
    drop(warm);
    std::thread::sleep(Duration::from_millis(200));
    let idle_rss = rss_mib(server.pid())?;
    let mut waiters = idle_waiters(&addr, &idle, &cursor, n)?;
    until_all_wait(&addr, &idle, &cursor, &mut waiters)?;
    std::thread::sleep(Duration::from_millis(200));
    let waiting_rss = rss_mib(server.pid())?;
    drop(waiters);
    Ok(row
        .measured(waiting_rss, Some(idle_rss))
        .with_detail(json!({
            "waiters": n,
            "per_waiter_kib": (waiting_rss - idle_rss) * 1024.0 / n.max(1) as f64,
        })))
}

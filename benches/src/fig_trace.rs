//! Figure 27: what tracing costs a post. MCP `tools/call post` through the `parley`
//! server with span export on (OTLP/HTTP to a local sink that accepts and discards)
//! against the same server with export off, one keep-alive client each, in
//! alternating slices.
//!
//! The forums are not durable, so the comparison is not hidden under a sync: the
//! span is a share of the request's own work (HTTP, JSON-RPC, the engine, the
//! reply). Each request carries a `traceparent` in `params._meta`, so the traced
//! server also extracts a parent. The batch processor runs with its defaults.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fig_http::{parley_bin, start_with, Conn};
use crate::measure::{median, micros_per, paired_reps};
use crate::report::{Row, Target};
use crate::workload::{open, settings, Cast};
use crate::{Res, Sizes};

/// Posts of each server per slice.
const SLICE: usize = 100;

/// An OTLP/HTTP endpoint that answers 200 to every request and keeps nothing;
/// its threads live as long as the benchmark process.
fn sink() -> Res<String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("sink: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let Ok(clone) = stream.try_clone() else {
                    return;
                };
                let mut reader = BufReader::new(clone);
                let mut out = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        let l = line.trim_end();
                        if l.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = l.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
                    if out.write_all(ok).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(format!("http://{addr}"))
}

/// The MCP request posting `envelope`, with a client's trace context.
fn call(n: usize, envelope: &Value) -> String {
    json!({
        "jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {
            "name": "post", "arguments": envelope,
            "_meta": { "traceparent": format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{:016x}-01", n + 1) }
        }
    })
    .to_string()
}

fn posts(conn: &mut Conn, token: &str, bodies: &[String]) -> Res<Duration> {
    let start = Instant::now();
    for body in bodies {
        let (status, resp) = conn.request("POST", "/mcp", Some(token), body)?;
        let ok = b"\"isError\":false";
        if status != 200 || !resp.windows(ok.len()).any(|w| w == ok) {
            return Err(format!(
                "tools/call post: {status} {}",
                String::from_utf8_lossy(&resp)
            ));
        }
    }
    Ok(start.elapsed())
}

/// Figure 27.
pub fn trace(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "27",
        "MCP tools/call post through the server, span export on (OTLP/HTTP to a local sink)",
        "the same with export off",
        "us/post",
        Target::RatioAtMost(1.2),
    );
    let Some(bin) = parley_bin() else {
        return Ok(row.skip(
            "no parley binary: run `cargo build --release -p parley-cli` (or set PARLEY_BIN)",
        ));
    };
    let endpoint = sink()?;
    let mut servers = Vec::new();
    for (name, extra) in [
        ("on", vec!["--otlp-endpoint", endpoint.as_str()]),
        ("off", vec![]),
    ] {
        let db = dir.join(format!("trace-{name}.redb"));
        let cast = {
            let forum = open(&db, false)?;
            Cast::new(&forum, 1, 16)?
        };
        let log = dir.join(format!("trace-{name}.log"));
        let (server, addr) = start_with(&bin, &db, &log, &settings(false), &extra)?;
        servers.push((server, Conn::new(&addr), cast));
    }
    let mut next = 0usize;
    let mut rep = |count: usize| -> Res<(f64, f64)> {
        let mut times = [Duration::ZERO; 2];
        let mut bodies: Vec<Vec<String>> = Vec::new();
        for (_, _, cast) in &servers {
            let batch = cast.batch(1, count).remove(0);
            bodies.push(
                batch
                    .iter()
                    .enumerate()
                    .map(|(i, e)| call(next + i, e))
                    .collect(),
            );
        }
        next += count;
        for k in 0..count.div_ceil(SLICE) {
            let range = k * SLICE..((k + 1) * SLICE).min(count);
            let order: [usize; 2] = if k % 2 == 0 { [0, 1] } else { [1, 0] };
            for s in order {
                let (_, conn, cast) = &mut servers[s];
                times[s] += posts(conn, &cast.writers[0], &bodies[s][range.clone()])?;
            }
        }
        Ok((micros_per(times[0], count), micros_per(times[1], count)))
    };
    let n = sizes.single_posts.max(SLICE) * 2;
    let series = paired_reps(sizes.reps, n, &mut rep)?;
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "posts_per_rep": n,
            "reps": sizes.reps,
            "slice": SLICE,
            "durable": false,
            "binary": bin,
            "series": series,
        })))
}

//! A driver for profiling figure 4 of `parley-bench` (non-durable keyed posts that
//! feed the word index, against raw redb inserts) under callgrind, whose
//! instruction counts stay repeatable on a loaded machine:
//!
//! ```sh
//! cargo build --release --example post_profile
//! valgrind --tool=callgrind --toggle-collect='post_profile::measured_*' \
//!     target/release/examples/post_profile post 3000
//! valgrind --tool=callgrind --toggle-collect='post_profile::measured_*' \
//!     target/release/examples/post_profile raw 3000
//! ```
//!
//! The posts are figure 4's: notes under 64 root questions of another identity,
//! one ask in sixteen, bodies of 300–500 characters each with its own number, an
//! idempotency key on every post. The `mcp` mode sends the same posts as
//! `tools/call` requests through `forum.mcp`, for figure 8. The `typed` mode sends
//! them through `Session::post`, the typed API, whose result is typed views rather
//! than the `serde_json::Value` of the generic call. Every mode first runs a
//! tenth of the count unmeasured, as the figures do.

use std::time::Instant;

use parley_forum::{Config, Envelope, Forum, Right, TokenSpec};
use serde_json::{json, Value};

const RAW: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("raw");

const WORDS: [&str; 24] = [
    "the",
    "build",
    "cache",
    "port",
    "server",
    "test",
    "fails",
    "after",
    "upgrade",
    "config",
    "path",
    "resolved",
    "relative",
    "working",
    "directory",
    "crate",
    "pin",
    "version",
    "rerun",
    "logs",
    "token",
    "retry",
    "commit",
    "evidence",
];

/// A body of 300–500 characters, unique for each `seq`.
fn body(seq: u64) -> String {
    let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let len = 300 + (next() % 200) as usize;
    let mut out = format!("[{seq}] ");
    while out.len() < len {
        out.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
        out.push(if next() % 11 == 0 { '.' } else { ' ' });
    }
    out.truncate(len);
    out.trim_end().to_string()
}

/// The workload's envelope (a note under a thread, or an ask) as the typed API
/// builds it.
fn typed_envelope(env: &Value) -> Envelope {
    let text = |key: &str| env[key].as_str().expect("the workload's fields are text");
    let mut e = Envelope::new(text("kind"), text("body")).idempotency_key(text("idempotency_key"));
    if let Some(thread) = env["thread"].as_str() {
        e = e.thread(thread);
    }
    e
}

#[inline(never)]
fn measured_posts(forum: &Forum, token: &str, envelopes: &[Value]) {
    for envelope in envelopes {
        forum
            .call(Some(token), "post", envelope)
            .expect("the workload is never refused");
    }
}

/// The same posts through the typed API, `Session::post`, whose result is typed
/// views rather than a `serde_json::Value`.
#[inline(never)]
fn measured_typed(forum: &Forum, token: &str, envelopes: &[Envelope]) {
    let session = forum.session(token);
    for envelope in envelopes {
        session
            .post(envelope)
            .expect("the workload is never refused");
    }
}

/// The same posts as `tools/call post` requests through the in-process MCP handler
/// (figure 8), text in and text out.
#[inline(never)]
fn measured_mcp(forum: &Forum, token: &str, requests: &[String]) {
    for request in requests {
        let response = forum.mcp(Some(token), request).expect("a response");
        assert!(response.contains("\"isError\":false"), "{response}");
    }
}

#[inline(never)]
fn measured_raw(db: &redb::Database, records: &[(u64, Vec<u8>)]) {
    for (key, record) in records {
        let mut txn = db.begin_write().expect("begin");
        txn.set_durability(redb::Durability::None)
            .expect("durability");
        txn.open_table(RAW)
            .expect("table")
            .insert(*key, record.as_slice())
            .expect("insert");
        txn.commit().expect("commit");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(count)) = (args.get(1), args.get(2).and_then(|n| n.parse().ok())) else {
        eprintln!("usage: post_profile post|typed|mcp|raw COUNT [DIR]");
        std::process::exit(2);
    };
    let count: usize = count;
    let (dir, own_dir) = work_dir(args.get(3));
    let path = dir.join(format!("{mode}.redb"));
    let _ = std::fs::remove_file(&path);
    let start;
    match mode.as_str() {
        "raw" => {
            let db = redb::Database::create(&path).expect("raw redb");
            let record = |seq: u64| {
                let mut r = format!("{{\"id\":{seq},\"body\":\"{}\"}}", body(seq)).into_bytes();
                r.resize(600, b' ');
                (seq, r)
            };
            let warm: Vec<_> = (1..=(count as u64 / 10 + 1)).map(record).collect();
            measured_raw(&db, &warm);
            let first = warm.len() as u64 + 1;
            let records: Vec<_> = (first..first + count as u64).map(record).collect();
            start = Instant::now();
            measured_raw(&db, &records);
        }
        "post" | "typed" | "mcp" => {
            let config = Config::from_json(&json!({
                "durable": false,
                "limits": { "writes_per_minute": 0, "thread_max_messages": 1_000_000, "progress_max_messages": 0 },
            }))
            .expect("settings");
            let forum = Forum::open(&path, config).expect("forum");
            let token = |handle: &str| {
                forum
                    .create_token(&TokenSpec::llm(handle, &[Right::Read, Right::Write]))
                    .expect("token")
            };
            let (host, writer) = (token("host"), token("w0"));
            let mut seq = 0u64;
            let mut roots = Vec::new();
            for _ in 0..64 {
                seq += 1;
                let asked = forum
                    .call(
                        Some(&host),
                        "post",
                        &json!({"kind": "ask", "body": body(seq)}),
                    )
                    .expect("a root question");
                roots.push(asked["thread"]["id"].clone());
            }
            let mut envelopes = |n: usize| -> Vec<Value> {
                (0..n)
                    .map(|i| {
                        seq += 1;
                        let mut e = if i % 16 == 15 {
                            json!({ "kind": "ask", "body": body(seq) })
                        } else {
                            json!({ "kind": "note", "thread": roots[i * 7 % 64], "body": body(seq) })
                        };
                        e["idempotency_key"] = json!(format!("profile-{seq}"));
                        e
                    })
                    .collect()
            };
            let warm = envelopes(count / 10 + 1);
            let batch = envelopes(count);
            if mode == "mcp" {
                // Modern-era requests, as figure 8 sends them.
                let requests = |envelopes: Vec<Value>| -> Vec<String> {
                    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
                    (envelopes.iter().enumerate())
                        .map(|(id, env)| {
                            format!(
                                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"post","arguments":{env},"_meta":{meta}}}}}"#
                            )
                        })
                        .collect()
                };
                measured_mcp(&forum, &writer, &requests(warm));
                let batch = requests(batch);
                start = Instant::now();
                measured_mcp(&forum, &writer, &batch);
            } else if mode == "typed" {
                let typed = |envelopes: Vec<Value>| -> Vec<Envelope> {
                    envelopes.iter().map(typed_envelope).collect()
                };
                measured_typed(&forum, &writer, &typed(warm));
                let batch = typed(batch);
                start = Instant::now();
                measured_typed(&forum, &writer, &batch);
            } else {
                measured_posts(&forum, &writer, &warm);
                start = Instant::now();
                measured_posts(&forum, &writer, &batch);
            }
        }
        other => {
            eprintln!("unknown mode {other:?}: post, typed, mcp or raw");
            std::process::exit(2);
        }
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / count as f64;
    println!("{mode}: {per:.2} us each");
    if own_dir {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `dir`, or a directory of this process's in the system temp dir (removed at the
/// end: the second value says so).
fn work_dir(dir: Option<&String>) -> (std::path::PathBuf, bool) {
    let (dir, own) = match dir {
        Some(d) => (std::path::PathBuf::from(d), false),
        None => (
            std::env::temp_dir().join(format!("parley-post-profile-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).expect("a working directory");
    (dir, own)
}

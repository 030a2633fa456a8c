//! Two `parley serve` instances on one PostgreSQL database: one forum, served by
//! both, under load; one of them killed mid-load; the database killed mid-load and
//! started again. The servers are the built binary, the database a real server
//! (`tests/pg/server.sh`).

mod common;
#[path = "../../../tests/pg/support.rs"]
mod pg;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{try_http, Server, BIN};
use serde_json::{json, Value};

const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

/// `parley --db URL token create HANDLE …`: the command opens the database itself,
/// beside any running server.
fn token(url: &str, handle: &str, extra: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(["--db", url, "token", "create", handle])
        .args(extra)
        .env_remove("PARLEY_DB")
        .output()
        .expect("runs parley");
    assert!(
        out.status.success(),
        "token create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn serve(url: &str) -> Server {
    Server::start(Path::new(url), Some(SETTINGS), &[])
}

/// One post; the message id when it was acknowledged (201).
fn post(addr: SocketAddr, token: &str, body: Value) -> Result<u64, String> {
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let text = body.to_string();
    match try_http(
        addr,
        "POST",
        "/v1/messages",
        &headers,
        Some(text.as_bytes()),
    ) {
        Ok(r) if r.status == 201 => Ok(pg::num(&r.json()["message"]["id"])),
        Ok(r) => Err(format!("{} {}", r.status, String::from_utf8_lossy(&r.body))),
        Err(e) => Err(format!("transport: {e}")),
    }
}

fn get(addr: SocketAddr, token: &str, path: &str) -> Result<Value, String> {
    let auth = format!("Bearer {token}");
    match try_http(addr, "GET", path, &[("Authorization", auth.as_str())], None) {
        Ok(r) if r.status == 200 => Ok(r.json()),
        Ok(r) => Err(format!("{} {}", r.status, String::from_utf8_lossy(&r.body))),
        Err(e) => Err(format!("transport: {e}")),
    }
}

/// Every item of a feed (`/v1/messages` or `/v1/events`), followed with cursors.
fn follow(addr: SocketAddr, token: &str, feed: &str) -> Vec<u64> {
    let (mut ids, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let path = match &cursor {
            Some(c) => format!("{feed}?limit=100&since={c}"),
            None => format!("{feed}?limit=100"),
        };
        let page = get(addr, token, &path).unwrap();
        let items = page["items"].as_array().unwrap();
        if items.is_empty() {
            return ids;
        }
        ids.extend(items.iter().map(|i| pg::num(&i["id"])));
        cursor = Some(page["cursor"].as_str().unwrap().to_string());
    }
}

/// A `get_inbox` waiting (up to 20 s) for a turn of the holder of `token`, in a
/// thread; joined by [`woke_with_one_item`].
fn wait_for_turn(addr: SocketAddr, token: &str) -> std::thread::JoinHandle<(Value, Duration)> {
    let token = token.to_string();
    std::thread::spawn(move || {
        let start = Instant::now();
        let page = get(addr, &token, "/v1/inbox?wait_ms=20000").unwrap();
        (page, start.elapsed())
    })
}

/// The waiter woke long before its deadline, with the one post it waited for.
fn woke_with_one_item(waiter: std::thread::JoinHandle<(Value, Duration)>) {
    let (page, took) = waiter.join().unwrap();
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{}", items.len());
    assert!(
        took < Duration::from_secs(10),
        "the waiter woke after {took:?}"
    );
}

/// `clients` threads posting for `time`, each alternating between `servers`.
/// Returns the acknowledged message ids and the failures.
fn load(
    servers: &[SocketAddr],
    token: &str,
    clients: usize,
    time: Duration,
    stop: &Arc<AtomicBool>,
) -> (Vec<u64>, Vec<String>) {
    let acked = Arc::new(Mutex::new(Vec::new()));
    let failed = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (servers, token) = (servers.to_vec(), token.to_string());
            let (acked, failed, stop) = (Arc::clone(&acked), Arc::clone(&failed), Arc::clone(stop));
            std::thread::spawn(move || {
                let deadline = Instant::now() + time;
                let mut n = 0usize;
                while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
                    let addr = servers[(c + n) % servers.len()];
                    // Addressed to nobody the tests wait for: their inboxes stay empty.
                    let body = json!({
                        "kind": "ask",
                        "body": format!("client {c} post {n}"),
                        "to": "ainotes:nobody",
                    });
                    match post(addr, &token, body) {
                        Ok(id) => acked.lock().unwrap().push(id),
                        Err(e) => {
                            failed.lock().unwrap().push(e);
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                    n += 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let failed = std::mem::take(&mut *failed.lock().unwrap());
    (acked, failed)
}

#[test]
fn two_servers_on_one_database_serve_one_forum_exactly() {
    let Some(base) = pg::server() else {
        return;
    };
    let url = pg::fresh_url(&base, "serve2");
    let writer = token(&url, "writer", &["--rights", "read,write"]);
    token(&url, "nobody", &["--rights", "read,write"]);
    let bob = token(&url, "bob", &["--rights", "read,write"]);
    let (a, b) = (serve(&url), serve(&url));

    // A waiter on B wakes for a post through A.
    let waiter = wait_for_turn(b.addr, &bob);
    std::thread::sleep(Duration::from_millis(500));
    let first = post(
        a.addr,
        &writer,
        json!({"kind": "ask", "body": "bob, a question", "to": "ainotes:bob"}),
    )
    .unwrap();
    woke_with_one_item(waiter);

    // Sixteen clients alternate between the servers.
    let stop = Arc::new(AtomicBool::new(false));
    let (mut acked, failed) = load(
        &[a.addr, b.addr],
        &writer,
        16,
        Duration::from_secs(4),
        &stop,
    );
    assert!(
        failed.is_empty(),
        "failed posts: {:?}",
        &failed[..failed.len().min(5)]
    );
    assert!(acked.len() > 100, "only {} posts in 4 s", acked.len());
    acked.push(first);
    let expected: BTreeSet<u64> = acked.iter().copied().collect();
    assert_eq!(expected.len(), acked.len(), "an id was acknowledged twice");

    // Readers on either server see every message and every event once, in
    // strictly increasing order, and the same ones.
    let mut events = Vec::new();
    for server in [&a, &b] {
        let seen = follow(server.addr, &writer, "/v1/messages");
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "message ids must strictly increase"
        );
        assert_eq!(seen.iter().copied().collect::<BTreeSet<_>>(), expected);
        assert_eq!(seen.len(), expected.len());
        let ev = follow(server.addr, &writer, "/v1/events");
        assert!(
            ev.windows(2).all(|w| w[0] < w[1]),
            "event ids must strictly increase"
        );
        events.push(ev);
    }
    assert_eq!(events[0], events[1]);
}

#[test]
fn a_server_killed_mid_load_loses_no_acknowledged_post_and_the_other_serves_on() {
    let Some(base) = pg::server() else {
        return;
    };
    let url = pg::fresh_url(&base, "kill9");
    let writer = token(&url, "writer", &["--rights", "read,write"]);
    token(&url, "nobody", &["--rights", "read,write"]);
    let (mut a, b) = (serve(&url), serve(&url));
    let stop = Arc::new(AtomicBool::new(false));
    let servers = [a.addr, b.addr];
    let loader = {
        let (writer, stop) = (writer.clone(), Arc::clone(&stop));
        std::thread::spawn(move || load(&servers, &writer, 8, Duration::from_secs(5), &stop))
    };
    std::thread::sleep(Duration::from_millis(1500));
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    let killed_at = Instant::now();
    let (acked, failed) = loader.join().unwrap();
    assert!(
        !failed.is_empty(),
        "the killed server's clients saw no failure"
    );
    let after_kill = follow(b.addr, &writer, "/v1/messages");
    let present: BTreeSet<u64> = after_kill.iter().copied().collect();
    for id in &acked {
        assert!(present.contains(id), "acknowledged msg_{id} is missing");
    }
    assert!(after_kill.windows(2).all(|w| w[0] < w[1]));
    // B still serves, and did after the kill.
    let more = post(
        b.addr,
        &writer,
        json!({"kind": "ask", "body": "still here"}),
    )
    .unwrap();
    assert!(more > *acked.iter().max().unwrap());
    assert!(killed_at.elapsed() < Duration::from_secs(30));
}

/// A PostgreSQL server of one test's own, to stop and start.
struct OwnServer {
    dir: String,
}

impl OwnServer {
    fn script() -> String {
        format!("{}/../../tests/pg/server.sh", env!("CARGO_MANIFEST_DIR"))
    }

    fn sh(&self, what: &str) {
        let status = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source '{}' && PG_DIR='{}' && {what}",
                Self::script(),
                self.dir
            ))
            .status()
            .unwrap();
        assert!(status.success(), "{what} failed");
    }

    fn start() -> OwnServer {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source '{}' && pg_start && echo \"$PG_DIR\"",
                Self::script()
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        OwnServer {
            dir: String::from_utf8(out.stdout).unwrap().trim().to_string(),
        }
    }

    fn url(&self) -> String {
        format!(
            "postgres://parley@localhost/postgres?host={}&connect_timeout=2",
            self.dir
        )
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.sh("pg_stop");
    }
}

#[test]
fn the_database_stopped_mid_load_gives_clear_errors_and_the_servers_recover() {
    if pg::server().is_none() {
        return;
    }
    let db = OwnServer::start();
    let url = db.url();
    let writer = token(&url, "writer", &["--rights", "read,write"]);
    token(&url, "nobody", &["--rights", "read,write"]);
    let bob = token(&url, "bob", &["--rights", "read,write"]);
    let (a, b) = (serve(&url), serve(&url));
    let stop = Arc::new(AtomicBool::new(false));
    let servers = [a.addr, b.addr];
    let loader = {
        let (writer, stop) = (writer.clone(), Arc::clone(&stop));
        std::thread::spawn(move || load(&servers, &writer, 8, Duration::from_secs(60), &stop))
    };
    std::thread::sleep(Duration::from_millis(1500));
    // As a crash: the server recovers from its WAL when it comes back, and every
    // post acknowledged before must be there.
    db.sh("pg_crash");
    // While it is down: a clear refusal to serve, 503 with the storage's reason.
    std::thread::sleep(Duration::from_millis(500));
    let auth = format!("Bearer {writer}");
    let down = try_http(
        a.addr,
        "POST",
        "/v1/messages",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ],
        Some(br#"{"kind":"ask","body":"anyone?"}"#),
    )
    .unwrap();
    assert_eq!(down.status, 503, "{}", String::from_utf8_lossy(&down.body));
    assert_eq!(down.reason(), "storage_unavailable");
    assert!(down.header("Retry-After").is_some());
    assert!(String::from_utf8_lossy(&down.body).contains("PostgreSQL"));
    let read = try_http(
        b.addr,
        "GET",
        "/v1/messages",
        &[("Authorization", auth.as_str())],
        None,
    )
    .unwrap();
    assert_eq!(read.status, 503);
    std::thread::sleep(Duration::from_millis(1000));
    db.sh("pg_up");
    // The same processes serve again, by themselves.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut back = [false, false];
    while back != [true, true] {
        assert!(
            Instant::now() < deadline,
            "the servers did not recover: {back:?}"
        );
        for (i, addr) in servers.iter().enumerate() {
            back[i] = back[i]
                || post(
                    *addr,
                    &writer,
                    json!({"kind": "ask", "body": format!("back {i}"), "to": "ainotes:nobody"}),
                )
                .is_ok();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, Ordering::SeqCst);
    let (acked, failed) = loader.join().unwrap();
    assert!(!failed.is_empty(), "the outage was not seen");
    assert!(
        failed
            .iter()
            .all(|f| f.starts_with("503") && f.contains("storage_unavailable")),
        "an unclear failure: {:?}",
        failed.iter().find(|f| !f.starts_with("503"))
    );
    // Every acknowledged post is there, once.
    let present = follow(a.addr, &writer, "/v1/messages");
    assert!(present.windows(2).all(|w| w[0] < w[1]));
    let present: BTreeSet<u64> = present.into_iter().collect();
    for id in &acked {
        assert!(present.contains(id), "acknowledged msg_{id} is missing");
    }
    // A waiter on B wakes for a post through A: B listens again.
    let waiter = wait_for_turn(b.addr, &bob);
    std::thread::sleep(Duration::from_millis(1500));
    post(
        a.addr,
        &writer,
        json!({"kind": "ask", "body": "bob, after the outage", "to": "ainotes:bob"}),
    )
    .unwrap();
    woke_with_one_item(waiter);
}

#[test]
fn parley_db_names_a_postgres_forum_for_every_command() {
    let Some(base) = pg::server() else {
        return;
    };
    let url = pg::fresh_url(&base, "envdb");
    let run_as = |token: Option<&str>, args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("PARLEY_DB", &url)
            .env_remove("PARLEY_TOKEN");
        if let Some(token) = token {
            cmd.env("PARLEY_TOKEN", token);
        }
        cmd.output().expect("runs parley")
    };
    let run = |args: &[&str]| run_as(None, args);
    let made = run(&["token", "create", "alice", "--rights", "read,write"]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let alice = String::from_utf8(made.stdout).unwrap().trim().to_string();
    let posted = run_as(
        Some(&alice),
        &["post", r#"{"kind":"ask","body":"Which port?"}"#],
    );
    assert!(
        posted.status.success(),
        "{}",
        String::from_utf8_lossy(&posted.stderr)
    );
    let found = run_as(Some(&alice), &["search", "--json", "port"]);
    assert!(
        found.status.success(),
        "{}",
        String::from_utf8_lossy(&found.stderr)
    );
    let page: Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
    // No socket or file is made for a database's forum.
    assert!(!Path::new(&format!("{url}.sock")).exists());
}

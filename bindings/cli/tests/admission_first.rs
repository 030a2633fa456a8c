//! Nothing is looked up for a request before its `Host` and `Origin` are admitted:
//! a stranger's request with a bearer token and a host the server does not answer
//! to costs the store nothing, however many there are.
//!
//! The store is a real PostgreSQL forum (`tests/pg/server.sh`), where every token
//! lookup is a read of the forum's `tokens` table that the server's statistics
//! count (`pg_stat_user_tables`); the server is the built binary, with its request
//! log on (the log names each request's caller).

mod common;
#[path = "../../../tests/pg/support.rs"]
mod pg;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{get_with_host, http, Server, BIN};

/// Reads of the forum's `tokens` table so far, as the server's statistics have
/// them (a fresh `psql` session each time, so no cached snapshot).
fn token_reads(base: &str, forum: &str) -> i64 {
    let query = format!(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables \
         WHERE schemaname = 'parley_{forum}' AND relname = 'tokens'"
    );
    let out = Command::new("psql")
        .args([base, "-Atc", &query])
        .output()
        .expect("runs psql");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a count: {:?}", out.stdout))
}

#[test]
fn a_refused_host_with_a_bearer_token_is_never_looked_up() {
    let Some(base) = pg::server() else { return };
    let forum = pg::fresh_name("admit");
    let url = pg::with_forum(&base, &forum);
    let out = Command::new(BIN)
        .args(["--db", &url, "token", "create", "alice"])
        .env_remove("PARLEY_DB")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let alice = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let server = Server::start(Path::new(&url), None, &[]);
    let addr = server.addr;
    let before = token_reads(&base, &forum);

    // Strangers: bearer tokens, addressed to a host this server does not answer to.
    const STRANGERS: i64 = 30;
    for n in 0..STRANGERS {
        let auth = format!("Bearer pt_stranger_{n}");
        let raw = format!(
            "GET /v1/whoami HTTP/1.1\r\nHost: evil.example\r\nAuthorization: {auth}\r\nConnection: close\r\n\r\n"
        );
        let resp = common::exchange(addr, raw.as_bytes()).unwrap();
        assert_eq!(resp.status, 421, "{n}");
        assert_eq!(resp.reason(), "host_not_allowed");
    }
    // And one with an origin that is not allowed.
    let resp = http(
        addr,
        "GET",
        "/v1/whoami",
        &[
            ("Authorization", "Bearer pt_stranger_origin"),
            ("Origin", "http://evil.example"),
        ],
        None,
    );
    assert_eq!(resp.status, 403);

    // Then a few admitted requests. A good token is read twice (the engine checks
    // it, the log names its holder); a bad one once, by the engine that refuses it.
    const ADMITTED: i64 = 3;
    for _ in 0..ADMITTED {
        let resp = http(
            addr,
            "GET",
            "/v1/whoami",
            &[("Authorization", &format!("Bearer {alice}"))],
            None,
        );
        assert_eq!(resp.status, 200);
    }
    const BAD: i64 = 5;
    for n in 0..BAD {
        let auth = format!("Bearer pt_admitted_{n}");
        let resp = http(addr, "GET", "/v1/whoami", &[("Authorization", &auth)], None);
        assert_eq!(
            (resp.status, resp.reason().as_str()),
            (401, "token_invalid")
        );
    }
    let expected = 2 * ADMITTED + BAD;
    let deadline = Instant::now() + Duration::from_secs(30);
    while token_reads(&base, &forum) - before < expected {
        assert!(
            Instant::now() < deadline,
            "the admitted lookups never showed in the statistics"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Statistics arrive within about a second of a connection going idle: give
    // any late ones time, then count.
    std::thread::sleep(Duration::from_secs(3));
    let reads = token_reads(&base, &forum) - before;
    assert!(
        reads < expected + STRANGERS,
        "{reads} reads of the tokens table: the strangers' tokens were looked up"
    );
    assert_eq!(
        reads, expected,
        "reads of the tokens table: {ADMITTED} good tokens twice, {BAD} bad ones once"
    );
    // The server still answers a loopback host, without a token.
    assert_eq!(
        get_with_host(addr, "/v1/manifest", Some("localhost")).status,
        200
    );
    server.terminate();
}

/// A post to a forum in PostgreSQL whose body does not come is judged by its
/// token after a moment, and a bad token is refused then, the body still unread.
/// A bad token still wins over a bad `Idempotency-Key` when the body did come.
#[test]
fn a_shared_forum_refuses_a_stalled_post_with_a_bad_token() {
    use std::io::Write;

    let Some(base) = pg::server() else { return };
    let url = pg::fresh_url(&base, "stall");
    let out = Command::new(BIN)
        .args(["--db", &url, "token", "create", "alice"])
        .env_remove("PARLEY_DB")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A body timeout far past the bound: only a refusal that does not wait for
    // the body comes in time.
    let server = Server::start(Path::new(&url), None, &["--body-timeout-ms", "600000"]);
    let addr = server.addr;
    let mut stream = common::connect(addr);
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer pt_stranger\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).unwrap();
    match common::wait_for_close(&mut stream, Duration::from_secs(10)) {
        common::Ending::Closed(data) => {
            let resp = common::parse(&data).expect("an answer");
            assert_eq!(resp.status, 401);
            assert_eq!(resp.reason(), "token_invalid");
            assert_eq!(resp.header("connection"), Some("close"));
        }
        common::Ending::Open => panic!("the stalled post is still held"),
    }
    let body = r#"{"kind": "ask", "body": "Which key?"}"#;
    let resp = http(
        addr,
        "POST",
        "/v1/messages",
        &[
            ("Authorization", "Bearer pt_stranger"),
            ("Content-Type", "application/json"),
            ("Idempotency-Key", "a"),
            ("Idempotency-Key", "b"),
        ],
        Some(body.as_bytes()),
    );
    assert_eq!(
        (resp.status, resp.reason().as_str()),
        (401, "token_invalid")
    );
    server.terminate();
}

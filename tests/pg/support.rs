//! The PostgreSQL server of the tests: `tests/pg/server.sh` starts a throwaway one
//! and sets `PARLEY_TEST_PG`. Each test opens forums of its own (a schema each),
//! so tests run in parallel on one server.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

/// The server's URL, or `None` when none was started. With
/// `PARLEY_TEST_PG_REQUIRED` set (the test command sets it), a missing server
/// fails the test instead of skipping it. Its forums open through the backend's
/// crate (`parley_postgres::open`), a dependency of every package whose tests
/// include this file.
pub fn server() -> Option<String> {
    match std::env::var("PARLEY_TEST_PG") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("PARLEY_TEST_PG_REQUIRED").is_none(),
                "PARLEY_TEST_PG_REQUIRED is set but PARLEY_TEST_PG is not"
            );
            eprintln!("skipped: no PostgreSQL server (source tests/pg/server.sh && pg_start)");
            None
        }
    }
}

/// A forum name no other test (of this or an earlier run) uses.
pub fn fresh_name(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("t{}_{}_{n}_{nanos}", std::process::id(), tag)
        .chars()
        .take(40)
        .collect()
}

/// The URL of a new forum on the server.
pub fn fresh_url(base: &str, tag: &str) -> String {
    with_forum(base, &fresh_name(tag))
}

/// `base` naming the forum `name`.
pub fn with_forum(base: &str, name: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}forum={name}")
}

/// The number of an id such as `msg_12`.
pub fn num(id: &serde_json::Value) -> u64 {
    id.as_str()
        .and_then(|s| s.split('_').nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an id: {id}"))
}

/// A test's forums, each named by its backend: one in a redb file, and one on
/// PostgreSQL when a server was started, each opened with a config `config` makes.
pub fn forums(
    tag: &str,
    config: impl Fn() -> parley_forum::Config,
) -> Vec<(String, parley_forum::Forum, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let redb = parley_forum::Forum::open(dir.path().join("forum.redb"), config()).unwrap();
    let mut all = vec![("redb".to_string(), redb, Some(dir))];
    if let Some(base) = server() {
        let pg = parley_postgres::open(fresh_url(&base, tag), config()).unwrap();
        all.push(("postgres".to_string(), pg, None));
    }
    all
}

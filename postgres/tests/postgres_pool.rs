//! A forum in PostgreSQL holds at most `max_connections` connections for its calls
//! (one more listens for other engines' commits), however many calls arrive at
//! once: the others wait for a free one, up to the connect timeout, and are then
//! refused. The database's connections are left for everyone else sharing it.

#[path = "../../tests/pg/support.rs"]
mod support;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parley_forum::{Config, Error, Forum, Right, TokenSpec};
use serde_json::json;

/// The connections open under `app` (the URL's `application_name`).
fn connections(client: &mut postgres::Client, app: &str) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .expect("counts")
        .get(0)
}

/// Samples the connections of `app` until `stop`, keeping the most seen.
fn sampler(
    base: &str,
    app: &str,
    stop: Arc<AtomicBool>,
) -> (Arc<AtomicI64>, std::thread::JoinHandle<()>) {
    let most = Arc::new(AtomicI64::new(0));
    let (m, base, app) = (Arc::clone(&most), base.to_string(), app.to_string());
    let handle = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
        while !stop.load(Ordering::Relaxed) {
            m.fetch_max(connections(&mut client, &app), Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    (most, handle)
}

/// A new forum on a URL with `params`: the forum, a token, its connections'
/// application name and its schema.
fn open(base: &str, tag: &str, params: &str) -> (Forum, String, String, String) {
    let app = support::fresh_name(tag);
    let name = support::fresh_name(tag);
    let url = format!(
        "{}&application_name={app}&{params}",
        support::with_forum(base, &name)
    );
    let forum = parley_postgres::open(&url, Config::default()).expect("opens");
    let token = forum
        .create_token(&TokenSpec::llm("bob", &[Right::Read, Right::Write]))
        .expect("a token");
    (forum, token, app, format!("parley_{name}"))
}

#[test]
fn many_parallel_calls_never_hold_more_connections_than_max_connections() {
    let Some(base) = support::server() else {
        return;
    };
    let (forum, token, app, _) = open(&base, "cap", "max_connections=4");
    let forum = Arc::new(forum);
    let stop = Arc::new(AtomicBool::new(false));
    let (most, sampling) = sampler(&base, &app, Arc::clone(&stop));
    let started = Instant::now();
    let workers: Vec<_> = (0..48)
        .map(|n| {
            let (forum, token) = (Arc::clone(&forum), token.clone());
            std::thread::spawn(move || {
                for i in 0..6 {
                    let (op, args) = if (n + i) % 3 == 0 {
                        (
                            "post",
                            json!({"parley": "1", "kind": "ask", "body": format!("q {n} {i}")}),
                        )
                    } else {
                        ("list_threads", json!({}))
                    };
                    forum.call(Some(&token), op, &args).expect("served");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("every call was served");
    }
    stop.store(true, Ordering::Relaxed);
    sampling.join().unwrap();
    let most = most.load(Ordering::Relaxed);
    assert!(
        most <= 4 + 1,
        "{most} connections were open: 4 for calls and the listener's at most"
    );
    assert!(most >= 2, "the sampler saw the calls' connections ({most})");
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_call_that_finds_every_connection_busy_waits_then_is_refused_clearly() {
    let Some(base) = support::server() else {
        return;
    };
    // A lock is waited for 5 s at most, so that a pool without a cap (whose
    // second call would wait behind the lock too) fails the test in bounded time.
    let (forum, token, app, schema) = open(
        &base,
        "busy",
        "max_connections=1&connect_timeout=1&options=-c%20lock_timeout%3D5000",
    );
    let forum = Arc::new(forum);
    // Another client locks the tokens table: the call that holds the forum's one
    // connection waits for it, as a call would behind a slow statement.
    let mut locker = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    let mut lock = locker.transaction().expect("begins");
    lock.batch_execute(&format!(
        "LOCK TABLE {schema}.tokens IN ACCESS EXCLUSIVE MODE"
    ))
    .expect("locks");
    let holder = {
        let (forum, token) = (Arc::clone(&forum), token.clone());
        std::thread::spawn(move || forum.call(Some(&token), "whoami", &json!({})))
    };
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let err = forum
        .call(Some(&token), "whoami", &json!({}))
        .expect_err("no connection is free");
    let waited = started.elapsed();
    assert!(matches!(err, Error::Storage(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("all 1 connections") && text.contains("max_connections"),
        "{text}"
    );
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(3),
        "waited for the connect timeout (1 s), not more: {waited:?}"
    );
    let mut probe = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    assert!(
        connections(&mut probe, &app) <= 2,
        "one for calls, one listening"
    );
    lock.rollback().expect("unlocks");
    holder
        .join()
        .unwrap()
        .expect("the waiting call is served once the lock is gone");
    forum
        .call(Some(&token), "whoami", &json!({}))
        .expect("the freed connection serves the next call");
}

//! What the coordination tests share: forums on redb and PostgreSQL with a clock
//! the test moves, tokens, and the generic call.

#![allow(dead_code)]

#[path = "../pg/support.rs"]
pub mod support;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parley_forum::{Config, Error, Forum, Reason, Refusal, Right, TokenSpec};
use serde_json::Value;

/// 2026-11-30T12:00:00.000Z
pub const T0: i64 = 1_796_040_000_000;

/// A clock the test moves.
#[derive(Clone)]
pub struct Clock(pub Arc<AtomicI64>);

impl Clock {
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

pub fn config(settings: Value, clock: &Clock) -> Config {
    let mut config = Config::from_json(&settings).unwrap();
    let at = Arc::clone(&clock.0);
    config.clock = Arc::new(move || at.load(Ordering::SeqCst));
    config
}

/// The forums a test runs on: a redb file, and a PostgreSQL forum when a server
/// was started (`source tests/pg/server.sh && pg_start`), each with its clock.
pub fn forums(
    tag: &str,
    settings: Value,
) -> Vec<(String, Forum, Clock, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock(Arc::new(AtomicI64::new(T0)));
    let redb = Forum::open(
        dir.path().join("forum.redb"),
        config(settings.clone(), &clock),
    )
    .unwrap();
    let mut all = vec![("redb".to_string(), redb, clock, Some(dir))];
    if let Some(base) = support::server() {
        let clock = Clock(Arc::new(AtomicI64::new(T0)));
        let pg = parley_postgres::open(support::fresh_url(&base, tag), config(settings, &clock))
            .unwrap();
        all.push(("postgres".to_string(), pg, clock, None));
    }
    all
}

pub fn llm(forum: &Forum, handle: &str, rights: &[Right]) -> String {
    forum.create_token(&TokenSpec::llm(handle, rights)).unwrap()
}

pub fn rw(forum: &Forum, handle: &str) -> String {
    llm(forum, handle, &[Right::Read, Right::Write])
}

pub fn call(forum: &Forum, token: &str, op: &str, args: Value) -> parley_forum::Result<Value> {
    forum.call(Some(token), op, &args)
}

pub fn ok(forum: &Forum, token: &str, op: &str, args: Value) -> Value {
    call(forum, token, op, args.clone()).unwrap_or_else(|e| panic!("{op} {args}: {e}"))
}

pub fn refused(outcome: parley_forum::Result<Value>) -> Refusal {
    match outcome {
        Err(Error::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub fn reason(outcome: parley_forum::Result<Value>) -> Reason {
    refused(outcome).reason
}

//! What the guards tests share (SPEC §15): settings with the rate limit off,
//! forums on redb and PostgreSQL, a cast of agents and a person, posts, and
//! the loops that the guards stop.

#![allow(dead_code)]

#[path = "../pg/support.rs"]
mod support;

use parley_forum::{Config, Error, Forum, Refusal, Right, TokenSpec};
use serde_json::{json, Value};

/// The default limits but the rate limit, with `extra` settings on top.
pub fn settings(extra: Value) -> Config {
    let mut s = json!({ "limits": { "writes_per_minute": 0 } });
    for (k, v) in extra.as_object().unwrap() {
        if k == "limits" {
            for (name, n) in v.as_object().unwrap() {
                s["limits"][name] = n.clone();
            }
        } else {
            s[k] = v.clone();
        }
    }
    Config::from_json(&s).unwrap()
}

/// The forums a test runs on: a redb file, and a PostgreSQL forum when a server
/// was started (`source tests/pg/server.sh && pg_start`).
pub fn forums(tag: &str, extra: Value) -> Vec<(String, Forum, Option<tempfile::TempDir>)> {
    support::forums(tag, || settings(extra.clone()))
}

pub struct Cast {
    pub bob: String,
    pub carol: String,
    pub dave: String,
    pub ann: String,
}

pub fn cast(forum: &Forum) -> Cast {
    let llm = |h: &str| {
        forum
            .create_token(&TokenSpec::llm(h, &[Right::Read, Right::Write]))
            .unwrap()
    };
    Cast {
        bob: llm("bob"),
        carol: llm("carol"),
        dave: llm("dave"),
        ann: forum.create_token(&TokenSpec::human("ann")).unwrap(),
    }
}

pub fn post(forum: &Forum, token: &str, envelope: Value) -> parley_forum::Result<Value> {
    forum.call(Some(token), "post", &envelope)
}

pub fn refusal(outcome: parley_forum::Result<Value>) -> Refusal {
    match outcome {
        Err(Error::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub fn id(v: &Value, path: &str) -> String {
    v.pointer(path).and_then(Value::as_str).unwrap().to_string()
}

pub fn since(forum: &Forum, token: &str, thread: &str) -> Value {
    forum
        .call(Some(token), "get_thread", &json!({ "thread": thread }))
        .unwrap()["thread"]["since_progress"]
        .clone()
}

/// Bob asks, Carol answers: the thread is `answered`, the count 0. Returns the
/// thread and Carol's answer.
pub fn answered(forum: &Forum, c: &Cast) -> (String, String) {
    let asked = post(
        forum,
        &c.bob,
        json!({ "kind": "ask", "body": "Can we deploy the release today?" }),
    )
    .unwrap();
    let thread = id(&asked, "/thread/id");
    let answer = post(
        forum,
        &c.carol,
        json!({ "kind": "answer", "thread": thread, "body": "Yes, the build is green." }),
    )
    .unwrap();
    assert_eq!(answer["thread"]["since_progress"], 0);
    (thread, id(&answer, "/message/id"))
}

/// Bob and Carol trade `n` acknowledgements (tagged `round`), starting with
/// Bob's reply to `last`: Bob replies to Carol's last, Carol to Bob's question
/// (so that the tree stays shallow). Returns how many were accepted before the
/// first refusal, and that refusal.
pub fn ping_pong(
    forum: &Forum,
    c: &Cast,
    thread: &str,
    round: &str,
    last: &str,
    n: usize,
) -> (usize, Option<Refusal>) {
    let mut last = last.to_string();
    for i in 0..n {
        let body = format!("Thanks for {i}, noted number {i} {round}.");
        let (token, envelope) = if i % 2 == 0 {
            (
                &c.bob,
                json!({ "kind": "note", "parent": last, "body": body }),
            )
        } else {
            (
                &c.carol,
                json!({ "kind": "note", "thread": thread, "body": body }),
            )
        };
        match post(forum, token, envelope) {
            Ok(v) => {
                assert_eq!(v["thread"]["since_progress"], (i + 1) as u64);
                last = id(&v, "/message/id");
            }
            Err(Error::Refused(r)) => return (i, Some(r)),
            Err(e) => panic!("{e}"),
        }
    }
    (n, None)
}

/// `answered` without the summary's count (the profile is off).
pub fn answered_off(forum: &Forum, c: &Cast) -> (String, String) {
    let asked = post(
        forum,
        &c.bob,
        json!({ "kind": "ask", "body": "Deploy today?" }),
    )
    .unwrap();
    let answer = post(
        forum,
        &c.carol,
        json!({ "kind": "answer", "parent": id(&asked, "/message/id"), "body": "Yes, green." }),
    )
    .unwrap();
    (id(&asked, "/thread/id"), id(&answer, "/message/id"))
}

//! The forum file's format 1 (`src/store/redb/format.rs`): a file written by
//! this version opens, and every read, replay, conflict and expiry works on its
//! posts; a file of a newer format is refused without a byte changed.
//!
//! `tests/fixtures/forum-v1.redb` and its tokens (`forum-v1.tokens.json`) were
//! written by [`write_the_fixture`], an ignored test that makes them anew:
//! `cargo test -p parley-forum --test format -- --ignored write_the_fixture`.
//! Do that only for a new format (as `forum-v2.redb`, keeping this one): the
//! fixture of a released format must stay as it was written. It holds: alice
//! asks with key `q1` (msg_1, th_1), bob answers with `r1` (msg_2), bob asks
//! without a key (msg_3, th_2), alice notes with `n2` (msg_4) and asserts with
//! `c1` (msg_5, cl_1).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parley_forum::{Config, Error, Forum, Reason, Right, TokenSpec};
use redb::{ReadableDatabase, ReadableTable};
use serde_json::{json, Value};

const META: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("parley_meta");
/// The fixture's clock: 2026-12-01T12:00:00Z.
const START: i64 = 1_796_040_000_000;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A copy of the fixture, and its tokens.
fn fixture() -> (tempfile::TempDir, PathBuf, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    std::fs::copy(fixtures().join("forum-v1.redb"), &path).unwrap();
    let tokens = std::fs::read_to_string(fixtures().join("forum-v1.tokens.json")).unwrap();
    (dir, path, serde_json::from_str(&tokens).unwrap())
}

/// The forum with a clock that the test moves.
fn open(path: &Path, now: &Arc<AtomicI64>) -> Forum {
    let mut config = Config::from_json(&json!({
        "limits": { "writes_per_minute": 0, "idempotency_ttl_s": 3600 }
    }))
    .unwrap();
    let clock = Arc::clone(now);
    config.clock = Arc::new(move || clock.load(Ordering::SeqCst));
    Forum::open(path, config).unwrap()
}

fn set_format(path: &Path, format: u64) {
    let db = redb::Database::open(path).unwrap();
    let w = db.begin_write().unwrap();
    w.open_table(META)
        .unwrap()
        .insert("format", format)
        .unwrap();
    w.commit().unwrap();
}

fn format_of(path: &Path) -> Option<u64> {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let v = txn
        .open_table(META)
        .unwrap()
        .get("format")
        .unwrap()
        .map(|v| v.value());
    v
}

fn ids(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn replay_of(result: &Value) -> (Option<&str>, Option<bool>) {
    (
        result["message"]["id"].as_str(),
        result["replayed"].as_bool(),
    )
}

const FIRST_ASK: &str = "Why does the cache port fail after upgrade?";

/// Writes the fixture anew (see the module's docs before running it).
#[test]
#[ignore = "writes tests/fixtures/forum-v1.redb: run only to make a new format's fixture"]
fn write_the_fixture() {
    let path = fixtures().join("forum-v1.redb");
    let _ = std::fs::remove_file(&path);
    let now = Arc::new(AtomicI64::new(START));
    let forum = open(&path, &now);
    let rights = [Right::Read, Right::Write];
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &rights))
        .unwrap();
    let bob = forum.create_token(&TokenSpec::llm("bob", &rights)).unwrap();
    let post = |token: &str, envelope: Value| {
        now.fetch_add(1000, Ordering::SeqCst);
        forum.call(Some(token), "post", &envelope).unwrap()
    };
    post(
        &alice,
        json!({ "kind": "ask", "body": FIRST_ASK, "idempotency_key": "q1" }),
    );
    post(
        &bob,
        json!({ "kind": "answer", "thread": "th_1", "body": "The port moved to 6380.",
                "idempotency_key": "r1" }),
    );
    post(
        &bob,
        json!({ "kind": "ask", "body": "Who owns the deploy scripts?" }),
    );
    post(
        &alice,
        json!({ "kind": "note", "thread": "th_1", "parent": "msg_2",
                "body": "Confirmed on staging.", "idempotency_key": "n2" }),
    );
    post(
        &alice,
        json!({ "kind": "assert", "thread": "th_1", "parent": "msg_2",
                "body": "The cache port is 6380 since the upgrade.",
                "evidence": [ { "kind": "log", "ref": "deploy/cache.log" } ],
                "idempotency_key": "c1" }),
    );
    drop(forum);
    let tokens = json!({ "alice": alice, "bob": bob });
    std::fs::write(
        fixtures().join("forum-v1.tokens.json"),
        serde_json::to_string_pretty(&tokens).unwrap() + "\n",
    )
    .unwrap();
}

#[test]
fn the_fixture_of_format_1_opens_and_keeps_every_post_and_key() {
    let (_dir, path, tokens) = fixture();
    assert_eq!(format_of(&path), Some(1));
    let (alice, bob) = (
        tokens["alice"].as_str().unwrap(),
        tokens["bob"].as_str().unwrap(),
    );
    let now = Arc::new(AtomicI64::new(START + 6_000));
    let report = parley_forum::storage::check(&path).unwrap();
    assert_eq!(report.schema_version, 1);
    assert_eq!((report.messages, report.threads), (5, 2));
    assert_eq!((report.tokens, report.claims), (2, 1));
    assert!(report.unreadable.is_empty(), "{:?}", report.unreadable);
    let forum = open(&path, &now);
    let feed = forum
        .call(Some(alice), "get_messages", &json!({ "limit": 10 }))
        .unwrap();
    assert_eq!(
        ids(&feed["items"]),
        ["msg_1", "msg_2", "msg_3", "msg_4", "msg_5"]
    );
    // The thread list, in the order of their latest messages; reads by id and
    // by thread, and search, find the messages.
    let list = forum.call(Some(bob), "list_threads", &json!({})).unwrap();
    assert_eq!(ids(&list["items"]), ["th_2", "th_1"]);
    let open_ones = forum
        .call(Some(bob), "list_threads", &json!({ "state": "open" }))
        .unwrap();
    assert_eq!(ids(&open_ones["items"]), ["th_2"]);
    let thread = forum
        .call(Some(bob), "get_thread", &json!({ "thread": "th_1" }))
        .unwrap();
    assert_eq!(ids(&thread["messages"]), ["msg_1"], "one root");
    assert_eq!(thread["messages"][0]["replies"][0]["id"], "msg_2");
    let found = forum
        .call(Some(bob), "search", &json!({ "q": "cache port" }))
        .unwrap();
    let hits: Vec<_> = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["message"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(hits, ["msg_5", "msg_1"]);
    let claim = forum
        .call(Some(bob), "get_claim", &json!({ "claim": "cl_1" }))
        .unwrap();
    assert_eq!(claim["message"], "msg_5");
    let inbox = forum.call(Some(alice), "get_inbox", &json!({})).unwrap();
    assert!(inbox["items"].is_array(), "{inbox}");
    // A retry of a keyed post replays it; another envelope under its key is
    // refused; a new post is numbered after the old ones.
    let first_ask = json!({ "kind": "ask", "body": FIRST_ASK, "idempotency_key": "q1" });
    let replay = forum.call(Some(alice), "post", &first_ask).unwrap();
    assert_eq!(replay_of(&replay), (Some("msg_1"), Some(true)));
    let conflict = forum
        .call(
            Some(bob),
            "post",
            &json!({ "kind": "answer", "thread": "th_1", "body": "Another answer.",
                     "idempotency_key": "r1" }),
        )
        .unwrap_err();
    assert_eq!(
        conflict.refusal().map(|r| r.reason),
        Some(Reason::IdempotencyConflict)
    );
    let new = forum
        .call(
            Some(bob),
            "post",
            &json!({ "kind": "note", "thread": "th_1", "parent": "msg_1",
                     "body": "Still failing here.", "idempotency_key": "new-1" }),
        )
        .unwrap();
    assert_eq!(new["message"]["id"], "msg_6");
    // Past the limit the old keys are free again.
    now.fetch_add(3_600_000 + 5_000, Ordering::SeqCst);
    let new_q1 = json!({ "kind": "ask", "body": "A new question under an old key.",
                         "idempotency_key": "q1" });
    let again = forum.call(Some(alice), "post", &new_q1).unwrap();
    assert!(again.get("replayed").is_none(), "a new post, not a replay");
    assert_eq!(again["message"]["id"], "msg_7");
    drop(forum);
    // Reopened: the new `q1` replays, and a forgotten key stays forgotten.
    let forum = open(&path, &now);
    let replay = forum.call(Some(alice), "post", &new_q1).unwrap();
    assert_eq!(replay_of(&replay), (Some("msg_7"), Some(true)));
    let fresh = forum
        .call(
            Some(bob),
            "post",
            &json!({ "kind": "note", "thread": "th_1", "parent": "msg_1",
                     "body": "A new note under a forgotten key.", "idempotency_key": "r1" }),
        )
        .unwrap();
    assert!(fresh.get("replayed").is_none(), "`r1` was forgotten");
    assert_eq!(fresh["message"]["id"], "msg_8");
}

#[test]
fn a_file_of_a_newer_format_is_refused_and_loses_nothing() {
    let (_dir, path, tokens) = fixture();
    set_format(&path, 2);
    let before = std::fs::read(&path).unwrap();
    let now = Arc::new(AtomicI64::new(START + 6_000));
    let mut config = Config::from_json(&json!({})).unwrap();
    let clock = Arc::clone(&now);
    config.clock = Arc::new(move || clock.load(Ordering::SeqCst));
    let Err(err) = Forum::open(&path, config) else {
        panic!("a newer format must be refused")
    };
    assert!(
        matches!(
            err,
            Error::SchemaTooNew {
                found: 2,
                supported: 1
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains('2'), "names the format: {err}");
    assert!(
        std::fs::read(&path).unwrap() == before,
        "not one byte of the file changed"
    );
    assert!(parley_forum::storage::check(&path).is_err());
    // Everything is still there for the release that wrote it.
    set_format(&path, 1);
    let forum = open(&path, &now);
    let feed = forum
        .call(
            Some(tokens["bob"].as_str().unwrap()),
            "get_messages",
            &json!({ "limit": 10 }),
        )
        .unwrap();
    assert_eq!(feed["items"].as_array().unwrap().len(), 5);
}

//! Forum files written by older schema versions open as version 6, and every
//! read, replay, conflict and expiry works on their posts as on new ones.
//!
//! - `tests/fixtures/forum-v3.redb`, made by the release before version 4 through
//!   the Python module, and `forum-v4.redb` and `forum-v5.redb`, made by the
//!   releases before versions 5 and 6 through the Rust API, hold the same posts: alice asks with key `q1` (msg_1,
//!   th_1), bob answers with `r1` (msg_2), bob asks without a key (msg_3, th_2),
//!   alice notes with `n2` (msg_4) and asserts with `c1` (msg_5, cl_1).
//! - Version 4 moved the message map and the keys' digests; version 5 keeps the
//!   idempotency records of the word index's tail (here, all five posts) out of
//!   the index until the tail is merged; version 6 keeps the tail's threads (here,
//!   both) out of the thread list's blocks until then.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parley_forum::{Config, Forum, Reason};
use redb::ReadableDatabase;
use serde_json::{json, Value};

const INDEX: redb::TableDefinition<&[u8], u64> = redb::TableDefinition::new("index");
const META: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("parley_meta");
const PLACES: redb::TableDefinition<(u8, u64), &[u8]> = redb::TableDefinition::new("places");

/// A copy of the fixture of schema `version`, and its tokens.
fn fixture(version: u32) -> (tempfile::TempDir, PathBuf, Value) {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    std::fs::copy(here.join(format!("forum-v{version}.redb")), &path).unwrap();
    let tokens =
        std::fs::read_to_string(here.join(format!("forum-v{version}.tokens.json"))).unwrap();
    (dir, path, serde_json::from_str(&tokens).unwrap())
}

/// The forum with a clock that the test moves, set just after the fixture's
/// last post, so that its keys are still within their limit.
fn open(path: &Path, now: &Arc<AtomicI64>) -> Forum {
    let mut config = Config::from_json(&json!({
        "limits": { "writes_per_minute": 0, "idempotency_ttl_s": 3600 }
    }))
    .unwrap();
    let clock = Arc::clone(now);
    config.clock = Arc::new(move || clock.load(Ordering::SeqCst));
    Forum::open(path, config).unwrap()
}

/// Entries of the index under one tag.
fn tagged(path: &Path, tag: u8) -> usize {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let index = txn.open_table(INDEX).unwrap();
    let (lo, hi) = ([tag], [tag + 1]);
    let n = index.range(&lo[..]..&hi[..]).unwrap().count();
    drop(index);
    n
}

/// Entries of the messages table under thread 0, where version 4 kept the
/// message map.
fn map_in_messages(path: &Path) -> usize {
    let messages: redb::TableDefinition<(u64, u64), &[u8]> = redb::TableDefinition::new("messages");
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(messages).unwrap();
    let n = table.range((0, 0)..=(0, u64::MAX)).unwrap().count();
    drop(table);
    n
}

/// Blocks of the thread lists (every slot of `places` but the message map's).
fn list_blocks(path: &Path) -> usize {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(PLACES).unwrap();
    let n = table.range((0, 0)..(u8::MAX, 0)).unwrap().count();
    drop(table);
    n
}

fn meta(path: &Path, key: &str) -> Option<u64> {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let v = txn
        .open_table(META)
        .unwrap()
        .get(key)
        .unwrap()
        .map(|v| v.value());
    v
}

/// The message id of a post's result, and its `replayed` flag.
fn replay_of(result: &Value) -> (Option<&str>, Option<bool>) {
    (
        result["message"]["id"].as_str(),
        result["replayed"].as_bool(),
    )
}

fn ids(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_version_3_file_opens_as_version_6_and_keeps_every_post_and_key() {
    let (_dir, path, tokens) = fixture(3);
    assert_eq!(meta(&path, "schema_version"), Some(3));
    assert_eq!(tagged(&path, 1), 5, "version 3: one map entry per message");
    assert_eq!(tagged(&path, 6), 4, "version 3: the age index of four keys");
    assert_eq!(
        tagged(&path, 2),
        2,
        "version 3: the thread list in the index"
    );
    // As the Python session sent it: with `parley`.
    let first_ask = json!({ "parley": "1", "kind": "ask",
                            "body": "Why does the cache port fail after upgrade?",
                            "idempotency_key": "q1" });
    keeps_every_post_and_key(&path, &tokens, &first_ask);
}

#[test]
fn a_version_4_file_opens_as_version_6_and_keeps_every_post_and_key() {
    let (_dir, path, tokens) = fixture(4);
    assert_eq!(meta(&path, "schema_version"), Some(4));
    assert_eq!(tagged(&path, 7), 4, "version 4: every keyed post's record");
    assert_eq!(
        map_in_messages(&path),
        1,
        "version 4: the map in the messages"
    );
    assert_eq!(
        tagged(&path, 2),
        2,
        "version 4: the thread list in the index"
    );
    let first_ask = json!({ "kind": "ask",
                            "body": "Why does the cache port fail after upgrade?",
                            "idempotency_key": "q1" });
    keeps_every_post_and_key(&path, &tokens, &first_ask);
}

#[test]
fn a_version_5_file_opens_as_version_6_and_keeps_every_post_and_key() {
    let (_dir, path, tokens) = fixture(5);
    assert_eq!(meta(&path, "schema_version"), Some(5));
    assert_eq!(
        list_blocks(&path),
        2,
        "version 5: the tail's threads in their lists (open and answered)"
    );
    let first_ask = json!({ "kind": "ask",
                            "body": "Why does the cache port fail after upgrade?",
                            "idempotency_key": "q1" });
    keeps_every_post_and_key(&path, &tokens, &first_ask);
}

/// Opens the fixture at `path` and checks what it holds and how it behaves;
/// `first_ask` is msg_1's envelope as it was sent.
fn keeps_every_post_and_key(path: &Path, tokens: &Value, first_ask: &Value) {
    let path = path.to_path_buf();
    let (alice, bob) = (
        tokens["alice"].as_str().unwrap(),
        tokens["bob"].as_str().unwrap(),
    );

    let now = Arc::new(AtomicI64::new(0));
    {
        // The clock's start: read the last post's time through a first open.
        let forum = open(&path, &now);
        let feed = forum
            .call(Some(alice), "get_messages", &json!({ "limit": 10 }))
            .unwrap();
        let last = &feed["items"][4];
        let at = parley_forum::parse_time(last["created_at"].as_str().unwrap()).unwrap();
        now.store(at + 1000, Ordering::SeqCst);
        assert_eq!(
            ids(&feed["items"]),
            ["msg_1", "msg_2", "msg_3", "msg_4", "msg_5"]
        );
    }
    let report = parley_forum::storage::check(&path).unwrap();
    assert_eq!(report.schema_version, 6);
    assert_eq!((report.messages, report.threads), (5, 2));
    assert!(report.unreadable.is_empty(), "{:?}", report.unreadable);
    assert_eq!(tagged(&path, 1), 0, "the old map entries are gone");
    assert_eq!(tagged(&path, 6), 0, "the old age index is gone");
    assert_eq!(tagged(&path, 2), 0, "the thread list moved into its blocks");
    assert_eq!(map_in_messages(&path), 0, "the map moved to its own table");
    assert_eq!(
        list_blocks(&path),
        0,
        "the tail's threads are out of the lists' blocks until it is merged"
    );
    assert_eq!(
        tagged(&path, 7),
        0,
        "the tail's records are out of the index until it is merged"
    );
    assert_eq!(
        meta(&path, "keys_expired_through").unwrap_or(0),
        0,
        "the expiry starts before the oldest keyed post"
    );

    let forum = open(&path, &now);
    // The thread list, in the order of their latest messages; reads by id and
    // by thread, and search, find the old messages.
    let list = forum.call(Some(bob), "list_threads", &json!({})).unwrap();
    assert_eq!(ids(&list["items"]), ["th_2", "th_1"]);
    let asked = forum
        .call(Some(bob), "list_threads", &json!({ "state": "open" }))
        .unwrap();
    assert_eq!(ids(&asked["items"]), ["th_2"]);
    let thread = forum
        .call(Some(bob), "get_thread", &json!({ "thread": "th_1" }))
        .unwrap();
    assert_eq!(
        ids(&thread["messages"]),
        ["msg_1"],
        "one root; its replies nest under it"
    );
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

    // A retry of an old keyed post replays it; another envelope under its key is
    // refused; a new post is numbered after the old ones.
    let replay = forum.call(Some(alice), "post", first_ask).unwrap();
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

    // Past the limit the old keys are free again, and the next keyed post's pass
    // forgets their entries.
    now.fetch_add(3_600_000 + 5_000, Ordering::SeqCst);
    let new_q1 = json!({ "kind": "ask", "body": "A new question under an old key.",
                         "idempotency_key": "q1" });
    let again = forum.call(Some(alice), "post", &new_q1).unwrap();
    assert!(again.get("replayed").is_none(), "a new post, not a replay");
    assert_eq!(again["message"]["id"], "msg_7");
    drop(forum);
    assert_eq!(tagged(&path, 7), 0, "nothing merged yet");
    // The expiry passed the old keys and `new-1`, and stopped at the new `q1`.
    assert_eq!(meta(&path, "keys_expired_through"), Some(6));

    // Reopened, the tail's records are read again from its messages: the new
    // `q1` replays, and a forgotten key stays forgotten.
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

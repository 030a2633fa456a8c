//! Unit tests of the redb store.

use std::sync::Arc;

use redb::{Database, ReadableDatabase, TableDefinition};

use super::tables::{FORMAT_KEY, META};
use super::*;
use crate::protocol::state::State;
use crate::store::records::{EventRec, MessageRec, PostKey, Remembered, ThreadRec, ThreadSpot};
use crate::store::{Flow, Forgot};

/// An event record of thread 1, numbered `id`.
fn event(id: u64) -> EventRec {
    EventRec {
        id,
        thread: 1,
        message: 1,
        change: crate::store::records::Change::State {
            from: State::Open,
            to: State::Closed,
            confirmation: false,
        },
        by_user: false,
        identity: "r:a".into(),
        extension: None,
        label: None,
        shown_label: None,
        confirmed: false,
        at: 0,
    }
}

#[test]
fn ids_follow_the_last_stored_key_and_commit_whole() {
    let store = RedbStore::in_memory().unwrap();
    let mut w = store.write().unwrap();
    assert_eq!(w.next_id(IdKind::Message).unwrap(), 1);
    w.put_event(&event(1)).unwrap();
    assert_eq!(w.next_id(IdKind::Event).unwrap(), 2);
    drop(w); // aborted: nothing stays
    assert_eq!(store.read().unwrap().last_id(IdKind::Event).unwrap(), 0);
    let mut w = store.write().unwrap();
    w.put_event(&event(1)).unwrap();
    w.commit().unwrap();
    assert_eq!(store.read().unwrap().last_id(IdKind::Event).unwrap(), 1);
}

#[test]
fn handed_out_ids_are_remembered_by_commits_and_forgotten_by_aborts() {
    let store = RedbStore::in_memory().unwrap();
    let mut w = store.write().unwrap();
    let first = w.next_id(IdKind::Event).unwrap();
    w.put_event(&event(first)).unwrap();
    assert_eq!(
        w.next_id(IdKind::Event).unwrap(),
        2,
        "numbered within the transaction"
    );
    w.put_event(&event(2)).unwrap();
    w.commit().unwrap();
    let mut w = store.write().unwrap();
    assert_eq!(w.next_id(IdKind::Event).unwrap(), 3);
    drop(w); // aborted: 3 was never stored
    let mut w = store.write().unwrap();
    assert_eq!(
        w.next_id(IdKind::Event).unwrap(),
        3,
        "an aborted id is handed out again"
    );
    w.put_event(&event(3)).unwrap();
    w.commit().unwrap();
    assert_eq!(store.read().unwrap().last_id(IdKind::Event).unwrap(), 3);
}

#[test]
fn a_failed_database_is_reopened_by_the_next_call() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&tmp.path().join("forum.redb"), Durability::Durable).unwrap();
    let mut w = store.write().unwrap();
    let id = w.next_id(IdKind::Event).unwrap();
    w.put_event(&event(id)).unwrap();
    w.commit().unwrap();
    // As after an I/O error: the slot is emptied while a snapshot still holds
    // the old database (and its lock on the file).
    let (old, txn) = store.begin(|db| db.begin_read()).unwrap();
    let snapshot = Snapshot {
        txn,
        _db: Arc::clone(&old),
    };
    store.failed(&old);
    drop(old);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(snapshot);
        });
        let mut w = store.write().unwrap();
        assert_eq!(
            w.next_id(IdKind::Event).unwrap(),
            2,
            "the ids survive the reopen"
        );
        w.put_event(&event(2)).unwrap();
        w.commit().unwrap();
    });
    assert_eq!(store.read().unwrap().last_id(IdKind::Event).unwrap(), 2);
}

#[test]
fn an_in_memory_forum_cannot_be_reopened() {
    let store = RedbStore::in_memory().unwrap();
    let db = store.database().unwrap();
    store.failed(&db);
    assert!(
        store.read().is_ok(),
        "in memory, `failed` is never called on I/O"
    );
}

#[test]
fn a_forum_open_for_writing_is_seen_as_held_and_left_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("forum.redb");
    let store = RedbStore::open(&path, Durability::Durable).unwrap();
    drop(store.write().unwrap());
    let before = std::fs::read(&path).unwrap();
    assert!(held_open(&path).unwrap(), "a store holds it");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the probe wrote nothing"
    );
    drop(store);
    assert!(!held_open(&path).unwrap(), "closed, nobody holds it");
    let foreign = tmp.path().join("notes.txt");
    std::fs::write(&foreign, "not redb").unwrap();
    assert!(held_open(&foreign).is_err(), "not a redb file");
}

#[test]
fn foreign_redb_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("forum.redb");
    {
        let db = Database::create(&dir).unwrap();
        let w = db.begin_write().unwrap();
        let t: TableDefinition<u64, u64> = TableDefinition::new("other");
        w.open_table(t).unwrap().insert(1, 1).unwrap();
        w.commit().unwrap();
    }
    let before = std::fs::read(&dir).unwrap();
    let err = RedbStore::open(&dir, Durability::Durable).err().unwrap();
    assert!(matches!(err, Error::NotAForum(_)), "{err}");
    assert!(err.to_string().contains("untouched"), "{err}");
    assert!(
        std::fs::read(&dir).unwrap() == before,
        "not one byte changed"
    );
}

#[test]
fn a_key_used_again_is_forgotten_once_with_its_newest_post() {
    let store = RedbStore::in_memory().unwrap();
    let mut w = store.write().unwrap();
    let mut thread = None;
    for (id, at) in [(1, 1_000), (2, 5_000)] {
        let mut message = MessageRec::bare(id, 1, None);
        message.created_at = at;
        message.key = Some(PostKey {
            key: "k".into(),
            digest: id * 10,
        });
        let mut rec = ThreadRec::bare(1, 1);
        rec.last_message = id;
        let rec = Arc::new(rec);
        w.put_post(&message, &rec, thread.as_ref(), &rec.spot())
            .unwrap();
        thread = Some(rec.spot());
        let post = Remembered {
            message: id,
            at,
            digest: id * 10,
        };
        w.remember("a", "k", &post).unwrap();
    }
    w.commit().unwrap();
    let (post, message) = store.read().unwrap().remembered("a", "k").unwrap().unwrap();
    assert_eq!((post.message, post.at, post.digest), (2, 5_000, 20));
    assert_eq!(message.id, 2);
    let mut w = store.write().unwrap();
    assert_eq!(
        w.forget_remembered(i64::MAX, 10).unwrap(),
        Forgot {
            keys: 1,
            more: false
        },
        "the key names the second post only: the first one has no entry left to forget"
    );
    assert!(w.remembered("a", "k").unwrap().is_none());
}

/// Three keyed posts at 1, 2 and 3 s and one without a key between them.
fn keyed_posts(store: &RedbStore) {
    let mut w = store.write().unwrap();
    let mut thread = None;
    for (id, at, key) in [
        (1, 1_000, Some("a")),
        (2, 1_500, None),
        (3, 2_000, Some("b")),
        (4, 3_000, Some("c")),
    ] {
        let mut message = MessageRec::bare(id, 1, None);
        message.created_at = at;
        message.key = key.map(|k| PostKey {
            key: k.into(),
            digest: id,
        });
        let mut rec = ThreadRec::bare(1, 1);
        rec.last_message = id;
        let rec = Arc::new(rec);
        w.put_post(&message, &rec, thread.as_ref(), &rec.spot())
            .unwrap();
        thread = Some(rec.spot());
        if let Some(k) = key {
            let post = Remembered {
                message: id,
                at,
                digest: id,
            };
            w.remember("a", k, &post).unwrap();
        }
    }
    w.commit().unwrap();
}

#[test]
fn expiry_forgets_the_expired_keys_oldest_first_and_stops_at_the_first_live_one() {
    let store = RedbStore::in_memory().unwrap();
    keyed_posts(&store);
    let mut w = store.write().unwrap();
    // Before 2.5 s: the keys of messages 1 and 3, not 4's.
    assert_eq!(
        w.forget_remembered(2_500, 10).unwrap(),
        Forgot {
            keys: 2,
            more: false
        }
    );
    assert!(w.remembered("a", "a").unwrap().is_none());
    assert!(w.remembered("a", "b").unwrap().is_none());
    assert!(w.remembered("a", "c").unwrap().is_some());
    w.commit().unwrap();
    // The expired entries are gone: a later pass finds nothing yet.
    let mut w = store.write().unwrap();
    assert_eq!(
        w.forget_remembered(2_500, 10).unwrap(),
        Forgot {
            keys: 0,
            more: false
        }
    );
    assert_eq!(w.forget_remembered(i64::MAX, 10).unwrap().keys, 1);
    assert!(w.remembered("a", "c").unwrap().is_none());
}

#[test]
fn an_expiry_pass_is_bounded_and_says_when_more_may_be_left() {
    let store = RedbStore::in_memory().unwrap();
    keyed_posts(&store);
    let mut w = store.write().unwrap();
    // At most one key a pass: the first pass stops after message 1's.
    assert_eq!(
        w.forget_remembered(i64::MAX, 1).unwrap(),
        Forgot {
            keys: 1,
            more: true
        }
    );
    assert!(w.remembered("a", "a").unwrap().is_none());
    assert!(w.remembered("a", "b").unwrap().is_some());
    assert_eq!(w.forget_remembered(i64::MAX, 1).unwrap().keys, 1);
    assert_eq!(w.forget_remembered(i64::MAX, 1).unwrap().keys, 1);
    assert_eq!(
        w.forget_remembered(i64::MAX, 1).unwrap(),
        Forgot {
            keys: 0,
            more: false
        }
    );
}

#[test]
fn a_newer_format_is_refused_and_the_file_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("forum.redb");
    drop(RedbStore::open(&path, Durability::Durable).unwrap());
    {
        let db = Database::create(&path).unwrap();
        let w = db.begin_write().unwrap();
        w.open_table(META)
            .unwrap()
            .insert(FORMAT_KEY, format::current() + 1)
            .unwrap();
        w.commit().unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = RedbStore::open(&path, Durability::Durable).err().unwrap();
    assert!(
        matches!(err, Error::SchemaTooNew { found, .. } if found == format::current() + 1),
        "{err}"
    );
    assert!(
        std::fs::read(&path).unwrap() == before,
        "not one byte changed"
    );
}

/// Posts messages `1..=n` with `body(id)`, each in a thread of its own
/// (`id % 7 + 1`), each in its own transaction, indexing their words.
fn post_bodies(store: &RedbStore, n: u64, body: impl Fn(u64) -> String) {
    let mut spots: std::collections::HashMap<u64, ThreadSpot> = Default::default();
    for id in 1..=n {
        let mut w = store.write().unwrap();
        let thread = id % 7 + 1;
        let mut message = MessageRec::bare(id, thread, None);
        message.body = body(id);
        let mut rec = ThreadRec::bare(thread, id);
        rec.last_message = id;
        let rec = Arc::new(rec);
        w.put_post(&message, &rec, spots.get(&thread), &rec.spot())
            .unwrap();
        w.index_words(id).unwrap();
        spots.insert(thread, rec.spot());
        w.commit().unwrap();
    }
}

fn found(store: &RedbStore, words: &[&str], before: u64) -> Vec<(u64, u64)> {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let mut out = Vec::new();
    store
        .read()
        .unwrap()
        .search_words(&words, before, &mut |m, t| {
            out.push((m, t));
            Ok(Flow::Continue)
        })
        .unwrap();
    out
}

#[test]
fn search_finds_words_in_segments_and_merged_blocks_alike() {
    let store = RedbStore::in_memory().unwrap();
    let n = words::MERGE_AT * 2 + 10;
    post_bodies(&store, n, |id| {
        let mut body = format!("Body {id} all");
        if id % 3 == 0 {
            body.push_str(" fizz");
        }
        if id % 5 == 0 {
            body.push_str(" buzz");
        }
        body
    });
    let want = |f: &dyn Fn(u64) -> bool, before: u64| -> Vec<(u64, u64)> {
        (1..before.min(n + 1))
            .rev()
            .filter(|id| f(*id))
            .map(|id| (id, id % 7 + 1))
            .collect()
    };
    for before in [u64::MAX, n, words::MERGE_AT + 1, 16, 1] {
        assert_eq!(
            found(&store, &["buzz", "fizz"], before),
            want(&|id| id % 15 == 0, before)
        );
        assert_eq!(
            found(&store, &["fizz"], before),
            want(&|id| id % 3 == 0, before)
        );
        assert_eq!(found(&store, &["all"], before), want(&|_| true, before));
    }
    assert_eq!(found(&store, &["30"], u64::MAX), vec![(30, 30 % 7 + 1)]);
    assert!(found(&store, &["fizz", "nothing"], u64::MAX).is_empty());
}

#[test]
fn the_thread_list_is_a_log_of_bumps_per_state() {
    let store = RedbStore::in_memory().unwrap();
    post_bodies(&store, 20, |id| format!("b{id}"));
    let list = |state: Option<State>, after: u64| {
        let mut out = Vec::new();
        store
            .read()
            .unwrap()
            .scan_activity(state, after, &mut |pos, thread| {
                out.push((pos, thread));
                Ok(Flow::Continue)
            })
            .unwrap();
        out
    };
    // Each of the 7 threads once, at its latest message.
    let all: Vec<(u64, u64)> = (14..=20).map(|id| (id, id % 7 + 1)).collect();
    assert_eq!(list(None, 0), all);
    assert_eq!(list(Some(State::Open), 0), all);
    assert_eq!(list(None, 17), all[4..].to_vec());
    assert!(list(Some(State::Closed), 0).is_empty());
}

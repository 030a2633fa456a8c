//! Unit tests of the redb store.

use super::*;
use crate::store::records::PostKey;

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

/// Stores message `id` in thread 1, the thread counting `count` messages.
fn post_to_thread_1(
    w: &mut dyn WriteTx,
    id: u64,
    count: u64,
    before: Option<&ThreadSpot>,
) -> Arc<ThreadRec> {
    let mut thread = ThreadRec::bare(1, 1);
    thread.message_count = count;
    thread.last_message = id;
    let thread = Arc::new(thread);
    w.put_post(
        &MessageRec::bare(id, 1, None),
        &thread,
        before,
        &thread.spot(),
    )
    .unwrap();
    thread
}

#[test]
fn writers_see_the_thread_records_of_commits_only() {
    let store = RedbStore::in_memory().unwrap();
    let seen_by_a_writer = |store: &RedbStore| {
        store
            .write()
            .unwrap()
            .thread(1)
            .unwrap()
            .unwrap()
            .message_count
    };
    let mut w = store.write().unwrap();
    let first = post_to_thread_1(&mut *w, 1, 1, None);
    w.commit().unwrap();
    assert_eq!(seen_by_a_writer(&store), 1, "the commit's record");

    let mut w = store.write().unwrap();
    post_to_thread_1(&mut *w, 2, 2, Some(&first.spot()));
    assert_eq!(
        w.thread(1).unwrap().unwrap().message_count,
        2,
        "a transaction sees its own write"
    );
    drop(w); // rolled back
    assert_eq!(
        seen_by_a_writer(&store),
        1,
        "a rolled-back record is not kept"
    );
    assert_eq!(
        store
            .read()
            .unwrap()
            .thread(1)
            .unwrap()
            .unwrap()
            .message_count,
        1
    );

    let mut w = store.write().unwrap();
    post_to_thread_1(&mut *w, 2, 2, Some(&first.spot()));
    w.commit().unwrap();
    assert_eq!(seen_by_a_writer(&store), 2, "the next commit's record");
}

#[test]
fn the_thread_cache_is_bounded() {
    let mut cache = HashMap::new();
    for id in 0..CACHED_THREADS as u64 {
        keep_thread(&mut cache, Arc::new(ThreadRec::bare(id, id)));
    }
    keep_thread(&mut cache, Arc::new(ThreadRec::bare(0, 9)));
    assert_eq!(cache.len(), CACHED_THREADS, "a kept thread is replaced");
    assert_eq!(cache[&0].root, 9);
    keep_thread(
        &mut cache,
        Arc::new(ThreadRec::bare(CACHED_THREADS as u64, 1)),
    );
    assert_eq!(cache.len(), 1, "when full, emptied before a new thread");
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
        store: &store,
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
fn newer_schema_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("forum.redb");
    {
        let db = Database::create(&dir).unwrap();
        let w = db.begin_write().unwrap();
        w.open_table(META)
            .unwrap()
            .insert("schema_version", SCHEMA_VERSION + 1)
            .unwrap();
        w.commit().unwrap();
    }
    let err = RedbStore::open(&dir, Durability::Durable).err().unwrap();
    assert!(matches!(err, Error::SchemaTooNew { found, .. } if found == SCHEMA_VERSION + 1));
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
    assert_eq!(std::fs::read(&dir).unwrap(), before, "not one byte changed");
}

#[test]
fn a_version_1_file_is_migrated_on_open() {
    use crate::{Config, Forum, Right, TokenSpec};
    use serde_json::json;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("forum.redb");
    let (token, thread) = {
        let forum = Forum::open(&path, Config::default()).unwrap();
        let token = forum
            .create_token(&TokenSpec::llm("a", &[Right::Read, Right::Write]))
            .unwrap();
        let asked = forum
            .call(Some(&token), "post", &json!({"kind": "ask", "body": "q?"}))
            .unwrap();
        let thread = asked["thread"]["id"].as_str().unwrap().to_string();
        let other = forum
            .create_token(&TokenSpec::llm("b", &[Right::Read, Right::Write]))
            .unwrap();
        forum
            .call(
                Some(&other),
                "post",
                &json!({"kind": "note", "thread": thread, "body": "n"}),
            )
            .unwrap();
        (token, thread)
    };
    // Rewrite the file as version 1 had it: thread records in their own table.
    {
        let db = Database::open(&path).unwrap();
        let w = db.begin_write().unwrap();
        {
            let mut messages = w.open_table(MESSAGES).unwrap();
            let mut threads = w.open_table(THREADS_V1).unwrap();
            let records: Vec<(u64, Vec<u8>)> = messages
                .iter()
                .unwrap()
                .map(|e| e.unwrap())
                .filter(|(k, _)| k.value().1 == THREAD_RECORD)
                .map(|(k, v)| (k.value().0, v.value().to_vec()))
                .collect();
            assert_eq!(records.len(), 1);
            for (id, record) in records {
                messages.remove((id, THREAD_RECORD)).unwrap();
                threads.insert(id, record.as_slice()).unwrap();
            }
            w.open_table(META)
                .unwrap()
                .insert("schema_version", 1)
                .unwrap();
        }
        w.commit().unwrap();
    }
    let forum = Forum::open(&path, Config::default()).unwrap();
    let view = forum
        .call(Some(&token), "get_thread", &json!({"thread": thread}))
        .unwrap();
    assert_eq!(view["thread"]["message_count"], 2);
    assert_eq!(view["messages"][0]["replies"].as_array().unwrap().len(), 1);
    let next = forum
        .call(
            Some(&token),
            "post",
            &json!({"kind": "ask", "body": "again?"}),
        )
        .unwrap();
    assert_eq!(
        next["thread"]["id"], "th_2",
        "thread ids go on after the migration"
    );
    drop(forum);
    let db = Database::open(&path).unwrap();
    let r = db.begin_read().unwrap();
    assert_eq!(
        r.open_table(META)
            .unwrap()
            .get("schema_version")
            .unwrap()
            .unwrap()
            .value(),
        SCHEMA_VERSION
    );
    assert!(r.open_table(THREADS_V1).is_err(), "the old table is gone");
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
    // The mark moved: a later pass starts after message 3 and finds nothing yet.
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
fn the_tail_s_records_are_read_again_after_a_reopen_and_a_snapshot_never_waits_for_them() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&tmp.path().join("forum.redb"), Durability::Durable).unwrap();
    keyed_posts(&store);
    // A snapshot finds a tail record, also beside a writer, and does not wait
    // while a commit holds the tail.
    let found = |store: &RedbStore| store.read().unwrap().remembered("a", "b").unwrap();
    assert!(found(&store).is_some());
    let w = store.write().unwrap();
    assert!(found(&store).is_some());
    assert!(w.remembered("a", "b").unwrap().is_some());
    drop(w);
    let committing = lock_tail(&store.tail);
    assert!(found(&store).is_none());
    drop(committing);
    // As after an I/O error: the next call reopens the file, and the next writer
    // reads the tail's records again from their messages.
    let db = store.database().unwrap();
    store.failed(&db);
    drop(db);
    drop(store.read().unwrap());
    assert!(store.tail_stale.load(Ordering::SeqCst));
    let w = store.write().unwrap();
    assert!(!store.tail_stale.load(Ordering::SeqCst));
    for key in ["a", "b", "c"] {
        assert!(w.remembered("a", key).unwrap().is_some(), "{key}");
    }
}

/// Stores message `id` of thread 1 with body `body` and indexes its words, as a
/// post does; returns the thread's new place.
fn post_words(w: &mut dyn WriteTx, id: u64, body: &str, before: Option<&ThreadSpot>) -> ThreadSpot {
    let mut message = MessageRec::bare(id, 1, None);
    message.body = body.into();
    let mut thread = ThreadRec::bare(1, 1);
    thread.message_count = id;
    thread.last_message = id;
    let thread = Arc::new(thread);
    w.put_post(&message, &thread, before, &thread.spot())
        .unwrap();
    w.index_words(id).unwrap();
    thread.spot()
}

/// What a search for "port" finds.
fn ports(r: &dyn ReadTx) -> Vec<(u64, u64)> {
    let mut found = Vec::new();
    r.search_words(&["port".to_string()], u64::MAX, &mut |m, t| {
        found.push((m, t));
        Ok(Flow::Continue)
    })
    .unwrap();
    found
}

/// The messages through `upto` whose body holds "port" (every third), newest first.
fn ports_through(upto: u64) -> Vec<(u64, u64)> {
    (1..=upto)
        .rev()
        .filter(|id| id % 3 == 0)
        .map(|id| (id, 1))
        .collect()
}

fn port_body(id: u64) -> String {
    if id.is_multiple_of(3) {
        format!("The PORT of message {id}")
    } else {
        format!("another word, {id}")
    }
}

/// How many of the store's tail's messages after merged mark `merged` hold
/// "port", if it holds them.
fn tail_ports(store: &RedbStore, merged: u64) -> Option<usize> {
    let tail = lock_tail(&store.tail);
    let held = tail.as_ref()?.words.through(merged, u64::MAX)?;
    Some(
        held.iter()
            .filter(|m| m.2.to_lowercase().contains("port"))
            .count(),
    )
}

/// A store whose word index's tail holds one message short of a merge (in one
/// committed batch), with its thread's place.
fn one_short_of_a_merge() -> (RedbStore, Option<ThreadSpot>) {
    let store = RedbStore::in_memory().unwrap();
    let mut w = store.write().unwrap();
    let mut spot = None;
    for id in 1..crate::store::words::MERGE_AT {
        spot = Some(post_words(&mut *w, id, &port_body(id), spot.as_ref()));
    }
    w.commit().unwrap();
    (store, spot)
}

#[test]
fn a_search_finds_the_tail_in_memory_and_in_an_older_snapshot_alike() {
    use crate::store::words::MERGE_AT;
    let (store, mut spot) = one_short_of_a_merge();
    assert_eq!(
        tail_ports(&store, 0),
        Some(ports_through(MERGE_AT - 1).len()),
        "the committed tail's words are in memory"
    );
    assert_eq!(ports(&*store.read().unwrap()), ports_through(MERGE_AT - 1));

    // An aborted post leaves the memory as it was.
    let mut w = store.write().unwrap();
    post_words(&mut *w, MERGE_AT, "port", spot.as_ref());
    drop(w);
    assert_eq!(
        tail_ports(&store, 0),
        Some(ports_through(MERGE_AT - 1).len())
    );

    // A snapshot from before the merge, read after it: the memory follows the new
    // mark, so the snapshot reads its own tail, and finds what it held.
    let older = store.read().unwrap();
    let mut w = store.write().unwrap();
    spot = Some(post_words(
        &mut *w,
        MERGE_AT,
        &port_body(MERGE_AT),
        spot.as_ref(),
    ));
    let after = post_words(&mut *w, MERGE_AT + 1, "port again", spot.as_ref());
    w.commit().unwrap();
    assert_eq!(
        tail_ports(&store, 0),
        None,
        "the memory follows the new mark"
    );
    assert_eq!(
        tail_ports(&store, MERGE_AT),
        Some(1),
        "message MERGE_AT + 1"
    );
    assert_eq!(ports(&*older), ports_through(MERGE_AT - 1));
    let mut all = ports_through(MERGE_AT);
    all.insert(0, (MERGE_AT + 1, 1));
    assert_eq!(ports(&*store.read().unwrap()), all);

    // A stale tail (after a reopen) is not trusted, and the answer is the same.
    store.tail_stale.store(true, Ordering::SeqCst);
    assert_eq!(ports(&*store.read().unwrap()), all);
    let mut w = store.write().unwrap();
    post_words(&mut *w, MERGE_AT + 2, "no match", Some(&after));
    w.commit().unwrap();
    assert_eq!(
        tail_ports(&store, MERGE_AT),
        Some(1),
        "reloaded by the writer"
    );
    assert_eq!(ports(&*store.read().unwrap()), all);
}

#[test]
fn a_merge_that_finds_the_tail_out_of_step_reads_the_file_and_reloads_it() {
    use crate::store::word_tail::WordTail;
    use crate::store::words::MERGE_AT;
    let (store, spot) = one_short_of_a_merge();
    // A tail that follows another mark than the file's.
    lock_tail(&store.tail).as_mut().unwrap().words = WordTail::new(7, Vec::new());
    let mut w = store.write().unwrap();
    post_words(&mut *w, MERGE_AT, &port_body(MERGE_AT), spot.as_ref());
    w.commit().unwrap();
    assert!(
        store.tail_stale.load(Ordering::SeqCst),
        "marked to be loaded again"
    );
    assert_eq!(ports(&*store.read().unwrap()), ports_through(MERGE_AT));
    drop(store.write().unwrap());
    assert_eq!(
        tail_ports(&store, MERGE_AT),
        Some(0),
        "loaded from the file"
    );
    assert_eq!(ports(&*store.read().unwrap()), ports_through(MERGE_AT));
}

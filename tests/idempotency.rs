//! Idempotent posts with threads and a moving clock (SPEC §14.3): racing retries
//! under one key write once, inside one batch and across batches; keys expire;
//! replays are not counted by the rate limit and carry `replayed` only when they are.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Barrier};

use parley_forum::{Config, Forum, Reason, Right, TokenSpec};
use serde_json::{json, Value};

const START: i64 = 1_796_040_000_000; // 2026-12-01T12:00:00Z

fn forum_with_clock(limits: Value) -> (Arc<Forum>, Arc<AtomicI64>, String, String) {
    let now = Arc::new(AtomicI64::new(START));
    let mut config = Config::from_json(&json!({ "limits": limits })).unwrap();
    let clock = Arc::clone(&now);
    config.clock = Arc::new(move || clock.load(Ordering::SeqCst));
    let forum = Arc::new(Forum::in_memory(config).unwrap());
    let rights = [Right::Read, Right::Write];
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &rights))
        .unwrap();
    let bob = forum.create_token(&TokenSpec::llm("bob", &rights)).unwrap();
    (forum, now, alice, bob)
}

fn messages(forum: &Forum, token: &str) -> usize {
    forum
        .call(Some(token), "get_messages", &json!({ "limit": 200 }))
        .unwrap()["items"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn racing_retries_under_one_key_write_once() {
    let (forum, _, alice, _) = forum_with_clock(json!({ "writes_per_minute": 0 }));
    let envelope = json!({ "kind": "ask", "body": "posted once?", "idempotency_key": "race-1" });
    let start = Arc::new(Barrier::new(16));
    let outcomes: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (forum, alice, envelope, start) = (&forum, &alice, &envelope, &start);
                s.spawn(move || {
                    start.wait();
                    forum.call(Some(alice), "post", envelope).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let first = outcomes
        .iter()
        .filter(|o| o.get("replayed").is_none())
        .count();
    assert_eq!(first, 1, "exactly one call wrote");
    let ids: std::collections::HashSet<_> = outcomes
        .iter()
        .map(|o| o["message"]["id"].clone())
        .collect();
    assert_eq!(ids.len(), 1, "every call names the same message");
    assert!(outcomes
        .iter()
        .filter(|o| o.get("replayed").is_some())
        .all(|o| o["replayed"] == true));
    assert_eq!(messages(&forum, &alice), 1);
}

/// Posts under one key sent at once (which the group commit may put in one
/// batch): one is stored, a retry of it replays it, a different post under the
/// key is a conflict, whichever came first; keys are per identity.
#[test]
fn one_key_sent_at_once_writes_once() {
    let (forum, _, alice, bob) = forum_with_clock(json!({ "writes_per_minute": 0 }));
    let keyed = json!({ "kind": "ask", "body": "at once", "idempotency_key": "b-1" });
    let other = json!({ "kind": "ask", "body": "at once, changed", "idempotency_key": "b-1" });
    let bobs = json!({ "kind": "ask", "body": "at once", "idempotency_key": "b-1" });
    let out = post_concurrently(
        &forum,
        &[
            (Some(alice.as_str()), &keyed),
            (Some(alice.as_str()), &keyed),
            (Some(alice.as_str()), &other),
            (Some(bob.as_str()), &bobs),
        ],
    );
    let stored: Vec<&Value> = out[..3]
        .iter()
        .filter_map(|o| o.as_ref().ok())
        .filter(|o| o.get("replayed").is_none())
        .collect();
    assert_eq!(stored.len(), 1, "one of alice's posts is stored: {out:?}");
    let id = &stored[0]["message"]["id"];
    for outcome in &out[..3] {
        match outcome {
            Ok(o) if o.get("replayed").is_some() => {
                assert_eq!(o["replayed"], true);
                assert_eq!(&o["message"]["id"], id, "a replay names the stored post");
            }
            Ok(_) => {}
            Err(e) => assert_eq!(e.refusal().unwrap().reason, Reason::IdempotencyConflict),
        }
    }
    assert!(
        out[3].as_ref().unwrap().get("replayed").is_none(),
        "keys are per identity"
    );
    assert_eq!(messages(&forum, &alice), 2);
}

#[test]
fn keys_expire_after_their_ttl() {
    let (forum, now, alice, _) =
        forum_with_clock(json!({ "writes_per_minute": 0, "idempotency_ttl_s": 60 }));
    let envelope = json!({ "kind": "ask", "body": "expiring", "idempotency_key": "ttl" });
    let first = forum.call(Some(&alice), "post", &envelope).unwrap();
    now.fetch_add(59_999, Ordering::SeqCst);
    let replay = forum.call(Some(&alice), "post", &envelope).unwrap();
    assert_eq!(
        replay["replayed"], true,
        "still remembered just before the ttl"
    );
    now.fetch_add(1, Ordering::SeqCst);
    let fresh = forum.call(Some(&alice), "post", &envelope).unwrap();
    assert!(
        fresh.get("replayed").is_none(),
        "forgotten at the ttl: posted anew"
    );
    assert_ne!(fresh["message"]["id"], first["message"]["id"]);
    // The new post is remembered in its turn, with another envelope refused.
    let changed = json!({ "kind": "ask", "body": "expiring, changed", "idempotency_key": "ttl" });
    let err = forum.call(Some(&alice), "post", &changed).unwrap_err();
    assert_eq!(err.refusal().unwrap().reason, Reason::IdempotencyConflict);
    now.fetch_add(60_000, Ordering::SeqCst);
    assert!(forum.call(Some(&alice), "post", &changed).is_ok());
}

#[test]
fn many_expired_keys_are_forgotten_as_keyed_posts_go_on() {
    let (forum, now, alice, _) =
        forum_with_clock(json!({ "writes_per_minute": 0, "idempotency_ttl_s": 1 }));
    for i in 0..40 {
        let envelope = json!({ "kind": "ask", "body": format!("old {i}"), "idempotency_key": format!("old-{i}") });
        forum.call(Some(&alice), "post", &envelope).unwrap();
    }
    now.fetch_add(5_000, Ordering::SeqCst);
    // Each keyed post forgets a few expired keys; all of them stay answerable.
    for i in 0..10 {
        let envelope = json!({ "kind": "ask", "body": format!("old {i}"), "idempotency_key": format!("old-{i}") });
        let again = forum.call(Some(&alice), "post", &envelope).unwrap();
        assert!(again.get("replayed").is_none(), "old-{i} expired");
    }
    assert_eq!(messages(&forum, &alice), 50);
}

#[test]
fn replays_are_not_counted_by_the_rate_limit() {
    let (forum, _, alice, _) = forum_with_clock(json!({ "writes_per_minute": 2 }));
    let envelope = json!({ "kind": "ask", "body": "counted once", "idempotency_key": "rate" });
    forum.call(Some(&alice), "post", &envelope).unwrap();
    for _ in 0..5 {
        let r = forum.call(Some(&alice), "post", &envelope).unwrap();
        assert_eq!(r["replayed"], true);
    }
    forum
        .call(
            Some(&alice),
            "post",
            &json!({ "kind": "ask", "body": "second write" }),
        )
        .unwrap();
    let err = forum
        .call(
            Some(&alice),
            "post",
            &json!({ "kind": "ask", "body": "third write" }),
        )
        .unwrap_err();
    assert_eq!(err.refusal().unwrap().reason, Reason::RateLimited);
    // A replay still answers while the identity is rate limited (§12.1: idempotency first).
    let r = forum.call(Some(&alice), "post", &envelope).unwrap();
    assert_eq!(r["replayed"], true);
}

#[test]
fn the_typed_session_takes_a_key_and_reads_the_feed() {
    use parley_forum::Envelope;
    let (forum, _, alice, bob) = forum_with_clock(json!({ "writes_per_minute": 0 }));
    let me = forum.session(&alice);
    let ask = Envelope::new("ask", "typed?")
        .to("ainotes:bob")
        .idempotency_key("typed-1");
    let first = me.post(&ask).unwrap();
    let again = me.post(&ask).unwrap();
    assert!(!first.replayed);
    assert!(again.replayed);
    assert_eq!(again.message_id, first.message_id);
    let feed = forum.session(&bob).messages(None, None).unwrap();
    assert_eq!(feed.items.len(), 1);
    assert_eq!(feed.items[0].id, first.message_id);
    let due = forum
        .session(&bob)
        .inbox_wait(None, std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(due.items.len(), 1, "there already: no wait");
    let empty = forum
        .session(&bob)
        .messages_wait(
            None,
            Some(&feed.cursor),
            std::time::Duration::from_millis(30),
        )
        .unwrap();
    assert!(empty.items.is_empty());
    let hits = forum.session(&bob).search("TYPED", None, None).unwrap();
    assert_eq!(hits.items.len(), 1);
    assert_eq!(hits.items[0].message.id, first.message_id);
    assert_eq!(hits.items[0].thread.id, first.thread.id);
    assert!(forum.session(&bob).search("", None, None).is_err());
}

/// Every key of 1,100 keyed posts replays, and another envelope under it is
/// refused, before and after a reopen: each post's record is in the file.
#[test]
fn keys_stay_remembered_across_the_merge_of_the_tail_and_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let config = || {
        let mut c = Config::from_json(&json!({ "limits": { "writes_per_minute": 0 } })).unwrap();
        c.clock = Arc::new(|| START);
        c
    };
    let ask = |i: u32| json!({ "kind": "ask", "body": format!("question {i}"), "idempotency_key": format!("k-{i}") });
    let forum = Forum::open(&path, config()).unwrap();
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
        .unwrap();
    for i in 1..=1100 {
        let posted = forum.call(Some(&alice), "post", &ask(i)).unwrap();
        assert_eq!(posted["message"]["id"], format!("msg_{i}"));
        if i == 1023 || i == 1024 {
            // Just before and at the merge, the first key is still there.
            let again = forum.call(Some(&alice), "post", &ask(1)).unwrap();
            assert_eq!(again["replayed"], true);
        }
    }
    let check = |forum: &Forum| {
        for i in [1, 600, 1023, 1024, 1025, 1100] {
            let again = forum.call(Some(&alice), "post", &ask(i)).unwrap();
            assert_eq!(
                (again["message"]["id"].as_str(), again["replayed"].as_bool()),
                (Some(format!("msg_{i}").as_str()), Some(true)),
                "k-{i}"
            );
            let other =
                json!({ "kind": "ask", "body": "another", "idempotency_key": format!("k-{i}") });
            let refused = forum.call(Some(&alice), "post", &other).unwrap_err();
            assert_eq!(
                refused.refusal().map(|r| r.reason),
                Some(Reason::IdempotencyConflict)
            );
        }
    };
    check(&forum);
    drop(forum);
    let keys: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("keys");
    {
        use redb::{ReadableDatabase, ReadableTableMetadata};
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_read().unwrap();
        let records = txn.open_table(keys).unwrap();
        assert_eq!(records.len().unwrap(), 1100, "one record per keyed post");
    }
    let forum = Forum::open(&path, config()).unwrap();
    check(&forum);
    let next = forum
        .call(
            Some(&alice),
            "post",
            &json!({ "kind": "ask", "body": "a new one" }),
        )
        .unwrap();
    assert_eq!(next["message"]["id"], "msg_1101", "no retry wrote");
}

/// A retry through another token of the same identity is not among the keys its
/// handle posted under, so the batch decides it, not a snapshot: the batch must
/// find the keys the tail's merge moved into the index, and a key the expiry
/// forgot there and a later post used again, before and after a reopen.
#[test]
fn the_batch_finds_merged_forgotten_and_reused_keys_through_another_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let now = Arc::new(AtomicI64::new(START));
    let config = || {
        let mut c = Config::from_json(&json!({
            "durable": false,
            "limits": { "writes_per_minute": 0, "idempotency_ttl_s": 60 },
        }))
        .unwrap();
        let clock = Arc::clone(&now);
        c.clock = Arc::new(move || clock.load(Ordering::SeqCst));
        c
    };
    let rights = [Right::Read, Right::Write];
    let ask =
        |key: &str, body: &str| json!({ "kind": "ask", "body": body, "idempotency_key": key });
    let forum = Forum::open(&path, config()).unwrap();
    let first = forum
        .create_token(&TokenSpec::llm("alice", &rights))
        .unwrap();
    let post = |forum: &Forum, token: &str, key: &str, body: &str| {
        forum.call(Some(token), "post", &ask(key, body))
    };
    for i in 1..=1100 {
        post(&forum, &first, &format!("k-{i}"), &format!("question {i}")).unwrap();
    }
    // Merged (1..=1024) and still in the tail (1025..=1100).
    // Each attempt through a token of its own, so that none replays early.
    let check = |forum: &Forum, keys: &[(u32, &str, &str)]| {
        let token = || {
            forum
                .create_token(&TokenSpec::llm("alice", &rights))
                .unwrap()
        };
        for &(i, body, id) in keys {
            let key = format!("k-{i}");
            let again = post(forum, &token(), &key, body).unwrap();
            assert_eq!(
                (again["message"]["id"].as_str(), again["replayed"].as_bool()),
                (Some(id), Some(true)),
                "{key}"
            );
            let refused = post(forum, &token(), &key, "another body").unwrap_err();
            assert_eq!(
                refused.refusal().map(|r| r.reason),
                Some(Reason::IdempotencyConflict),
                "{key}"
            );
        }
    };
    check(
        &forum,
        &[
            (1, "question 1", "msg_1"),
            (1024, "question 1024", "msg_1024"),
            (1025, "question 1025", "msg_1025"),
            (1100, "question 1100", "msg_1100"),
        ],
    );
    // Past the ttl, k-1100 is used again for a new post, which the next merge
    // (posts without keys) writes over its expired record in the index; keyed
    // posts then forget the expired keys, but not that record, which names the
    // new post.
    now.fetch_add(61_000, Ordering::SeqCst);
    let reused = post(&forum, &first, "k-1100", "question 1100, asked again").unwrap();
    assert!(reused.get("replayed").is_none(), "k-1100 expired");
    let reused_id = reused["message"]["id"].as_str().unwrap().to_string();
    for i in 0..950 {
        let note = json!({ "kind": "ask", "body": format!("unkeyed {i}") });
        forum.call(Some(&first), "post", &note).unwrap();
    }
    for i in 0..400 {
        post(&forum, &first, &format!("later-{i}"), &format!("later {i}")).unwrap();
    }
    let expected = [(1100, "question 1100, asked again", reused_id.as_str())];
    check(&forum, &expected);
    let fresh = post(&forum, &first, "k-300", "question 300, asked again").unwrap();
    assert!(fresh.get("replayed").is_none(), "k-300 expired");
    drop(forum);
    let forum = Forum::open(&path, config()).unwrap();
    check(&forum, &expected);
    let again = post(&forum, &first, "k-300", "question 300, asked again").unwrap();
    assert_eq!(again["replayed"], true);
}

/// Posts every envelope at once, each from a thread of its own, as concurrent
/// callers of `call(token, "post", envelope)` do; returns the outcomes in order.
fn post_concurrently(
    forum: &Forum,
    posts: &[(Option<&str>, &Value)],
) -> Vec<parley_forum::Result<Value>> {
    std::thread::scope(|s| {
        let posting: Vec<_> = posts
            .iter()
            .map(|&(token, envelope)| s.spawn(move || forum.call(token, "post", envelope)))
            .collect();
        posting.into_iter().map(|p| p.join().unwrap()).collect()
    })
}

/// A post made through the typed `Session` and its retry through the generic
/// call (and the other way round) are one post: the typed envelope's digest is
/// the one the generic call computes for `to_json()`, with text that JSON
/// escapes, and with the session's extension or without.
#[test]
fn a_typed_post_and_a_generic_retry_are_one_post() {
    use parley_forum::Envelope;

    let (forum, _, alice, bob) = forum_with_clock(json!({ "writes_per_minute": 0 }));
    let root = forum
        .session(&bob)
        .post(&Envelope::new("ask", "where?"))
        .unwrap();
    let thread = root.thread.id;
    let envelope = |key: &str, body: &str| {
        Envelope::new("note", body)
            .thread(thread)
            .parent(root.message_id)
            .provenance("model \"m\" é", "client\\1")
            .idempotency_key(key)
    };
    let typed_then_generic = envelope("t-1", "over to you,\n\"bob\" ü");
    let generic_then_typed = envelope("g-1", "second hand-off");

    for extension in [None, Some("w-1")] {
        let session = match extension {
            None => forum.session(&alice),
            Some(e) => forum.session(&alice).with_extension(e),
        };
        let before = messages(&forum, &alice);
        // Typed first, then the generic call with the envelope as JSON.
        let key = format!("t-{}", before);
        let first = session
            .post(&typed_then_generic.clone().idempotency_key(&key))
            .unwrap();
        assert!(!first.replayed);
        let mut json = typed_then_generic.clone().idempotency_key(&key).to_json();
        if let Some(extension) = extension {
            json["from"] = json!({ "extension": extension });
        }
        let retry = forum.call(Some(&alice), "post", &json).unwrap();
        assert_eq!(retry["replayed"], true, "{retry}");
        assert_eq!(retry["message"]["id"], first.message_id.to_string());
        assert_eq!(
            messages(&forum, &alice),
            before + 1,
            "the retry wrote nothing"
        );

        // Generic first, then typed.
        let key = format!("g-{}", before);
        let mut json = generic_then_typed.clone().idempotency_key(&key).to_json();
        if let Some(extension) = extension {
            json["from"] = json!({ "extension": extension });
        }
        let first = forum.call(Some(&alice), "post", &json).unwrap();
        assert!(first.get("replayed").is_none());
        let retry = session
            .post(&generic_then_typed.clone().idempotency_key(&key))
            .unwrap();
        assert!(retry.replayed);
        assert_eq!(retry.message_id, first["message"]["id"].as_str().unwrap());
        assert_eq!(
            messages(&forum, &alice),
            before + 2,
            "the retry wrote nothing"
        );

        // Another envelope under a key either way is a conflict, as before.
        let other = envelope(&key, "a different hand-off");
        let err = session.post(&other).unwrap_err();
        assert_eq!(err.refusal().unwrap().reason, Reason::IdempotencyConflict);
        let key = format!("t-{}", before);
        let other = envelope(&key, "a different hand-off").to_json();
        let err = forum.call(Some(&alice), "post", &other).unwrap_err();
        assert_eq!(err.refusal().unwrap().reason, Reason::IdempotencyConflict);
        assert_eq!(messages(&forum, &alice), before + 2);
    }
}

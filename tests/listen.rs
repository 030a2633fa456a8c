//! The listen profile with threads (SPEC §14.2): a waiting read wakes on the commit
//! that gives it an item and not on others, times out with the plain result, sees a
//! revoked token refused, and many waiters wake on one commit; `end_waits` ends them;
//! a `Subscription` wakes an async host and a commit hook is called.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use parley_forum::{Config, Error, Forum, Reason, Right, TokenSpec};
use serde_json::{json, Value};

struct Cast {
    forum: Arc<Forum>,
    alice: String,
    bob: String,
    carol: String,
}

fn cast(settings: Value) -> Cast {
    let config = Config::from_json(&settings).unwrap();
    let forum = Arc::new(Forum::in_memory(config).unwrap());
    let token = |h: &str| {
        forum
            .create_token(&TokenSpec::llm(h, &[Right::Read, Right::Write]))
            .unwrap()
    };
    Cast {
        alice: token("alice"),
        bob: token("bob"),
        carol: token("carol"),
        forum,
    }
}

fn default_cast() -> Cast {
    cast(json!({ "limits": { "writes_per_minute": 0 } }))
}

fn items(v: &Value) -> usize {
    v["items"].as_array().unwrap().len()
}

/// Waits in a thread; returns the result and how long the call took.
fn wait_in_thread(
    forum: &Arc<Forum>,
    token: &str,
    op: &'static str,
    args: Value,
) -> std::thread::JoinHandle<(Result<Value, Error>, Duration)> {
    let (forum, token) = (Arc::clone(forum), token.to_string());
    std::thread::spawn(move || {
        let start = Instant::now();
        let r = forum.call(Some(&token), op, &args);
        (r, start.elapsed())
    })
}

/// Until `waiting` calls are blocked: the subscription count is not public, so
/// this gives the threads a moment to reach their wait. Correctness never
/// depends on it: a commit before the wait begins is seen by its first read.
fn settle() {
    std::thread::sleep(Duration::from_millis(100));
}

#[test]
fn a_waiter_wakes_on_the_commit_that_gives_it_an_item_not_on_others() {
    let c = default_cast();
    // bob waits for a thread that awaits him.
    let waiter = wait_in_thread(&c.forum, &c.bob, "get_inbox", json!({ "wait_ms": 20_000 }));
    settle();
    // Unrelated commits: a question to carol, and carol's own notes.
    let asked = c
        .forum
        .call(
            Some(&c.alice),
            "post",
            &json!({"kind": "ask", "to": "ainotes:carol", "body": "for carol only"}),
        )
        .unwrap();
    c.forum
        .call(
            Some(&c.carol),
            "post",
            &json!({"kind": "answer", "thread": asked["thread"]["id"], "body": "carol answers"}),
        )
        .unwrap();
    settle();
    assert!(!waiter.is_finished(), "no item for bob yet: still waiting");
    // The commit that gives bob an item.
    let mine = c
        .forum
        .call(
            Some(&c.alice),
            "post",
            &json!({"kind": "ask", "to": "ainotes:bob", "body": "bob, which port?"}),
        )
        .unwrap();
    let (result, took) = waiter.join().unwrap();
    let result = result.unwrap();
    assert_eq!(items(&result), 1);
    assert_eq!(result["items"][0]["thread"]["id"], mine["thread"]["id"]);
    assert!(
        took < Duration::from_secs(15),
        "woke by the commit, not the timeout"
    );
}

#[test]
fn a_wait_times_out_with_the_plain_empty_result() {
    let c = default_cast();
    let start = Instant::now();
    let r = c
        .forum
        .call(Some(&c.bob), "get_inbox", &json!({ "wait_ms": 150 }))
        .unwrap();
    assert!(start.elapsed() >= Duration::from_millis(150));
    let plain = c.forum.call(Some(&c.bob), "get_inbox", &json!({})).unwrap();
    assert_eq!(r, plain, "the same shape and cursor as without waiting");
}

#[test]
fn items_already_there_return_at_once() {
    let c = default_cast();
    c.forum
        .call(
            Some(&c.alice),
            "post",
            &json!({"kind": "ask", "body": "anyone?"}),
        )
        .unwrap();
    let start = Instant::now();
    for op in ["get_inbox", "get_messages", "list_threads"] {
        let r = c
            .forum
            .call(Some(&c.bob), op, &json!({ "wait_ms": 30_000 }))
            .unwrap();
        assert_eq!(items(&r), 1, "{op}");
    }
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_token_revoked_while_waiting_is_refused() {
    let c = default_cast();
    let waiter = wait_in_thread(
        &c.forum,
        &c.bob,
        "get_messages",
        json!({ "wait_ms": 20_000 }),
    );
    settle();
    assert!(c.forum.revoke_token(&c.bob).unwrap());
    let (result, took) = waiter.join().unwrap();
    let refusal = result.unwrap_err();
    assert_eq!(refusal.refusal().unwrap().reason, Reason::TokenInvalid);
    assert!(
        took < Duration::from_secs(15),
        "refused at the revocation's commit"
    );
}

#[test]
fn many_waiters_wake_on_one_commit() {
    let c = default_cast();
    let waiters: Vec<_> = (0..24)
        .map(|i| {
            let op = ["get_messages", "list_threads", "get_inbox"][i % 3];
            wait_in_thread(&c.forum, &c.bob, op, json!({ "wait_ms": 20_000 }))
        })
        .collect();
    settle();
    c.forum
        .call(
            Some(&c.alice),
            "post",
            &json!({"kind": "ask", "body": "all hands?"}),
        )
        .unwrap();
    for w in waiters {
        let (result, took) = w.join().unwrap();
        assert_eq!(items(&result.unwrap()), 1);
        assert!(took < Duration::from_secs(15));
    }
}

#[test]
fn events_and_a_thread_feed_wake_their_waiters() {
    let c = default_cast();
    let asked = c
        .forum
        .call(
            Some(&c.alice),
            "post",
            &json!({"kind": "ask", "body": "feed?"}),
        )
        .unwrap();
    let thread = asked["thread"]["id"].as_str().unwrap().to_string();
    let cursor = c
        .forum
        .call(Some(&c.bob), "get_messages", &json!({ "thread": thread }))
        .unwrap()["cursor"]
        .clone();
    let feed = wait_in_thread(
        &c.forum,
        &c.bob,
        "get_messages",
        json!({ "thread": thread, "since": cursor, "wait_ms": 20_000 }),
    );
    let events = wait_in_thread(&c.forum, &c.bob, "get_events", json!({ "wait_ms": 20_000 }));
    settle();
    c.forum
        .call(
            Some(&c.carol),
            "post",
            &json!({"kind": "answer", "thread": thread, "body": "an answer"}),
        )
        .unwrap();
    let feed = feed.join().unwrap().0.unwrap();
    assert_eq!(feed["items"][0]["kind"], "answer");
    let events = events.join().unwrap().0.unwrap();
    assert_eq!(events["items"][0]["to_state"], "answered");
}

#[test]
fn ending_the_waits_returns_each_with_its_result() {
    let c = default_cast();
    let waiters: Vec<_> = (0..8)
        .map(|_| wait_in_thread(&c.forum, &c.bob, "get_inbox", json!({ "wait_ms": 30_000 })))
        .collect();
    settle();
    c.forum.end_waits();
    for w in waiters {
        let (result, took) = w.join().unwrap();
        assert_eq!(items(&result.unwrap()), 0);
        assert!(took < Duration::from_secs(20));
    }
    // Later waits return at once too.
    let start = Instant::now();
    c.forum
        .call(Some(&c.bob), "get_inbox", &json!({ "wait_ms": 30_000 }))
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(20));
}

/// Wakes by counting: the future is polled again only after a wake.
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_subscription_wakes_an_async_host_and_hooks_are_called() {
    let c = default_cast();
    let mut sub = c.forum.subscribe();
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);
    let hooked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hooked);
    let hook = c.forum.on_commit(move || {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    {
        let mut changed = std::pin::pin!(sub.changed());
        assert_eq!(changed.as_mut().poll(&mut cx), Poll::Pending);
        c.forum
            .call(
                Some(&c.alice),
                "post",
                &json!({"kind": "ask", "body": "async?"}),
            )
            .unwrap();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "woken by the commit");
        assert_eq!(changed.as_mut().poll(&mut cx), Poll::Ready(true));
    }
    assert_eq!(hooked.load(Ordering::SeqCst), 1);
    // Nothing new: pending again; a blocking wait times out.
    assert!(!sub.wait_timeout(Duration::from_millis(20)));
    drop(hook);
    c.forum
        .call(
            Some(&c.alice),
            "post",
            &json!({"kind": "ask", "body": "after the hook"}),
        )
        .unwrap();
    assert_eq!(
        hooked.load(Ordering::SeqCst),
        1,
        "a dropped hook is not called"
    );
    assert!(
        sub.wait_timeout(Duration::from_millis(20)),
        "the commit was seen"
    );
    c.forum.end_waits();
    let mut changed = std::pin::pin!(sub.changed());
    assert_eq!(changed.as_mut().poll(&mut cx), Poll::Ready(false));
}

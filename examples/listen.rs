//! Waiting for one's turn instead of polling (SPEC §14.2), two ways:
//! a blocking call with `wait_ms`, and an async host told of commits by a
//! `Subscription` (here driven by a ten-line executor; any async runtime polls the
//! same future). Run with `cargo run --example listen`.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use parley_forum::{Config, Forum, Right, TokenSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let forum = Arc::new(Forum::in_memory(Config::default())?);
    let writer = [Right::Read, Right::Write];
    let alice = forum.create_token(&TokenSpec::llm("alice", &writer))?;
    let bob = forum.create_token(&TokenSpec::llm("bob", &writer))?;

    // 1. Blocking: bob's call returns when alice's question to him is committed.
    let waiter = {
        let (forum, bob) = (Arc::clone(&forum), bob.clone());
        std::thread::spawn(move || {
            forum.call(Some(&bob), "get_inbox", &json!({ "wait_ms": 10_000 }))
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let ask = json!({ "kind": "ask", "to": "ainotes:bob", "body": "Which port, bob?" });
    forum.call(Some(&alice), "post", &ask)?;
    let page = waiter.join().expect("the waiter")?;
    println!("bob is due for: {}", page["items"][0]["message"]["body"]);

    // 2. Async: no thread waits; the future resolves after the next commit, and the
    // read then runs with wait_ms 0.
    let mut commits = forum.subscribe();
    let poster = {
        let (forum, alice) = (Arc::clone(&forum), alice.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let ask = json!({ "kind": "ask", "to": "ainotes:bob", "body": "And the branch?" });
            forum.call(Some(&alice), "post", &ask)
        })
    };
    let since = page["cursor"].clone();
    let page = block_on(async {
        loop {
            let page = forum.call(Some(&bob), "get_inbox", &json!({ "since": since }))?;
            if !page["items"].as_array().is_some_and(Vec::is_empty) || !commits.changed().await {
                return Ok::<_, parley_forum::Error>(page);
            }
        }
    })?;
    poster.join().expect("the poster")?;
    println!("then: {}", page["items"][0]["message"]["body"]);
    Ok(())
}

/// Runs a future on this thread, parking it until the future's waker is called.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

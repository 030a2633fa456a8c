//! `Forum` is shared among threads: ids stay unique and strictly increasing in
//! commit order, and no update is lost.

use std::sync::Arc;

use parley_forum::{Config, Forum, Right, TokenSpec};
use serde_json::json;

/// A fresh directory for one test's forum file.
fn scratch_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("parley-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A token that reads and writes, issued to `name`.
fn writer(forum: &Forum, name: &str) -> String {
    forum
        .create_token(&TokenSpec::llm(name, &[Right::Read, Right::Write]))
        .unwrap()
}

/// Asks a question; returns its thread's id.
fn ask(forum: &Forum, token: &str, body: &str) -> String {
    let root = forum
        .call(Some(token), "post", &json!({"kind": "ask", "body": body}))
        .unwrap();
    root["thread"]["id"].as_str().unwrap().to_string()
}

#[test]
fn parallel_writers_lose_nothing() {
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    config.limits.thread_max_messages = 10_000;
    // 320 notes without progress: this test is about ids, not loops (SPEC §15).
    config.guards = false;
    let dir = scratch_dir("conc");
    let forum = Arc::new(Forum::open(dir.join("f.redb"), config).unwrap());
    let asker = writer(&forum, "asker");
    let thread = ask(&forum, &asker, "shared");

    let writers = 8;
    let per_writer = 40;
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let forum = Arc::clone(&forum);
            let thread = thread.clone();
            let token = writer(&forum, &format!("w{w}"));
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for i in 0..per_writer {
                    let r = forum
                        .call(Some(&token), "post", &json!({"kind": "note", "thread": thread, "body": format!("w{w} n{i}")}))
                        .unwrap();
                    ids.push(r["message"]["id"].as_str().unwrap()[4..].parse::<u64>().unwrap());
                    // Readers run beside the writers on snapshots.
                    forum.call(Some(&token), "get_thread", &json!({"thread": thread})).unwrap();
                }
                ids
            })
        })
        .collect();
    let mut all: Vec<u64> = Vec::new();
    for h in handles {
        let ids = h.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids of one writer increase"
        );
        all.extend(ids);
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), writers * per_writer, "ids are unique");
    let view = forum
        .call(Some(&asker), "get_thread", &json!({"thread": thread}))
        .unwrap();
    assert_eq!(view["thread"]["message_count"], 1 + writers * per_writer);
    assert_eq!(
        view["messages"][0]["replies"].as_array().unwrap().len(),
        writers * per_writer
    );
    drop(view);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Posts sent at once, which the group commit may put in one batch, each keep
/// their own outcome, and a refused one leaves no trace.
#[test]
fn concurrent_posts_keep_each_outcome() {
    use parley_forum::Reason;
    let dir = scratch_dir("at-once");
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    let forum = Forum::open(dir.join("f.redb"), config).unwrap();
    let a = writer(&forum, "a");
    // Asked by another identity, so a's notes are no self-replies.
    let thread = ask(&forum, &writer(&forum, "host"), "root");
    let note = |body: &str| json!({"kind": "note", "thread": thread, "body": body});
    let envelopes = [
        (Some(a.as_str()), note("one")),
        (None, note("no token")),
        (Some(a.as_str()), json!(["not", "an", "object"])),
        (Some(a.as_str()), note("two")),
    ];
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let posting: Vec<_> = envelopes
            .iter()
            .map(|(token, envelope)| s.spawn(|| forum.call(*token, "post", envelope)))
            .collect();
        posting.into_iter().map(|p| p.join().unwrap()).collect()
    });
    let reason = |i: usize| outcomes[i].as_ref().unwrap_err().refusal().unwrap().reason;
    assert_eq!(reason(1), Reason::TokenMissing);
    assert_eq!(reason(2), Reason::InvalidBody);
    for i in [0, 3] {
        assert_eq!(
            outcomes[i].as_ref().unwrap()["message"]["thread"],
            json!(thread)
        );
    }
    let read = forum
        .call(Some(&a), "get_thread", &json!({ "thread": thread }))
        .unwrap();
    assert_eq!(
        read["thread"]["message_count"],
        json!(3),
        "root and two notes"
    );
    drop(forum);
    std::fs::remove_dir_all(&dir).unwrap();
}

//! A panic inside the engine is an internal error, not a storage failure: it does
//! not claim the forum file is damaged, it reaches no caller as an unwind, and the
//! forum goes on serving. (Needs `--features fault-injection`; without it this
//! file tests nothing and says so.)
#![cfg(feature = "fault-injection")]

#[path = "pg/support.rs"]
mod support;

use parley_forum::fault::FAULT_BODY;
use parley_forum::{Config, Error, Forum, Right, TokenSpec};
use serde_json::json;

#[test]
fn a_panic_inside_a_post_is_an_internal_error_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.redb");
    panic_then_post(&Forum::open(&path, Config::default()).unwrap());
    assert!(parley_forum::storage::check_integrity(&path).unwrap());
}

#[test]
fn a_panic_inside_a_post_is_an_internal_error_on_postgres() {
    // Runs when a server was started (`source tests/pg/server.sh && pg_start`).
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "internal_errors");
    panic_then_post(&parley_postgres::open(url, Config::default()).unwrap());
}

/// A post that panics inside the engine fails as `Error::Internal`; nothing of it
/// is stored, and the same handle posts again.
fn panic_then_post(forum: &Forum) {
    let llm = |handle: &str| {
        forum
            .create_token(&TokenSpec::llm(handle, &[Right::Read, Right::Write]))
            .unwrap()
    };
    let (token, bob) = (llm("alice"), llm("bob"));
    let asked = forum
        .call(
            Some(&token),
            "post",
            &json!({"kind": "ask", "body": "Which port?"}),
        )
        .unwrap();
    let thread = asked["thread"]["id"].as_str().unwrap().to_string();

    let note = json!({"kind": "note", "thread": thread, "body": FAULT_BODY});
    let err = forum.call(Some(&token), "post", &note).unwrap_err();
    let Error::Internal(message) = &err else {
        panic!("expected an internal error, got {err:?}");
    };
    assert!(message.contains("panicked"), "{message}");
    assert!(!err.to_string().contains("damaged"), "{err}");
    assert!(err.refusal().is_none());

    // Nothing of the post was stored, and the next post goes through.
    let view = forum
        .call(Some(&token), "get_thread", &json!({"thread": thread}))
        .unwrap();
    assert!(!view.to_string().contains(FAULT_BODY), "{view}");
    forum
        .call(
            Some(&bob),
            "post",
            &json!({"kind": "note", "thread": thread, "body": "7878."}),
        )
        .unwrap();
}

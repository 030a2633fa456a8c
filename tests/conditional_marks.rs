//! SPEC §14.5, conditional marks, through the typed API, the generic call and MCP,
//! on redb and on PostgreSQL: a `decide`, `mark` or `reopen` sent with `if_state`
//! is refused with `state_changed`, carrying the thread's current state, when the
//! thread has moved on; the condition is judged after the lock and authority and
//! before the loop guards and the transition rules (§12.1); anything but a state
//! name is `invalid_body` naming `if_state`.

#[path = "pg/support.rs"]
mod support;

use std::sync::{Arc, Barrier};

use parley_forum::{
    Config, Envelope, Error, Forum, Reason, Refusal, Right, State, ThreadId, TokenSpec,
};
use serde_json::{json, Value};

/// The forums a test runs on: a redb file, and a PostgreSQL forum when a server
/// was started (`source tests/pg/server.sh && pg_start`).
fn forums(tag: &str) -> Vec<(String, Forum, Option<tempfile::TempDir>)> {
    support::forums(tag, fixed)
}

fn fixed() -> Config {
    Config::from_json(&json!({ "limits": { "writes_per_minute": 0 } })).unwrap()
}

struct Cast {
    bob: String,
    carol: String,
    ann: String,
}

fn cast(forum: &Forum) -> Cast {
    let llm = |h: &str| {
        forum
            .create_token(&TokenSpec::llm(h, &[Right::Read, Right::Write]))
            .unwrap()
    };
    Cast {
        bob: llm("bob"),
        carol: llm("carol"),
        ann: forum.create_token(&TokenSpec::human("ann")).unwrap(),
    }
}

fn refusal(outcome: parley_forum::Result<impl std::fmt::Debug>) -> Refusal {
    match outcome {
        Err(Error::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Issue 38's failure 2: Bob asks, Carol answers (a proposal), the person opens the
/// page; meanwhile Bob proposes `closed`. Returns the thread.
fn moved_on(forum: &Forum, c: &Cast) -> ThreadId {
    let bob = forum.session(&c.bob);
    let asked = bob
        .post(&Envelope::new("ask", "Which port should the server use?"))
        .unwrap();
    let thread = asked.thread.id;
    let answered = forum
        .session(&c.carol)
        .post(&Envelope::new("answer", "7878.").thread(thread))
        .unwrap();
    assert_eq!(answered.thread.state, State::Answered);
    let closed = bob
        .post(
            &Envelope::new("mark", "Closing: done.")
                .thread(thread)
                .state("closed"),
        )
        .unwrap();
    assert!(!closed.thread.locked);
    thread
}

#[test]
fn a_person_confirms_only_the_state_they_saw() {
    for (name, forum, _dir) in forums("cm_seen") {
        let c = cast(&forum);
        let thread = moved_on(&forum, &c);
        let ann = forum.session(&c.ann);
        let confirm = |seen: &str| {
            ann.post(
                &Envelope::new("mark", "Confirmed.")
                    .thread(thread)
                    .state("closed")
                    .if_state(seen),
            )
        };
        let r = refusal(confirm("answered"));
        assert_eq!(
            (r.reason, r.state, r.status()),
            (Reason::StateChanged, Some(State::Closed), 409),
            "{name}"
        );
        assert_eq!(r.to_json()["state"], "closed", "{name}");
        // Nothing was written: no message, no event, not locked.
        let view = ann.thread(thread).unwrap();
        assert_eq!(
            (view.thread.message_count, view.thread.locked),
            (3, false),
            "{name}"
        );
        assert_eq!(ann.events(Some(thread), None).unwrap().items.len(), 2);
        // Confirming what the refusal says the thread is now succeeds.
        let seen = r.state.unwrap().as_str();
        assert!(confirm(seen).unwrap().thread.locked, "{name}");
    }
}

#[test]
fn the_condition_comes_after_lock_and_authority_and_before_the_rules() {
    for (name, forum, _dir) in forums("cm_order") {
        let c = cast(&forum);
        let thread = moved_on(&forum, &c);
        let post = |token: &str, env: Envelope| forum.session(token).post(&env.thread(thread));
        let stale = |kind: &str, body: &str| Envelope::new(kind, body).if_state("open");
        // Authority (403) before the condition: Carol did not open the thread.
        let r = refusal(post(&c.carol, stale("decide", "Decided.")));
        assert_eq!(r.reason, Reason::ThreadAuthorityMissing, "{name}");
        // The condition before repeated_body: Bob's last body was this one.
        let r = refusal(post(&c.bob, stale("decide", "Closing: done.")));
        assert_eq!(
            (r.reason, r.state),
            (Reason::StateChanged, Some(State::Closed)),
            "{name}"
        );
        // ...and before the transition rules: a mark backwards.
        let back = stale("mark", "Back to answered.").state("answered");
        let r = refusal(post(&c.bob, back));
        assert_eq!(r.reason, Reason::StateChanged, "{name}");
        let held = Envelope::new("mark", "Back to answered.")
            .state("answered")
            .if_state("closed");
        let r = refusal(post(&c.bob, held));
        assert_eq!(r.reason, Reason::InvalidTransition, "{name}");
        // Locked (409 thread_closed) before authority and the condition.
        let lock = Envelope::new("mark", "Locked.")
            .state("closed")
            .if_state("closed");
        assert!(post(&c.ann, lock).unwrap().thread.locked);
        let r = refusal(post(&c.bob, stale("decide", "After the lock.")));
        assert_eq!(r.reason, Reason::ThreadClosed, "{name}");
        // A reopen passes the lock; its condition is judged.
        let r = refusal(post(&c.ann, stale("reopen", "Reopening.")));
        assert_eq!(r.state, Some(State::Closed), "{name}");
        let reopen = Envelope::new("reopen", "Reopening.").if_state("closed");
        assert_eq!(post(&c.ann, reopen).unwrap().thread.state, State::Open);
    }
}

#[test]
fn anything_but_a_state_name_is_invalid_body_naming_if_state() {
    for (name, forum, _dir) in forums("cm_invalid") {
        let c = cast(&forum);
        let thread = moved_on(&forum, &c);
        let call = |env: Value| forum.call(Some(&c.bob), "post", &env);
        let bad = [
            json!({ "kind": "decide", "thread": thread, "body": "a", "if_state": "done" }),
            json!({ "kind": "decide", "thread": thread, "body": "b", "if_state": "Closed" }),
            json!({ "kind": "decide", "thread": thread, "body": "c", "if_state": 2 }),
            json!({ "kind": "decide", "thread": thread, "body": "d", "if_state": true }),
            json!({ "kind": "mark", "thread": thread, "body": "e", "state": "closed", "if_state": ["closed"] }),
            json!({ "kind": "reopen", "thread": thread, "body": "f", "if_state": {} }),
            json!({ "kind": "note", "thread": thread, "body": "g", "if_state": "closed" }),
            json!({ "kind": "ask", "body": "h", "if_state": "open" }),
            json!({ "kind": "answer", "thread": thread, "body": "i", "if_state": "closed" }),
        ];
        for env in bad {
            let r = refusal(call(env.clone()));
            assert_eq!(
                (r.reason, r.field.as_deref()),
                (Reason::InvalidBody, Some("if_state")),
                "{name}: {env}"
            );
        }
        // The 400 comes before the token's rights and the thread's existence.
        let reader = forum
            .create_token(&TokenSpec::llm("reader", &[Right::Read]))
            .unwrap();
        let env = json!({ "kind": "decide", "thread": "th_99", "body": "j", "if_state": "shut" });
        let r = refusal(forum.call(Some(&reader), "post", &env));
        assert_eq!(r.reason, Reason::InvalidBody, "{name}");
        // `null` is absent.
        let env = json!({ "kind": "decide", "thread": thread, "body": "k", "if_state": null });
        assert!(call(env).is_ok(), "{name}");
    }
}

#[test]
fn over_mcp_the_post_tool_lists_the_states_and_the_refusal_carries_one() {
    for (name, forum, _dir) in forums("cm_mcp") {
        let c = cast(&forum);
        let thread = moved_on(&forum, &c);
        let rpc = |id: u64, method: &str, params: Value| {
            let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
            let reply = forum.mcp(Some(&c.ann), &request.to_string()).unwrap();
            serde_json::from_str::<Value>(&reply).unwrap()
        };
        let tools = rpc(1, "tools/list", json!({}));
        let post = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "post")
            .unwrap();
        let states = &post["inputSchema"]["properties"]["if_state"]["enum"];
        assert_eq!(
            states,
            &json!(["open", "answered", "decided", "closed", "deferred", "obsolete", "rejected"]),
            "{name}"
        );
        let args = json!({ "kind": "mark", "thread": thread, "state": "closed",
                           "if_state": "answered", "body": "Confirmed." });
        let reply = rpc(
            2,
            "tools/call",
            json!({ "name": "post", "arguments": args }),
        );
        assert_eq!(reply["result"]["isError"], true, "{name}");
        let error = &reply["result"]["structuredContent"]["error"];
        assert_eq!(
            (&error["reason"], &error["status"], &error["state"]),
            (&json!("state_changed"), &json!(409), &json!("closed")),
            "{name}"
        );
        assert_eq!(
            Refusal::from_json(error).and_then(|r| r.state),
            Some(State::Closed)
        );
    }
}

/// People racing to mark what they all saw: exactly one is accepted, the others
/// learn the state it set, whether their posts shared a batch or not.
#[test]
fn of_racing_conditional_marks_exactly_one_wins() {
    for (name, forum, _dir) in forums("cm_race") {
        let c = cast(&forum);
        let thread = forum
            .session(&c.bob)
            .post(&Envelope::new("ask", "Which state?"))
            .unwrap()
            .thread
            .id;
        let forum = Arc::new(forum);
        // Not `closed`: a person's close locks, and a lock is refused before the
        // condition is looked at.
        let targets = ["answered", "decided", "deferred", "obsolete", "rejected"];
        let barrier = Arc::new(Barrier::new(targets.len()));
        let racers: Vec<_> = targets
            .iter()
            .map(|target| {
                let (forum, barrier) = (Arc::clone(&forum), Arc::clone(&barrier));
                let (ann, thread, target) = (c.ann.clone(), thread, target.to_string());
                std::thread::spawn(move || {
                    let env = Envelope::new("mark", &format!("To {target}."))
                        .thread(thread)
                        .state(&target)
                        .if_state("open");
                    barrier.wait();
                    forum.session(&ann).post(&env).map(|p| p.thread.state)
                })
            })
            .collect();
        let outcomes: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let won: Vec<State> = outcomes
            .iter()
            .filter_map(|o| o.as_ref().ok())
            .copied()
            .collect();
        assert_eq!(won.len(), 1, "{name}: {outcomes:?}");
        for outcome in &outcomes {
            if let Err(e) = outcome {
                let r = e.refusal().expect("a refusal");
                assert_eq!(
                    (r.reason, r.state),
                    (Reason::StateChanged, Some(won[0])),
                    "{name}"
                );
            }
        }
        let view = forum.session(&c.ann).thread(thread).unwrap();
        assert_eq!((view.thread.state, view.thread.message_count), (won[0], 2));
    }
}

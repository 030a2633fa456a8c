//! The pure decision's rules, each on a place, a caller and an envelope built here.

use super::*;
use crate::protocol::envelope;
use serde_json::json;

const ALICE: Actor<'static> = Actor {
    identity: "r:alice",
    human: false,
    confirmer: false,
};
const MOD: Actor<'static> = Actor {
    identity: "r:mod",
    human: false,
    confirmer: true,
};

fn env(value: serde_json::Value) -> Checked {
    envelope::check(&value, &Limits::default(), true).unwrap()
}

/// Thread 1 of bob, its root message 1 of bob.
fn place() -> Place {
    let mut thread = ThreadRec::bare(1, 1);
    thread.creator = "r:bob".into();
    Place {
        parent: Some(Parent::root_of(&thread)),
        thread: Some(thread),
        claim: None,
        superseded: Vec::new(),
        superseded_creators: Vec::new(),
        asker: None,
    }
}

fn reason<T: std::fmt::Debug>(decided: Decided<T>) -> Reason {
    decided.unwrap_err().reason
}

#[test]
fn a_locked_thread_refuses_before_authority_and_a_reopen_passes_the_lock() {
    let mut p = place();
    let t = p.thread.as_mut().unwrap();
    t.state = State::Closed;
    t.state_confirmed_at = Some(1);
    let decide = env(json!({ "kind": "decide", "thread": "th_1", "body": "x" }));
    assert_eq!(
        reason(check(&ALICE, &decide, &p, &Limits::default(), true)),
        Reason::ThreadClosed
    );
    let reopen = env(json!({ "kind": "reopen", "thread": "th_1", "body": "x" }));
    assert_eq!(
        reason(check(&ALICE, &reopen, &p, &Limits::default(), true)),
        Reason::ThreadAuthorityMissing,
        "past the lock, a reopen of another's thread needs authority"
    );
    assert_eq!(
        check(&MOD, &reopen, &p, &Limits::default(), true).unwrap(),
        Effect::Move(State::Open)
    );
}

#[test]
fn the_loop_guards_come_before_the_transition_and_the_limits_last() {
    let mut p = place();
    p.parent.as_mut().unwrap().identity = "r:alice".into();
    let answer = env(json!({ "kind": "answer", "thread": "th_1", "body": "x" }));
    assert_eq!(
        reason(check(&ALICE, &answer, &p, &Limits::default(), true)),
        Reason::SelfReply
    );
    let mut p = place();
    p.thread.as_mut().unwrap().message_count = 1;
    let limits = Limits {
        thread_max_messages: 1,
        ..Limits::default()
    };
    assert_eq!(
        reason(check(&ALICE, &answer, &p, &limits, true)),
        Reason::LimitExceeded
    );
    assert_eq!(
        check(&ALICE, &answer, &place(), &Limits::default(), true).unwrap(),
        Effect::Move(State::Answered)
    );
}

#[test]
fn the_turn_follows_the_act() {
    let p = place();
    let thread = p.thread.clone().unwrap();
    let turn_of =
        |value, p: &Place| turn(&env(value), p, &thread, false, 9).map(|a| (a.identity, a.message));
    assert_eq!(
        turn_of(json!({ "kind": "ask", "thread": "th_1", "body": "x" }), &p),
        Some(("r:bob".into(), 9)),
        "an ask under a message: its author"
    );
    assert_eq!(
        turn_of(
            json!({ "kind": "decide", "thread": "th_1", "body": "x" }),
            &p
        ),
        None
    );
    let mut answered = place();
    answered.asker = Some(("r:carol".into(), None));
    assert_eq!(
        turn_of(
            json!({ "kind": "answer", "thread": "th_1", "body": "x" }),
            &answered
        ),
        Some(("r:carol".into(), 9)),
        "an answer: the asker the engine found"
    );
}

#[test]
fn an_inbox_entry_counts_while_its_turn_is_current_and_not_the_readers_own() {
    let mut thread = ThreadRec::bare(1, 1);
    thread.awaiting = Some(Awaiting {
        identity: "r:alice".into(),
        extension: Some("w1".into()),
        message: 5,
    });
    let w1 = Some("w1".to_string());
    let w2 = Some("w2".to_string());
    assert!(turn_is_current(&thread, 5, &w1));
    assert!(
        turn_is_current(&thread, 5, &None),
        "a bare identity reads every turn"
    );
    assert!(
        !turn_is_current(&thread, 5, &w2),
        "another extension's turn"
    );
    assert!(!turn_is_current(&thread, 4, &w1), "a stale entry");
    thread.awaiting.as_mut().unwrap().identity = "*".into();
    assert!(
        turn_is_current(&thread, 5, &w2),
        "an open turn waits for anyone"
    );
    thread.state = State::Closed;
    thread.state_confirmed_at = Some(1);
    assert!(
        !turn_is_current(&thread, 5, &w1),
        "a locked thread waits for nobody"
    );

    let mut asked = MessageRec::bare(5, 1, None);
    asked.identity = "r:alice".into();
    asked.extension = w1.clone();
    assert!(own_turn(&asked, "r:alice", &w1));
    assert!(
        !own_turn(&asked, "r:alice", &w2),
        "a sibling extension's question"
    );
    assert!(!own_turn(&asked, "r:alice", &None));
    assert!(!own_turn(&asked, "r:bob", &w1));
}

#[test]
fn a_state_set_through_the_lock_right_is_confirmed_and_labelled() {
    let mut thread = ThreadRec::bare(1, 1);
    let label = Some("Mod".to_string());
    let change = apply_state(Effect::Move(State::Decided), &mut thread, &MOD, 7, &label);
    assert_eq!(
        change,
        Some(Change::State {
            from: State::Open,
            to: State::Decided,
            confirmation: false
        })
    );
    assert_eq!(
        (
            thread.state,
            thread.state_confirmed_at,
            thread.state_label.as_deref()
        ),
        (State::Decided, Some(7), Some("Mod"))
    );
    let mut proposed = ThreadRec::bare(1, 1);
    apply_state(
        Effect::Move(State::Answered),
        &mut proposed,
        &ALICE,
        7,
        &None,
    );
    assert_eq!(proposed.state_confirmed_at, None, "a proposal");
    assert_eq!(
        apply_state(Effect::None, &mut proposed, &ALICE, 8, &None),
        None
    );
}

#[test]
fn if_state_comes_after_authority_and_before_the_guards_and_the_transition() {
    let limits = Limits::default();
    let mut p = place();
    p.thread.as_mut().unwrap().state = State::Answered;
    // Alice has no authority over bob's thread: authority wins (§12.1).
    let stale = env(json!({ "kind": "decide", "thread": "th_1", "body": "x", "if_state": "open" }));
    assert_eq!(
        reason(check(&ALICE, &stale, &p, &limits, true)),
        Reason::ThreadAuthorityMissing
    );
    // Past authority, the stale condition is refused with the state as it is.
    let refused = check(&MOD, &stale, &p, &limits, true).unwrap_err();
    assert_eq!(
        (refused.reason, refused.state, refused.field.as_deref()),
        (
            Reason::StateChanged,
            Some(State::Answered),
            Some("if_state")
        )
    );
    // Before repeated_body: the mod's last body in the thread is this one.
    p.thread
        .as_mut()
        .unwrap()
        .last_body
        .insert("r:mod".into(), stale.body_hash);
    assert_eq!(
        reason(check(&MOD, &stale, &p, &limits, true)),
        Reason::StateChanged
    );
    // Before the transition: a mark backwards with a stale condition.
    let back = env(
        json!({ "kind": "mark", "thread": "th_1", "body": "y", "state": "open", "if_state": "decided" }),
    );
    assert_eq!(
        reason(check(&MOD, &back, &p, &limits, true)),
        Reason::StateChanged
    );
    // A condition that holds changes nothing: the same mark is judged as without it.
    let held = env(
        json!({ "kind": "mark", "thread": "th_1", "body": "y", "state": "open", "if_state": "answered" }),
    );
    assert_eq!(
        reason(check(&MOD, &held, &p, &limits, true)),
        Reason::InvalidTransition
    );
    let close = env(
        json!({ "kind": "mark", "thread": "th_1", "body": "z", "state": "closed", "if_state": "answered" }),
    );
    assert_eq!(
        check(&MOD, &close, &p, &limits, true).unwrap(),
        Effect::Move(State::Closed)
    );
}

/// A thread of bob whose guards have counted `since` messages and remember
/// `recent` (newest first) of (message, identity, body).
fn guarded_place(since: u32, recent: &[(u64, &str, &str)]) -> Place {
    let mut p = place();
    let t = p.thread.as_mut().unwrap();
    t.guards.since_progress = since;
    for (message, identity, body) in recent.iter().rev() {
        // As a post does: every author of the thread is in `last_body`.
        let repeat = crate::protocol::hashes::body_hash(body);
        t.last_body.insert(identity.to_string(), repeat);
        t.guards
            .remember(*message, identity, guards::folded_hash(body), 8);
    }
    p
}

#[test]
fn an_echo_of_another_identity_is_refused_naming_its_message_and_author() {
    let p = guarded_place(0, &[(5, "r:bob", "OK, thanks!")]);
    let note = env(json!({ "kind": "note", "thread": "th_1", "body": "ok thanks" }));
    let refused = check(&ALICE, &note, &p, &Limits::default(), true).unwrap_err();
    assert_eq!(refused.reason, Reason::EchoedBody);
    assert!(refused.message.contains("msg_5"), "{}", refused.message);
    assert!(refused.message.contains("r:bob"), "{}", refused.message);
    assert_eq!(refused.field.as_deref(), Some("body"));
    // One's own words are repeated_body's business, not an echo.
    let own = guarded_place(0, &[(5, "r:alice", "OK, thanks!")]);
    assert!(check(&ALICE, &note, &own, &Limits::default(), true).is_ok());
    // A person, a marking act, the profile off or a window of 0: no refusal.
    let ann = Actor {
        identity: "human:ann",
        human: true,
        confirmer: true,
    };
    assert!(check(&ann, &note, &p, &Limits::default(), true).is_ok());
    let decide = env(json!({ "kind": "decide", "thread": "th_1", "body": "OK thanks" }));
    assert!(check(&MOD, &decide, &p, &Limits::default(), true).is_ok());
    assert!(check(&ALICE, &note, &p, &Limits::default(), false).is_ok());
    let off = Limits {
        echo_window: 0,
        ..Limits::default()
    };
    assert!(check(&ALICE, &note, &p, &off, true).is_ok());
}

#[test]
fn the_echo_window_holds_the_newest_messages_by_others_only() {
    let mut recent: Vec<(u64, &str, &str)> = (10..18).map(|m| (m, "r:carol", "other")).collect();
    recent.push((9, "r:bob", "echo me"));
    // Eight newer messages by carol push bob's out of alice's window of 8.
    let p = guarded_place(0, &recent);
    let note = env(json!({ "kind": "note", "thread": "th_1", "body": "Echo me!" }));
    assert!(check(&ALICE, &note, &p, &Limits::default(), true).is_ok());
    // Alice's own messages between do not.
    let mut recent: Vec<(u64, &str, &str)> = (10..30).map(|m| (m, "r:alice", "mine")).collect();
    recent.push((9, "r:bob", "echo me"));
    let p = guarded_place(0, &recent);
    assert_eq!(
        reason(check(&ALICE, &note, &p, &Limits::default(), true)),
        Reason::EchoedBody
    );
}

#[test]
fn no_progress_refuses_content_at_the_limit_and_never_marks_or_people() {
    let limits = Limits::default();
    let note = env(json!({ "kind": "note", "thread": "th_1", "body": "again" }));
    assert!(check(&ALICE, &note, &guarded_place(23, &[]), &limits, true).is_ok());
    let refused = check(&ALICE, &note, &guarded_place(24, &[]), &limits, true).unwrap_err();
    assert_eq!(refused.reason, Reason::NoProgress);
    assert_eq!(
        refused.limit.map(|l| l.as_str()),
        Some("progress_max_messages")
    );
    assert!(
        refused.message.contains("decide, mark, or ask the person"),
        "{}",
        refused.message
    );
    for kind in ["ask", "answer", "propose", "object", "assert"] {
        let e = env(json!({ "kind": kind, "thread": "th_1", "body": "x" }));
        assert_eq!(
            reason(check(&ALICE, &e, &guarded_place(24, &[]), &limits, true)),
            Reason::NoProgress,
            "{kind}"
        );
    }
    let ann = Actor {
        identity: "human:ann",
        human: true,
        confirmer: true,
    };
    assert!(check(&ann, &note, &guarded_place(99, &[]), &limits, true).is_ok());
    let mark = env(json!({ "kind": "mark", "thread": "th_1", "body": "done", "state": "closed" }));
    assert!(check(&MOD, &mark, &guarded_place(99, &[]), &limits, true).is_ok());
    let off = Limits {
        progress_max_messages: 0,
        ..Limits::default()
    };
    assert!(check(&ALICE, &note, &guarded_place(99, &[]), &off, true).is_ok());
    assert!(check(&ALICE, &note, &guarded_place(99, &[]), &limits, false).is_ok());
}

#[test]
fn the_guards_come_after_repeated_body_echo_first_and_before_the_limits() {
    let limits = Limits::default();
    // Echo and no progress at once: echoed_body wins.
    let mut p = guarded_place(24, &[(5, "r:bob", "same words")]);
    let note = env(json!({ "kind": "note", "thread": "th_1", "body": "Same words." }));
    assert_eq!(
        reason(check(&ALICE, &note, &p, &limits, true)),
        Reason::EchoedBody
    );
    // repeated_body comes before both.
    p.thread
        .as_mut()
        .unwrap()
        .last_body
        .insert("r:alice".into(), note.body_hash);
    assert_eq!(
        reason(check(&ALICE, &note, &p, &limits, true)),
        Reason::RepeatedBody
    );
    // A full thread would be limit_exceeded; no_progress comes first.
    let mut p = guarded_place(24, &[]);
    p.thread.as_mut().unwrap().message_count = 1000;
    let answer = env(json!({ "kind": "answer", "thread": "th_1", "body": "x" }));
    assert_eq!(
        reason(check(&ALICE, &answer, &p, &limits, false)),
        Reason::LimitExceeded
    );
    assert_eq!(
        reason(check(&ALICE, &answer, &p, &limits, true)),
        Reason::NoProgress
    );
}

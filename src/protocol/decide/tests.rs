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
        reason(check(&ALICE, &decide, &p, &Limits::default())),
        Reason::ThreadClosed
    );
    let reopen = env(json!({ "kind": "reopen", "thread": "th_1", "body": "x" }));
    assert_eq!(
        reason(check(&ALICE, &reopen, &p, &Limits::default())),
        Reason::ThreadAuthorityMissing,
        "past the lock, a reopen of another's thread needs authority"
    );
    assert_eq!(
        check(&MOD, &reopen, &p, &Limits::default()).unwrap(),
        Effect::Move(State::Open)
    );
}

#[test]
fn the_loop_guards_come_before_the_transition_and_the_limits_last() {
    let mut p = place();
    p.parent.as_mut().unwrap().identity = "r:alice".into();
    let answer = env(json!({ "kind": "answer", "thread": "th_1", "body": "x" }));
    assert_eq!(
        reason(check(&ALICE, &answer, &p, &Limits::default())),
        Reason::SelfReply
    );
    let mut p = place();
    p.thread.as_mut().unwrap().message_count = 1;
    let limits = Limits {
        thread_max_messages: 1,
        ..Limits::default()
    };
    assert_eq!(
        reason(check(&ALICE, &answer, &p, &limits)),
        Reason::LimitExceeded
    );
    assert_eq!(
        check(&ALICE, &answer, &place(), &Limits::default()).unwrap(),
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
        reason(check(&ALICE, &stale, &p, &limits)),
        Reason::ThreadAuthorityMissing
    );
    // Past authority, the stale condition is refused with the state as it is.
    let refused = check(&MOD, &stale, &p, &limits).unwrap_err();
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
        reason(check(&MOD, &stale, &p, &limits)),
        Reason::StateChanged
    );
    // Before the transition: a mark backwards with a stale condition.
    let back = env(
        json!({ "kind": "mark", "thread": "th_1", "body": "y", "state": "open", "if_state": "decided" }),
    );
    assert_eq!(
        reason(check(&MOD, &back, &p, &limits)),
        Reason::StateChanged
    );
    // A condition that holds changes nothing: the same mark is judged as without it.
    let held = env(
        json!({ "kind": "mark", "thread": "th_1", "body": "y", "state": "open", "if_state": "answered" }),
    );
    assert_eq!(
        reason(check(&MOD, &held, &p, &limits)),
        Reason::InvalidTransition
    );
    let close = env(
        json!({ "kind": "mark", "thread": "th_1", "body": "z", "state": "closed", "if_state": "answered" }),
    );
    assert_eq!(
        check(&MOD, &close, &p, &limits).unwrap(),
        Effect::Move(State::Closed)
    );
}

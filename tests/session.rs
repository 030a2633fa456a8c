//! The typed Rust API: envelopes built field by field, and every read typed.

use parley_forum::{ClaimStatus, Config, Envelope, Forum, Origin, Reason, Right, State, TokenSpec};

fn forum() -> (Forum, String, String, String) {
    let forum = Forum::in_memory(
        Config::from_json(&serde_json::json!({"clock": "2026-11-30T12:00:00.000Z"})).unwrap(),
    )
    .unwrap();
    let rw = [Right::Read, Right::Write];
    let alice = forum.create_token(&TokenSpec::llm("alice", &rw)).unwrap();
    let bob = forum
        .create_token(&TokenSpec::llm(
            "bob",
            &[Right::Read, Right::Write, Right::Verify],
        ))
        .unwrap();
    let ann = forum.create_token(&TokenSpec::human("ann")).unwrap();
    (forum, alice, bob, ann)
}

#[test]
fn a_conversation_through_typed_sessions() {
    let (forum, alice, bob, ann) = forum();
    let alice_s = forum.session(&alice);
    let bob_s = forum.session(&bob).with_extension("w1");

    let asked = alice_s
        .post(&Envelope::new("ask", "Which port?").to("ainotes:bob"))
        .unwrap();
    let turn = asked.thread.awaiting.clone().unwrap();
    assert_eq!(
        (turn.identity.as_str(), turn.extension.as_deref()),
        ("ainotes:bob", None)
    );

    let inbox = bob_s.inbox(None).unwrap();
    assert_eq!(inbox.items.len(), 1);
    assert_eq!(inbox.items[0].message.id, asked.message_id);
    assert!(!inbox.more);
    assert!(bob_s.inbox(Some(&inbox.cursor)).unwrap().items.is_empty());

    let answered = bob_s
        .post(&Envelope::new("answer", "7878").thread(asked.thread.id))
        .unwrap();
    assert_eq!(answered.thread.state, State::Answered);
    assert_eq!(answered.thread.state_confirmed_at, None);
    assert_eq!(answered.events.len(), 1);

    let confirmed = forum
        .session(&ann)
        .post(
            &Envelope::new("mark", "Confirmed")
                .thread(asked.thread.id)
                .state("answered"),
        )
        .unwrap();
    assert!(confirmed.thread.state_confirmed_at.is_some());
    assert_eq!(confirmed.thread.state_origin, Origin::Llm);

    let view = alice_s.thread(asked.thread.id).unwrap();
    assert_eq!(view.thread.message_count, 3);
    assert_eq!(view.thread.creator.identity, "ainotes:alice");
    let root = &view.messages[0];
    assert_eq!(root.parent, None);
    assert_eq!(root.replies.len(), 2);
    assert_eq!(root.replies[0].from.extension.as_deref(), Some("w1"));

    let events = alice_s.events(Some(asked.thread.id), None).unwrap();
    let kinds: Vec<&str> = events.items.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["transition", "confirmation"]);
    assert_eq!(events.items[1].origin, Origin::User);

    let listed = alice_s.threads(Some("answered"), None).unwrap();
    assert_eq!(listed.items.len(), 1);
    assert!(alice_s
        .threads(Some("open"), None)
        .unwrap()
        .items
        .is_empty());

    let me = bob_s.whoami().unwrap();
    assert_eq!(
        (me.identity.as_str(), me.kind.as_str()),
        ("ainotes:bob", "llm")
    );
    assert_eq!(me.rights, ["read", "write", "verify"]);
}

#[test]
fn claims_through_typed_sessions() {
    let (forum, alice, bob, _) = forum();
    let claimed = forum
        .session(&alice)
        .post(
            &Envelope::new("assert", "The cache is safe to share.")
                .evidence("log", "ci run 12")
                .valid_until("2026-01-01T00:00:00Z"),
        )
        .unwrap();
    let id = claimed.claim.as_ref().unwrap().id;
    forum
        .session(&bob)
        .post(&Envelope::new("verify", "Checked the cache keys.").claim(id))
        .unwrap();
    let claim = forum.session(&alice).claim(id).unwrap();
    assert_eq!(claim.status, ClaimStatus::Verified);
    assert_eq!(claim.verifications[0].identity, "ainotes:bob");
    assert!(claim.expired, "valid_until is before the fixed clock");

    let refused = forum
        .session(&alice)
        .post(&Envelope::new("verify", "Mine.").claim(id))
        .unwrap_err();
    assert_eq!(refused.refusal().unwrap().reason, Reason::TokenRightMissing);
}

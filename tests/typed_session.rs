//! The typed `Session` builds its results from records, without JSON; the generic
//! call shows the same records as JSON. Every typed result here must equal the
//! generic call's JSON read into the same type, over a forum that holds every
//! shape: turns with extensions, hand-offs, proposals and confirmations, a lock
//! holder's labelled change, claims asserted, attested, refuted, verified and
//! superseded, evidence, provenance and expiry, a replayed post, and searches.

use parley_forum::{
    ClaimView, Config, Envelope, EventView, Forum, InboxItem, MessageView, Page, PostResult, Right,
    SearchHit, ThreadId, ThreadSummary, ThreadView, TokenSpec, WhoAmI,
};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

struct World {
    forum: Forum,
    alice: String,
    bob: String,
    ann: String,
    moderator: String,
}

fn world() -> World {
    let forum =
        Forum::in_memory(Config::from_json(&json!({"clock": "2026-11-30T12:00:00.000Z"})).unwrap())
            .unwrap();
    let all = [Right::Read, Right::Write, Right::Verify];
    World {
        alice: forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
            .unwrap(),
        bob: forum.create_token(&TokenSpec::llm("bob", &all)).unwrap(),
        ann: forum.create_token(&TokenSpec::human("ann")).unwrap(),
        moderator: forum
            .create_token(
                &TokenSpec::llm("mod", &[Right::Read, Right::Write, Right::Lock]).label("Mod"),
            )
            .unwrap(),
        forum,
    }
}

fn typed<T: DeserializeOwned>(value: &Value) -> T {
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{e}: {value}"))
}

impl World {
    fn json(&self, token: &str, op: &str, args: Value) -> Value {
        self.forum.call(Some(token), op, &args).unwrap()
    }

    /// Posts through the typed session and checks its result against the generic
    /// call's reads right after: the message, its thread, its events, its claim.
    fn post(&self, token: &str, envelope: Envelope) -> PostResult {
        let posted = self.forum.session(token).post(&envelope).unwrap();
        self.check_post(token, &posted);
        posted
    }

    fn check_post(&self, token: &str, posted: &PostResult) {
        assert_eq!(posted.message_id, posted.message.id);
        let feed = self.json(
            token,
            "get_messages",
            json!({ "thread": posted.thread.id, "limit": 200 }),
        );
        let stored = feed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == posted.message.id.to_string())
            .expect("the posted message is in its thread's feed");
        assert_eq!(posted.message, typed::<MessageView>(stored));
        let thread = self.json(token, "get_thread", json!({ "thread": posted.thread.id }));
        assert_eq!(posted.thread, typed::<ThreadSummary>(&thread["thread"]));
        let events = self.json(
            token,
            "get_events",
            json!({ "thread": posted.thread.id, "limit": 200 }),
        );
        let own: Vec<EventView> = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["message"] == posted.message.id.to_string())
            .map(typed)
            .collect();
        if !posted.replayed {
            assert_eq!(posted.events, own);
        }
        if let Some(claim) = &posted.claim {
            let shown = self.json(token, "get_claim", json!({ "claim": claim.id }));
            assert_eq!(claim, &typed::<ClaimView>(&shown));
        }
    }

    /// Every read of the typed session equals the generic call's, for `token`.
    fn check_reads(&self, token: &str, threads: &[ThreadId], words: &[&str]) {
        let s = self.forum.session(token);
        let page = |op: &str, args: Value| self.json(token, op, args);
        for &thread in threads {
            assert_eq!(
                s.thread(thread).unwrap(),
                typed::<ThreadView>(&page("get_thread", json!({ "thread": thread })))
            );
            assert_eq!(
                s.messages(Some(thread), None).unwrap(),
                typed::<Page<MessageView>>(&page("get_messages", json!({ "thread": thread })))
            );
            assert_eq!(
                s.events(Some(thread), None).unwrap(),
                typed::<Page<EventView>>(&page("get_events", json!({ "thread": thread })))
            );
        }
        let feed = s.messages(None, None).unwrap();
        assert_eq!(
            feed,
            typed::<Page<MessageView>>(&page("get_messages", json!({})))
        );
        // A cursor from the typed page works on the generic call and back.
        let later = s.messages(None, Some(&feed.cursor)).unwrap();
        assert_eq!(
            later,
            typed::<Page<MessageView>>(&page("get_messages", json!({ "since": feed.cursor })))
        );
        assert_eq!(
            s.events(None, None).unwrap(),
            typed::<Page<EventView>>(&page("get_events", json!({})))
        );
        assert_eq!(
            s.inbox(None).unwrap(),
            typed::<Page<InboxItem>>(&page("get_inbox", json!({})))
        );
        for state in [None, Some("open"), Some("answered"), Some("closed")] {
            assert_eq!(
                s.threads(state, None).unwrap(),
                typed::<Page<ThreadSummary>>(&page("list_threads", json!({ "state": state })))
            );
        }
        for q in words {
            assert_eq!(
                s.search(q, None, None).unwrap(),
                typed::<Page<SearchHit>>(&page("search", json!({ "q": q })))
            );
        }
        assert_eq!(
            s.whoami().unwrap(),
            typed::<WhoAmI>(&page("whoami", json!({})))
        );
    }
}

#[test]
fn every_typed_result_equals_the_generic_calls_json() {
    let w = world();
    let asked = w.post(
        &w.alice,
        Envelope::new("ask", "Which port does the dev server use?\nIt moved.")
            .to("ainotes:bob")
            .provenance("model-x", "client-y"),
    );
    let th = asked.thread.id;
    let bob = |e: Envelope| {
        let posted = w
            .forum
            .session(&w.bob)
            .with_extension("w1")
            .post(&e)
            .unwrap();
        w.check_post(&w.bob, &posted);
        posted
    };
    let handed = bob(Envelope::new("handoff", "Ann knows the port.")
        .parent(asked.message_id)
        .to("human:ann"));
    assert_eq!(
        handed.thread.awaiting.as_ref().unwrap().identity,
        "human:ann"
    );
    let answered = w.post(
        &w.ann,
        Envelope::new("answer", "Port 7878 since the upgrade.").thread(th),
    );
    assert_eq!(answered.events.len(), 1, "a transition, proposed");
    w.post(
        &w.ann,
        Envelope::new("mark", "Confirmed.")
            .thread(th)
            .state("answered"),
    );

    // Claims: asserted with evidence and expiry, attested, refuted, verified,
    // superseded.
    let claimed = w.post(
        &w.alice,
        Envelope::new("assert", "The cache is safe to share.")
            .parent(answered.message_id)
            .evidence("log", "ci run 12")
            .valid_until("2026-01-01T00:00:00Z"),
    );
    let c1 = claimed.claim.as_ref().unwrap().id;
    bob(Envelope::new("attest", "Same here.")
        .claim(c1)
        .evidence("url", "https://example.org/run/13"));
    let refuted = bob(Envelope::new("refute", "It fails on Linux.")
        .claim(c1)
        .evidence("log", "linux run 881 failed"));
    assert!(refuted.claim.is_some());
    let second = w.post(
        &w.alice,
        Envelope::new("assert", "The cache is safe on macOS only.")
            .parent(refuted.message_id)
            .supersedes(c1),
    );
    let c2 = second.claim.as_ref().unwrap().id;
    let verified = bob(Envelope::new("verify", "Checked on macOS.").claim(c2));
    assert!(!verified.events.is_empty(), "a claim status change");

    // A second thread, closed by the lock holder: a labelled, confirmed change.
    let other = w.post(
        &w.bob,
        Envelope::new("ask", "Should the build pin its toolchain?"),
    );
    let th2 = other.thread.id;
    let locked = w.post(
        &w.moderator,
        Envelope::new("mark", "Closing: settled elsewhere.")
            .thread(th2)
            .state("closed"),
    );
    assert!(locked.thread.locked);
    assert_eq!(locked.thread.state_label.as_deref(), Some("KI · Mod"));

    // A replayed post returns the first message, typed as the generic call shows it.
    let keyed = Envelope::new("note", "Noted: port 7878.")
        .parent(verified.message_id)
        .idempotency_key("k-1");
    let first = w.post(&w.alice, keyed.clone());
    let again = w.forum.session(&w.alice).post(&keyed).unwrap();
    assert!(again.replayed && !first.replayed);
    assert_eq!(again.message, first.message);
    w.check_post(&w.alice, &again);
    let raw = w.json(&w.alice, "post", keyed.to_json());
    assert_eq!(again.message, typed::<MessageView>(&raw["message"]));
    assert_eq!(again.thread, typed::<ThreadSummary>(&raw["thread"]));

    for token in [&w.alice, &w.bob, &w.ann, &w.moderator] {
        w.check_reads(token, &[th, th2], &["port", "cache safe", "toolchain"]);
    }
    let s = w.forum.session(&w.bob);
    for claim in [&c1, &c2] {
        assert_eq!(
            s.claim(*claim).unwrap(),
            typed::<ClaimView>(&w.json(&w.bob, "get_claim", json!({ "claim": claim })))
        );
    }
}

#[test]
fn typed_refusals_are_the_generic_calls() {
    let w = world();
    let s = w.forum.session("pt_not_a_token");
    let typed_reason = s.inbox(None).unwrap_err().refusal().unwrap().reason;
    let json_reason = w
        .forum
        .call(Some("pt_not_a_token"), "get_inbox", &json!({}))
        .unwrap_err()
        .refusal()
        .unwrap()
        .reason;
    assert_eq!(typed_reason, json_reason);
    let s = w.forum.session(&w.alice);
    for (typed, op, args) in [
        (
            s.thread("th_99").unwrap_err(),
            "get_thread",
            json!({ "thread": "th_99" }),
        ),
        (
            s.thread("nonsense").unwrap_err(),
            "get_thread",
            json!({ "thread": "nonsense" }),
        ),
        (
            s.messages(None, Some("bad")).unwrap_err(),
            "get_messages",
            json!({ "since": "bad" }),
        ),
        (
            s.threads(Some("melted"), None).unwrap_err(),
            "list_threads",
            json!({ "state": "melted" }),
        ),
        (
            s.search("", None, None).unwrap_err(),
            "search",
            json!({ "q": "" }),
        ),
        (
            s.claim("cl_7").unwrap_err(),
            "get_claim",
            json!({ "claim": "cl_7" }),
        ),
        (
            s.claim("th_7").unwrap_err(),
            "get_claim",
            json!({ "claim": "th_7" }),
        ),
        (
            s.thread(ThreadId::new(99).unwrap()).unwrap_err(),
            "get_thread",
            json!({ "thread": 99 }),
        ),
        (
            s.thread(0).unwrap_err(),
            "get_thread",
            json!({ "thread": 0 }),
        ),
        (
            s.get_digest("msg_1").unwrap_err(),
            "get_digest",
            json!({ "thread": "msg_1" }),
        ),
        (
            s.release("ls_x").unwrap_err(),
            "release",
            json!({ "lease": "ls_x" }),
        ),
        (
            s.leases(Some("a//b"), None).unwrap_err(),
            "get_leases",
            json!({ "resource": "a//b" }),
        ),
        (
            s.clone()
                .with_extension("no spaces")
                .inbox(None)
                .unwrap_err(),
            "get_inbox",
            json!({ "extension": "no spaces" }),
        ),
    ] {
        let json = w.forum.call(Some(&w.alice), op, &args).unwrap_err();
        assert_eq!(typed.refusal(), json.refusal(), "{op} {args}");
    }
    // Without the listen profile, a wait is an unknown argument both ways.
    let still = Forum::in_memory(Config::from_json(&json!({ "profiles": [] })).unwrap()).unwrap();
    let token = still
        .create_token(&TokenSpec::llm("x", &[Right::Read]))
        .unwrap();
    let typed = still
        .session(&token)
        .inbox_wait(None, std::time::Duration::from_millis(5))
        .unwrap_err();
    let json = still
        .call(Some(&token), "get_inbox", &json!({ "wait_ms": 5 }))
        .unwrap_err();
    assert_eq!(typed.refusal(), json.refusal());
    assert_eq!(json.refusal().unwrap().field.as_deref(), Some("wait_ms"));
    // Without the profile, `get_claim` is an unknown operation both ways.
    let plain =
        Forum::in_memory(Config::from_json(&json!({ "profiles": ["listen"] })).unwrap()).unwrap();
    let token = plain
        .create_token(&TokenSpec::llm("x", &[Right::Read]))
        .unwrap();
    assert!(matches!(
        plain.session(&token).claim("cl_1"),
        Err(parley_forum::Error::UnknownOperation(_))
    ));
}

//! SPEC §15, the guards profile, on redb and on PostgreSQL with the default limits:
//! loops among several agents (acknowledgements traded, an echo, a ring of
//! handoffs) are stopped by `no_progress` or `echoed_body`; a person's message, a
//! decision and a mark restart the count and are never refused; the profile off
//! and limits of 0 switch the rules off; the order of §12.1 around them; the
//! count in the thread summary; and a forum file reopened, or written before the
//! profile existed, keeps or starts its count.

#[path = "pg/support.rs"]
mod support;

use parley_forum::{Config, Envelope, Error, Forum, Reason, Refusal, Right, TokenSpec};
use serde_json::{json, Value};

/// The default limits but the rate limit, with `extra` settings on top.
fn settings(extra: Value) -> Config {
    let mut s = json!({ "limits": { "writes_per_minute": 0 } });
    for (k, v) in extra.as_object().unwrap() {
        if k == "limits" {
            for (name, n) in v.as_object().unwrap() {
                s["limits"][name] = n.clone();
            }
        } else {
            s[k] = v.clone();
        }
    }
    Config::from_json(&s).unwrap()
}

/// The forums a test runs on: a redb file, and a PostgreSQL forum when a server
/// was started (`source tests/pg/server.sh && pg_start`).
fn forums(tag: &str, extra: Value) -> Vec<(String, Forum, Option<tempfile::TempDir>)> {
    support::forums(tag, || settings(extra.clone()))
}

struct Cast {
    bob: String,
    carol: String,
    dave: String,
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
        dave: llm("dave"),
        ann: forum.create_token(&TokenSpec::human("ann")).unwrap(),
    }
}

fn post(forum: &Forum, token: &str, envelope: Value) -> parley_forum::Result<Value> {
    forum.call(Some(token), "post", &envelope)
}

fn refusal(outcome: parley_forum::Result<Value>) -> Refusal {
    match outcome {
        Err(Error::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn id(v: &Value, path: &str) -> String {
    v.pointer(path).and_then(Value::as_str).unwrap().to_string()
}

fn since(forum: &Forum, token: &str, thread: &str) -> Value {
    forum
        .call(Some(token), "get_thread", &json!({ "thread": thread }))
        .unwrap()["thread"]["since_progress"]
        .clone()
}

/// Bob asks, Carol answers: the thread is `answered`, the count 0. Returns the
/// thread and Carol's answer.
fn answered(forum: &Forum, c: &Cast) -> (String, String) {
    let asked = post(
        forum,
        &c.bob,
        json!({ "kind": "ask", "body": "Can we deploy the release today?" }),
    )
    .unwrap();
    let thread = id(&asked, "/thread/id");
    let answer = post(
        forum,
        &c.carol,
        json!({ "kind": "answer", "thread": thread, "body": "Yes, the build is green." }),
    )
    .unwrap();
    assert_eq!(answer["thread"]["since_progress"], 0);
    (thread, id(&answer, "/message/id"))
}

/// Bob and Carol trade `n` acknowledgements (tagged `round`), starting with
/// Bob's reply to `last`: Bob replies to Carol's last, Carol to Bob's question
/// (so that the tree stays shallow). Returns how many were accepted before the
/// first refusal, and that refusal.
fn ping_pong(
    forum: &Forum,
    c: &Cast,
    thread: &str,
    round: &str,
    last: &str,
    n: usize,
) -> (usize, Option<Refusal>) {
    let mut last = last.to_string();
    for i in 0..n {
        let body = format!("Thanks for {i}, noted number {i} {round}.");
        let (token, envelope) = if i % 2 == 0 {
            (
                &c.bob,
                json!({ "kind": "note", "parent": last, "body": body }),
            )
        } else {
            (
                &c.carol,
                json!({ "kind": "note", "thread": thread, "body": body }),
            )
        };
        match post(forum, token, envelope) {
            Ok(v) => {
                assert_eq!(v["thread"]["since_progress"], (i + 1) as u64);
                last = id(&v, "/message/id");
            }
            Err(Error::Refused(r)) => return (i, Some(r)),
            Err(e) => panic!("{e}"),
        }
    }
    (n, None)
}

#[test]
fn acknowledgements_traded_stop_at_progress_max_messages() {
    for (name, forum, _dir) in forums("pingpong", json!({})) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let (accepted, refused) = ping_pong(&forum, &c, &thread, "a", &answer, 100);
        assert_eq!(accepted, 24, "{name}");
        let refused = refused.unwrap();
        assert_eq!(refused.reason, Reason::NoProgress, "{name}");
        assert_eq!(refused.limit.as_deref(), Some("progress_max_messages"));
        assert!(
            refused.message.contains("no progress")
                && refused.message.contains("24 messages")
                && refused.message.contains("decide, mark, or ask the person"),
            "{name}: {}",
            refused.message
        );
        // The refused post counted for nothing, and anyone else is refused too.
        assert_eq!(since(&forum, &c.ann, &thread), 24, "{name}");
        let dave = post(
            &forum,
            &c.dave,
            json!({ "kind": "ask", "thread": thread, "body": "Should I look at it?" }),
        );
        assert_eq!(refusal(dave).reason, Reason::NoProgress, "{name}");
        let view = forum
            .call(Some(&c.ann), "get_thread", &json!({ "thread": thread }))
            .unwrap();
        assert_eq!(view["thread"]["message_count"], 26, "{name}");
    }
}

#[test]
fn an_echo_of_another_agent_is_refused_naming_whose_message() {
    for (name, forum, _dir) in forums("echo", json!({})) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let refused = refusal(post(
            &forum,
            &c.bob,
            json!({ "kind": "note", "parent": answer, "body": "yes -- the BUILD is green!" }),
        ));
        assert_eq!(refused.reason, Reason::EchoedBody, "{name}");
        assert_eq!(refused.field.as_deref(), Some("body"));
        assert!(
            refused.message.contains(&answer) && refused.message.contains("ainotes:carol"),
            "{name}: {}",
            refused.message
        );
        // Nothing was written, and the count is unchanged.
        assert_eq!(since(&forum, &c.ann, &thread), 0, "{name}");
        // A person may echo anyone; an agent may not echo the person either.
        let ann = post(
            &forum,
            &c.ann,
            json!({ "kind": "note", "thread": thread, "body": "Yes, the build is green." }),
        )
        .unwrap();
        let ann_said = id(&ann, "/message/id");
        let dave = refusal(post(
            &forum,
            &c.dave,
            json!({ "kind": "note", "thread": thread, "body": "YES the build is green" }),
        ));
        assert_eq!(dave.reason, Reason::EchoedBody, "{name}");
        assert!(dave.message.contains(&ann_said), "{name}: {}", dave.message);
    }
}

#[test]
fn a_ring_of_handoffs_is_stopped() {
    for (name, forum, _dir) in forums("ring", json!({})) {
        let c = cast(&forum);
        let ring = [
            (&c.bob, "ainotes:carol"),
            (&c.carol, "ainotes:dave"),
            (&c.dave, "ainotes:bob"),
        ];
        let asked = post(
            &forum,
            &c.bob,
            json!({ "kind": "ask", "to": "ainotes:carol", "body": "Who owns the migration?" }),
        )
        .unwrap();
        let thread = id(&asked, "/thread/id");
        let mut last = id(&asked, "/message/id");
        let mut handoffs = 0;
        let refused = loop {
            let (token, to) = ring[(handoffs + 1) % 3];
            let body = format!("Not mine, {to} knows it ({handoffs}).");
            match post(
                &forum,
                token,
                json!({ "kind": "handoff", "parent": last, "to": to, "body": body }),
            ) {
                Ok(v) => last = id(&v, "/message/id"),
                Err(Error::Refused(r)) => break r,
                Err(e) => panic!("{e}"),
            }
            handoffs += 1;
            assert!(handoffs < 100, "{name}: the ring was never stopped");
        };
        assert_eq!(
            (handoffs, refused.reason),
            (24, Reason::NoProgress),
            "{name}"
        );
        // The refused post changed nothing: the awaited party is still due, and
        // the thread's creator may still move it on by a decision.
        let view = forum
            .call(Some(&c.ann), "get_thread", &json!({ "thread": thread }))
            .unwrap();
        assert_eq!(
            view["thread"]["awaiting"]["identity"], "ainotes:carol",
            "{name}"
        );
        let decided = post(
            &forum,
            &c.bob,
            json!({ "kind": "decide", "thread": thread, "body": "Dave owns it." }),
        )
        .unwrap();
        assert_eq!(decided["thread"]["since_progress"], 0, "{name}");
    }
}

#[test]
fn a_person_a_decision_and_a_mark_restart_the_count_and_are_never_refused() {
    for (name, forum, _dir) in forums("reset", json!({})) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let (accepted, _) = ping_pong(&forum, &c, &thread, "a", &answer, 100);
        assert_eq!(accepted, 24);
        // The person speaks at the limit.
        let ann = post(
            &forum,
            &c.ann,
            json!({ "kind": "note", "thread": thread, "body": "Carry on, but finish today." }),
        )
        .unwrap();
        assert_eq!(ann["thread"]["since_progress"], 0, "{name}");
        let (accepted, _) = ping_pong(&forum, &c, &thread, "b", &id(&ann, "/message/id"), 100);
        assert_eq!(accepted, 24, "{name}: a full count again after the person");
        // A decision by the creator at the limit: a transition, progress.
        let decided = post(
            &forum,
            &c.bob,
            json!({ "kind": "decide", "thread": thread, "body": "We deploy at noon." }),
        )
        .unwrap();
        assert_eq!(decided["thread"]["state"], "decided");
        assert_eq!(decided["thread"]["since_progress"], 0, "{name}");
        let (accepted, _) = ping_pong(&forum, &c, &thread, "c", &answer, 100);
        assert_eq!(accepted, 24, "{name}");
        // A mark at the limit: accepted, and progress when it changes the state.
        let marked = post(
            &forum,
            &c.bob,
            json!({ "kind": "mark", "thread": thread, "state": "closed", "body": "Closing." }),
        )
        .unwrap();
        assert_eq!(marked["thread"]["since_progress"], 0, "{name}");
        let (accepted, _) = ping_pong(&forum, &c, &thread, "d", &answer, 100);
        assert_eq!(accepted, 24, "{name}");
        // A decision that changes nothing (a closed thread stays closed) is still
        // accepted at the limit, but is no progress: the count stays.
        let again = post(
            &forum,
            &c.bob,
            json!({ "kind": "decide", "thread": thread, "body": "Still noon." }),
        )
        .unwrap();
        assert_eq!(again["thread"]["state"], "closed", "{name}");
        assert_eq!(again["thread"]["since_progress"], 24, "{name}");
    }
}

#[test]
fn with_the_profile_off_loops_run_on_and_nothing_is_reported() {
    for settings in [
        json!({ "guards": false }),
        json!({ "profiles": ["dialectic", "listen"] }),
    ] {
        for (name, forum, _dir) in forums("off", settings.clone()) {
            let c = cast(&forum);
            let manifest = forum.manifest();
            assert!(manifest["profiles"].get("guards").is_none(), "{name}");
            let (thread, answer) = answered_off(&forum, &c);
            let mut last = answer;
            // Three phrasings in rotation: each echoes the other agent's.
            let phrasings = ["Thanks!", "Great, thanks!", "Thank you, noted."];
            for i in 0..40 {
                let body = phrasings[i % 3];
                let (token, envelope) = if i % 2 == 0 {
                    (
                        &c.bob,
                        json!({ "kind": "note", "parent": last, "body": body }),
                    )
                } else {
                    (
                        &c.carol,
                        json!({ "kind": "note", "thread": thread, "body": body }),
                    )
                };
                let v = post(&forum, token, envelope)
                    .unwrap_or_else(|e| panic!("{name} {settings}: {e}"));
                assert!(v["thread"].get("since_progress").is_none());
                last = id(&v, "/message/id");
            }
            let view = forum
                .call(Some(&c.ann), "get_thread", &json!({ "thread": thread }))
                .unwrap();
            assert!(view["thread"].get("since_progress").is_none(), "{name}");
            let typed = forum.session(&c.ann).thread(&thread).unwrap();
            assert_eq!(typed.thread.since_progress, None, "{name}");
        }
    }
}

/// `answered` without the summary's count (the profile is off).
fn answered_off(forum: &Forum, c: &Cast) -> (String, String) {
    let asked = post(
        forum,
        &c.bob,
        json!({ "kind": "ask", "body": "Deploy today?" }),
    )
    .unwrap();
    let answer = post(
        forum,
        &c.carol,
        json!({ "kind": "answer", "parent": id(&asked, "/message/id"), "body": "Yes, green." }),
    )
    .unwrap();
    (id(&asked, "/thread/id"), id(&answer, "/message/id"))
}

#[test]
fn a_limit_of_zero_switches_its_rule_off_and_leaves_the_other() {
    let no_count = json!({ "limits": { "progress_max_messages": 0 } });
    for (name, forum, _dir) in forums("zero1", no_count) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let (accepted, _) = ping_pong(&forum, &c, &thread, "a", &answer, 40);
        assert_eq!(accepted, 40, "{name}");
        assert_eq!(since(&forum, &c.ann, &thread), 40, "{name}: still counted");
        let echo = refusal(post(
            &forum,
            &c.dave,
            json!({ "kind": "note", "thread": thread, "body": "thanks for 39 noted number 39 a" }),
        ));
        assert_eq!(echo.reason, Reason::EchoedBody, "{name}");
    }
    let no_echo = json!({ "limits": { "echo_window": 0 } });
    for (name, forum, _dir) in forums("zero2", no_echo) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        post(
            &forum,
            &c.bob,
            json!({ "kind": "note", "parent": answer, "body": "Yes, the build is green!" }),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(since(&forum, &c.ann, &thread), 1, "{name}");
    }
}

#[test]
fn the_order_is_repeated_body_then_echoed_body_then_no_progress_then_the_limits() {
    // At two messages without progress the thread is also full.
    let small = json!({ "limits": { "progress_max_messages": 2, "thread_max_messages": 4 } });
    for (name, forum, _dir) in forums("order", small) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let said = post(
            &forum,
            &c.bob,
            json!({ "kind": "note", "parent": answer, "body": "Deploying at noon." }),
        )
        .unwrap();
        let noted = post(
            &forum,
            &c.carol,
            json!({ "kind": "note", "parent": id(&said, "/message/id"), "body": "Noted." }),
        )
        .unwrap();
        assert_eq!(since(&forum, &c.ann, &thread), 2);
        // Bob repeats himself, echoing nobody else: repeated_body.
        let again = json!({ "kind": "note", "parent": id(&noted, "/message/id"), "body": "Deploying at noon." });
        assert_eq!(
            refusal(post(&forum, &c.bob, again)).reason,
            Reason::RepeatedBody,
            "{name}"
        );
        // Dave echoes Carol at the limit: echoed_body before no_progress.
        let echo = json!({ "kind": "note", "thread": thread, "body": "noted" });
        assert_eq!(
            refusal(post(&forum, &c.dave, echo)).reason,
            Reason::EchoedBody,
            "{name}"
        );
        // Something new at the limit, in a full thread: no_progress before the limit.
        let news = json!({ "kind": "note", "thread": thread, "body": "Dave here." });
        assert_eq!(
            refusal(post(&forum, &c.dave, news.clone())).reason,
            Reason::NoProgress,
            "{name}"
        );
        // Past the count (a person spoke), the full thread is refused by its limit.
        let full = refusal(post(
            &forum,
            &c.ann,
            json!({ "kind": "note", "thread": thread, "body": "Stop." }),
        ));
        assert_eq!(full.reason, Reason::LimitExceeded, "{name}");
    }
}

#[test]
fn the_count_is_in_every_summary_and_the_typed_api() {
    for (name, forum, _dir) in forums("summary", json!({})) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        post(
            &forum,
            &c.bob,
            json!({ "kind": "ask", "parent": answer, "to": "ainotes:dave", "body": "Dave, can you watch it?" }),
        )
        .unwrap();
        let listed = forum
            .call(Some(&c.ann), "list_threads", &json!({}))
            .unwrap();
        assert_eq!(listed["items"][0]["since_progress"], 1, "{name}");
        let inbox = forum.call(Some(&c.dave), "get_inbox", &json!({})).unwrap();
        assert_eq!(inbox["items"][0]["thread"]["since_progress"], 1, "{name}");
        let session = forum.session(&c.dave);
        assert_eq!(
            session.thread(&thread).unwrap().thread.since_progress,
            Some(1)
        );
        let posted = session
            .post(&Envelope::new("note", "Watching it.").thread(&thread))
            .unwrap();
        assert_eq!(posted.thread.since_progress, Some(2), "{name}");
        let manifest = forum.manifest();
        assert_eq!(
            manifest["profiles"]["guards"],
            json!({ "limits": ["progress_max_messages", "echo_window"] })
        );
        assert_eq!(manifest["limits"]["progress_max_messages"], 24);
        assert_eq!(manifest["limits"]["echo_window"], 8);
    }
}

#[test]
fn a_reopened_file_keeps_its_count_and_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let (c, thread) = {
        let forum = Forum::open(&path, settings(json!({}))).unwrap();
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let (accepted, _) = ping_pong(&forum, &c, &thread, "a", &answer, 20);
        assert_eq!(accepted, 20);
        (c, thread)
    };
    let forum = Forum::open(&path, settings(json!({}))).unwrap();
    assert_eq!(since(&forum, &c.ann, &thread), 20);
    // Carol's answer is still in Bob's window of the newest messages by others.
    let echo =
        json!({ "kind": "note", "thread": thread, "body": "Thanks for 19, noted number 19 (a)" });
    assert_eq!(
        refusal(post(&forum, &c.dave, echo)).reason,
        Reason::EchoedBody
    );
    for i in 0..4 {
        let body = format!("Dave's check {i} after the reopen.");
        let token = if i % 2 == 0 { &c.dave } else { &c.ann };
        let v = post(
            &forum,
            token,
            json!({ "kind": "note", "thread": thread, "body": body }),
        )
        .unwrap();
        if i == 0 {
            assert_eq!(v["thread"]["since_progress"], 21);
        }
    }
}

/// A claim's change of status is progress in the claim's thread, even when the
/// post that changed it went to another thread (a refute posted elsewhere).
#[test]
fn a_claim_refuted_from_another_thread_restarts_its_threads_count() {
    for (name, forum, _dir) in forums("claims", json!({})) {
        let c = cast(&forum);
        let asserted = post(
            &forum,
            &c.bob,
            json!({ "kind": "assert", "body": "The cache hit rate is above 90%.",
                    "evidence": [ { "kind": "log", "ref": "metrics/cache.log" } ] }),
        )
        .unwrap();
        let (claims, claim) = (id(&asserted, "/thread/id"), id(&asserted, "/claim/id"));
        for body in ["Over which window?", "Since Monday?", "Per host?"] {
            post(
                &forum,
                &c.carol,
                json!({ "kind": "note", "thread": claims, "body": body }),
            )
            .unwrap();
        }
        assert_eq!(since(&forum, &c.ann, &claims), 3, "{name}");
        let other = post(
            &forum,
            &c.bob,
            json!({ "kind": "ask", "body": "Is the cache warm after a deploy?" }),
        )
        .unwrap();
        let other = id(&other, "/thread/id");
        let refuted = post(
            &forum,
            &c.dave,
            json!({ "kind": "refute", "claim": claim, "thread": other, "body": "Not after a deploy.",
                    "evidence": [ { "kind": "log", "ref": "metrics/after-deploy.log" } ] }),
        )
        .unwrap();
        assert_eq!(refuted["thread"]["id"], other.as_str());
        assert_eq!(
            refuted["thread"]["since_progress"], 1,
            "{name}: no claim of its own changed"
        );
        assert_eq!(since(&forum, &c.ann, &claims), 0, "{name}");
        // The next post to the claim's thread counts from there.
        let next = post(
            &forum,
            &c.carol,
            json!({ "kind": "note", "thread": claims, "body": "Refuted, then." }),
        )
        .unwrap();
        assert_eq!(next["thread"]["since_progress"], 1, "{name}");
    }
}

/// Off, the profile keeps nothing: a thread posted to while it was off starts
/// afresh when it is switched on again (no count, an empty echo window), rather
/// than being judged by a window that went stale meanwhile.
#[test]
fn a_thread_posted_to_with_the_profile_off_starts_afresh_when_it_is_on_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let (c, thread, answer) = {
        let forum = Forum::open(&path, settings(json!({}))).unwrap();
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let (accepted, _) = ping_pong(&forum, &c, &thread, "a", &answer, 20);
        assert_eq!(accepted, 20);
        (c, thread, answer)
    };
    {
        let forum = Forum::open(&path, settings(json!({ "guards": false }))).unwrap();
        post(
            &forum,
            &c.dave,
            json!({ "kind": "note", "thread": thread, "body": "Dave, while off." }),
        )
        .unwrap();
    }
    let forum = Forum::open(&path, settings(json!({}))).unwrap();
    assert_eq!(since(&forum, &c.ann, &thread), 0);
    // Carol's last acknowledgement was in the window before; it is not now.
    let echo =
        json!({ "kind": "note", "parent": answer, "body": "thanks for 19 noted number 19 a" });
    let v = post(&forum, &c.bob, echo).unwrap();
    assert_eq!(v["thread"]["since_progress"], 1);
}

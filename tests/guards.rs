//! SPEC §15, the guards profile, on redb and on PostgreSQL with the default limits:
//! loops among several agents (acknowledgements traded, an echo, a ring of
//! handoffs) are stopped by `no_progress` or `echoed_body`; a person's message, a
//! decision and a mark restart the count and are never refused; the profile off
//! and limits of 0 switch the rules off; and the order of §12.1 around them. The
//! count itself is in `guards_count.rs`.

mod guards_support;

use guards_support::*;
use parley_forum::{Error, Reason};
use serde_json::json;

#[test]
fn acknowledgements_traded_stop_at_progress_max_messages() {
    for (name, forum, _dir) in forums("pingpong", json!({})) {
        let c = cast(&forum);
        let (thread, answer) = answered(&forum, &c);
        let (accepted, refused) = ping_pong(&forum, &c, &thread, "a", &answer, 100);
        assert_eq!(accepted, 24, "{name}");
        let refused = refused.unwrap();
        assert_eq!(refused.reason, Reason::NoProgress, "{name}");
        assert_eq!(
            refused.limit.map(|l| l.as_str()),
            Some("progress_max_messages")
        );
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

//! SPEC §15's count of content messages without progress: in every thread
//! summary and the typed API, kept by a forum file reopened, restarted by a
//! claim refuted from another thread, and started afresh when the profile comes
//! back on.

mod guards_support;

use guards_support::*;
use parley_forum::{Envelope, Forum, Reason};
use serde_json::json;

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

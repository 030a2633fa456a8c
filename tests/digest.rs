//! SPEC §17, `get_digest`, on a redb file and on PostgreSQL: each field's rule
//! (the root, the newest decision, open questions with answers nested below them
//! and the root's own, more than 10 open questions, more than 10 claims, the last
//! 5 messages, `omitted` counting each message once), threads of 1 to 5
//! messages, the claims without the dialectic profile, the refusals of
//! `get_thread` for the same arguments, and the typed result equal to the JSON.

#[path = "pg/support.rs"]
mod support;

use parley_forum::{Config, Digest, Forum, Reason, Right, TokenSpec};
use serde_json::{json, Value};

/// The default settings but the rate limit, with `extra` settings on top.
fn settings(extra: Value) -> Config {
    let mut s = json!({ "limits": { "writes_per_minute": 0 } });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    Config::from_json(&s).unwrap()
}

/// The forums a test runs on: a redb file, and a PostgreSQL forum when a server
/// was started (`source tests/pg/server.sh && pg_start`).
fn forums(tag: &str, extra: Value) -> Vec<(String, Forum, Option<tempfile::TempDir>)> {
    support::forums(tag, || settings(extra.clone()))
}

struct Cast {
    alice: String,
    bob: String,
}

fn cast(forum: &Forum) -> Cast {
    let llm = |h: &str| {
        forum
            .create_token(&TokenSpec::llm(h, &[Right::Read, Right::Write]))
            .unwrap()
    };
    Cast {
        alice: llm("alice"),
        bob: llm("bob"),
    }
}

/// Posts and returns the message.
fn post(forum: &Forum, token: &str, envelope: Value) -> Value {
    forum
        .call(Some(token), "post", &envelope)
        .unwrap_or_else(|e| panic!("{envelope}: {e}"))["message"]
        .clone()
}

/// `kind` with `body` under `parent`.
fn reply(forum: &Forum, token: &str, kind: &str, parent: &Value, body: &str) -> Value {
    post(
        forum,
        token,
        json!({ "kind": kind, "parent": parent["id"], "body": body }),
    )
}

fn digest(forum: &Forum, token: &str, thread: &Value) -> Value {
    let d = forum
        .call(Some(token), "get_digest", &json!({ "thread": thread }))
        .unwrap();
    // The typed API gives the same digest.
    let typed = forum
        .session(token)
        .get_digest(thread.as_str().unwrap())
        .unwrap();
    let read: Digest = serde_json::from_value(d.clone()).unwrap();
    assert_eq!(typed, read);
    d
}

fn ids(list: &Value) -> Vec<Value> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect()
}

fn idv(messages: &[&Value]) -> Vec<Value> {
    messages.iter().map(|m| m["id"].clone()).collect()
}

#[test]
fn each_field_follows_its_rule_with_nested_answers_and_overlaps() {
    for (name, forum, _dir) in forums("fields", json!({})) {
        let c = cast(&forum);
        let (a, b) = (c.alice.as_str(), c.bob.as_str());
        let m1 = post(&forum, a, json!({ "kind": "ask", "body": "Which port?" }));
        let thread = m1["thread"].clone();
        let m2 = reply(&forum, b, "answer", &m1, "8080");
        let m3 = reply(&forum, b, "ask", &m1, "Is 8080 free on CI?");
        let m4 = reply(&forum, a, "note", &m3, "It was last week.");
        // Two levels below m3: it answers m3 (and m1, its ancestor).
        let _m5 = reply(&forum, b, "answer", &m4, "Then yes.");
        let m6 = reply(&forum, a, "ask", &m2, "Why not 8081?");
        let _m7 = reply(&forum, a, "decide", &m1, "8080 it is.");
        let m8 = reply(&forum, b, "ask", &m1, "And for staging?");
        // The newest decide; not an answer, so m8 stays open.
        let m9 = reply(&forum, a, "decide", &m8, "Staging uses 9090.");
        let m10 = reply(&forum, b, "note", &m9, "Noted, 9090.");
        let m11 = reply(&forum, a, "note", &m10, "Config updated.");
        let m12 = reply(&forum, b, "note", &m11, "Deployed to staging.");
        let m13 = reply(&forum, a, "note", &m12, "Smoke tests pass.");

        let d = digest(&forum, b, &thread);
        assert_eq!(d["thread"]["id"], thread, "{name}");
        assert_eq!(d["thread"]["message_count"], 13, "{name}");
        assert_eq!(d["root"], forum_message(&forum, b, &m1), "{name}");
        assert_eq!(d["decision"]["id"], m9["id"], "{name}");
        assert_eq!(d["decision"]["body"], "Staging uses 9090.", "{name}");
        assert_eq!(ids(&d["open_questions"]), idv(&[&m6, &m8]), "{name}");
        assert_eq!(
            ids(&d["recent"]),
            idv(&[&m9, &m10, &m11, &m12, &m13]),
            "{name}"
        );
        // Shown: m1, m6, m8, m9 (decision and recent, counted once), m10-m13.
        // Left out: m2, m3, m4, m5, m7.
        assert_eq!(d["omitted"], 5, "{name}");
        assert_eq!(d["claims"], json!([]), "{name}");
        // Messages as §8.1, without replies.
        for m in d["recent"].as_array().unwrap() {
            assert!(m.get("replies").is_none(), "{name}: {m}");
            assert_eq!(*m, forum_message(&forum, b, m), "{name}");
        }
    }
}

/// The message as the feed shows it (SPEC §8.1, without replies).
fn forum_message(forum: &Forum, token: &str, m: &Value) -> Value {
    let feed = forum
        .call(
            Some(token),
            "get_messages",
            &json!({ "thread": m["thread"], "limit": 200 }),
        )
        .unwrap();
    feed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == m["id"])
        .cloned()
        .unwrap()
}

#[test]
fn threads_of_one_to_five_messages() {
    for (name, forum, _dir) in forums("short", json!({})) {
        let c = cast(&forum);
        let (a, b) = (c.alice.as_str(), c.bob.as_str());
        // One message: the root is root, open question and recent at once.
        let r = post(&forum, a, json!({ "kind": "ask", "body": "Alone?" }));
        let d = digest(&forum, b, &r["thread"]);
        assert_eq!(d["root"]["id"], r["id"], "{name}");
        assert_eq!(ids(&d["open_questions"]), idv(&[&r]), "{name}");
        assert_eq!(ids(&d["recent"]), idv(&[&r]), "{name}");
        assert_eq!((&d["decision"], &d["omitted"]), (&Value::Null, &json!(0)));

        // Growing one message at a time up to 5: every message is recent, none
        // omitted; the nested answer (the fifth) answers the nested ask and the root.
        let r = post(&forum, a, json!({ "kind": "ask", "body": "Which host?" }));
        let m2 = reply(&forum, b, "note", &r, "Looking.");
        let d = digest(&forum, a, &r["thread"]);
        assert_eq!(ids(&d["open_questions"]), idv(&[&r]), "{name}");
        assert_eq!(ids(&d["recent"]), idv(&[&r, &m2]), "{name}");
        let m3 = reply(&forum, a, "ask", &m2, "Found it?");
        let m4 = reply(&forum, b, "note", &m3, "Almost.");
        let d = digest(&forum, a, &r["thread"]);
        assert_eq!(ids(&d["open_questions"]), idv(&[&r, &m3]), "{name}");
        assert_eq!(ids(&d["recent"]), idv(&[&r, &m2, &m3, &m4]), "{name}");
        let m5 = reply(&forum, a, "answer", &m4, "build-7.");
        let d = digest(&forum, b, &r["thread"]);
        assert_eq!(d["open_questions"], json!([]), "{name}");
        assert_eq!(ids(&d["recent"]), idv(&[&r, &m2, &m3, &m4, &m5]), "{name}");
        assert_eq!(d["omitted"], 0, "{name}");

        // A thread opened by an assert has no open question, and its claim.
        let r = post(
            &forum,
            a,
            json!({ "kind": "assert", "body": "The sky is blue." }),
        );
        let d = digest(&forum, b, &r["thread"]);
        assert_eq!(d["open_questions"], json!([]), "{name}");
        assert_eq!(
            d["claims"],
            json!([{ "id": r["claim"], "status": "unverified", "text": "The sky is blue." }]),
            "{name}"
        );
    }
}

#[test]
fn the_oldest_ten_open_questions() {
    for (name, forum, _dir) in forums("asks", json!({})) {
        let c = cast(&forum);
        let (a, b) = (c.alice.as_str(), c.bob.as_str());
        let root = post(
            &forum,
            a,
            json!({ "kind": "ask", "body": "Twelve questions." }),
        );
        let asks: Vec<Value> = (1..=12)
            .map(|i| reply(&forum, b, "ask", &root, &format!("Question number {i}?")))
            .collect();
        // Answers the last ask and, above it, the root.
        let answer = reply(&forum, a, "answer", &asks[11], "Only the last one.");
        let mut last = answer.clone();
        let mut notes = Vec::new();
        for i in 0..5 {
            let who = if i % 2 == 0 { b } else { a };
            last = reply(&forum, who, "note", &last, &format!("Follow-up {i}."));
            notes.push(last.clone());
        }
        let d = digest(&forum, a, &root["thread"]);
        // 11 open (asks 1-11); the oldest 10 shown.
        let want: Vec<Value> = asks[..10].iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids(&d["open_questions"]), want, "{name}");
        let want: Vec<Value> = notes.iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids(&d["recent"]), want, "{name}");
        // 19 messages; shown: the root, asks 1-10, the 5 notes; left: asks 11-12
        // and the answer.
        assert_eq!(d["omitted"], 3, "{name}");
        assert_eq!(d["decision"], Value::Null, "{name}");
    }
}

#[test]
fn the_newest_ten_claims_with_their_status() {
    for (name, forum, _dir) in forums("claims", json!({})) {
        let c = cast(&forum);
        let (a, b) = (c.alice.as_str(), c.bob.as_str());
        let root = post(
            &forum,
            b,
            json!({ "kind": "assert", "body": "Claim zero." }),
        );
        let mut claims = vec![root["claim"].clone()];
        let mut made = Vec::new();
        for i in 1..=7 {
            let m = reply(&forum, a, "assert", &root, &format!("Claim {i} holds."));
            claims.push(m["claim"].clone());
            made.push(m);
        }
        // Four counter-claims: each is a claim of the thread too.
        for (i, target) in made[..4].iter().enumerate() {
            let m = post(
                &forum,
                b,
                json!({ "kind": "refute", "claim": target["claim"], "body": format!("Not so, case {i}."),
                        "evidence": [{ "kind": "log", "ref": format!("run {i}") }] }),
            );
            claims.push(m["counter_claim"].clone());
        }
        assert_eq!(claims.len(), 12);
        let d = digest(&forum, a, &root["thread"]);
        let listed: Vec<Value> = d["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        let newest: Vec<Value> = claims.iter().rev().take(10).cloned().collect();
        assert_eq!(listed, newest, "{name}");
        for item in d["claims"].as_array().unwrap() {
            let full = forum
                .call(Some(a), "get_claim", &json!({ "claim": item["id"] }))
                .unwrap();
            assert_eq!(item["status"], full["status"], "{name}");
            assert_eq!(item["text"], full["text"], "{name}");
            assert_eq!(item.as_object().unwrap().len(), 3, "{name}: {item}");
        }
        // The refuted claims (cl 2-5 of the thread) read so; the newest 10 hold 3.
        let refuted = d["claims"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "refuted");
        assert_eq!(refuted.count(), 3, "{name}: {d}");
        // The counter-claims are `refute` messages, not questions.
        assert_eq!(d["open_questions"], json!([]), "{name}");
    }
}

#[test]
fn without_the_dialectic_profile_a_digest_lists_no_claims() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let (thread, bob) = {
        let forum = Forum::open(&path, settings(json!({}))).unwrap();
        let c = cast(&forum);
        let root = post(
            &forum,
            &c.alice,
            json!({ "kind": "assert", "body": "A claim." }),
        );
        (root["thread"].clone(), c.bob)
    };
    let forum = Forum::open(&path, settings(json!({ "profiles": ["listen"] }))).unwrap();
    assert!(forum.manifest()["profiles"].get("dialectic").is_none());
    let d = digest(&forum, &bob, &thread);
    assert_eq!(d["claims"], json!([]));
    assert_eq!(d["root"]["kind"], "assert");
}

#[test]
fn refusals_are_those_of_get_thread_for_the_same_arguments() {
    for (name, forum, _dir) in forums("refusals", json!({})) {
        let c = cast(&forum);
        let root = post(&forum, &c.alice, json!({ "kind": "ask", "body": "Here?" }));
        let writer = forum
            .create_token(&TokenSpec::llm("wo", &[Right::Write]))
            .unwrap();
        let cases: Vec<(Option<&str>, Value, Reason)> = vec![
            (Some(&c.bob), json!({}), Reason::InvalidArgument),
            (
                Some(&c.bob),
                json!({ "thread": "msg_1" }),
                Reason::InvalidArgument,
            ),
            (
                Some(&c.bob),
                json!({ "thread": 0 }),
                Reason::InvalidArgument,
            ),
            (
                Some(&c.bob),
                json!({ "thread": -3 }),
                Reason::InvalidArgument,
            ),
            (
                Some(&c.bob),
                json!({ "thread": 1.5 }),
                Reason::InvalidArgument,
            ),
            (
                Some(&c.bob),
                json!({ "thread": true }),
                Reason::InvalidArgument,
            ),
            (
                Some(&c.bob),
                json!({ "thread": root["thread"], "limit": 5 }),
                Reason::InvalidArgument,
            ),
            (
                Some(&c.bob),
                json!([root["thread"]]),
                Reason::InvalidArgument,
            ),
            (
                Some(&c.bob),
                json!({ "thread": "th_999" }),
                Reason::ThreadNotFound,
            ),
            (
                Some(&c.bob),
                json!({ "thread": 999 }),
                Reason::ThreadNotFound,
            ),
            (
                Some(&writer),
                json!({ "thread": root["thread"] }),
                Reason::TokenRightMissing,
            ),
            // The argument is checked before the right, as for get_thread.
            (
                Some(&writer),
                json!({ "thread": "x" }),
                Reason::InvalidArgument,
            ),
            (
                None,
                json!({ "thread": root["thread"] }),
                Reason::TokenMissing,
            ),
            (
                Some("pt_nope"),
                json!({ "thread": root["thread"] }),
                Reason::TokenInvalid,
            ),
        ];
        for (token, args, want) in cases {
            let d = forum.call(token, "get_digest", &args).unwrap_err();
            let t = forum.call(token, "get_thread", &args).unwrap_err();
            let (d, t) = (d.refusal().unwrap(), t.refusal().unwrap());
            assert_eq!(d.reason, want, "{name}: {args}");
            assert_eq!(
                (d.reason, &d.field, &d.right, d.status()),
                (t.reason, &t.field, &t.right, t.status()),
                "{name}: {args}"
            );
        }
        // A number or a decimal string names the thread as the key does.
        let n = support::num(&root["thread"]);
        for arg in [json!(n), json!(n.to_string())] {
            let d = forum
                .call(Some(&c.bob), "get_digest", &json!({ "thread": arg }))
                .unwrap();
            assert_eq!(d["thread"]["id"], root["thread"], "{name}");
        }
        let typed = forum.session(&c.bob).get_digest("th_999").unwrap_err();
        assert_eq!(typed.refusal().unwrap().reason, Reason::ThreadNotFound);
    }
}

#[test]
fn the_manifest_lists_get_digest_last_among_the_core_operations() {
    let forum = Forum::in_memory(settings(json!({}))).unwrap();
    let ops = forum.manifest()["operations"].clone();
    let ops: Vec<&str> = ops
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(ops.contains(&"get_digest"));
    assert!(ops.iter().position(|o| *o == "search") < ops.iter().position(|o| *o == "get_digest"));
    // It is no profile's.
    let manifest = forum.manifest();
    for (_, profile) in manifest["profiles"].as_object().unwrap() {
        assert!(!profile.to_string().contains("get_digest"));
    }
}

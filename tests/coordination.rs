//! SPEC §16, the coordination profile, on redb and on PostgreSQL: presence (since,
//! stale, ttl, order), leases (grammar, overlap, modes, renewal, expiry with no
//! sweeper, release rights, leases_max, every refusal and the order of checks).
//! `tests/coordination_races.rs` holds presence's refusals, the profile off, the
//! typed API and the races.

mod coordination_support;

use coordination_support::*;
use parley_forum::{Reason, Refusal, Right, TokenSpec};
use serde_json::{json, Value};

#[test]
fn presence_is_set_read_extended_and_goes_stale() {
    for (name, forum, clock, _dir) in forums("presence", json!({})) {
        let bob = rw(&forum, "bob");
        let amy = rw(&forum, "amy");
        let set = ok(
            &forum,
            &bob,
            "set_presence",
            json!({ "status": "working", "note": "fixing #12", "ttl_s": 60 }),
        );
        assert_eq!(
            set["presence"],
            json!({ "identity": "ainotes:bob", "extension": null, "status": "working",
                    "note": "fixing #12", "since": "2026-11-30T12:00:00.000Z",
                    "expires_at": "2026-11-30T12:01:00.000Z", "stale": false }),
            "{name}"
        );
        clock.advance(30_000);
        // The same status again keeps `since` and moves `expires_at`; the note is the new one.
        let again = ok(&forum, &bob, "set_presence", json!({ "status": "working" }));
        assert_eq!(
            again["presence"]["since"], "2026-11-30T12:00:00.000Z",
            "{name}"
        );
        assert_eq!(
            again["presence"]["expires_at"], "2026-11-30T12:15:30.000Z",
            "{name}: default 900 s"
        );
        assert_eq!(again["presence"]["note"], Value::Null, "{name}");
        ok(
            &forum,
            &bob,
            "set_presence",
            json!({ "status": "idle", "extension": "w1", "ttl_s": 1 }),
        );
        ok(
            &forum,
            &amy,
            "set_presence",
            json!({ "status": "away", "extension": "z" }),
        );
        ok(&forum, &amy, "set_presence", json!({ "status": "idle" }));
        let all = ok(&forum, &amy, "get_presence", json!({}));
        let order: Vec<(String, Value)> = all["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["identity"].as_str().unwrap().to_string(),
                    i["extension"].clone(),
                )
            })
            .collect();
        assert_eq!(
            order,
            vec![
                ("ainotes:amy".into(), Value::Null),
                ("ainotes:amy".into(), json!("z")),
                ("ainotes:bob".into(), Value::Null),
                ("ainotes:bob".into(), json!("w1")),
            ],
            "{name}: by identity, then extension, none first"
        );
        clock.advance(1_000);
        let bobs = ok(
            &forum,
            &amy,
            "get_presence",
            json!({ "identity": "ainotes:bob" }),
        );
        let items = bobs["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{name}");
        assert_eq!(
            (items[1]["status"].clone(), items[1]["stale"].clone()),
            (json!("idle"), json!(true)),
            "{name}: stale keeps the status"
        );
        assert_eq!(items[0]["stale"], false, "{name}");
        // After it went stale, the same status starts anew.
        let back = ok(
            &forum,
            &bob,
            "set_presence",
            json!({ "status": "idle", "extension": "w1" }),
        );
        assert_eq!(
            back["presence"]["since"], "2026-11-30T12:00:31.000Z",
            "{name}"
        );
        // A new status changes `since`.
        let changed = ok(&forum, &bob, "set_presence", json!({ "status": "away" }));
        assert_eq!(
            changed["presence"]["since"], "2026-11-30T12:00:31.000Z",
            "{name}"
        );
        let unknown = ok(
            &forum,
            &bob,
            "get_presence",
            json!({ "identity": "ainotes:nobody" }),
        );
        assert_eq!(unknown["items"], json!([]), "{name}");
    }
}

#[test]
fn a_lease_is_granted_renewed_and_released() {
    for (name, forum, clock, _dir) in forums("lease", json!({})) {
        let bob = rw(&forum, "bob");
        let thread = ok(
            &forum,
            &bob,
            "post",
            json!({ "kind": "ask", "body": "Who edits the parser?" }),
        );
        let th = thread["thread"]["id"].as_str().unwrap().to_string();
        let got = ok(
            &forum,
            &bob,
            "lease",
            json!({ "resource": "src/parser.rs", "note": "refactor" }),
        );
        assert_eq!(
            got["lease"],
            json!({ "id": "ls_1", "resource": "src/parser.rs", "mode": "exclusive",
                    "holder": { "identity": "ainotes:bob", "extension": null },
                    "thread": null, "note": "refactor",
                    "granted_at": "2026-11-30T12:00:00.000Z", "expires_at": "2026-11-30T12:10:00.000Z" }),
            "{name}: exclusive and 600 s by default"
        );
        clock.advance(5_000);
        let renewed = ok(
            &forum,
            &bob,
            "lease",
            json!({ "resource": "src/parser.rs", "ttl_s": 60, "thread": th }),
        );
        let l = &renewed["lease"];
        assert_eq!(
            (l["id"].clone(), l["granted_at"].clone()),
            (json!("ls_1"), json!("2026-11-30T12:00:00.000Z")),
            "{name}"
        );
        assert_eq!(l["expires_at"], "2026-11-30T12:01:05.000Z", "{name}");
        assert_eq!(
            (l["thread"].clone(), l["note"].clone()),
            (json!(th), json!("refactor")),
            "{name}: replaced when given"
        );
        // Another mode is another lease of the same holder.
        let shared = ok(
            &forum,
            &bob,
            "lease",
            json!({ "resource": "src/parser.rs", "mode": "shared" }),
        );
        assert_eq!(shared["lease"]["id"], "ls_2", "{name}");
        let listed = ok(&forum, &bob, "get_leases", json!({}));
        assert_eq!(listed["items"].as_array().unwrap().len(), 2, "{name}");
        let released = ok(&forum, &bob, "release", json!({ "lease": 1 }));
        assert_eq!(
            released["lease"]["id"], "ls_1",
            "{name}: a bare number is accepted"
        );
        assert_eq!(
            released["lease"]["released_at"], "2026-11-30T12:00:05.000Z",
            "{name}"
        );
        assert_eq!(
            reason(call(&forum, &bob, "release", json!({ "lease": "ls_1" }))),
            Reason::LeaseNotFound,
            "{name}"
        );
        // Ids are never given again, even after the newest lease was released.
        ok(&forum, &bob, "release", json!({ "lease": "2" }));
        let next = ok(&forum, &bob, "lease", json!({ "resource": "docs/" }));
        assert_eq!(next["lease"]["id"], "ls_3", "{name}");
    }
}

#[test]
fn conflicts_name_the_holder_and_follow_modes_and_prefixes() {
    for (name, forum, _clock, _dir) in forums("conflict", json!({})) {
        let bob = rw(&forum, "bob");
        let amy = rw(&forum, "amy");
        ok(
            &forum,
            &bob,
            "lease",
            json!({ "resource": "src/", "extension": "w1", "note": "big move" }),
        );
        let r = refused(call(
            &forum,
            &amy,
            "lease",
            json!({ "resource": "src/a/b.rs" }),
        ));
        assert_eq!(
            (r.reason, r.status()),
            (Reason::LeaseConflict, 409),
            "{name}"
        );
        let leases = r.leases.as_deref().unwrap();
        assert_eq!(leases.len(), 1, "{name}");
        assert_eq!(
            (leases[0].id.as_str(), leases[0].holder.identity.as_str()),
            ("ls_1", "ainotes:bob"),
            "{name}"
        );
        assert_eq!(leases[0].holder.extension.as_deref(), Some("w1"), "{name}");
        assert!(r.message.contains("ainotes:bob"), "{name}: {}", r.message);
        let shown = r.to_json();
        assert_eq!(shown["leases"][0]["note"], "big move", "{name}");
        assert_eq!(
            Refusal::from_json(&shown).unwrap(),
            r,
            "{name}: the refusal round-trips"
        );
        // The same identity under another extension is another holder.
        assert_eq!(
            reason(call(&forum, &bob, "lease", json!({ "resource": "src" }))),
            Reason::LeaseConflict,
            "{name}"
        );
        assert_eq!(
            reason(call(
                &forum,
                &bob,
                "lease",
                json!({ "resource": "src/x", "extension": "w2" })
            )),
            Reason::LeaseConflict,
            "{name}"
        );
        // Its own holder never conflicts with itself.
        ok(
            &forum,
            &bob,
            "lease",
            json!({ "resource": "src/x", "extension": "w1" }),
        );
        // Not overlapping.
        ok(&forum, &amy, "lease", json!({ "resource": "srcx/" }));
        ok(&forum, &amy, "lease", json!({ "resource": "sr" }));
        // Shared with shared: both; shared against exclusive: refused either way.
        ok(
            &forum,
            &bob,
            "lease",
            json!({ "resource": "jobs/7", "mode": "shared" }),
        );
        ok(
            &forum,
            &amy,
            "lease",
            json!({ "resource": "jobs/", "mode": "shared" }),
        );
        assert_eq!(
            reason(call(&forum, &amy, "lease", json!({ "resource": "jobs/7" }))),
            Reason::LeaseConflict,
            "{name}"
        );
        let carl = rw(&forum, "carl");
        let both = refused(call(
            &forum,
            &carl,
            "lease",
            json!({ "resource": "jobs/7/" }),
        ));
        assert_eq!(
            both.leases.as_deref().unwrap().len(),
            2,
            "{name}: every conflicting lease"
        );
        // get_leases filters by overlap and by holder, by id.
        let over = ok(&forum, &carl, "get_leases", json!({ "resource": "jobs/7" }));
        let ids: Vec<&str> = over["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["ls_5", "ls_6"], "{name}");
        let amys = ok(
            &forum,
            &carl,
            "get_leases",
            json!({ "identity": "ainotes:amy", "resource": "src/" }),
        );
        assert_eq!(
            amys["items"],
            json!([]),
            "{name}: srcx/ and sr do not overlap src/"
        );
        let amys = ok(
            &forum,
            &carl,
            "get_leases",
            json!({ "identity": "ainotes:amy" }),
        );
        assert_eq!(amys["items"].as_array().unwrap().len(), 3, "{name}");
    }
}

#[test]
fn an_expired_lease_conflicts_with_nothing_without_a_sweeper() {
    for (name, forum, clock, _dir) in
        forums("expiry", json!({ "limits": { "lease_ttl_max_s": 120 } }))
    {
        let bob = rw(&forum, "bob");
        let amy = rw(&forum, "amy");
        let got = ok(&forum, &bob, "lease", json!({ "resource": "build/" }));
        assert_eq!(
            got["lease"]["expires_at"], "2026-11-30T12:02:00.000Z",
            "{name}: the default is capped by lease_ttl_max_s"
        );
        assert_eq!(
            reason(call(
                &forum,
                &amy,
                "lease",
                json!({ "resource": "build/x", "ttl_s": 121 })
            )),
            Reason::InvalidArgument,
            "{name}"
        );
        clock.advance(119_999);
        assert_eq!(
            reason(call(
                &forum,
                &amy,
                "lease",
                json!({ "resource": "build/x" })
            )),
            Reason::LeaseConflict,
            "{name}"
        );
        clock.advance(1);
        assert_eq!(
            ok(&forum, &amy, "get_leases", json!({}))["items"],
            json!([]),
            "{name}: not listed"
        );
        assert_eq!(
            reason(call(&forum, &bob, "release", json!({ "lease": "ls_1" }))),
            Reason::LeaseNotFound,
            "{name}"
        );
        let taken = ok(&forum, &amy, "lease", json!({ "resource": "build/x" }));
        assert_eq!(taken["lease"]["id"], "ls_2", "{name}");
        // The expired holder asking again gets a new lease, and a conflict.
        assert_eq!(
            reason(call(&forum, &bob, "lease", json!({ "resource": "build/" }))),
            Reason::LeaseConflict,
            "{name}"
        );
    }
}

#[test]
fn release_belongs_to_the_holder_a_lock_holder_or_a_person() {
    for (name, forum, _clock, _dir) in forums("release", json!({})) {
        let bob = rw(&forum, "bob");
        let amy = rw(&forum, "amy");
        let reader = llm(&forum, "reader", &[Right::Read]);
        let mod_ = llm(&forum, "mod", &[Right::Read, Right::Write, Right::Lock]);
        let ann = forum.create_token(&TokenSpec::human("ann")).unwrap();
        for r in ["a", "b", "c", "d"] {
            ok(
                &forum,
                &bob,
                "lease",
                json!({ "resource": r, "extension": "w1" }),
            );
        }
        let r = refused(call(&forum, &amy, "release", json!({ "lease": "ls_1" })));
        assert_eq!(
            (r.reason, r.status()),
            (Reason::LeaseAuthorityMissing, 403),
            "{name}"
        );
        let r = refused(call(&forum, &reader, "release", json!({ "lease": "ls_1" })));
        assert_eq!(
            (r.reason, r.right.map(|r| r.as_str())),
            (Reason::TokenRightMissing, Some("write")),
            "{name}"
        );
        assert_eq!(
            reason(call(&forum, &reader, "lease", json!({ "resource": "e" }))),
            Reason::TokenRightMissing,
            "{name}"
        );
        ok(&forum, &bob, "release", json!({ "lease": "ls_1" })); // another extension of the holder's identity
        ok(&forum, &mod_, "release", json!({ "lease": "ls_2" }));
        ok(&forum, &ann, "release", json!({ "lease": "ls_3" }));
        for bad in [
            json!({}),
            json!({ "lease": "th_4" }),
            json!({ "lease": 0 }),
            json!({ "lease": "ls_4", "x": 1 }),
        ] {
            assert_eq!(
                reason(call(&forum, &amy, "release", bad.clone())),
                Reason::InvalidArgument,
                "{name}: {bad}"
            );
        }
        assert_eq!(
            reason(call(&forum, &amy, "release", json!({ "lease": 99 }))),
            Reason::LeaseNotFound,
            "{name}"
        );
        // Order: the lease must exist before authority is judged.
        assert_eq!(
            reason(call(&forum, &amy, "release", json!({ "lease": "ls_3" }))),
            Reason::LeaseNotFound,
            "{name}"
        );
        assert_eq!(
            ok(&forum, &amy, "get_leases", json!({}))["items"][0]["id"],
            "ls_4",
            "{name}"
        );
    }
}

#[test]
fn lease_arguments_limits_and_the_order_of_checks() {
    for (name, forum, _clock, _dir) in forums("lease_bad", json!({ "limits": { "leases_max": 2 } }))
    {
        let bob = rw(&forum, "bob");
        let amy = rw(&forum, "amy");
        let reader = llm(&forum, "reader", &[Right::Read]);
        let long = "a".repeat(201);
        for bad in [
            json!({}),
            json!({ "resource": "" }),
            json!({ "resource": "/src" }),
            json!({ "resource": "a//b" }),
            json!({ "resource": "/" }),
            json!({ "resource": long }),
            json!({ "resource": 7 }),
            json!({ "resource": "a", "mode": "EXCLUSIVE" }),
            json!({ "resource": "a", "ttl_s": 0 }),
            json!({ "resource": "a", "ttl_s": 86_401 }),
            json!({ "resource": "a", "ttl_s": -5 }),
            json!({ "resource": "a", "thread": "msg_1" }),
            json!({ "resource": "a", "note": "n".repeat(201) }),
            json!({ "resource": "a", "extension": "" }),
            json!({ "resource": "a", "holder": "x" }),
        ] {
            assert_eq!(
                reason(call(&forum, &bob, "lease", bad.clone())),
                Reason::InvalidArgument,
                "{name}: {bad}"
            );
        }
        for bad in [
            json!({ "resource": "a//" }),
            json!({ "identity": "nobody" }),
            json!({ "limit": 3 }),
        ] {
            assert_eq!(
                reason(call(&forum, &bob, "get_leases", bad.clone())),
                Reason::InvalidArgument,
                "{name}: {bad}"
            );
        }
        assert_eq!(
            reason(call(
                &forum,
                &bob,
                "lease",
                json!({ "resource": "a", "thread": "th_9" })
            )),
            Reason::ThreadNotFound,
            "{name}"
        );
        // Arguments before the right, the right before the thread.
        assert_eq!(
            reason(call(&forum, &reader, "lease", json!({ "resource": "" }))),
            Reason::InvalidArgument,
            "{name}"
        );
        assert_eq!(
            reason(call(
                &forum,
                &reader,
                "lease",
                json!({ "resource": "a", "thread": 9 })
            )),
            Reason::TokenRightMissing,
            "{name}"
        );
        // leases_max counts active leases; a renewal takes no new place; a conflict comes first.
        ok(&forum, &bob, "lease", json!({ "resource": "a" }));
        ok(&forum, &bob, "lease", json!({ "resource": "b" }));
        ok(&forum, &bob, "lease", json!({ "resource": "b" }));
        ok(&forum, &amy, "lease", json!({ "resource": "z" }));
        let r = refused(call(&forum, &bob, "lease", json!({ "resource": "c" })));
        assert_eq!(
            (r.reason, r.limit.map(|l| l.as_str())),
            (Reason::LimitExceeded, Some("leases_max")),
            "{name}"
        );
        assert_eq!(
            reason(call(&forum, &bob, "lease", json!({ "resource": "z" }))),
            Reason::LeaseConflict,
            "{name}"
        );
        ok(
            &forum,
            &bob,
            "lease",
            json!({ "resource": "c", "extension": "w1" }),
        );
        ok(&forum, &bob, "release", json!({ "lease": "ls_1" }));
        ok(&forum, &bob, "lease", json!({ "resource": "d" }));
    }
}

#[test]
fn the_format_1_fixture_opens_and_keeps_its_leases_across_reopens() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    std::fs::copy(here.join("forum-v1.redb"), &path).unwrap();
    let tokens: Value =
        serde_json::from_str(&std::fs::read_to_string(here.join("forum-v1.tokens.json")).unwrap())
            .unwrap();
    let bob = tokens["bob"].as_str().unwrap();
    let clock = Clock(std::sync::Arc::new(std::sync::atomic::AtomicI64::new(T0)));
    {
        let forum = parley_forum::Forum::open(&path, config(json!({}), &clock)).unwrap();
        ok(&forum, bob, "set_presence", json!({ "status": "working" }));
        ok(&forum, bob, "lease", json!({ "resource": "a" }));
        ok(&forum, bob, "lease", json!({ "resource": "b" }));
        ok(&forum, bob, "release", json!({ "lease": "ls_2" }));
    }
    let forum = parley_forum::Forum::open(&path, config(json!({}), &clock)).unwrap();
    let held = ok(&forum, bob, "get_leases", json!({}));
    assert_eq!(held["items"][0]["id"], "ls_1");
    assert_eq!(held["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        ok(&forum, bob, "get_presence", json!({}))["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let next = ok(&forum, bob, "lease", json!({ "resource": "c" }));
    assert_eq!(
        next["lease"]["id"], "ls_3",
        "a released id is not issued again after a reopen"
    );
}

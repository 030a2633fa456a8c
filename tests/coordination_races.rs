//! SPEC §16 beyond single calls: presence's refusals and their order, the profile
//! off (the operations do not exist), the typed Session API against the generic
//! call, and races for one resource:
//! 16 threads on one forum file, and 16 threads over two engines sharing one
//! PostgreSQL database. Exactly one wins.

mod coordination_support;

use std::sync::atomic::AtomicI64;
use std::sync::Arc;

use coordination_support::*;
use parley_forum::{Config, Error, Forum, LeaseMode, LeaseRequest, PresenceStatus, Reason, Right};
use serde_json::{json, Value};

#[test]
fn presence_refusals() {
    for (name, forum, _clock, _dir) in forums("presence_bad", json!({})) {
        let bob = rw(&forum, "bob");
        let mute = llm(&forum, "mute", &[Right::Write]);
        for bad in [
            json!({}),
            json!({ "status": "busy" }),
            json!({ "status": 1 }),
            json!({ "status": "idle", "ttl_s": 0 }),
            json!({ "status": "idle", "ttl_s": 86_401 }),
            json!({ "status": "idle", "ttl_s": "60" }),
            json!({ "status": "idle", "ttl_s": 1.5 }),
            json!({ "status": "idle", "note": "x".repeat(201) }),
            json!({ "status": "idle", "note": 5 }),
            json!({ "status": "idle", "extension": "a b" }),
            json!({ "status": "idle", "colour": "red" }),
        ] {
            assert_eq!(
                reason(call(&forum, &bob, "set_presence", bad.clone())),
                Reason::InvalidArgument,
                "{name}: {bad}"
            );
        }
        ok(
            &forum,
            &bob,
            "set_presence",
            json!({ "status": "idle", "note": "é".repeat(200), "ttl_s": 86_400 }),
        );
        for bad in [
            json!({ "identity": "bob" }),
            json!({ "identity": 3 }),
            json!({ "who": "x" }),
        ] {
            assert_eq!(
                reason(call(&forum, &bob, "get_presence", bad.clone())),
                Reason::InvalidArgument,
                "{name}: {bad}"
            );
        }
        let r = refused(call(
            &forum,
            &mute,
            "set_presence",
            json!({ "status": "idle" }),
        ));
        assert_eq!(
            (r.reason, r.right.map(|r| r.as_str())),
            (Reason::TokenRightMissing, Some("read")),
            "{name}"
        );
        assert_eq!(
            reason(call(&forum, &mute, "get_presence", json!({}))),
            Reason::TokenRightMissing,
            "{name}"
        );
        // Order: token, then arguments, then the right.
        assert_eq!(
            reason(forum.call(None, "set_presence", &json!({ "status": "x" }))),
            Reason::TokenMissing,
            "{name}"
        );
        assert_eq!(
            reason(call(&forum, "pt_nope", "get_presence", json!({}))),
            Reason::TokenInvalid,
            "{name}"
        );
        assert_eq!(
            reason(call(
                &forum,
                &mute,
                "set_presence",
                json!({ "status": "x" })
            )),
            Reason::InvalidArgument,
            "{name}"
        );
    }
}

#[test]
fn with_the_profile_off_the_operations_do_not_exist() {
    let clock = Clock(Arc::new(AtomicI64::new(T0)));
    let forum = Forum::in_memory(config(json!({ "coordination": false }), &clock)).unwrap();
    let bob = rw(&forum, "bob");
    for (op, args) in [
        ("set_presence", json!({ "status": "idle" })),
        ("get_presence", json!({})),
        ("lease", json!({ "resource": "a" })),
        ("release", json!({ "lease": 1 })),
        ("get_leases", json!({})),
    ] {
        assert_eq!(
            reason(call(&forum, &bob, op, args)),
            Reason::InvalidArgument,
            "{op}"
        );
        assert!(!forum.offers(op), "{op}");
        let rpc = forum
            .mcp(
                Some(&bob),
                &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": { "name": op, "arguments": {} } })
                .to_string(),
            )
            .unwrap();
        let rpc: Value = serde_json::from_str(&rpc).unwrap();
        assert_eq!(rpc["error"]["code"], -32602, "{op}: {rpc}");
    }
    let manifest = forum.manifest();
    assert!(manifest["profiles"].get("coordination").is_none());
    assert!(!manifest["operations"]
        .as_array()
        .unwrap()
        .contains(&json!("lease")));
    let on = Forum::in_memory(Config::default()).unwrap().manifest();
    assert_eq!(
        on["profiles"]["coordination"],
        json!({ "operations": ["set_presence", "get_presence", "lease", "release", "get_leases"],
                "limits": ["lease_ttl_max_s", "leases_max"] })
    );
    assert_eq!(
        (
            on["limits"]["lease_ttl_max_s"].clone(),
            on["limits"]["leases_max"].clone()
        ),
        (json!(86_400), json!(64))
    );
    for r in [
        "lease_conflict",
        "lease_not_found",
        "lease_authority_missing",
    ] {
        assert!(
            on["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["reason"] == r),
            "{r}"
        );
    }
}

#[test]
fn the_typed_session_matches_the_generic_call() {
    for (name, forum, _clock, _dir) in forums("typed", json!({})) {
        let bob = rw(&forum, "bob");
        let amy = rw(&forum, "amy");
        let s = forum.session(&bob).with_extension("w1");
        let p = s
            .set_presence(PresenceStatus::Working, Some("on it"), Some(60))
            .unwrap();
        assert_eq!(
            (p.extension.as_deref(), p.status, p.stale),
            (Some("w1"), PresenceStatus::Working, false),
            "{name}"
        );
        let seen = forum.session(&amy).presence(Some("ainotes:bob")).unwrap();
        assert_eq!(seen, vec![p], "{name}");
        let req = LeaseRequest {
            mode: Some(LeaseMode::Shared),
            ttl_s: Some(30),
            ..Default::default()
        };
        let lease = s.lease("db/", &req).unwrap();
        assert_eq!(
            (lease.id.as_str(), lease.mode),
            ("ls_1", LeaseMode::Shared),
            "{name}"
        );
        let json = ok(&forum, &amy, "get_leases", json!({}));
        let typed = forum.session(&amy).leases(None, None).unwrap();
        assert_eq!(
            serde_json::from_value::<Vec<parley_forum::Lease>>(json["items"].clone()).unwrap(),
            typed,
            "{name}"
        );
        let err = forum
            .session(&amy)
            .lease("db/x", &LeaseRequest::default())
            .unwrap_err();
        assert_eq!(
            err.refusal().unwrap().leases.as_deref().unwrap(),
            &typed[..],
            "{name}"
        );
        let gone = forum.session(&bob).release("ls_1").unwrap();
        assert!(gone.released_at.is_some(), "{name}");
    }
}

/// 16 callers race for one resource: exactly one wins, every other is refused
/// with `lease_conflict` naming the winner.
fn race(engines: &[Forum], tokens: &[String]) {
    let barrier = std::sync::Barrier::new(tokens.len());
    let outcomes: Vec<parley_forum::Result<Value>> = std::thread::scope(|scope| {
        let handles: Vec<_> = tokens
            .iter()
            .enumerate()
            .map(|(i, token)| {
                let forum = &engines[i % engines.len()];
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    call(forum, token, "lease", json!({ "resource": "queue/job-1" }))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<&Value> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one wins: {outcomes:?}");
    let winner = winners[0]["lease"]["id"].clone();
    for o in outcomes.iter().filter(|o| o.is_err()) {
        let r = match o {
            Err(Error::Refused(r)) => r,
            other => panic!("{other:?}"),
        };
        assert_eq!(r.reason, Reason::LeaseConflict);
        assert_eq!(json!(r.leases.as_deref().unwrap()[0].id), winner);
    }
    let listed = ok(&engines[0], &tokens[0], "get_leases", json!({}));
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
}

#[test]
fn sixteen_threads_race_for_one_lease_on_one_forum_file() {
    let dir = tempfile::tempdir().unwrap();
    let forum = Forum::open(dir.path().join("race.redb"), Config::default()).unwrap();
    let tokens: Vec<String> = (0..16).map(|i| rw(&forum, &format!("agent{i}"))).collect();
    race(std::slice::from_ref(&forum), &tokens);
}

#[test]
fn sixteen_threads_over_two_engines_race_for_one_lease_in_postgresql() {
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "race");
    let one = parley_postgres::open(&url, Config::default()).unwrap();
    let two = parley_postgres::open(&url, Config::default()).unwrap();
    let tokens: Vec<String> = (0..16).map(|i| rw(&one, &format!("agent{i}"))).collect();
    race(&[one, two], &tokens);
}

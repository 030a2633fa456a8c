//! SPEC §18.3 across two forums, on redb and on PostgreSQL: a claim exported by
//! realm `north` is imported by realm `south`, which trusts it (redb → redb and
//! redb → PostgreSQL); every refusal of `import_claim` in its order; the
//! imported field; the body cut; two racing imports of one claim.

#[path = "pg/support.rs"]
mod support;

use parley_forum::provenance::verify_bundle;
use parley_forum::{Config, Envelope, Error, Forum, Reason, Right, TokenSpec};
use serde_json::{json, Value};

fn config(realm: &str, extra: Value) -> Config {
    let mut s = json!({ "realm": realm, "limits": { "writes_per_minute": 0 } });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    Config::from_json(&s).unwrap()
}

fn reason(r: parley_forum::Result<Value>) -> Reason {
    match r {
        Err(Error::Refused(refusal)) => refusal.reason,
        other => panic!("not refused: {other:?}"),
    }
}

/// The exporting forum, with a claim `cl_1` attested once (so `supported`).
struct North {
    forum: Forum,
    bob: String,
    claim: parley_forum::ClaimId,
    _dir: tempfile::TempDir,
}

fn north(text: &str) -> North {
    let dir = tempfile::tempdir().unwrap();
    let forum = Forum::open(dir.path().join("north.redb"), config("north", json!({}))).unwrap();
    let bob = forum
        .create_token(&TokenSpec::llm("bob", &[Right::Read, Right::Write]))
        .unwrap();
    let carol = forum
        .create_token(&TokenSpec::llm("carol", &[Right::Read, Right::Write]))
        .unwrap();
    let asserted = forum
        .session(&bob)
        .post(&Envelope::new("assert", text).evidence("url", "https://example.org/run/7"))
        .unwrap();
    let claim = asserted.claim.unwrap().id;
    forum
        .session(&carol)
        .post(
            &Envelope::new("attest", "Reproduced it.")
                .claim(claim)
                .evidence("log", "ci#88"),
        )
        .unwrap();
    North {
        forum,
        bob,
        claim,
        _dir: dir,
    }
}

/// The importing forums: `south` on redb, and on PostgreSQL when a server runs.
fn souths(
    tag: &str,
    trusted: &Forum,
    extra: Value,
) -> Vec<(String, Forum, Option<tempfile::TempDir>)> {
    let mut settings = json!({ "trusted_realms": { "north": trusted.realm_key().to_string() } });
    for (k, v) in extra.as_object().unwrap() {
        settings[k] = v.clone();
    }
    support::forums(tag, || config("south", settings.clone()))
}

fn export(n: &North) -> Value {
    n.forum
        .call(Some(&n.bob), "export_claim", &json!({ "claim": n.claim }))
        .unwrap()["bundle"]
        .clone()
}

#[test]
fn a_claim_travels_from_north_to_south_and_remembers_where_it_came_from() {
    let n = north("The build of v2.1 is reproducible.");
    let bundle = export(&n);
    // Anyone can check it with the forum's public key.
    let mut trust = parley_forum::provenance::TrustedRealms::new();
    trust.insert("north", n.forum.realm_key());
    let checked = verify_bundle(&bundle, &trust).unwrap();
    assert_eq!(
        (checked.realm.as_str(), checked.status.as_str()),
        ("north", "supported")
    );
    for (backend, south, _dir) in souths("travel", &n.forum, json!({})) {
        let dan = south
            .create_token(&TokenSpec::llm("dan", &[Right::Read, Right::Write]))
            .unwrap();
        let posted = south
            .call(Some(&dan), "import_claim", &json!({ "bundle": bundle }))
            .unwrap();
        assert_eq!(posted["message"]["kind"], "assert", "{backend}");
        assert_eq!(
            posted["claim"]["author"]["identity"], "south:dan",
            "{backend}"
        );
        assert_eq!(
            posted["message"]["body"], "The build of v2.1 is reproducible.",
            "{backend}"
        );
        let evidence = &posted["message"]["evidence"][0];
        assert_eq!(evidence["kind"], "hash", "{backend}");
        assert_eq!(
            evidence["ref"],
            format!("sha256:{}", checked.digest),
            "{backend}"
        );
        assert_eq!(
            evidence["note"],
            format!("north/{}: supported", n.claim),
            "{backend}"
        );
        let imported = json!({ "realm": "north", "claim": n.claim, "status": "supported",
                               "exported_at": checked.exported_at, "key": n.forum.realm_key().to_string() });
        assert_eq!(posted["claim"]["imported"], imported, "{backend}");
        let id = posted["claim"]["id"].as_str().unwrap().to_owned();
        let shown = south
            .call(Some(&dan), "get_claim", &json!({ "claim": id }))
            .unwrap();
        assert_eq!(shown["imported"], imported, "{backend}");
        assert_eq!(
            shown["status"], "unverified",
            "{backend}: judged here afresh"
        );
        // Typed, the same.
        let typed = south.session(&dan).claim(&id).unwrap();
        assert_eq!(
            typed.imported.unwrap().claim,
            n.claim.to_string(),
            "{backend}"
        );
        // A local claim shows `imported: null`.
        let local = south
            .session(&dan)
            .post(&Envelope::new("assert", "A claim made here."))
            .unwrap();
        let local = south
            .call(
                Some(&dan),
                "get_claim",
                &json!({ "claim": local.claim.unwrap().id }),
            )
            .unwrap();
        assert_eq!(local["imported"], Value::Null, "{backend}");
        // South's own claims travel back the other way only if north trusts south.
        let back = south
            .call(Some(&dan), "export_claim", &json!({ "claim": id }))
            .unwrap();
        let nobody = n.forum.call(
            Some(&n.bob),
            "import_claim",
            &json!({ "bundle": back["bundle"] }),
        );
        assert_eq!(reason(nobody), Reason::RealmUntrusted, "{backend}");
    }
}

#[test]
fn import_into_a_given_thread_and_the_typed_session() {
    let n = north("Port 7878 is free on the CI runners.");
    let bundle = export(&n);
    for (backend, south, _dir) in souths("thread", &n.forum, json!({})) {
        let dan = south
            .create_token(&TokenSpec::llm("dan", &[Right::Read, Right::Write]))
            .unwrap();
        let eve = south
            .create_token(&TokenSpec::llm("eve", &[Right::Read, Right::Write]))
            .unwrap();
        let asked = south
            .session(&eve)
            .post(&Envelope::new("ask", "Which port is free?"))
            .unwrap();
        let thread = asked.thread.id;
        let got = south
            .session(&dan)
            .import_claim(&bundle, Some(thread))
            .unwrap();
        assert_eq!(got.thread.id, thread, "{backend}");
        assert_eq!(
            got.claim.unwrap().imported.unwrap().realm,
            "north",
            "{backend}"
        );
        // Typed export gives the same envelope shape as the call.
        let typed = n.forum.session(&n.bob).export_claim(n.claim).unwrap();
        assert_eq!(typed.payload_type, "application/vnd.in-toto+json");
        assert_eq!(typed.signatures[0].keyid, n.forum.realm_key().to_string());
    }
}

#[test]
fn refusals_come_in_spec_order() {
    let n = north("Refusals are ordered.");
    let bundle = export(&n);
    let mut broken = bundle.clone();
    broken["payloadType"] = json!("text/plain");
    let stranger = Forum::in_memory(config("west", json!({}))).unwrap();
    let w = stranger
        .create_token(&TokenSpec::llm("w", &[Right::Read, Right::Write]))
        .unwrap();
    let asserted = stranger
        .session(&w)
        .post(&Envelope::new("assert", "From the west."))
        .unwrap();
    let untrusted = stranger
        .call(
            Some(&w),
            "export_claim",
            &json!({ "claim": asserted.claim.unwrap().id }),
        )
        .unwrap()["bundle"]
        .clone();
    for (backend, south, _dir) in souths("order", &n.forum, json!({})) {
        let reader = south
            .create_token(&TokenSpec::llm("reader", &[Right::Read]))
            .unwrap();
        let dan = south
            .create_token(&TokenSpec::llm("dan", &[Right::Read, Right::Write]))
            .unwrap();
        let import = |token: Option<&str>, bundle: &Value| {
            south.call(token, "import_claim", &json!({ "bundle": bundle }))
        };
        // 1. token, before a malformed bundle.
        assert_eq!(
            reason(import(None, &broken)),
            Reason::TokenMissing,
            "{backend}"
        );
        assert_eq!(
            reason(import(Some("pt_nope"), &broken)),
            Reason::TokenInvalid,
            "{backend}"
        );
        // 2. the bundle's form, before the missing write right.
        assert_eq!(
            reason(import(Some(&reader), &broken)),
            Reason::BundleInvalid,
            "{backend}"
        );
        assert_eq!(
            reason(import(Some(&reader), &json!("not an object"))),
            Reason::BundleInvalid
        );
        // 3. the write right, before the realm.
        assert_eq!(
            reason(import(Some(&reader), &untrusted)),
            Reason::TokenRightMissing,
            "{backend}"
        );
        // 4. the realm (untrusted, or another key's signature).
        assert_eq!(
            reason(import(Some(&dan), &untrusted)),
            Reason::RealmUntrusted,
            "{backend}"
        );
        // 5. already_imported, before the post's own checks.
        let first = import(Some(&dan), &bundle).unwrap();
        let thread = first["thread"]["id"].clone();
        let again = south.call(
            Some(&dan),
            "import_claim",
            &json!({ "bundle": bundle, "thread": thread }),
        );
        assert_eq!(reason(again), Reason::AlreadyImported, "{backend}");
        // A later export of the same claim (another exported_at) is the same claim.
        let later = export(&n);
        assert_ne!(later["payload"], bundle["payload"]);
        assert_eq!(
            reason(import(Some(&dan), &later)),
            Reason::AlreadyImported,
            "{backend}"
        );
        // A malformed thread is the post's refusal: after already_imported.
        let bad_thread = south.call(
            Some(&dan),
            "import_claim",
            &json!({ "bundle": bundle, "thread": "msg_3" }),
        );
        assert_eq!(reason(bad_thread), Reason::AlreadyImported, "{backend}");
        // The post's own checks: a malformed thread, by either API, then an
        // unknown one.
        let north2 = export_other(&n, "Another claim.");
        for thread in [json!("msg_3"), json!(0), json!(true), json!("th_")] {
            let refused = south
                .call(
                    Some(&dan),
                    "import_claim",
                    &json!({ "bundle": north2, "thread": thread }),
                )
                .unwrap_err();
            let refusal = refused.refusal().unwrap();
            assert_eq!(
                (refusal.reason, refusal.field.as_deref()),
                (Reason::InvalidBody, Some("thread")),
                "{backend} {thread}"
            );
        }
        // The typed call takes a `ThreadId`: a message's key is no thread's.
        assert!("msg_3".parse::<parley_forum::ThreadId>().is_err());
        let lost = south.call(
            Some(&dan),
            "import_claim",
            &json!({ "bundle": north2, "thread": "th_999" }),
        );
        assert_eq!(reason(lost), Reason::ThreadNotFound, "{backend}");
        // Refused imports wrote nothing: the same bundle still imports.
        south
            .call(Some(&dan), "import_claim", &json!({ "bundle": north2 }))
            .unwrap();
        // A missing bundle is an argument error; an unknown argument too. A
        // `null` one is given, and not a bundle; the typed API, whose `null`
        // is an absent argument, finds it missing.
        assert_eq!(
            reason(south.call(Some(&dan), "import_claim", &json!({}))),
            Reason::InvalidArgument
        );
        assert_eq!(
            reason(south.call(Some(&dan), "import_claim", &json!({ "bundle": null }))),
            Reason::BundleInvalid
        );
        let missing = south.session(&dan).import_claim(&Value::Null, None);
        let refusal = missing.unwrap_err().refusal().unwrap().clone();
        assert_eq!(
            (refusal.reason, refusal.field.as_deref()),
            (Reason::InvalidArgument, Some("bundle"))
        );
        let extra = south.call(
            Some(&dan),
            "import_claim",
            &json!({ "bundle": bundle, "x": 1 }),
        );
        assert_eq!(reason(extra), Reason::InvalidArgument, "{backend}");
    }
}

/// A second claim of north, exported.
fn export_other(n: &North, text: &str) -> Value {
    let posted = n
        .forum
        .session(&n.bob)
        .post(&Envelope::new("assert", text))
        .unwrap();
    n.forum
        .call(
            Some(&n.bob),
            "export_claim",
            &json!({ "claim": posted.claim.unwrap().id }),
        )
        .unwrap()["bundle"]
        .clone()
}

#[test]
fn an_import_is_judged_like_any_post_by_the_guards() {
    let n = north("ok thanks");
    let bundle = export(&n);
    for (backend, south, _dir) in souths("guards", &n.forum, json!({})) {
        let dan = south
            .create_token(&TokenSpec::llm("dan", &[Right::Read, Right::Write]))
            .unwrap();
        let eve = south
            .create_token(&TokenSpec::llm("eve", &[Right::Read, Right::Write]))
            .unwrap();
        let asked = south
            .session(&eve)
            .post(&Envelope::new("ask", "OK, thanks!"))
            .unwrap();
        let echoed = south.call(
            Some(&dan),
            "import_claim",
            &json!({ "bundle": bundle, "thread": asked.thread.id }),
        );
        assert_eq!(reason(echoed), Reason::EchoedBody, "{backend}");
        // The refused import left nothing: a new thread takes it.
        south
            .call(Some(&dan), "import_claim", &json!({ "bundle": bundle }))
            .unwrap();
    }
}

#[test]
fn the_body_is_cut_to_the_importing_forums_limit() {
    let text = "é".repeat(400);
    let n = north(&text);
    let bundle = export(&n);
    let limits = json!({ "limits": { "writes_per_minute": 0, "body_max_chars": 120 } });
    for (backend, south, _dir) in souths("cut", &n.forum, limits) {
        let dan = south
            .create_token(&TokenSpec::llm("dan", &[Right::Read, Right::Write]))
            .unwrap();
        let posted = south
            .call(Some(&dan), "import_claim", &json!({ "bundle": bundle }))
            .unwrap();
        assert_eq!(posted["message"]["body"], "é".repeat(120), "{backend}");
        assert_eq!(
            posted["claim"]["imported"]["claim"],
            n.claim.to_string(),
            "{backend}"
        );
    }
}

#[test]
fn export_needs_read_and_an_existing_claim() {
    let n = north("Exports are reads.");
    let nobody = n
        .forum
        .create_token(&TokenSpec::llm("nobody", &[]))
        .unwrap();
    let e = n
        .forum
        .call(Some(&nobody), "export_claim", &json!({ "claim": n.claim }));
    assert_eq!(reason(e), Reason::TokenRightMissing);
    let e = n
        .forum
        .call(Some(&n.bob), "export_claim", &json!({ "claim": "cl_99" }));
    assert_eq!(reason(e), Reason::ClaimNotFound);
    assert_eq!(
        reason(
            n.forum
                .call(None, "export_claim", &json!({ "claim": n.claim }))
        ),
        Reason::TokenMissing
    );
}

#[test]
fn with_the_profile_off_the_operations_are_unknown() {
    let n = north("Off.");
    let off = Forum::in_memory(config("south", json!({ "provenance": false }))).unwrap();
    let t = off
        .create_token(&TokenSpec::llm("t", &[Right::Read, Right::Write]))
        .unwrap();
    // The profile off: refused as the artifact operations are (invalid_argument);
    // the dialectic profile off: unknown, as get_claim is.
    let no_claims =
        Forum::in_memory(config("south", json!({ "profiles": ["provenance"] }))).unwrap();
    let u = no_claims
        .create_token(&TokenSpec::llm("u", &[Right::Read, Right::Write]))
        .unwrap();
    for op in ["export_claim", "import_claim"] {
        match off.call(Some(&t), op, &json!({})) {
            Err(Error::Refused(r)) => assert_eq!(r.reason, Reason::InvalidArgument, "{op}"),
            other => panic!("{op}: {other:?}"),
        }
        assert!(
            matches!(
                no_claims.call(Some(&u), op, &json!({})),
                Err(Error::UnknownOperation(_))
            ),
            "{op}"
        );
        assert!(!off.offers(op));
        assert!(!no_claims.offers(op));
        assert!(n.forum.offers(op));
    }
    let manifest = off.call(None, "get_manifest", &json!({})).unwrap();
    assert!(!manifest["operations"]
        .as_array()
        .unwrap()
        .contains(&json!("import_claim")));
}

#[test]
fn racing_imports_of_one_claim_land_once() {
    let n = north("Only once.");
    let bundle = export(&n);
    let mut targets: Vec<(String, Vec<Forum>, Option<tempfile::TempDir>)> = Vec::new();
    let key = n.forum.realm_key().to_string();
    let cfg = || config("south", json!({ "trusted_realms": { "north": key } }));
    let dir = tempfile::tempdir().unwrap();
    targets.push((
        "redb".into(),
        vec![Forum::open(dir.path().join("s.redb"), cfg()).unwrap()],
        Some(dir),
    ));
    if let Some(base) = support::server() {
        // Two engines on one PostgreSQL forum.
        let url = support::fresh_url(&base, "race");
        targets.push((
            "postgres".into(),
            vec![
                parley_postgres::open(&url, cfg()).unwrap(),
                parley_postgres::open(&url, cfg()).unwrap(),
            ],
            None,
        ));
    }
    for (backend, engines, _dir) in targets {
        let token = engines[0]
            .create_token(&TokenSpec::llm("dan", &[Right::Read, Right::Write]))
            .unwrap();
        let outcomes: Vec<parley_forum::Result<Value>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let engine = &engines[i % engines.len()];
                    let (token, bundle) = (&token, &bundle);
                    s.spawn(move || {
                        engine.call(Some(token), "import_claim", &json!({ "bundle": bundle }))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let landed = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(landed, 1, "{backend}: {outcomes:?}");
        for o in outcomes.into_iter().filter(|o| o.is_err()) {
            assert_eq!(reason(o), Reason::AlreadyImported, "{backend}");
        }
    }
}

#[test]
fn a_bundle_made_by_another_implementation_verifies_and_imports() {
    // tests/fixtures/provenance/east_bundle.json was signed by Python's
    // `cryptography` with RFC 8032's first test key, canonicalised by hand.
    let bytes = std::fs::read("tests/fixtures/provenance/east_bundle.json").unwrap();
    let key = "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
    let trusted = parley_forum::provenance::TrustedRealms::parse([("east", key)]).unwrap();
    let found = verify_bundle(&bytes, &trusted).unwrap();
    assert_eq!(
        (found.realm.as_str(), found.claim_id.as_str()),
        ("east", "cl_3")
    );
    let south = Forum::in_memory(config(
        "south",
        json!({ "trusted_realms": { "east": key } }),
    ))
    .unwrap();
    let dan = south
        .create_token(&TokenSpec::llm("dan", &[Right::Read, Right::Write]))
        .unwrap();
    let bundle: Value = serde_json::from_slice(&bytes).unwrap();
    let posted = south
        .call(Some(&dan), "import_claim", &json!({ "bundle": bundle }))
        .unwrap();
    assert_eq!(posted["claim"]["imported"]["status"], "verified");
    assert_eq!(posted["message"]["body"], "The east mirror is in sync.");
}

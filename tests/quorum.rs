//! SPEC §18.2, quorum verification, on a redb file and on PostgreSQL: a claim is
//! `verified` once `verify_quorum` distinct identities verified it (1, 2 and 3),
//! a second verify by one identity is accepted, recorded and counts once,
//! `get_claim` (and the post's claim, the typed view) carry
//! `quorum: { needed, have }`, and the status `get_digest` and `get_thread`'s
//! events show agrees; with the profile off, one verification verifies and no
//! quorum is shown.

#[path = "pg/support.rs"]
mod support;

use parley_forum::{ClaimStatus, Config, Forum, Quorum, Right, TokenSpec};
use serde_json::{json, Value};

fn settings(quorum: usize, extra: Value) -> Config {
    let mut s = json!({ "clock": "2026-11-30T12:00:00.000Z",
                        "limits": { "writes_per_minute": 0, "verify_quorum": quorum } });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    Config::from_json(&s).unwrap()
}

struct Case {
    backend: String,
    forum: Forum,
    author: String,
    verifiers: Vec<String>,
    _dir: Option<tempfile::TempDir>,
}

fn cases(tag: &str, quorum: usize, extra: Value) -> Vec<Case> {
    support::forums(tag, || settings(quorum, extra.clone()))
        .into_iter()
        .map(|(backend, forum, dir)| {
            let author = forum
                .create_token(&TokenSpec::llm("author", &[Right::Read, Right::Write]))
                .unwrap();
            let verifiers = ["v1", "v2", "v3"]
                .iter()
                .map(|h| {
                    forum
                        .create_token(&TokenSpec::llm(
                            h,
                            &[Right::Read, Right::Write, Right::Verify],
                        ))
                        .unwrap()
                })
                .collect();
            Case {
                backend,
                forum,
                author,
                verifiers,
                _dir: dir,
            }
        })
        .collect()
}

/// Asserts a claim; returns its id.
fn claim(c: &Case) -> Value {
    c.forum
        .call(
            Some(&c.author),
            "post",
            &json!({ "kind": "assert", "body": "The cache is safe to drop." }),
        )
        .unwrap()["claim"]["id"]
        .clone()
}

/// Verifies `claim` as verifier `i`; returns the post's claim. Each body is new
/// (a repeated body is refused, SPEC §4).
fn verify(c: &Case, i: usize, claim: &Value) -> Value {
    static PASS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = PASS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    c.forum
        .call(
            Some(&c.verifiers[i]),
            "post",
            &json!({ "kind": "verify", "claim": claim, "body": format!("Checked, pass {n}.") }),
        )
        .unwrap_or_else(|e| panic!("{}: verify {i}: {e}", c.backend))["claim"]
        .clone()
}

fn get(c: &Case, claim: &Value) -> Value {
    c.forum
        .call(Some(&c.author), "get_claim", &json!({ "claim": claim }))
        .unwrap()
}

fn status_and_quorum(v: &Value) -> (String, Value) {
    (
        v["status"].as_str().unwrap().to_string(),
        v["quorum"].clone(),
    )
}

#[test]
fn a_quorum_of_one_verifies_at_the_first_verification() {
    for c in cases("quorum1", 1, json!({})) {
        let id = claim(&c);
        assert_eq!(
            status_and_quorum(&get(&c, &id)),
            ("unverified".into(), json!({ "needed": 1, "have": 0 })),
            "{}",
            c.backend
        );
        let shown = verify(&c, 0, &id);
        assert_eq!(
            status_and_quorum(&shown),
            ("verified".into(), json!({ "needed": 1, "have": 1 })),
            "{}: the post's claim",
            c.backend
        );
        assert_eq!(shown, get(&c, &id));
    }
}

#[test]
fn a_quorum_of_two_needs_two_distinct_identities() {
    for c in cases("quorum2", 2, json!({})) {
        let id = claim(&c);
        let once = verify(&c, 0, &id);
        assert_eq!(
            status_and_quorum(&once),
            ("unverified".into(), json!({ "needed": 2, "have": 1 })),
            "{}",
            c.backend
        );
        // The same identity again: accepted, recorded, counted once.
        let twice = verify(&c, 0, &id);
        assert_eq!(
            status_and_quorum(&twice),
            ("unverified".into(), json!({ "needed": 2, "have": 1 })),
            "{}",
            c.backend
        );
        assert_eq!(twice["verifications"].as_array().unwrap().len(), 2);
        // Another extension of the same identity is the same identity.
        let ext = c
            .forum
            .call(
                Some(&c.verifiers[0]),
                "post",
                &json!({ "kind": "verify", "claim": id, "body": "Checked from a worker.",
                         "from": { "extension": "w1" } }),
            )
            .unwrap();
        assert_eq!(ext["claim"]["quorum"]["have"], 1, "{}", c.backend);
        let done = verify(&c, 1, &id);
        assert_eq!(
            status_and_quorum(&done),
            ("verified".into(), json!({ "needed": 2, "have": 2 })),
            "{}",
            c.backend
        );
        // The status change is an event, and get_digest agrees.
        let thread = done["thread"].clone();
        let events = c
            .forum
            .call(Some(&c.author), "get_events", &json!({ "thread": thread }))
            .unwrap();
        let claim_events: Vec<&Value> = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "claim")
            .collect();
        assert_eq!(claim_events.len(), 1, "{}: {events}", c.backend);
        let digest = c
            .forum
            .call(Some(&c.author), "get_digest", &json!({ "thread": thread }))
            .unwrap();
        assert_eq!(digest["claims"][0]["status"], "verified", "{}", c.backend);
    }
}

#[test]
fn a_quorum_of_three_with_attestations_reads_supported_until_it_is_met() {
    for c in cases("quorum3", 3, json!({})) {
        let id = claim(&c);
        c.forum
            .call(
                Some(&c.verifiers[2]),
                "post",
                &json!({ "kind": "attest", "claim": id, "body": "Works here.",
                         "evidence": [{ "kind": "note", "ref": "ran it" }] }),
            )
            .unwrap();
        assert_eq!(get(&c, &id)["status"], "supported", "{}", c.backend);
        verify(&c, 0, &id);
        verify(&c, 1, &id);
        verify(&c, 1, &id);
        assert_eq!(
            status_and_quorum(&get(&c, &id)),
            ("supported".into(), json!({ "needed": 3, "have": 2 })),
            "{}: two of three, rule 4 applies",
            c.backend
        );
        verify(&c, 2, &id);
        assert_eq!(
            status_and_quorum(&get(&c, &id)),
            ("verified".into(), json!({ "needed": 3, "have": 3 })),
            "{}",
            c.backend
        );
        // A standing refutation still overrides a met quorum (rule 2).
        let refuted = c
            .forum
            .call(
                Some(&c.author),
                "post",
                &json!({ "kind": "assert", "body": "Second claim." }),
            )
            .unwrap()["claim"]["id"]
            .clone();
        for i in 0..3 {
            verify(&c, i, &refuted);
        }
        c.forum
            .call(
                Some(&c.verifiers[0]),
                "post",
                &json!({ "kind": "refute", "claim": refuted, "body": "It is not.",
                         "evidence": [{ "kind": "note", "ref": "counter" }] }),
            )
            .unwrap();
        assert_eq!(get(&c, &refuted)["status"], "refuted", "{}", c.backend);
        assert_eq!(get(&c, &refuted)["quorum"]["have"], 3);
    }
}

#[test]
fn the_typed_view_carries_the_quorum() {
    for c in cases("quorum_typed", 2, json!({})) {
        let id = claim(&c);
        verify(&c, 0, &id);
        let view = c
            .forum
            .session(&c.author)
            .claim(id.as_str().unwrap())
            .unwrap();
        assert_eq!(view.status, ClaimStatus::Unverified, "{}", c.backend);
        assert_eq!(view.quorum, Some(Quorum { needed: 2, have: 1 }));
    }
}

#[test]
fn with_the_profile_off_one_verification_verifies_and_no_quorum_is_shown() {
    for c in cases("quorum_off", 3, json!({ "provenance": false })) {
        let id = claim(&c);
        let shown = verify(&c, 0, &id);
        assert_eq!(shown["status"], "verified", "{}", c.backend);
        assert!(shown.get("quorum").is_none(), "{}: {shown}", c.backend);
        let view = c
            .forum
            .session(&c.author)
            .claim(id.as_str().unwrap())
            .unwrap();
        assert_eq!(view.quorum, None);
    }
}

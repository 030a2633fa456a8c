//! The typed check against the JSON one: for any typed envelope, valid or not,
//! both give the same verdict, digest included.

use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::protocol::hashes;

const KINDS: [&str; 16] = [
    "ask", "answer", "note", "propose", "object", "handoff", "decide", "mark", "reopen", "assert",
    "attest", "refute", "verify", "vote", "", "Ask",
];
const BODIES: [&str; 8] = [
    "x",
    "   ",
    "",
    "äöü",
    "a \"quoted\" \\ body\n\twith\u{1} control",
    "six ch",
    "a body of quite a few more characters than five",
    "\u{3000}",
];
const IDS: [&str; 12] = [
    "th_1",
    "1",
    "42",
    "msg_3",
    "cl_2",
    "0",
    "th_",
    "x",
    " 1",
    "18446744073709551616",
    "th_+1",
    "ev_9",
];
const IDENTITIES: [&str; 5] = ["ainotes:alice", "human:bob", "alice", "ainotes:Alice", ""];
const STATES: [&str; 6] = ["open", "answered", "closed", "done", "Open", ""];
const EXTENSIONS: [&str; 5] = ["worker-2", "w", "a b", "", "an-extension-far-too-long"];
const EVIDENCE_KINDS: [&str; 6] = ["url", "hash", "commit", "log", "note", "opinion"];
const REFS: [&str; 8] = [
    "https://x.org/a",
    "x.org/a",
    "sha256:abc123",
    "abc123",
    "deadbee",
    "  ",
    "",
    "a reference of more than eight characters",
];
const NOTES: [&str; 3] = ["n", "", "a note longer than eight characters"];
const TIMES: [&str; 4] = [
    "2030-01-01T00:00:00Z",
    "2030-01-01T00:00:00.123+02:00",
    "tomorrow",
    "",
];
const TEXTS: [&str; 4] = ["m", "", "ü", "a model of many characters"];
const KEYS: [&str; 6] = ["k1", "a:b.c-_D9", "a b", "", "ä", "k2"];

fn one(pool: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(pool).prop_map(str::to_string)
}

fn maybe(pool: &'static [&'static str]) -> impl Strategy<Value = Option<String>> {
    prop::option::weighted(0.4, one(pool))
}

fn pointer() -> impl Strategy<Value = Pointer> {
    (one(&EVIDENCE_KINDS), one(&REFS), maybe(&NOTES)).prop_map(|(kind, reference, note)| Pointer {
        kind,
        note,
        reference,
    })
}

fn draft() -> impl Strategy<Value = Draft> {
    let head = (
        one(&KINDS),
        one(&BODIES),
        maybe(&IDS),
        maybe(&IDS),
        maybe(&IDS),
        maybe(&IDENTITIES),
        maybe(&STATES),
        maybe(&STATES),
    );
    let tail = (
        maybe(&EXTENSIONS),
        prop::collection::vec(pointer(), 0..4),
        prop::collection::vec(one(&IDS), 0..4),
        maybe(&TIMES),
        prop::option::weighted(0.3, (one(&TEXTS), one(&TEXTS))),
        maybe(&KEYS),
    );
    (head, tail).prop_map(
        |(
            (kind, body, thread, parent, claim, to, state, if_state),
            (extension, evidence, supersedes, valid_until, provenance, key),
        )| Draft {
            thread,
            parent,
            claim,
            to,
            state,
            if_state,
            from: extension.map(|extension| Sender { extension }),
            evidence,
            supersedes,
            valid_until,
            provenance: provenance.map(|(model, client)| Provenance { client, model }),
            idempotency_key: key,
            ..Draft::new(&kind, &body)
        },
    )
}

/// Limits small enough that the pools above reach each of them.
fn small() -> Limits {
    Limits {
        body_max_chars: 5,
        provenance_max_chars: 3,
        extension_max_chars: 8,
        evidence_max: 2,
        evidence_ref_max_chars: 8,
        supersedes_max: 2,
        ..Limits::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_typed_check_is_the_json_check(d in draft(), tight in any::<bool>(), dialectic in any::<bool>()) {
        let limits = if tight { small() } else { Limits::default() };
        let json = Value::Object(d.to_json());
        prop_assert_eq!(check_draft(&d, &limits, dialectic), check(&json, &limits, dialectic));
        let typed: [u8; 32] = hashes::digest_of(&d).into();
        let mapped: [u8; 32] = hashes::digest_without_key(json.as_object().unwrap()).into();
        prop_assert_eq!(typed, mapped);
    }
}

/// The strategy reaches the verdicts the property is about: each refusal of
/// the JSON check that a typed envelope can earn, and acceptance.
#[test]
fn the_property_meets_every_kind_of_verdict() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::BTreeSet::new();
    let mut accepted_with_key = false;
    for i in 0..20_000 {
        let d = draft().new_tree(&mut runner).unwrap().current();
        let limits = if i % 2 == 0 {
            small()
        } else {
            Limits::default()
        };
        match check_draft(&d, &limits, i % 3 != 0) {
            Ok(c) => accepted_with_key |= c.idempotency.is_some(),
            Err(r) => {
                seen.insert((r.reason.as_str().to_string(), r.field.unwrap_or_default()));
            }
        }
    }
    assert!(accepted_with_key);
    for expected in [
        ("unknown_kind", "kind"),
        ("invalid_body", "to"),
        ("invalid_body", "state"),
        ("invalid_body", "if_state"),
        ("invalid_body", "claim"),
        ("invalid_body", "evidence"),
        ("invalid_body", "supersedes"),
        ("invalid_body", "valid_until"),
        ("invalid_body", "thread"),
        ("invalid_body", "parent"),
        ("invalid_body", "from.extension"),
        ("invalid_body", "provenance.client"),
        ("invalid_body", "provenance.model"),
        ("invalid_body", "idempotency_key"),
        ("invalid_body", "body"),
        ("body_too_long", "body"),
    ] {
        let expected = (expected.0.to_string(), expected.1.to_string());
        assert!(
            seen.contains(&expected),
            "never refused {expected:?}: {seen:?}"
        );
    }
}

/// Where several fields are wrong, both checks name the same one first.
#[test]
fn the_first_of_several_refusals_is_the_same() {
    let limits = small();
    let field = |d: &Draft| {
        let typed = check_draft(d, &limits, true);
        assert_eq!(typed, check(&Value::Object(d.to_json()), &limits, true));
        typed.unwrap_err().field.unwrap_or_default()
    };
    let long = "far too long".to_string();
    let mut d = Draft::new("assert", "far too long a body");
    d.provenance = Some(Provenance {
        client: long.clone(),
        model: long.clone(),
    });
    assert_eq!(field(&d), "provenance.client");
    d.provenance = Some(Provenance {
        client: "c".into(),
        model: long.clone(),
    });
    assert_eq!(field(&d), "provenance.model");
    d.provenance = None;
    d.idempotency_key = Some("a b".into());
    d.valid_until = Some("tomorrow".into());
    d.supersedes = vec!["cl_1".into(), "x".into()];
    assert_eq!(field(&d), "idempotency_key");
    d.idempotency_key = None;
    assert_eq!(field(&d), "supersedes");
    d.supersedes.clear();
    assert_eq!(field(&d), "valid_until");
    d.valid_until = None;
    assert_eq!(field(&d), "body");
    let mut d = Draft::new("mark", "b");
    d.to = Some("bob".into());
    d.if_state = Some("done".into());
    d.state = Some("done".into());
    d.thread = Some("th_1".into());
    assert_eq!(field(&d), "to", "`to` is not allowed on `mark`");
    d.to = None;
    assert_eq!(field(&d), "state");
}

//! The envelope decoder's targets.

use super::*;

// --- envelopes ------------------------------------------------------------------

const CORE_KINDS: [&str; 9] = [
    "ask", "answer", "note", "propose", "object", "handoff", "decide", "mark", "reopen",
];
const DIALECTIC_KINDS: [&str; 4] = ["assert", "attest", "refute", "verify"];

/// A value for one envelope field: right in form, or not.
fn field_value(field: &'static str) -> BoxedStrategy<Value> {
    let good: BoxedStrategy<Value> = match field {
        "thread" => prop_oneof![
            (0..5u64).prop_map(|n| json!(format!("th_{n}"))),
            (0..5u64).prop_map(Value::from)
        ]
        .boxed(),
        "parent" => prop_oneof![
            (0..8u64).prop_map(|n| json!(format!("msg_{n}"))),
            (0..8u64).prop_map(Value::from)
        ]
        .boxed(),
        "claim" => (0..3u64).prop_map(|n| json!(format!("cl_{n}"))).boxed(),
        "supersedes" => vec((0..3u64).prop_map(|n| json!(format!("cl_{n}"))), 0..3)
            .prop_map(Value::Array)
            .boxed(),
        "to" => select(vec![
            "ainotes:bob",
            "ainotes:alice",
            "human:ann",
            "bob",
            "*",
        ])
        .prop_map(Value::from)
        .boxed(),
        "state" => select(vec![
            "open", "answered", "decided", "closed", "deferred", "obsolete", "rejected", "done",
        ])
        .prop_map(Value::from)
        .boxed(),
        "evidence" => vec(
            (
                select(vec!["url", "hash", "commit", "note", "log", "film"]),
                select(vec![
                    "https://example.invalid/a",
                    "sha256:00ff",
                    "abcdef0",
                    "x y",
                    "",
                ]),
            )
                .prop_map(|(kind, reference)| json!({ "kind": kind, "ref": reference })),
            0..3,
        )
        .prop_map(Value::Array)
        .boxed(),
        "valid_until" => prop_oneof![
            select(vec!["2027-01-01T00:00:00.000Z", "2020-01-01T00:00:00Z", "soon"])
                .prop_map(Value::from),
            "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,4})?(Z|z|[+-][0-9]{2}:[0-9]{2}|)"
                .prop_map(Value::from),
        ]
        .boxed(),
        "from" => select(vec!["worker-1", "a b", ""])
            .prop_map(|e| json!({ "extension": e }))
            .boxed(),
        "provenance" => Just(json!({ "model": "m", "client": "c" })).boxed(),
        "parley" => select(vec!["1", "2"]).prop_map(Value::from).boxed(),
        _ => json_value(),
    };
    prop_oneof![4 => good, 1 => Just(Value::Null), 1 => json_value()].boxed()
}

const FIELDS: [&str; 13] = [
    "thread",
    "parent",
    "claim",
    "supersedes",
    "to",
    "state",
    "evidence",
    "valid_until",
    "from",
    "provenance",
    "parley",
    "id",
    "created_at",
];

/// A valid envelope of `kind`: its required fields and some optional ones, each
/// right in form (the forum may still refuse it: the thread may not exist, the
/// turn may be someone else's).
fn valid_envelope(kind: &'static str) -> BoxedStrategy<Map<String, Value>> {
    let good = |field: &'static str| -> BoxedStrategy<Value> {
        match field {
            "thread" => prop_oneof![
                4 => (1..4u64).prop_map(|n| json!(format!("th_{n}"))),
                1 => (1..4u64).prop_map(Value::from)
            ]
            .boxed(),
            "parent" => (1..7u64).prop_map(|n| json!(format!("msg_{n}"))).boxed(),
            "claim" => (1..3u64).prop_map(|n| json!(format!("cl_{n}"))).boxed(),
            "to" => select(vec!["ainotes:bob", "ainotes:alice", "human:ann"])
                .prop_map(Value::from)
                .boxed(),
            "state" => select(vec![
                "open", "answered", "decided", "closed", "deferred", "obsolete", "rejected",
            ])
            .prop_map(Value::from)
            .boxed(),
            "evidence" => vec(
                select(vec![
                    json!({ "kind": "url", "ref": "https://example.invalid/a" }),
                    json!({ "kind": "hash", "ref": "sha256:00ff" }),
                    json!({ "kind": "commit", "ref": "abcdef0", "note": "the fix" }),
                ]),
                1..3,
            )
            .prop_map(Value::Array)
            .boxed(),
            "supersedes" => Just(json!(["cl_1"])).boxed(),
            "valid_until" => Just(json!("2027-01-01T00:00:00.000Z")).boxed(),
            "from" => Just(json!({ "extension": "worker-1" })).boxed(),
            "provenance" => Just(json!({ "model": "m", "client": "c" })).boxed(),
            _ => Just(json!("1")).boxed(), // parley
        }
    };
    let (required, optional): (&[&'static str], &[&'static str]) = match kind {
        "ask" => (&[], &["thread", "to"]),
        "handoff" => (&["thread", "to"], &["parent"]),
        "mark" => (&["thread", "state"], &["parent"]),
        "reopen" => (&["thread"], &["to"]),
        "assert" => (&[], &["thread", "evidence", "supersedes", "valid_until"]),
        "attest" | "refute" => (&["claim", "evidence"], &[]),
        "verify" => (&["claim"], &["evidence"]),
        _ => (&["thread"], &["parent"]),
    };
    let common: &[&'static str] = &["from", "provenance", "parley"];
    let optional: Vec<&'static str> = optional.iter().chain(common).copied().collect();
    let fields = (
        required
            .iter()
            .map(|f| good(f).prop_map(move |v| (*f, v)).boxed())
            .collect::<Vec<_>>(),
        proptest::sample::subsequence(optional, 0..3).prop_flat_map(move |chosen| {
            chosen
                .into_iter()
                .map(|f| good(f).prop_map(move |v| (f, v)).boxed())
                .collect::<Vec<_>>()
        }),
        "[a-z]{1,8}( [a-z]{1,8}){0,4}",
    );
    fields
        .prop_map(move |(required, optional, body)| {
            let mut envelope = Map::new();
            envelope.insert("kind".into(), json!(kind));
            envelope.insert("body".into(), json!(body));
            for (field, value) in required.into_iter().chain(optional) {
                envelope.insert(field.into(), value);
            }
            envelope
        })
        .boxed()
}

/// One step away from valid.
#[derive(Debug, Clone)]
enum Mutation {
    /// A field set to a value right in form or not (added if absent).
    Set(&'static str, Value),
    /// A field removed (by index into the envelope's keys).
    Remove(Index),
    /// A field no envelope has.
    Unknown(String, Value),
    /// Another body: empty, blank, too long, not a string.
    Body(Value),
    /// Another kind.
    Kind(Value),
}

fn mutation() -> BoxedStrategy<Mutation> {
    prop_oneof![
        4 => select(FIELDS.to_vec())
            .prop_flat_map(|f| field_value(f).prop_map(move |v| Mutation::Set(f, v))),
        2 => any::<Index>().prop_map(Mutation::Remove),
        1 => (key(), json_value()).prop_map(|(k, v)| Mutation::Unknown(k, v)),
        1 => prop_oneof![
            select(vec!["", " ", "\n\t"]).prop_map(Value::from),
            "x{498,503}".prop_map(Value::from),
            json_value(),
        ]
        .prop_map(Mutation::Body),
        1 => prop_oneof![
            select(vec!["ASK", "vote", "", "assert", "verify"]).prop_map(Value::from),
            json_value(),
        ]
        .prop_map(Mutation::Kind),
    ]
    .boxed()
}

/// A valid envelope of any kind, then up to two mutations.
pub(crate) fn near_envelope() -> BoxedStrategy<Value> {
    let kinds: Vec<&'static str> = CORE_KINDS.iter().chain(&DIALECTIC_KINDS).copied().collect();
    (
        select(kinds).prop_flat_map(valid_envelope),
        prop_oneof![2 => Just(Vec::new()), 2 => vec(mutation(), 1..2), 1 => vec(mutation(), 2..3)],
    )
        .prop_map(|(mut envelope, mutations)| {
            for mutation in mutations {
                match mutation {
                    Mutation::Set(field, value) => {
                        envelope.insert(field.into(), value);
                    }
                    Mutation::Remove(at) => {
                        let key = envelope.keys().nth(at.index(envelope.len())).cloned();
                        if let Some(key) = key {
                            envelope.remove(&key);
                        }
                    }
                    Mutation::Unknown(key, value) => {
                        envelope.insert(key, value);
                    }
                    Mutation::Body(body) => {
                        envelope.insert("body".into(), body);
                    }
                    Mutation::Kind(kind) => {
                        envelope.insert("kind".into(), kind);
                    }
                }
            }
            Value::Object(envelope)
        })
        .boxed()
}

/// A refusal carries a stable reason: one of SPEC §12's names, with its status.
pub(crate) fn check_refusal_json(refusal: &Value) -> Result<Reason, TestCaseError> {
    let name = refusal["reason"].as_str().unwrap_or_default();
    let reason = Reason::from_name(name);
    prop_assert!(reason.is_some(), "no stable reason: {}", refusal);
    let reason = reason.unwrap();
    prop_assert_eq!(refusal["status"].as_u64(), Some(u64::from(reason.status())));
    prop_assert!(
        refusal["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        refusal
    );
    Ok(reason)
}

/// The first refusal SPEC §12.1's order gives from the envelope's shape alone,
/// as far as it is decided before the fields' own rules: object, version, kind
/// (one the manifest lists).
fn first_refusal(value: &Value, kinds: &[String]) -> Option<Reason> {
    let Some(obj) = value.as_object() else {
        return Some(Reason::InvalidBody);
    };
    // `null` is absent (docs/spec-notes.md): only a present, other value is refused.
    if obj
        .get("parley")
        .is_some_and(|v| !v.is_null() && v.as_str() != Some("1"))
    {
        return Some(Reason::UnsupportedVersion);
    }
    match obj.get("kind") {
        None | Some(Value::Null) => Some(Reason::InvalidBody),
        Some(Value::String(kind)) => (!kinds.contains(kind)).then_some(Reason::UnknownKind),
        Some(_) => Some(Reason::InvalidBody),
    }
}

/// Posts `value` as the holder of a write token and checks the answer.
fn post_one(world: &World, token: &str, value: &Value) -> Result<(), TestCaseError> {
    let before = world.written();
    let outcome = world.forum.call(Some(token), "post", value);
    let after = world.written();
    match outcome {
        Ok(result) => {
            let id = result["message"]["id"].as_str().unwrap_or_default();
            prop_assert!(id.starts_with("msg_"), "{}", result);
            prop_assert!(
                result["thread"]["id"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("th_")),
                "{}",
                result
            );
            prop_assert_eq!(
                first_refusal(value, &world.kinds),
                None,
                "accepted {}",
                value
            );
            prop_assert_eq!(after.0, before.0 + 1, "one message written for {}", value);
        }
        Err(Error::Refused(refusal)) => {
            let reason = check_refusal_json(&refusal.to_json())?;
            if let Some(first) = first_refusal(value, &world.kinds) {
                prop_assert_eq!(reason, first, "{} for {}", refusal, value);
            }
            prop_assert_eq!(after, before, "{} wrote for {}", refusal, value);
        }
        Err(other) => prop_assert!(false, "{} is neither a result nor a refusal", other),
    }
    Ok(())
}

#[test]
fn envelope_decoder_answers_any_json_value() {
    fuzz(
        "envelope_decoder_answers_any_json_value",
        128,
        || {
            (
                any::<bool>(),
                huge_limit(),
                vec((0..2usize, json_value()), 1..10),
            )
        },
        |(dialectic, extreme, posts)| {
            let world = World::with_limit(dialectic, 65536, extreme);
            for (who, value) in &posts {
                let token = if *who == 0 { &world.alice } else { &world.bob };
                post_one(&world, token, value)?;
            }
            Ok(())
        },
    );
}

#[test]
fn envelope_decoder_answers_near_valid_envelopes() {
    fuzz(
        "envelope_decoder_answers_near_valid_envelopes",
        160,
        || {
            (
                any::<bool>(),
                huge_limit(),
                vec((0..3usize, near_envelope()), 1..12),
            )
        },
        |(dialectic, extreme, posts)| {
            let world = World::with_limit(dialectic, 65536, extreme);
            for (who, value) in &posts {
                let token = [&world.alice, &world.bob, &world.ann][*who];
                post_one(&world, token, value)?;
            }
            Ok(())
        },
    );
}

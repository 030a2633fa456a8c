//! Fuzz targets for the two decoders at the engine's edge, driven through the
//! public entry points a transport uses:
//! - the envelope decoder (`protocol/envelope.rs`), through the generic call
//!   `forum.call(Some(token), "post", &value)`, with arbitrary JSON values and
//!   near-valid envelopes on a forum that has threads, messages and a claim;
//! - the JSON-RPC decoder (`mcp/jsonrpc.rs`), through the MCP handler
//!   `forum.mcp(token, text)`, with arbitrary bytes, near-valid frames of both MCP
//!   revisions, truncated and mutated frames, and frames over the size limit.
//!
//! Every target checks: no panic; every answer is a post result or a refusal
//! with a stable reason (its status the reason's), or a well-formed JSON-RPC
//! response (`jsonrpc`, the request's `id`, exactly one of `result` and `error`,
//! a known error code) or none exactly when JSON-RPC says so; the first refusal
//! of the envelope checks is the one SPEC §12.1's order gives; and nothing is
//! written for a refused input, while an accepted post writes one message.
//!
//! Bounded by `PARLEY_FUZZ_CASES` (cases per target, each a few inputs);
//! deterministic unless `PARLEY_FUZZ_SEED` is set (a number, or `random`); a
//! failure names its seed.

use parley_forum::{Config, Error, Forum, Reason, Right, TokenSpec, OPERATIONS};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config as RunConfig, RngSeed, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

// --- bounds and seeds -----------------------------------------------------------

/// The seed of every run without `PARLEY_FUZZ_SEED`.
const DEFAULT_SEED: u64 = 0x7061_726c_6579_0d01;
/// The stack of a fuzzing thread: nested strategies build their values on the
/// stack, and a debug build's frames are large.
const STACK_BYTES: usize = 64 << 20;

fn runner(target: &str, default_cases: u32) -> (TestRunner, u64) {
    let cases = match std::env::var("PARLEY_FUZZ_CASES") {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("PARLEY_FUZZ_CASES must be a number, not {text:?}")),
        Err(_) => default_cases,
    };
    let base = match std::env::var("PARLEY_FUZZ_SEED") {
        Err(_) => DEFAULT_SEED,
        Ok(text) if text == "random" => {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).expect("random bytes");
            u64::from_le_bytes(bytes)
        }
        Ok(text) => text.parse().unwrap_or_else(|_| {
            panic!("PARLEY_FUZZ_SEED must be a number or `random`, not {text:?}")
        }),
    };
    // FNV-1a of the name, so that targets draw different inputs from one seed.
    let seed = target.bytes().fold(base ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    eprintln!("{target}: {cases} cases, PARLEY_FUZZ_SEED={base} (stream {seed:#x})");
    let runner = TestRunner::new(RunConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_time: 30_000,
        ..RunConfig::default()
    });
    (runner, base)
}

/// Runs `test` on the values of the strategy `make` builds, on a roomy thread.
fn fuzz<S: Strategy>(
    target: &str,
    default_cases: u32,
    make: impl FnOnce() -> S + Send,
    test: impl Fn(S::Value) -> Result<(), TestCaseError> + Sync,
) where
    S::Value: std::fmt::Debug,
{
    let (mut runner, seed) = runner(target, default_cases);
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(target.to_string())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || {
                runner.run(&make(), &test).map_err(|e| e.to_string())
            })
            .expect("a fuzzing thread")
            .join()
    });
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(failure)) => panic!("{target} (PARLEY_FUZZ_SEED={seed}): {failure}"),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

// --- JSON -----------------------------------------------------------------------

/// Any JSON value, nested a few levels, with the strings the decoders look for.
fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|x| json!(x)),
        select(vec![
            "",
            "1",
            "2",
            "2.0",
            "th_1",
            "msg_1",
            "cl_1",
            "th_0",
            "msg_99",
            "ask",
            "mark",
            "closed",
            "ainotes:bob",
            "human:ann",
            "2026-12-01T00:00:00.000Z",
            "tools/call",
            "post",
            "2026-07-28",
            "2025-11-25",
            "\u{0}",
            "é",
            "\u{feff}",
        ])
        .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            btree_map(key(), inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Object keys: the names the decoders know, and others.
fn key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(vec![
            "parley", "kind", "body", "thread", "parent", "from", "provenance", "to", "state",
            "claim", "evidence", "supersedes", "valid_until", "id", "author_kind", "created_at",
            "extension", "identity", "model", "client", "ref", "note", "jsonrpc", "method",
            "params", "result", "error", "name", "arguments", "_meta",
        ])
        .prop_map(String::from),
        1 => ".{0,8}",
    ]
    .boxed()
}

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
fn near_envelope() -> BoxedStrategy<Value> {
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

// --- the forum under test ---------------------------------------------------------

struct World {
    forum: Forum,
    alice: String,
    bob: String,
    ann: String,
    observer: String,
    /// The kinds the manifest lists: the core acts, and the profiles' acts.
    kinds: Vec<String>,
}

/// Now and then a limit raised to an extreme (a tiny one would refuse the seeding).
fn huge_limit() -> impl Strategy<Value = Option<(&'static str, u64)>> {
    prop::option::weighted(
        0.2,
        (
            select(vec![
                "body_max_chars",
                "provenance_max_chars",
                "extension_max_chars",
                "thread_max_messages",
                "thread_max_depth",
                "evidence_max",
                "evidence_ref_max_chars",
                "supersedes_max",
                "page_max",
            ]),
            prop_oneof![Just(u64::MAX), Just(1u64 << 40)],
        ),
    )
}

impl World {
    /// A forum with two threads, replies and (with dialectic) a claim.
    fn new(dialectic: bool, request_max_bytes: usize) -> World {
        World::with_limit(dialectic, request_max_bytes, None)
    }

    fn with_limit(
        dialectic: bool,
        request_max_bytes: usize,
        extreme: Option<(&str, u64)>,
    ) -> World {
        let mut limits = json!({ "writes_per_minute": 0, "request_max_bytes": request_max_bytes });
        if let Some((name, value)) = extreme {
            limits[name] = json!(value);
        }
        let settings = json!({
            "clock": "2026-11-30T12:00:00.000Z",
            "durable": false,
            "profiles": if dialectic { json!(["dialectic"]) } else { json!([]) },
            "limits": limits,
        });
        let forum = Forum::in_memory(Config::from_json(&settings).unwrap()).unwrap();
        let all = [Right::Read, Right::Write, Right::Lock, Right::Verify];
        let alice = forum.create_token(&TokenSpec::llm("alice", &all)).unwrap();
        let bob = forum.create_token(&TokenSpec::llm("bob", &all)).unwrap();
        let ann = forum
            .create_token(
                &TokenSpec::from_json(&json!({ "handle": "ann", "kind": "human" })).unwrap(),
            )
            .unwrap();
        let observer = forum
            .create_token(&TokenSpec::llm("observer", &[Right::Read]))
            .unwrap();
        let manifest = forum.manifest();
        let profile_acts = manifest["profiles"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values())
            .flat_map(|p| p["acts"].as_array().cloned().unwrap_or_default());
        let kinds = manifest["acts"]
            .as_array()
            .unwrap()
            .iter()
            .cloned()
            .chain(profile_acts)
            .map(|act| act["kind"].as_str().unwrap().to_string())
            .collect();
        let world = World {
            forum,
            alice,
            bob,
            ann,
            observer,
            kinds,
        };
        let post = |token: &str, envelope: Value| {
            world
                .forum
                .call(Some(token), "post", &envelope)
                .unwrap_or_else(|e| panic!("seeding {envelope}: {e}"));
        };
        post(
            &world.alice,
            json!({ "kind": "ask", "body": "Which port?" }),
        );
        post(
            &world.bob,
            json!({ "kind": "answer", "thread": "th_1", "body": "7878." }),
        );
        post(
            &world.bob,
            json!({ "kind": "ask", "body": "Which format?" }),
        );
        post(
            &world.alice,
            json!({ "kind": "propose", "thread": "th_2", "body": "TOML." }),
        );
        if dialectic {
            post(
                &world.bob,
                json!({ "kind": "assert", "body": "The port is 7878.", "thread": "th_1",
                        "evidence": [{ "kind": "url", "ref": "https://example.invalid/p" }] }),
            );
        }
        world
    }

    fn token(&self, which: usize) -> Option<&str> {
        match which % 5 {
            0 => Some(&self.alice),
            1 => Some(&self.bob),
            2 => Some(&self.ann),
            3 => Some(&self.observer),
            _ => None,
        }
    }

    /// What a write changes: the messages of every thread, and the events.
    fn written(&self) -> (u64, usize, usize) {
        let threads = self
            .forum
            .call(
                Some(&self.observer),
                "list_threads",
                &json!({ "limit": 200 }),
            )
            .unwrap();
        let items = threads["items"].as_array().unwrap();
        let messages = items
            .iter()
            .map(|t| t["message_count"].as_u64().unwrap())
            .sum();
        let events = self
            .forum
            .call(Some(&self.observer), "get_events", &json!({ "limit": 200 }))
            .unwrap();
        (
            messages,
            items.len(),
            events["items"].as_array().unwrap().len(),
        )
    }
}

/// A refusal carries a stable reason: one of SPEC §12's names, with its status.
fn check_refusal_json(refusal: &Value) -> Result<Reason, TestCaseError> {
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

// --- JSON-RPC frames ------------------------------------------------------------

/// The JSON-RPC error codes the handler may answer with.
const RPC_CODES: [i64; 5] = [-32700, -32600, -32601, -32602, -32022];

/// What JSON-RPC 2.0 (as MCP uses it) says a message gets.
#[derive(Debug, PartialEq)]
enum Due {
    /// No response: a notification, or a response sent to us.
    Nothing,
    /// An error with this code, under this id, before any method runs.
    Error(i64, Value),
    /// A response under this id: a result, or an error of the method.
    Answer(Value),
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The answer the JSON-RPC rules give for `text` of at most the size limit.
fn due(text: &str) -> Due {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Due::Error(-32700, Value::Null);
    };
    let Value::Object(obj) = value else {
        return Due::Error(-32600, Value::Null);
    };
    if is_response(&obj) {
        return Due::Nothing;
    }
    let id = match obj.get("id") {
        None => None,
        Some(id) if valid_id(id) => Some(id.clone()),
        Some(_) => return Due::Error(-32600, Value::Null),
    };
    let echo = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc") != Some(&json!("2.0")) || !obj.get("method").is_some_and(Value::is_string)
    {
        return Due::Error(-32600, echo);
    }
    let Some(id) = id else {
        return Due::Nothing;
    };
    match obj.get("params") {
        None | Some(Value::Null) | Some(Value::Object(_)) => Due::Answer(id),
        Some(_) => Due::Error(-32602, id),
    }
}

/// What a message over the size limit gets: it is not decoded, but its id is
/// echoed when it has a valid one, and a notification or a response still gets
/// nothing.
fn due_oversized(text: &str) -> Due {
    let value = serde_json::from_str::<Value>(text).ok();
    let obj = value.as_ref().and_then(Value::as_object);
    let id = obj.and_then(|o| o.get("id"));
    match (obj, id) {
        (Some(o), _) if is_response(o) => Due::Nothing,
        (Some(o), None) if o.get("method").is_some_and(|m| !m.is_null()) => Due::Nothing,
        (_, Some(id)) if valid_id(id) => Due::Error(-32600, id.clone()),
        _ => Due::Error(-32600, Value::Null),
    }
}

/// A JSON-RPC response (to a request the server never sent): nothing answers it.
fn is_response(obj: &Map<String, Value>) -> bool {
    !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error"))
}

/// Sends one frame and checks the answer against the rules, and that it wrote
/// exactly when it was an accepted `post`.
fn send_one(world: &World, token: Option<&str>, text: &str) -> Result<(), TestCaseError> {
    let limit = world.forum.config().limits.request_max_bytes;
    let due = if text.len() > limit {
        due_oversized(text)
    } else {
        due(text)
    };
    let before = world.written();
    let response = world.forum.mcp(token, text);
    let after = world.written();
    let Some(response) = response else {
        prop_assert_eq!(due, Due::Nothing, "no answer to {:?}", text);
        prop_assert_eq!(after, before, "a message without an answer wrote");
        return Ok(());
    };
    let r: Value = serde_json::from_str(&response)
        .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {response}")))?;
    prop_assert_eq!(&r["jsonrpc"], "2.0", "{}", response);
    prop_assert!(
        r.get("result").is_some() != r.get("error").is_some(),
        "exactly one of result and error: {}",
        response
    );
    let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
    prop_assert_eq!(keys.len(), 3, "jsonrpc, id and one more: {}", response);
    if let Some(error) = r.get("error") {
        let code = error["code"].as_i64().unwrap_or_default();
        prop_assert!(RPC_CODES.contains(&code), "code {} in {}", code, response);
        prop_assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{}",
            response
        );
        if text.len() > limit {
            prop_assert_eq!(&error["data"]["reason"], "payload_too_large");
        }
    }
    let mut wrote = false;
    match &due {
        Due::Nothing => prop_assert!(false, "answered {:?} with {}", text, response),
        Due::Error(code, id) => {
            prop_assert_eq!(&r["id"], id, "{}", response);
            prop_assert_eq!(&r["error"]["code"], code, "{:?} got {}", text, response);
        }
        Due::Answer(id) => {
            prop_assert_eq!(&r["id"], id, "{}", response);
            if let Some(result) = r.get("result") {
                prop_assert!(result.is_object(), "{}", response);
                if let Some(is_error) = result.get("isError") {
                    prop_assert!(is_error.is_boolean(), "{}", response);
                    prop_assert_eq!(&result["content"][0]["type"], "text", "{}", response);
                    if is_error == true {
                        check_refusal_json(&result["structuredContent"]["error"])?;
                    } else {
                        let sent: Value = serde_json::from_str(text).unwrap();
                        wrote = sent["method"] == "tools/call" && sent["params"]["name"] == "post";
                    }
                }
            }
        }
    }
    if wrote {
        prop_assert_eq!(after.0, before.0 + 1, "one message written by {}", text);
    } else {
        prop_assert_eq!(after, before, "{} wrote: {}", text, response);
    }
    Ok(())
}

/// The `_meta` of a request, or none.
fn meta() -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        3 => Just(Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }))),
        3 => Just(None),
        1 => Just(Some(json!({ "io.modelcontextprotocol/protocolVersion": "2025-11-25" }))),
        1 => Just(Some(json!({ "io.modelcontextprotocol/protocolVersion": "2024-01-01" }))),
        1 => Just(Some(json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" }))),
        1 => json_value().prop_map(Some),
    ]
    .boxed()
}

/// A frame one step from valid, in either revision.
fn near_frame() -> BoxedStrategy<Value> {
    let id = prop_oneof![
        4 => any::<i64>().prop_map(Value::from),
        2 => "[a-z0-9-]{0,8}".prop_map(Value::from),
        1 => Just(json!(u64::MAX)),
        1 => json_value(),
    ];
    let call = (
        prop_oneof![8 => Just("post".to_string()), 3 => select(OPERATIONS.to_vec()).prop_map(String::from), 1 => ".{0,8}"],
        prop_oneof![6 => near_envelope(), 1 => json_value()],
    )
        .prop_map(|(name, arguments)| json!({ "name": name, "arguments": arguments }));
    let params = prop_oneof![
        8 => call,
        1 => Just(json!({ "protocolVersion": "2025-11-25", "capabilities": {} })),
        1 => Just(json!({})),
        1 => json_value(),
    ];
    (
        prop::option::weighted(0.85, id),
        prop_oneof![
            10 => Just(json!("tools/call")),
            4 => select(vec!["tools/list", "initialize", "ping", "server/discover",
                             "notifications/initialized", "resources/list"]).prop_map(Value::from),
            1 => json_value(),
        ],
        prop::option::weighted(0.9, params),
        meta(),
        prop_oneof![12 => Just(Some(json!("2.0"))), 1 => Just(None), 1 => json_value().prop_map(Some)],
        prop::option::weighted(0.05, (key(), json_value())),
        prop_oneof![
            12 => Just(None),
            1 => Just(Some(("result", json!({})))),
            1 => Just(Some(("error", json!({ "code": -32601, "message": "no" })))),
        ],
    )
        .prop_map(|(id, method, params, meta, version, extra, answer)| {
            let mut frame = Map::new();
            if let Some(version) = version {
                frame.insert("jsonrpc".into(), version);
            }
            if let Some(id) = id {
                frame.insert("id".into(), id);
            }
            frame.insert("method".into(), method);
            if let Some(mut params) = params {
                if let (Some(meta), Some(p)) = (meta, params.as_object_mut()) {
                    p.insert("_meta".into(), meta);
                }
                frame.insert("params".into(), params);
            }
            if let Some((key, value)) = extra {
                frame.insert(key, value);
            }
            // A response sent to the server, as a confused client might.
            if let Some((key, value)) = answer {
                frame.remove("method");
                frame.remove("params");
                frame.insert(key.into(), value);
            }
            Value::Object(frame)
        })
        .boxed()
}

/// How a frame's text is damaged on the way, if at all.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// Cut after this many characters.
    Truncate(Index),
    /// One byte replaced (invalid UTF-8 then read as a transport would, lossily).
    Byte(Index, u8),
    /// Text after the frame.
    Trailing(String),
    /// Whitespace around it, past the size limit when the limit is small.
    Padded(usize),
}

fn damage() -> BoxedStrategy<Damage> {
    prop_oneof![
        6 => Just(Damage::None),
        2 => any::<Index>().prop_map(Damage::Truncate),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Byte(i, b)),
        1 => select(vec![" ", "\n", "}", "x", "{}", ",", "\u{0}"]).prop_map(|s| Damage::Trailing(s.to_string())),
        1 => (0..3000usize).prop_map(Damage::Padded),
    ]
    .boxed()
}

fn damaged(text: String, damage: &Damage) -> String {
    match damage {
        Damage::None => text,
        Damage::Truncate(at) => text
            .chars()
            .take(at.index(text.chars().count() + 1))
            .collect(),
        Damage::Byte(at, byte) => {
            let mut bytes = text.into_bytes();
            let i = at.index(bytes.len().max(1));
            if let Some(b) = bytes.get_mut(i) {
                *b = *byte;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Damage::Trailing(tail) => text + tail,
        Damage::Padded(n) => format!("{}{text}{}", " ".repeat(*n / 2), "\n".repeat(*n - *n / 2)),
    }
}

#[test]
fn jsonrpc_decoder_answers_any_bytes() {
    fuzz(
        "jsonrpc_decoder_answers_any_bytes",
        128,
        || {
            (
                any::<bool>(),
                vec(
                    (
                        0..5usize,
                        prop_oneof![
                            vec(any::<u8>(), 0..200)
                                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
                            ".{0,200}",
                            json_value().prop_map(|v| v.to_string()),
                        ],
                    ),
                    1..16,
                ),
            )
        },
        |(dialectic, frames)| {
            let world = World::new(dialectic, 65536);
            for (who, text) in &frames {
                send_one(&world, world.token(*who), text)?;
            }
            Ok(())
        },
    );
}

#[test]
fn jsonrpc_decoder_answers_near_valid_and_damaged_frames() {
    fuzz(
        "jsonrpc_decoder_answers_near_valid_and_damaged_frames",
        128,
        || {
            (
                any::<bool>(),
                prop_oneof![3 => Just(65536usize), 1 => 256..2048usize],
                huge_limit(),
                vec((0..5usize, near_frame(), damage()), 1..12),
            )
        },
        |(dialectic, limit, extreme, frames)| {
            let world = World::with_limit(dialectic, limit, extreme);
            for (who, frame, damage) in &frames {
                let text = damaged(frame.to_string(), damage);
                send_one(&world, world.token(*who), &text)?;
            }
            Ok(())
        },
    );
}

/// A JSON-RPC response is answered with nothing, under the size limit and over it
/// (the fuzzer found the second answered with a `payload_too_large` error).
#[test]
fn an_oversized_response_gets_no_answer() {
    let world = World::new(false, 64);
    let response = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    assert_eq!(world.forum.mcp(None, response), None, "under the limit");
    let padded = format!("{response}{}", " ".repeat(100));
    assert_eq!(world.forum.mcp(None, &padded), None, "over the limit");
}

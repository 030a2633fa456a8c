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
//! This file holds the runner, the JSON values and the forum under test; the
//! targets are in `fuzz_decoders/envelopes.rs` and `fuzz_decoders/jsonrpc.rs`.
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

#[path = "fuzz_decoders/envelopes.rs"]
mod envelopes;
#[path = "fuzz_decoders/jsonrpc.rs"]
mod jsonrpc;

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

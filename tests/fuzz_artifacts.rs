//! Fuzz target for the artifact decoder (`decode_artifact`, SPEC §18.1), alone and
//! through the generic call `put_artifact` / `get_artifact`:
//! - any JSON value as arguments: never a panic; an answer is the decoded bytes or
//!   an `invalid_argument` refusal naming a field;
//! - the base64 of arbitrary bytes, then mutated (a character inserted, removed or
//!   replaced from the alphabets, whitespace and padding, or the text cut): the
//!   untouched encoding always decodes to the bytes; whatever decodes is the
//!   canonical encoding of what it decodes to (standard alphabet, padded, nothing
//!   else), so one artifact has exactly one `content_base64`;
//! - what decodes, put and read back, is the same bytes under the SHA-256 ref; what
//!   does not is refused and nothing is stored.
//!
//! Bounded by `PARLEY_FUZZ_CASES` (cases per target); deterministic unless
//! `PARLEY_FUZZ_SEED` is set (a number, or `random`); a failure names its seed.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use parley_forum::{decode_artifact, Config, Forum, Reason, Refusal, Right, TokenSpec};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunConfig, RngSeed, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

const DEFAULT_SEED: u64 = 0x7061_726c_6579_1801;

fn runner(target: &str, default_cases: u32) -> (TestRunner, u64) {
    let cases = std::env::var("PARLEY_FUZZ_CASES")
        .map(|t| t.parse().expect("PARLEY_FUZZ_CASES must be a number"))
        .unwrap_or(default_cases);
    let base = match std::env::var("PARLEY_FUZZ_SEED") {
        Err(_) => DEFAULT_SEED,
        Ok(t) if t == "random" => {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).expect("random bytes");
            u64::from_le_bytes(bytes)
        }
        Ok(t) => t
            .parse()
            .expect("PARLEY_FUZZ_SEED must be a number or `random`"),
    };
    let seed = target.bytes().fold(base ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    eprintln!("{target}: {cases} cases, PARLEY_FUZZ_SEED={base}");
    let runner = TestRunner::new(RunConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..RunConfig::default()
    });
    (runner, base)
}

fn run<S: Strategy>(
    target: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let (mut runner, seed) = runner(target, cases);
    if let Err(failure) = runner.run(&strategy, test) {
        panic!("{target} (PARLEY_FUZZ_SEED={seed}): {failure}");
    }
}

/// Characters a mutation draws from: both alphabets, padding, whitespace, others.
const CHARS: &[char] = &[
    'A', 'Z', 'a', 'z', '0', '9', '+', '/', '=', '-', '_', ' ', '\n', '\r', '\t', '.', '%', 'é',
    '\0',
];

#[derive(Debug, Clone)]
enum Mutation {
    None,
    Insert(usize, char),
    Remove(usize),
    Replace(usize, char),
    Cut(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let ch = proptest::sample::select(CHARS);
    prop_oneof![
        2 => Just(Mutation::None),
        2 => (any::<usize>(), ch.clone()).prop_map(|(i, c)| Mutation::Insert(i, c)),
        1 => any::<usize>().prop_map(Mutation::Remove),
        2 => (any::<usize>(), ch).prop_map(|(i, c)| Mutation::Replace(i, c)),
        1 => any::<usize>().prop_map(Mutation::Cut),
    ]
}

fn mutate(text: &str, m: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match *m {
        Mutation::None => {}
        Mutation::Insert(i, c) => {
            let n = chars.len() + 1;
            chars.insert(at(i, n), c)
        }
        Mutation::Remove(i) if !chars.is_empty() => {
            let n = chars.len();
            chars.remove(at(i, n));
        }
        Mutation::Replace(i, c) if !chars.is_empty() => {
            let n = chars.len();
            chars[at(i, n)] = c
        }
        Mutation::Cut(i) => {
            let n = chars.len() + 1;
            chars.truncate(at(i, n))
        }
        _ => {}
    }
    chars.into_iter().collect()
}

/// A refusal of the decoder: `invalid_argument`, naming a field when the
/// arguments were an object.
fn check_refusal(r: &Refusal, object: bool) -> Result<(), TestCaseError> {
    prop_assert_eq!(r.reason, Reason::InvalidArgument);
    prop_assert_eq!(r.status(), 400);
    if object {
        prop_assert!(r.field.is_some(), "no field: {:?}", r);
    }
    Ok(())
}

fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[A-Za-z0-9+/=_ -]{0,12}".prop_map(Value::from),
        proptest::sample::select(vec![
            "content_base64",
            "media_type",
            "aGVsbG8=",
            "",
            "text/plain"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(
                proptest::sample::select(vec!["content_base64", "media_type", "ref", "x"])
                    .prop_map(str::to_string),
                inner,
                0..3
            )
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .boxed()
}

#[test]
fn the_artifact_decoder_answers_any_json_value() {
    run("artifact_any_json", 512, json_value(), |args| {
        match decode_artifact(&args) {
            Ok(d) => {
                let text = args["content_base64"].as_str().unwrap_or_default();
                prop_assert_eq!(STANDARD.encode(&d.content), text);
                prop_assert!(!d.media_type.is_empty() && d.media_type.chars().count() <= 100);
            }
            Err(e) => check_refusal(&e, args.is_object())?,
        }
        Ok(())
    });
}

#[test]
fn mutated_base64_decodes_only_in_its_canonical_form() {
    let forum = Forum::in_memory(
        Config::from_json(
            &json!({ "limits": { "writes_per_minute": 0, "artifact_max_bytes": 256 } }),
        )
        .unwrap(),
    )
    .unwrap();
    let token = forum
        .create_token(&TokenSpec::llm("fuzz", &[Right::Read, Right::Write]))
        .unwrap();
    let strategy = (vec(any::<u8>(), 0..200), mutation());
    run("artifact_mutated_base64", 512, strategy, |(bytes, m)| {
        let text = mutate(&STANDARD.encode(&bytes), &m);
        let args = json!({ "content_base64": text });
        let decoded = decode_artifact(&args);
        if matches!(m, Mutation::None) {
            let d = decoded
                .as_ref()
                .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert_eq!(&d.content, &bytes);
        }
        let put = forum.call(Some(&token), "put_artifact", &args);
        match decoded {
            Ok(d) => {
                prop_assert_eq!(STANDARD.encode(&d.content), text.as_str());
                let put = put.map_err(|e| TestCaseError::fail(format!("put: {e}")))?;
                let got = forum
                    .call(
                        Some(&token),
                        "get_artifact",
                        &json!({ "ref": put["artifact"]["ref"] }),
                    )
                    .map_err(|e| TestCaseError::fail(format!("get: {e}")))?;
                prop_assert_eq!(got["content_base64"].as_str(), Some(text.as_str()));
                prop_assert_eq!(
                    got["artifact"]["size"].as_u64(),
                    Some(d.content.len() as u64)
                );
            }
            Err(e) => {
                check_refusal(&e, true)?;
                let refused = put.expect_err("the call refuses what the decoder refuses");
                prop_assert_eq!(refused.refusal(), Some(&e));
            }
        }
        Ok(())
    });
}

//! The fuzzer's runner and its inputs: what a C host may pass to each parameter
//! of libparley, from the well-formed to the hostile. The checks are in
//! `entry_points.rs`.

use std::ffi::{c_char, CString};
use std::ptr;

use ::parley_forum::OPERATIONS;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config as RunConfig, RngSeed, TestCaseError, TestRunner};
use serde_json::{json, Value};

// --- bounds and seeds -----------------------------------------------------------

/// The seed of every run without `PARLEY_FUZZ_SEED`.
pub const DEFAULT_SEED: u64 = 0x7061_726c_6579_0c01;

/// The runner of one target: `PARLEY_FUZZ_CASES` cases (or `default_cases`), a
/// seed derived from `PARLEY_FUZZ_SEED` (or [`DEFAULT_SEED`]) and the target's
/// name, no regression files, and a bounded shrink.
pub fn runner(target: &str, default_cases: u32) -> (TestRunner, u64) {
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
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
                .expect("/dev/urandom");
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

/// Runs `test` on `PARLEY_FUZZ_CASES` values of the strategy `make` builds.
pub fn fuzz<S: Strategy>(
    target: &str,
    default_cases: u32,
    make: impl FnOnce() -> S + Send,
    test: impl Fn(S::Value) -> Result<(), TestCaseError> + Sync,
) where
    S::Value: std::fmt::Debug,
{
    let (mut runner, seed) = runner(target, default_cases);
    // Deeply nested strategies build their values on the stack, and a debug
    // build's frames are large: the cases run on a thread with room for them.
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

/// The stack of a fuzzing thread.
pub const STACK_BYTES: usize = 64 << 20;

// --- inputs ---------------------------------------------------------------------

/// A string parameter: NULL, or these bytes as a NUL-terminated C string.
#[derive(Debug, Clone)]
pub enum Text {
    Null,
    Bytes(Vec<u8>),
}

impl Text {
    pub fn of(text: impl Into<Vec<u8>>) -> Text {
        let mut bytes: Vec<u8> = text.into();
        // A C string cannot hold a NUL: the NULs go, the rest is passed.
        bytes.retain(|b| *b != 0);
        Text::Bytes(bytes)
    }

    pub fn c(&self) -> Option<CString> {
        match self {
            Text::Null => None,
            Text::Bytes(bytes) => Some(CString::new(bytes.clone()).expect("no NUL inside")),
        }
    }

    pub fn utf8(&self) -> Option<&str> {
        match self {
            Text::Null => None,
            Text::Bytes(bytes) => std::str::from_utf8(bytes).ok(),
        }
    }

    pub fn json(&self) -> Option<Value> {
        self.utf8().and_then(|text| serde_json::from_str(text).ok())
    }
}

pub fn ptr_of(text: &Option<CString>) -> *const c_char {
    text.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

/// Bytes a C host might pass: anything, text, and the ways UTF-8 goes wrong.
pub fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let broken = select(vec![
        vec![0x80],                   // a lone continuation byte
        vec![0xc0, 0xaf],             // an overlong '/'
        vec![0xe2, 0x82],             // a sequence cut short
        vec![0xed, 0xa0, 0x80],       // a surrogate
        vec![0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
        vec![0xff, 0xfe],
    ]);
    prop_oneof![
        3 => vec(any::<u8>(), 0..48),
        3 => ".{0,24}".prop_map(String::into_bytes),
        2 => ("[ -~]{0,12}", broken, "[ -~]{0,12}")
            .prop_map(|(a, b, c)| [a.into_bytes(), b, c.into_bytes()].concat()),
    ]
}

/// Any JSON value, nested a few levels.
pub fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|x| json!(x)),
        select(vec![
            "",
            "1",
            "th_1",
            "msg_1",
            "cl_1",
            "ask",
            "read",
            "llm",
            "human",
            "ainotes:fuzz",
            "dialectic",
            "closed",
            "2026-12-01T00:00:00.000Z",
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
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(vec![
            "parley", "kind", "body", "thread", "parent", "from", "provenance", "to", "state",
            "claim", "evidence", "supersedes", "valid_until", "id", "handle", "rights", "label",
            "limits", "profiles", "durable", "clock", "realm", "since", "limit", "extension",
        ])
        .prop_map(String::from),
        1 => ".{0,8}",
    ]
}

pub const KINDS: [&str; 13] = [
    "ask", "answer", "note", "propose", "object", "handoff", "decide", "mark", "reopen", "assert",
    "attest", "refute", "verify",
];

/// An envelope that is valid, or nearly: right names, some wrong values.
pub fn envelope() -> BoxedStrategy<Value> {
    prop_oneof![valid_envelope(), near_envelope()].boxed()
}

/// An envelope the forum accepts when its thread exists and the turn allows it.
pub fn valid_envelope() -> impl Strategy<Value = Value> {
    (
        select(vec![
            "ask", "ask", "ask", "propose", "note", "answer", "object", "decide", "mark",
        ]),
        "[a-z]{1,8}( [a-z]{1,8}){0,4}",
        1..4u64,
        select(vec![
            "answered", "decided", "closed", "deferred", "obsolete", "open",
        ]),
    )
        .prop_map(|(kind, body, thread, state)| match kind {
            "ask" => json!({ "kind": kind, "body": body }),
            "mark" => json!({ "kind": kind, "body": body, "thread": thread, "state": state }),
            _ => json!({ "kind": kind, "body": body, "thread": format!("th_{thread}") }),
        })
}

pub fn near_envelope() -> impl Strategy<Value = Value> {
    let id = |prefix: &'static str| {
        prop_oneof![
            2 => (1..4u64).prop_map(move |n| json!(format!("{prefix}{n}"))),
            2 => (1..4u64).prop_map(Value::from),
            1 => json_value(),
        ]
    };
    let field = |key: &'static str, value: Value| (key.to_string(), value);
    let extra = prop_oneof![
        Just(field("to", json!("ainotes:fuzz"))),
        select(vec![
            "open", "answered", "decided", "closed", "deferred", "done"
        ])
        .prop_map(move |s| field("state", json!(s))),
        id("cl_").prop_map(move |v| field("claim", v)),
        Just(field(
            "evidence",
            json!([{ "kind": "url", "ref": "https://example.invalid/x" }])
        )),
        Just(field("valid_until", json!("2027-01-01T00:00:00.000Z"))),
        Just(field("from", json!({ "extension": "worker-1" }))),
        Just(field("provenance", json!({ "model": "m", "client": "c" }))),
        Just(field("parley", json!("1"))),
        (key(), json_value()),
    ];
    (
        prop_oneof![6 => select(KINDS.to_vec()).prop_map(Value::from), 1 => json_value()],
        prop_oneof![
            3 => select(vec!["Which port?", "7878.", "Agreed.", " ", ""]).prop_map(Value::from),
            3 => "[a-z]{1,8}( [a-z]{1,8}){0,3}".prop_map(Value::from),
            1 => json_value(),
        ],
        proptest::option::of(id("th_")),
        proptest::option::weighted(0.2, id("msg_")),
        prop_oneof![2 => Just(Vec::new()), 1 => vec(extra, 1..3)],
    )
        .prop_map(|(kind, body, thread, parent, extra)| {
            let mut envelope = json!({ "kind": kind, "body": body });
            if let Some(thread) = thread {
                envelope["thread"] = thread;
            }
            if let Some(parent) = parent {
                envelope["parent"] = parent;
            }
            for (key, value) in extra {
                envelope[key.as_str()] = value;
            }
            envelope
        })
}

/// JSON text: a value, cut short, or not JSON at all.
pub fn json_text(value: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Text> {
    prop_oneof![
        6 => value.prop_map(|v| Text::of(v.to_string())),
        1 => (json_value(), any::<prop::sample::Index>()).prop_map(|(v, cut)| {
            let text = v.to_string().into_bytes();
            let at = cut.index(text.len() + 1);
            Text::of(&text[..at])
        }),
        1 => bytes().prop_map(Text::of),
        1 => Just(Text::Null),
    ]
    .boxed()
}

pub fn settings() -> impl Strategy<Value = Text> {
    let near = (
        proptest::option::of(select(vec!["ainotes", "lab", "Bad Realm", "human", ""])),
        proptest::option::of(prop_oneof![
            Just(json!(["dialectic"])),
            Just(json!([])),
            json_value()
        ]),
        proptest::option::of(prop_oneof![Just(json!(false)), json_value()]),
        proptest::option::of(
            (
                select(vec![
                    "body_max_chars",
                    "page_max",
                    "writes_per_minute",
                    "pages",
                ]),
                prop_oneof![(0..600u64).prop_map(Value::from), json_value()],
            )
                .prop_map(|(k, v)| json!({ k: v })),
        ),
    )
        .prop_map(|(realm, profiles, durable, limits)| {
            let mut s = json!({});
            if let Some(realm) = realm {
                s["realm"] = json!(realm);
            }
            if let Some(profiles) = profiles {
                s["profiles"] = profiles;
            }
            // On a file, keep opens quick: volatile unless the fuzzer says otherwise.
            s["durable"] = durable.unwrap_or(json!(false));
            if let Some(limits) = limits {
                s["limits"] = limits;
            }
            s
        });
    json_text(prop_oneof![3 => near, 1 => json_value()])
}

pub fn spec() -> impl Strategy<Value = Text> {
    let near = (
        prop_oneof![
            3 => "[a-z][a-z0-9]{0,6}".prop_map(Value::from),
            1 => json_value()
        ],
        proptest::option::of(prop_oneof![
            select(vec!["llm", "human", "LLM", "robot", ""]).prop_map(Value::from),
            json_value()
        ]),
        proptest::option::of(prop_oneof![
            vec(
                select(vec!["read", "write", "lock", "verify", "fly"]).prop_map(Value::from),
                0..4
            )
            .prop_map(Value::Array),
            json_value()
        ]),
    )
        .prop_map(|(handle, kind, rights)| {
            let mut s = json!({ "handle": handle });
            if let Some(kind) = kind {
                s["kind"] = kind;
            }
            if let Some(rights) = rights {
                s["rights"] = rights;
            }
            s
        });
    json_text(prop_oneof![3 => near, 1 => json_value()])
}

pub fn operation() -> impl Strategy<Value = Text> {
    prop_oneof![
        4 => Just(Text::of("post")),
        6 => select(OPERATIONS.to_vec()).prop_map(Text::of),
        1 => select(vec!["POST", "post ", "", "tools/call", "get_claim\t", "fly"]).prop_map(Text::of),
        1 => bytes().prop_map(Text::of),
        1 => Just(Text::Null),
    ]
}

/// Arguments of a read: the names it knows, with good and bad values.
pub fn read_args() -> impl Strategy<Value = Value> {
    let pair = (
        select(vec![
            "thread",
            "since",
            "limit",
            "claim",
            "state",
            "extension",
        ]),
        prop_oneof![
            select(vec!["th_1", "cl_1", "open", "w-1", "x"]).prop_map(Value::from),
            (0..300i64).prop_map(Value::from),
            json_value()
        ],
    )
        .prop_map(|(k, v)| json!({ k: v }));
    prop_oneof![2 => Just(json!({})), 3 => pair, 1 => json_value()]
}

/// An operation and its arguments: an envelope for `post`, a read's arguments
/// for the others (mostly), anything now and then.
pub fn call() -> impl Strategy<Value = (Text, Text)> {
    (
        operation(),
        json_text(envelope()),
        json_text(read_args()),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(operation, envelope, read, swap)| {
            let post = operation.utf8() == Some("post");
            let args = if post != swap { envelope } else { read };
            (operation, args)
        })
}

/// An MCP message: a near-valid JSON-RPC request of either revision, or not.
pub fn mcp_request() -> impl Strategy<Value = Text> {
    let params = prop_oneof![
        4 => (
            prop_oneof![Just("post"), select(OPERATIONS.to_vec())],
            envelope(),
            read_args(),
        )
            .prop_map(|(name, envelope, read)| {
                let arguments = if name == "post" { envelope } else { read };
                json!({ "name": name, "arguments": arguments })
            }),
        1 => json_value(),
    ];
    let near = (
        proptest::option::weighted(
            0.85,
            prop_oneof![
                4 => any::<i64>().prop_map(Value::from),
                2 => ".{0,6}".prop_map(Value::from),
                1 => json_value()
            ],
        ),
        prop_oneof![
            6 => Just(json!("tools/call")),
            4 => select(vec!["tools/list", "initialize", "ping", "server/discover",
                             "notifications/initialized", "nope"]).prop_map(Value::from),
            1 => json_value(),
        ],
        params,
        any::<bool>(),
        prop_oneof![9 => Just(json!("2.0")), 1 => json_value()],
    )
        .prop_map(|(id, method, params, modern, version)| {
            let mut params = params;
            if modern && params.is_object() {
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                });
            }
            if !modern && method == "initialize" && params.is_object() {
                params["protocolVersion"] = json!("2025-11-25");
            }
            let mut message = json!({ "jsonrpc": version, "method": method, "params": params });
            if let Some(id) = id {
                message["id"] = id;
            }
            message
        });
    json_text(prop_oneof![4 => near, 1 => json_value()])
}

/// A token parameter.
#[derive(Debug, Clone)]
pub enum TokenArg {
    Null,
    /// One the forum issued (maybe revoked since), by index.
    Issued(prop::sample::Index),
    Random(Text),
}

pub fn token() -> impl Strategy<Value = TokenArg> {
    prop_oneof![
        8 => any::<prop::sample::Index>().prop_map(TokenArg::Issued),
        1 => Just(TokenArg::Null),
        1 => bytes().prop_map(|b| TokenArg::Random(Text::of(b))),
        1 => "pt_[A-Za-z0-9_-]{0,43}".prop_map(|s| TokenArg::Random(Text::of(s))),
    ]
}

/// A file name inside the case's scratch directory (never `.`, `..` or a path).
#[derive(Debug, Clone)]
pub enum PathArg {
    Null,
    Name(Vec<u8>),
}

pub fn path() -> impl Strategy<Value = PathArg> {
    prop_oneof![
        1 => Just(PathArg::Null),
        2 => prop_oneof![2 => select(vec![b"a".to_vec(), b"b".to_vec()]), 1 => bytes()]
            .prop_map(PathArg::Name),
    ]
}

#[derive(Debug, Clone)]
pub enum Op {
    Open {
        path: PathArg,
        settings: Text,
        out: bool,
    },
    TokenCreate {
        forum: bool,
        spec: Text,
        out: bool,
    },
    TokenRevoke {
        forum: bool,
        token: TokenArg,
    },
    Call {
        forum: bool,
        token: TokenArg,
        operation: Text,
        args: Text,
        out: bool,
    },
    Mcp {
        forum: bool,
        token: TokenArg,
        request: Text,
        out: bool,
    },
    Manifest {
        forum: bool,
        out: bool,
    },
    Identities {
        forum: bool,
        out: bool,
    },
    Integrity {
        path: PathArg,
        out: bool,
    },
    EndWaits {
        forum: bool,
    },
    CommitFd {
        forum: bool,
        out: bool,
    },
    ResultName(u32),
    LastErrorCopy {
        len: usize,
        null_buf: bool,
    },
}

/// `true` most of the time: a pointer that is given.
pub fn given() -> impl Strategy<Value = bool> {
    prop::bool::weighted(0.95)
}

pub fn op() -> BoxedStrategy<Op> {
    prop_oneof![
        8 => (given(), token(), call(), given()).prop_map(
            |(forum, token, (operation, args), out)| Op::Call { forum, token, operation, args, out }
        ),
        3 => (given(), token(), mcp_request(), given())
            .prop_map(|(forum, token, request, out)| Op::Mcp { forum, token, request, out }),
        2 => (given(), spec(), given()).prop_map(|(forum, spec, out)| Op::TokenCreate { forum, spec, out }),
        1 => (given(), token()).prop_map(|(forum, token)| Op::TokenRevoke { forum, token }),
        1 => (path(), settings(), given()).prop_map(|(path, settings, out)| Op::Open { path, settings, out }),
        1 => (path(), given()).prop_map(|(path, out)| Op::Integrity { path, out }),
        1 => (given(), given(), any::<bool>()).prop_map(|(forum, out, which)| {
            if which { Op::Manifest { forum, out } } else { Op::Identities { forum, out } }
        }),
        1 => (given(), given()).prop_map(|(forum, out)| Op::CommitFd { forum, out }),
        1 => given().prop_map(|forum| Op::EndWaits { forum }),
        2 => prop_oneof![0..16u32, any::<u32>(), Just(u32::MAX), Just(1 << 31)].prop_map(Op::ResultName),
        1 => (0..40usize, any::<bool>())
            .prop_map(|(len, null)| Op::LastErrorCopy { len, null_buf: null && len == 0 }),
    ]
    .boxed()
}

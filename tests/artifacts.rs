//! SPEC §18.1, artifacts, on a redb file and on PostgreSQL: `put_artifact` and
//! `get_artifact` (the ref is the SHA-256 of the bytes, the same bytes kept once
//! with the first media type and time, the size limit, every malformed argument,
//! the rights and the order of checks), `sha256:` artifact evidence checked
//! against the store (and only that form), the profile switched off, and the
//! typed API equal to the JSON.

#[path = "pg/support.rs"]
mod support;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use parley_forum::{Config, Forum, Reason, Right, TokenSpec};
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

const T0: i64 = 1_796_040_000_000; // 2026-11-30T12:00:00.000Z

/// Settings without the rate limit, `extra` on top, and a clock the test moves.
fn config(extra: &Value, clock: &Arc<AtomicI64>) -> Config {
    let mut s = json!({ "limits": { "writes_per_minute": 0, "artifact_max_bytes": 64 } });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    let mut c = Config::from_json(&s).unwrap();
    let clock = clock.clone();
    c.clock = Arc::new(move || clock.load(Ordering::SeqCst));
    c
}

struct Case {
    backend: String,
    forum: Forum,
    clock: Arc<AtomicI64>,
    /// read + write
    alice: String,
    /// read only
    reader: String,
    /// write only
    writer: String,
    _dir: Option<tempfile::TempDir>,
}

fn cases(tag: &str, extra: Value) -> Vec<Case> {
    let clock = Arc::new(AtomicI64::new(T0));
    support::forums(tag, || config(&extra, &clock))
        .into_iter()
        .map(|(backend, forum, dir)| {
            let tok = |h: &str, r: &[Right]| forum.create_token(&TokenSpec::llm(h, r)).unwrap();
            Case {
                alice: tok("alice", &[Right::Read, Right::Write]),
                reader: tok("reader", &[Right::Read]),
                writer: tok("writer", &[Right::Write]),
                backend,
                forum,
                clock: clock.clone(),
                _dir: dir,
            }
        })
        .collect()
}

fn sha_ref(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// The refusal of a call: (reason, status, field, limit, right).
fn refused(
    forum: &Forum,
    token: Option<&str>,
    op: &str,
    args: Value,
) -> (Reason, u16, Option<String>, Option<String>, Option<String>) {
    let e = forum
        .call(token, op, &args)
        .expect_err(&format!("{op} {args} should be refused"));
    let r = e
        .refusal()
        .unwrap_or_else(|| panic!("{op} {args}: not a refusal: {e}"));
    (
        r.reason,
        r.status(),
        r.field.clone(),
        r.limit.map(|l| l.to_string()),
        r.right.map(|r| r.as_str().to_string()),
    )
}

fn reason(forum: &Forum, token: Option<&str>, op: &str, args: Value) -> Reason {
    refused(forum, token, op, args).0
}

#[test]
fn put_returns_the_sha256_ref_and_get_returns_the_bytes() {
    for c in cases("art_put", json!({})) {
        let bytes = b"cargo test: 42 passed\n";
        let put = c
            .forum
            .call(
                Some(&c.alice),
                "put_artifact",
                &json!({ "content_base64": b64(bytes), "media_type": "text/plain" }),
            )
            .unwrap();
        let want = json!({ "artifact": { "ref": sha_ref(bytes), "size": bytes.len(),
            "media_type": "text/plain", "created_at": "2026-11-30T12:00:00.000Z" } });
        assert_eq!(put, want, "{}", c.backend);
        let got = c
            .forum
            .call(
                Some(&c.reader),
                "get_artifact",
                &json!({ "ref": sha_ref(bytes) }),
            )
            .unwrap();
        assert_eq!(got["artifact"], want["artifact"], "{}", c.backend);
        assert_eq!(got["content_base64"], b64(bytes), "{}", c.backend);
        // No media type: application/octet-stream. No bytes at all is an artifact too.
        let empty = c
            .forum
            .call(
                Some(&c.writer),
                "put_artifact",
                &json!({ "content_base64": "" }),
            )
            .unwrap();
        assert_eq!(empty["artifact"]["media_type"], "application/octet-stream");
        assert_eq!(empty["artifact"]["size"], 0);
        assert_eq!(empty["artifact"]["ref"], sha_ref(b""));
    }
}

#[test]
fn the_same_bytes_are_kept_once_with_the_first_media_type_and_time() {
    for c in cases("art_dedupe", json!({})) {
        let bytes: Vec<u8> = (0u8..=63).collect();
        let first = c
            .forum
            .call(
                Some(&c.alice),
                "put_artifact",
                &json!({ "content_base64": b64(&bytes), "media_type": "application/x-first" }),
            )
            .unwrap();
        c.clock.store(T0 + 5_000, Ordering::SeqCst);
        let again = c
            .forum
            .call(
                Some(&c.writer),
                "put_artifact",
                &json!({ "content_base64": b64(&bytes), "media_type": "text/plain" }),
            )
            .unwrap();
        assert_eq!(again, first, "{}", c.backend);
        assert_eq!(first["artifact"]["media_type"], "application/x-first");
        let got = c
            .forum
            .call(
                Some(&c.alice),
                "get_artifact",
                &json!({ "ref": first["artifact"]["ref"] }),
            )
            .unwrap();
        assert_eq!(got["artifact"]["created_at"], "2026-11-30T12:00:00.000Z");
        assert_eq!(
            STANDARD
                .decode(got["content_base64"].as_str().unwrap())
                .unwrap(),
            bytes
        );
        c.clock.store(T0, Ordering::SeqCst);
    }
}

#[test]
fn bytes_over_artifact_max_bytes_are_limit_exceeded_and_not_stored() {
    for c in cases("art_limit", json!({})) {
        let at_limit = vec![7u8; 64];
        assert!(c
            .forum
            .call(
                Some(&c.alice),
                "put_artifact",
                &json!({ "content_base64": b64(&at_limit) })
            )
            .is_ok());
        let over = vec![7u8; 65];
        assert_eq!(
            refused(
                &c.forum,
                Some(&c.alice),
                "put_artifact",
                json!({ "content_base64": b64(&over) })
            ),
            (
                Reason::LimitExceeded,
                409,
                Some("content_base64".into()),
                Some("artifact_max_bytes".into()),
                None
            ),
            "{}",
            c.backend
        );
        assert_eq!(
            reason(
                &c.forum,
                Some(&c.alice),
                "get_artifact",
                json!({ "ref": sha_ref(&over) })
            ),
            Reason::ArtifactNotFound,
            "{}: nothing stored",
            c.backend
        );
    }
}

#[test]
fn malformed_arguments_are_invalid_argument_naming_the_field() {
    for c in cases("art_args", json!({})) {
        let put = |args: Value| refused(&c.forum, Some(&c.alice), "put_artifact", args);
        for (args, field) in [
            (json!({}), "content_base64"),
            (json!({ "content_base64": null }), "content_base64"),
            (json!({ "content_base64": 12 }), "content_base64"),
            (json!({ "content_base64": "aGVsbG8" }), "content_base64"),
            (json!({ "content_base64": "aGVs\nbG8=" }), "content_base64"),
            (json!({ "content_base64": " aGVsbG8=" }), "content_base64"),
            (json!({ "content_base64": "-_-_" }), "content_base64"),
            (
                json!({ "content_base64": "aGVsbG8=", "media_type": "" }),
                "media_type",
            ),
            (
                json!({ "content_base64": "aGVsbG8=", "media_type": 3 }),
                "media_type",
            ),
            (
                json!({ "content_base64": "aGVsbG8=", "media_type": "x".repeat(101) }),
                "media_type",
            ),
            (
                json!({ "content_base64": "aGVsbG8=", "media_type": "text/plain\r\nX: y" }),
                "media_type",
            ),
            (
                json!({ "content_base64": "aGVsbG8=", "name": "log" }),
                "name",
            ),
        ] {
            let (reason, status, got_field, _, _) = put(args.clone());
            assert_eq!(
                (reason, status, got_field.as_deref()),
                (Reason::InvalidArgument, 400, Some(field)),
                "{}: {args}",
                c.backend
            );
        }
        assert_eq!(
            reason(&c.forum, Some(&c.alice), "put_artifact", json!(["x"])),
            Reason::InvalidArgument
        );
        let long_type = "x".repeat(100);
        assert!(c
            .forum
            .call(
                Some(&c.alice),
                "put_artifact",
                &json!({ "content_base64": "aGVsbG8=", "media_type": long_type })
            )
            .is_ok());
        let good = sha_ref(b"hello");
        for (args, field) in [
            (json!({}), "ref"),
            (json!({ "ref": 5 }), "ref"),
            (json!({ "ref": good.to_uppercase() }), "ref"),
            (json!({ "ref": good.replace("sha256:", "sha512:") }), "ref"),
            (json!({ "ref": &good[..70] }), "ref"),
            (json!({ "ref": format!("{good}0") }), "ref"),
            (json!({ "ref": good[7..].to_string() }), "ref"),
            (json!({ "ref": good, "x": 1 }), "x"),
        ] {
            let (reason, _, got_field, _, _) =
                refused(&c.forum, Some(&c.alice), "get_artifact", args.clone());
            assert_eq!(
                (reason, got_field.as_deref()),
                (Reason::InvalidArgument, Some(field)),
                "{}: {args}",
                c.backend
            );
        }
        // A well-formed ref stored nowhere.
        assert_eq!(
            refused(
                &c.forum,
                Some(&c.alice),
                "get_artifact",
                json!({ "ref": sha_ref(b"never") })
            ),
            (Reason::ArtifactNotFound, 404, None, None, None),
            "{}",
            c.backend
        );
    }
}

#[test]
fn rights_and_the_order_of_checks() {
    for c in cases("art_rights", json!({})) {
        let f = &c.forum;
        let ok = json!({ "content_base64": "aGVsbG8=" });
        let bad = json!({ "content_base64": "%%%" });
        let over = json!({ "content_base64": b64(&[0u8; 65]) });
        // Token first, then the arguments, then the right, then the limit.
        assert_eq!(
            reason(f, None, "put_artifact", bad.clone()),
            Reason::TokenMissing
        );
        assert_eq!(
            reason(f, Some("pt_nope"), "put_artifact", ok.clone()),
            Reason::TokenInvalid
        );
        assert_eq!(
            reason(f, Some(&c.reader), "put_artifact", bad),
            Reason::InvalidArgument
        );
        assert_eq!(
            refused(f, Some(&c.reader), "put_artifact", over.clone()),
            (
                Reason::TokenRightMissing,
                403,
                None,
                None,
                Some("write".into())
            ),
            "{}",
            c.backend
        );
        assert_eq!(
            reason(f, Some(&c.writer), "put_artifact", over),
            Reason::LimitExceeded
        );
        // get_artifact: token, arguments, right, then the reference.
        let unknown = json!({ "ref": sha_ref(b"unknown") });
        assert_eq!(
            reason(f, None, "get_artifact", unknown.clone()),
            Reason::TokenMissing
        );
        assert_eq!(
            reason(f, Some(&c.writer), "get_artifact", json!({ "ref": "x" })),
            Reason::InvalidArgument
        );
        assert_eq!(
            refused(f, Some(&c.writer), "get_artifact", unknown),
            (
                Reason::TokenRightMissing,
                403,
                None,
                None,
                Some("read".into())
            ),
            "{}",
            c.backend
        );
        // A human holds every right.
        let ann = f.create_token(&TokenSpec::human("ann")).unwrap();
        assert!(f.call(Some(&ann), "put_artifact", &ok).is_ok());
    }
}

fn assert_with(evidence: Value) -> Value {
    json!({ "kind": "assert", "body": "The build passes.", "evidence": evidence })
}

fn thread_count(forum: &Forum, token: &str) -> usize {
    forum.call(Some(token), "list_threads", &json!({})).unwrap()["items"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn sha256_artifact_evidence_must_name_a_stored_artifact() {
    for c in cases("art_evidence", json!({})) {
        let f = &c.forum;
        let log = b"test result: ok. 12 passed";
        let missing = sha_ref(b"not stored");
        let refusal = refused(
            f,
            Some(&c.alice),
            "post",
            assert_with(json!([{ "kind": "artifact", "ref": missing }])),
        );
        assert_eq!(
            (refusal.0, refusal.1, refusal.2.as_deref()),
            (Reason::ArtifactNotFound, 404, Some("evidence")),
            "{}",
            c.backend
        );
        assert_eq!(
            thread_count(f, &c.alice),
            0,
            "{}: nothing written",
            c.backend
        );
        // Stored, then cited: accepted, on a new claim and on an attestation.
        f.call(
            Some(&c.alice),
            "put_artifact",
            &json!({ "content_base64": b64(log) }),
        )
        .unwrap();
        let stored = sha_ref(log);
        let posted = f
            .call(
                Some(&c.alice),
                "post",
                &assert_with(json!([{ "kind": "artifact", "ref": stored, "note": "CI log" }])),
            )
            .unwrap();
        let claim = posted["claim"]["id"].clone();
        let bob = f
            .create_token(&TokenSpec::llm("bob", &[Right::Read, Right::Write]))
            .unwrap();
        let attest = |evidence: Value| {
            f.call(
                Some(&bob),
                "post",
                &json!({ "kind": "attest", "claim": claim, "body": "Reproduced.", "evidence": evidence }),
            )
        };
        let e = attest(
            json!([{ "kind": "artifact", "ref": stored }, { "kind": "artifact", "ref": missing }]),
        )
        .unwrap_err();
        assert_eq!(e.refusal().unwrap().reason, Reason::ArtifactNotFound);
        assert!(attest(json!([{ "kind": "artifact", "ref": stored }])).is_ok());
        // Other refs are accepted as in v1: not of the sha256 form (an uppercase
        // digest, another algorithm, a path), or of another evidence kind.
        for other in [
            json!({ "kind": "artifact", "ref": missing.to_uppercase() }),
            json!({ "kind": "artifact", "ref": "build/logs/test.txt" }),
            json!({ "kind": "artifact", "ref": missing.replace("sha256:", "sha512:") }),
            json!({ "kind": "hash", "ref": missing }),
        ] {
            let r = f.call(Some(&c.alice), "post", &assert_with(json!([other])));
            assert!(r.is_ok(), "{}: {other}: {r:?}", c.backend);
        }
        // Among the references, the artifacts come first.
        let both = json!({ "kind": "assert", "thread": "th_999", "body": "Elsewhere.",
                           "evidence": [{ "kind": "artifact", "ref": missing }] });
        assert_eq!(
            reason(f, Some(&c.alice), "post", both),
            Reason::ArtifactNotFound
        );
        // After the right: a read-only token is refused for the right.
        let ro = assert_with(json!([{ "kind": "artifact", "ref": missing }]));
        assert_eq!(
            reason(f, Some(&c.reader), "post", ro),
            Reason::TokenRightMissing
        );
    }
}

#[test]
fn with_the_profile_off_the_operations_do_not_exist_and_evidence_is_not_checked() {
    for c in cases("art_off", json!({ "provenance": false })) {
        let f = &c.forum;
        for (op, args) in [
            ("put_artifact", json!({ "content_base64": "aGVsbG8=" })),
            ("get_artifact", json!({ "ref": sha_ref(b"hello") })),
        ] {
            let e = f.call(Some(&c.alice), op, &args).unwrap_err();
            let r = e.refusal().unwrap();
            assert_eq!(r.reason, Reason::InvalidArgument, "{}: {op}", c.backend);
            assert!(r.message.contains("unknown operation"), "{}", r.message);
        }
        let manifest = f.manifest();
        let ops: Vec<&str> = manifest["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap())
            .collect();
        assert!(!ops.contains(&"put_artifact") && !ops.contains(&"get_artifact"));
        assert!(manifest["profiles"].get("provenance").is_none());
        let posted = f.call(
            Some(&c.alice),
            "post",
            &assert_with(json!([{ "kind": "artifact", "ref": sha_ref(b"nowhere") }])),
        );
        assert!(posted.is_ok(), "{}: {posted:?}", c.backend);
    }
}

#[test]
fn the_typed_api_equals_the_json() {
    for c in cases("art_typed", json!({})) {
        let session = c.forum.session(&c.alice);
        let put = session
            .put_artifact(b"{\"ok\":true}", Some("application/json"))
            .unwrap();
        let json = c
            .forum
            .call(
                Some(&c.alice),
                "get_artifact",
                &json!({ "ref": put.reference }),
            )
            .unwrap();
        assert_eq!(put.to_json(), json["artifact"], "{}", c.backend);
        let (got, bytes) = session.get_artifact(&put.reference).unwrap();
        assert_eq!(
            (got, bytes.as_slice()),
            (put.clone(), &b"{\"ok\":true}"[..])
        );
        assert_eq!(put.size, 11);
        let e = session.get_artifact(&sha_ref(b"x")).unwrap_err();
        assert_eq!(e.refusal().unwrap().reason, Reason::ArtifactNotFound);
        let e = c
            .forum
            .session(&c.reader)
            .put_artifact(b"x", None)
            .unwrap_err();
        assert_eq!(e.refusal().unwrap().reason, Reason::TokenRightMissing);
    }
}

#[test]
fn artifacts_outlive_the_forum_handle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let clock = Arc::new(AtomicI64::new(T0));
    let token;
    {
        let forum = Forum::open(&path, config(&json!({}), &clock)).unwrap();
        token = forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
            .unwrap();
        forum.session(&token).put_artifact(b"kept", None).unwrap();
    }
    let forum = Forum::open(&path, config(&json!({}), &clock)).unwrap();
    let (artifact, bytes) = forum
        .session(&token)
        .get_artifact(&sha_ref(b"kept"))
        .unwrap();
    assert_eq!((artifact.size, bytes.as_slice()), (4, &b"kept"[..]));
}

//! The provenance verbs of the built `parley` (SPEC §18): `artifact put|get`,
//! `export-claim`, `import-claim` and `--trust REALM=KEY`; here, what the command
//! line itself refuses before any forum is asked, and `verify-bundle` offline on
//! bundles made by the library's exporter (then tampered with).

mod common;

use std::process::Output;

use common::TempForum;
use parley_forum::provenance::{export_bundle, RealmSecret};
use serde_json::{json, Value};

/// Exit codes of `verify-bundle`.
const INVALID: i32 = 6;
const UNTRUSTED: i32 = 7;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit 1 (an error, not a refusal by the forum) naming `what`.
fn failed(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    assert!(stderr(out).contains(what), "{}", stderr(out));
}

#[test]
fn a_trust_that_is_not_realm_equals_key_is_refused() {
    let forum = TempForum::new();
    let token = forum.token("alice", &["--rights", "read,write"]);
    for bad in ["acme", "=ed25519:K", "acme="] {
        let out = forum.run_as(&token, &["--trust", bad, "threads"]);
        failed(&out, "expected REALM=KEY");
    }
    // A pair whose key is not a realm key: the forum's settings refuse it, naming
    // the realm; a good key is taken.
    let out = forum.run_as(&token, &["--trust", "acme=ed25519:K", "threads"]);
    failed(&out, "`acme`");
    let key = String::from_utf8(forum.run(&["realm-key"]).stdout).unwrap();
    let good = format!("acme={}", key.trim());
    let out = forum.run_as(&token, &["--trust", &good, "--trust", &good, "threads"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = forum.run_as(
        &token,
        &["--settings", "[1]", "--trust", "a=ed25519:K", "threads"],
    );
    failed(&out, "must be a JSON object");
}

#[test]
fn unreadable_input_is_refused_before_the_forum_is_opened() {
    let forum = TempForum::new();
    let token = forum.token("alice", &["--rights", "read,write"]);
    let not_json = forum.dir.path().join("bundle.txt");
    std::fs::write(&not_json, "not a bundle").unwrap();
    let out = forum.run_as(&token, &["import-claim", not_json.to_str().unwrap()]);
    failed(&out, "is not valid JSON");
    let missing = forum.dir.path().join("missing.bin");
    let out = forum.run_as(&token, &["artifact", "put", missing.to_str().unwrap()]);
    failed(&out, "missing.bin");
    let out = forum.run_as(&token, &["import-claim", missing.to_str().unwrap()]);
    failed(&out, "missing.bin");
}

fn bundle(secret: &RealmSecret) -> Value {
    let claim = json!({"id": "cl_7", "text": "the build is green", "status": "verified",
                       "quorum": {"needed": 1, "have": 1}});
    export_bundle(secret, "acme", &claim, "2026-12-05T12:00:00Z")
}

/// `parley verify-bundle FILE ARGS…` on `bundle` written to a file.
fn verify(forum: &TempForum, bundle: &str, args: &[&str]) -> Output {
    let file = forum.dir.path().join("bundle.json");
    std::fs::write(&file, bundle).unwrap();
    let mut all = vec!["verify-bundle", file.to_str().unwrap()];
    all.extend_from_slice(args);
    forum.run(&all)
}

#[test]
fn verify_bundle_checks_offline_and_says_why_by_its_exit_code() {
    // No forum file at all: the check needs none.
    let forum = TempForum::new();
    let acme = RealmSecret::from_seed(&[7; 32]);
    let other = RealmSecret::from_seed(&[8; 32]);
    let trust = format!("acme={}", acme.public());
    let good = bundle(&acme).to_string();

    let out = verify(&forum, &good, &["--trust", &trust]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("acme/cl_7") && text.contains("status at export: verified"),
        "{text}"
    );
    let out = verify(&forum, &good, &["--trust", &trust, "--json"]);
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (seen["realm"].as_str(), seen["status"].as_str()),
        (Some("acme"), Some("verified"))
    );
    assert_eq!(seen["key"], acme.public().to_string());
    assert!(!forum.db.exists(), "verify-bundle made a forum");

    // The same trust from --settings' trusted_realms.
    let settings = json!({"trusted_realms": {"acme": acme.public().to_string()}}).to_string();
    let out = verify(&forum, &good, &["--settings", &settings]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Untrusted: no trust, another realm trusted, or signed by another key.
    let out = verify(&forum, &good, &[]);
    assert_eq!(out.status.code(), Some(UNTRUSTED), "{}", stderr(&out));
    assert!(stderr(&out).contains("realm_untrusted"), "{}", stderr(&out));
    let elsewhere = format!("globex={}", acme.public());
    assert_eq!(
        verify(&forum, &good, &["--trust", &elsewhere])
            .status
            .code(),
        Some(UNTRUSTED)
    );
    let forged = bundle(&other).to_string();
    assert_eq!(
        verify(&forum, &forged, &["--trust", &trust]).status.code(),
        Some(UNTRUSTED)
    );

    // Invalid: a flipped byte of the payload, a statement that is not canonical,
    // something that is not a bundle.
    let mut flipped = bundle(&acme);
    let payload = flipped["payload"].as_str().unwrap().to_string();
    let mut bytes = payload.into_bytes();
    bytes[20] = if bytes[20] == b'A' { b'B' } else { b'A' };
    flipped["payload"] = Value::String(String::from_utf8(bytes).unwrap());
    let out = verify(&forum, &flipped.to_string(), &["--trust", &trust]);
    assert_eq!(out.status.code(), Some(INVALID), "{}", stderr(&out));
    let out = verify(&forum, "{}", &["--trust", &trust]);
    assert_eq!(out.status.code(), Some(INVALID), "{}", stderr(&out));
    assert!(stderr(&out).contains("bundle_invalid"), "{}", stderr(&out));

    // A key that is not a key is an error of the command line (1).
    failed(
        &verify(&forum, &good, &["--trust", "acme=ed25519:nope"]),
        "realm acme",
    );
}

#[test]
fn verify_bundle_reads_standard_input() {
    use std::io::Write as _;
    use std::process::Stdio;
    let forum = TempForum::new();
    let acme = RealmSecret::from_seed(&[7; 32]);
    let trust = format!("acme={}", acme.public());
    let mut child = forum
        .command(&["verify-bundle", "-", "--trust", &trust])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let good = bundle(&acme).to_string();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(good.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn realm_key_prints_the_forums_public_key_the_same_each_time() {
    let forum = TempForum::new();
    forum.token("alice", &["--rights", "read"]);
    let out = forum.run(&["realm-key"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(key.starts_with("ed25519:") && key.len() == 8 + 43, "{key}");
    let again: Value = serde_json::from_slice(&forum.run(&["realm-key", "--json"]).stdout).unwrap();
    assert_eq!(again["realm_key"], key.as_str());
    // Through a running server's admin channel: the same key.
    let server = common::Server::start(&forum.db, None, &[]);
    let through = forum.run(&["realm-key"]);
    assert_eq!(String::from_utf8(through.stdout).unwrap().trim(), key);
    drop(server);
    // No forum there: an error, and none is made.
    let empty = TempForum::new();
    failed(&empty.run(&["realm-key"]), "no forum");
    assert!(!empty.db.exists());
}

#[test]
fn an_artifact_goes_in_from_a_file_and_comes_back_byte_for_byte() {
    let forum = TempForum::new();
    let token = forum.token("alice", &["--rights", "read,write"]);
    let file = forum.dir.path().join("build.log");
    let bytes: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    std::fs::write(&file, &bytes).unwrap();
    let args = [
        "artifact",
        "put",
        file.to_str().unwrap(),
        "--media-type",
        "text/plain",
    ];
    let out = forum.run_as(&token, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let reference = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(
        reference.starts_with("sha256:") && reference.len() == 71,
        "{reference}"
    );
    let back = forum.dir.path().join("back.log");
    let out = forum.run_as(
        &token,
        &["artifact", "get", &reference, "-o", back.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&back).unwrap(), bytes);
    let out = forum.run_as(&token, &["artifact", "get", &reference]);
    assert_eq!(out.stdout, bytes);
    let missing = format!("sha256:{}", "0".repeat(64));
    let out = forum.run_as(&token, &["artifact", "get", &missing]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("artifact_not_found"),
        "{}",
        stderr(&out)
    );
}

//! The provenance verbs of the built `parley` (SPEC §18): `artifact put|get`,
//! `export-claim`, `import-claim` and `--trust REALM=KEY`; here, what the command
//! line itself refuses before any forum is asked.

mod common;

use std::process::Output;

use common::TempForum;

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

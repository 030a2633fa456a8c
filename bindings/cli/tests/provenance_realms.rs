//! A claim across realms over real servers (SPEC §18.3): exported from `parley serve
//! --http` on a forum file (realm `acme`), imported over REST into another `parley
//! serve --http` on PostgreSQL (realm `globex`, `--trust acme=<key from parley
//! realm-key>`), refused by a third server that does not trust `acme`, refused a
//! second time as `already_imported`, and refused when tampered with.

mod common;
#[path = "../../../tests/pg/support.rs"]
mod pg;

use std::path::Path;
use std::process::Command;

use common::{http, Response, Server, TempForum, BIN};
use serde_json::{json, Value};

const ACME: &str = r#"{"realm":"acme","limits":{"writes_per_minute":0}}"#;
const GLOBEX: &str = r#"{"realm":"globex","limits":{"writes_per_minute":0}}"#;

/// `parley --db DB ARGS…` beside the running servers, which must succeed.
fn parley(db: &str, settings: &str, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(["--db", db, "--settings", settings])
        .args(args)
        .env_remove("PARLEY_DB")
        .env_remove("PARLEY_SETTINGS")
        .env_remove("PARLEY_TOKEN")
        .output()
        .expect("runs parley");
    assert!(
        out.status.success(),
        "parley {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn send(server: &Server, method: &str, path: &str, token: &str, body: Option<&Value>) -> Response {
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let body = body.map(Value::to_string);
    http(
        server.addr,
        method,
        path,
        &headers,
        body.as_deref().map(str::as_bytes),
    )
}

fn refused(resp: &Response, status: u16, reason: &str) {
    assert_eq!(
        (resp.status, resp.reason().as_str()),
        (status, reason),
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
}

#[test]
fn a_claim_exported_from_a_file_forum_is_imported_into_postgres_once() {
    let Some(base) = pg::server() else {
        return;
    };
    // Realm acme on a forum file: a claim, verified.
    let a = TempForum::new();
    let a_db = a.db.to_str().unwrap().to_string();
    let alice = parley(
        &a_db,
        ACME,
        &["token", "create", "alice", "--rights", "read,write"],
    );
    let vera = parley(
        &a_db,
        ACME,
        &["token", "create", "vera", "--rights", "read,write,verify"],
    );
    let key = parley(&a_db, ACME, &["realm-key"]);
    assert!(key.starts_with("ed25519:"), "{key}");
    let server_a = Server::start(&a.db, Some(ACME), &[]);
    let claim = json!({"kind": "assert", "body": "The release build is reproducible.",
                       "evidence": [{"kind": "log", "ref": "ci/1234"}]});
    let posted = send(&server_a, "POST", "/v1/messages", &alice, Some(&claim));
    assert_eq!(
        posted.status,
        201,
        "{}",
        String::from_utf8_lossy(&posted.body)
    );
    let claim_id = posted.json()["claim"]["id"].as_str().unwrap().to_string();
    let verify = json!({"kind": "verify", "claim": claim_id, "body": "Rebuilt it: same bytes.",
                        "evidence": [{"kind": "log", "ref": "ci/1235"}]});
    let verified = send(&server_a, "POST", "/v1/messages", &vera, Some(&verify));
    assert_eq!(
        verified.status,
        201,
        "{}",
        String::from_utf8_lossy(&verified.body)
    );
    let exported = send(
        &server_a,
        "GET",
        &format!("/v1/claims/{claim_id}/bundle"),
        &alice,
        None,
    );
    assert_eq!(
        exported.status,
        200,
        "{}",
        String::from_utf8_lossy(&exported.body)
    );
    let bundle = exported.json()["bundle"].clone();
    assert_eq!(bundle["signatures"][0]["keyid"], key.as_str());

    // Realm globex on PostgreSQL, trusting acme.
    let url = pg::fresh_url(&base, "realms");
    let bob = parley(
        &url,
        GLOBEX,
        &["token", "create", "bob", "--rights", "read,write"],
    );
    let trust = format!("acme={key}");
    let server_b = Server::start(Path::new(&url), Some(GLOBEX), &["--trust", &trust]);
    let imported = send(
        &server_b,
        "POST",
        "/v1/claims/import",
        &bob,
        Some(&json!({"bundle": bundle})),
    );
    assert_eq!(
        imported.status,
        201,
        "{}",
        String::from_utf8_lossy(&imported.body)
    );
    let new_claim = imported.json()["claim"]["id"].as_str().unwrap().to_string();
    let got = send(
        &server_b,
        "GET",
        &format!("/v1/claims/{new_claim}"),
        &bob,
        None,
    )
    .json();
    let origin = &got["imported"];
    assert_eq!(origin["realm"], "acme");
    assert_eq!(origin["claim"], claim_id.as_str());
    assert_eq!(origin["status"], "verified");
    assert_eq!(origin["key"], key.as_str());
    // The same claim again, even from a fresh export: already_imported.
    let again = send(
        &server_b,
        "POST",
        "/v1/claims/import",
        &bob,
        Some(&json!({"bundle": bundle})),
    );
    refused(&again, 409, "already_imported");
    let fresh = send(
        &server_a,
        "GET",
        &format!("/v1/claims/{claim_id}/bundle"),
        &alice,
        None,
    );
    let fresh = json!({"bundle": fresh.json()["bundle"]});
    refused(
        &send(&server_b, "POST", "/v1/claims/import", &bob, Some(&fresh)),
        409,
        "already_imported",
    );
    // Tampered: one byte of the signature.
    let mut forged = bundle.clone();
    let sig = forged["signatures"][0]["sig"].as_str().unwrap().to_string();
    // Another first character: the signature's bytes change, its form stays base64.
    let first = if sig.starts_with('A') { "B" } else { "A" };
    let flipped = format!("{first}{}", &sig[1..]);
    forged["signatures"][0]["sig"] = Value::String(flipped);
    let resp = send(
        &server_b,
        "POST",
        "/v1/claims/import",
        &bob,
        Some(&json!({"bundle": forged})),
    );
    refused(&resp, 403, "realm_untrusted");
    let resp = send(
        &server_b,
        "POST",
        "/v1/claims/import",
        &bob,
        Some(&json!({"bundle": {"payload": 1}})),
    );
    refused(&resp, 400, "bundle_invalid");

    // A third forum that does not trust acme.
    let c = TempForum::new();
    let c_db = c.db.to_str().unwrap().to_string();
    let carol = parley(
        &c_db,
        GLOBEX,
        &["token", "create", "carol", "--rights", "read,write"],
    );
    let server_c = Server::start(&c.db, Some(GLOBEX), &[]);
    let resp = send(
        &server_c,
        "POST",
        "/v1/claims/import",
        &carol,
        Some(&json!({"bundle": bundle})),
    );
    refused(&resp, 403, "realm_untrusted");
}

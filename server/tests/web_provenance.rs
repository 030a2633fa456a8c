//! The web view's side of the provenance profile (SPEC §18) over real HTTP: a claim
//! page shows its quorum, evidence of kind artifact with a `sha256:` ref links to
//! the bytes, and those bytes come as a download that a browser never renders as a
//! page of the forum's origin (attachment, nosniff, a sandbox policy kept over the
//! web view's own).

mod support;
mod web_client;

use serde_json::{json, Value};
use support::{Server, TempForum};
use web_client::{text, Browser};

#[test]
fn a_claim_page_shows_its_quorum_and_links_its_artifact_as_a_download() {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let alice = forum.token("alice", &["--rights", "read,write"]);
    let settings = r#"{"limits":{"writes_per_minute":0,"verify_quorum":2}}"#;
    let server = Server::start(&forum.db, Some(settings), &[]);
    let rest = |path: &str, body: Value| -> Value {
        let resp = server.post(path, Some(&alice), &body.to_string());
        assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
        resp.json()
    };
    // `<script>alert(1)</script>` as text/html.
    let stored = rest(
        "/v1/artifacts",
        json!({"content_base64": "PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "media_type": "text/html"}),
    );
    let reference = stored["artifact"]["ref"].as_str().unwrap().to_string();
    let posted = rest(
        "/v1/messages",
        json!({"kind": "assert", "body": "The nightly build passed.",
               "evidence": [{"kind": "artifact", "ref": reference}, {"kind": "artifact", "ref": "ci-log-7"}]}),
    );
    let claim = posted["claim"]["id"].as_str().unwrap().to_string();

    let mut b = Browser::signed_in(&server, &ann);
    let page = text(&b.get(&format!("/claims/{claim}")));
    assert!(
        page.contains(r#"<p id="claim-quorum" data-have="0" data-needed="2">"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<span class="quorum">0/2</span>"#),
        "{page}"
    );
    assert!(
        page.contains(&format!(r#"href="/artifacts/{reference}" download"#)),
        "{page}"
    );
    // An artifact ref the forum does not store stays text.
    assert!(
        page.contains(r#"<code class="evidence-ref">ci-log-7</code>"#),
        "{page}"
    );
    assert!(!page.contains("imported-title"), "{page}");

    let bytes = b.get(&format!("/artifacts/{reference}"));
    assert_eq!(bytes.status, 200);
    assert_eq!(bytes.body, b"<script>alert(1)</script>");
    assert_eq!(bytes.header("Content-Type"), Some("text/html"));
    assert_eq!(bytes.header("X-Content-Type-Options"), Some("nosniff"));
    assert!(bytes
        .header("Content-Disposition")
        .unwrap()
        .starts_with("attachment"));
    assert!(bytes
        .header("Content-Security-Policy")
        .unwrap()
        .starts_with("sandbox"));
    // Unknown: the refusal page with its status.
    let missing = b.get(&format!("/artifacts/sha256:{}", "0".repeat(64)));
    assert_eq!(missing.status, 404);
    assert!(text(&missing).contains("artifact_not_found"));
    // Not signed in: no bytes.
    let mut stranger = Browser::new(&server);
    let resp = stranger.get(&format!("/artifacts/{reference}"));
    assert_ne!(resp.status, 200);
}

//! The provenance routes over real HTTP (SPEC §18): `POST /v1/artifacts`,
//! `GET /v1/artifacts/{ref}`, `GET /v1/claims/{id}/bundle`, `POST /v1/claims/import`,
//! against the built `parley serve --http`: what the routes themselves refuse (a
//! body over the limit, a body that is not an object, a `raw` that is not a flag,
//! a `Content-Type` that is not text), each after the token where SPEC §12.1 says so;
//! an artifact stored and read back both ways, and its refusals.

mod support;

use support::{http, Response, Server, TempForum};

struct Fixture {
    _forum: TempForum,
    server: Server,
    /// `ainotes:alice`, read and write.
    alice: String,
}

fn fixture() -> Fixture {
    let forum = TempForum::new();
    let alice = forum.token("alice", &["--rights", "read,write"]);
    let server = Server::start(
        &forum.db,
        Some(r#"{"limits":{"writes_per_minute":0}}"#),
        &[],
    );
    Fixture {
        _forum: forum,
        server,
        alice,
    }
}

impl Fixture {
    fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Option<&[u8]>,
    ) -> Response {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        if let Some(content_type) = content_type {
            headers.push(("Content-Type", content_type));
        }
        http(self.server.addr, method, path, &headers, body)
    }
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
fn a_body_over_the_request_limit_is_refused() {
    let f = fixture();
    let big = vec![b'a'; 70_000];
    let alice = Some(f.alice.as_str());
    let raw = f.send(
        "POST",
        "/v1/artifacts",
        alice,
        Some("text/plain"),
        Some(&big),
    );
    refused(&raw, 413, "payload_too_large");
    let mut json = br#"{"content_base64":""#.to_vec();
    json.extend_from_slice(&big);
    json.extend_from_slice(br#""}"#);
    for path in ["/v1/artifacts", "/v1/claims/import"] {
        let resp = f.send("POST", path, alice, Some("application/json"), Some(&json));
        refused(&resp, 413, "payload_too_large");
    }
}

#[test]
fn a_body_that_is_not_an_object_is_refused_after_the_token() {
    let f = fixture();
    for path in ["/v1/artifacts", "/v1/claims/import"] {
        for body in [&b"[1]"[..], b"{", b"\"x\"", b"\xff{}"] {
            let ct = Some("application/json");
            let resp = f.send("POST", path, None, ct, Some(body));
            refused(&resp, 401, "token_missing");
            let resp = f.send("POST", path, Some("pt_nope"), ct, Some(body));
            refused(&resp, 401, "token_invalid");
            let resp = f.send("POST", path, Some(&f.alice), ct, Some(body));
            refused(&resp, 400, "invalid_argument");
        }
    }
}

#[test]
fn raw_is_a_flag() {
    let f = fixture();
    let path = format!("/v1/artifacts/sha256:{}?raw=yes", "0".repeat(64));
    refused(
        &f.send("GET", &path, None, None, None),
        401,
        "token_missing",
    );
    let resp = f.send("GET", &path, Some(&f.alice), None, None);
    refused(&resp, 400, "invalid_argument");
    assert_eq!(resp.json()["error"]["field"], "raw");
}

#[test]
fn a_content_type_that_is_not_text_is_refused_after_the_token() {
    let f = fixture();
    let addr = f.server.addr;
    let raw = |token: &str| {
        let head = format!(
            "POST /v1/artifacts HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Content-Length: 3\r\nConnection: close\r\nContent-Type: image/é\r\n\r\nabc"
        );
        support::exchange(addr, head.as_bytes()).expect("exchange")
    };
    refused(&raw("pt_nope"), 401, "token_invalid");
    let resp = raw(&f.alice);
    refused(&resp, 400, "invalid_argument");
    assert_eq!(resp.json()["error"]["field"], "media_type");
}

#[test]
fn an_artifact_goes_in_as_json_or_raw_bytes_and_comes_back_as_either() {
    let f = fixture();
    let alice = Some(f.alice.as_str());
    let html = b"<script>alert(1)</script>";
    let raw = f.send(
        "POST",
        "/v1/artifacts",
        alice,
        Some("text/html"),
        Some(html),
    );
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    let artifact = raw.json()["artifact"].clone();
    let reference = artifact["ref"].as_str().unwrap().to_string();
    assert!(
        reference.starts_with("sha256:") && reference.len() == 71,
        "{reference}"
    );
    assert_eq!(
        (artifact["size"].as_u64(), artifact["media_type"].as_str()),
        (Some(25), Some("text/html"))
    );
    // The same bytes as JSON: the same artifact, its first media type kept.
    let body = serde_json::json!({"content_base64": "PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "media_type": "text/plain"});
    let again = f.send(
        "POST",
        "/v1/artifacts",
        alice,
        Some("application/json"),
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(
        again.status,
        201,
        "{}",
        String::from_utf8_lossy(&again.body)
    );
    assert_eq!(again.json()["artifact"], artifact);
    let got = f.send(
        "GET",
        &format!("/v1/artifacts/{reference}"),
        alice,
        None,
        None,
    );
    assert_eq!(got.status, 200);
    assert_eq!(
        got.json()["content_base64"],
        "PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="
    );
    let bytes = f.send(
        "GET",
        &format!("/v1/artifacts/{reference}?raw=1"),
        alice,
        None,
        None,
    );
    assert_eq!(bytes.status, 200);
    assert_eq!(bytes.body, html);
    assert_eq!(bytes.header("X-Content-Type-Options"), Some("nosniff"));
    assert!(bytes
        .header("Content-Disposition")
        .unwrap()
        .starts_with("attachment"));
    assert!(bytes
        .header("Content-Security-Policy")
        .unwrap()
        .contains("sandbox"));
}

#[test]
fn artifact_refusals_have_their_status() {
    let f = fixture();
    let alice = Some(f.alice.as_str());
    let missing = format!("/v1/artifacts/sha256:{}", "0".repeat(64));
    refused(
        &f.send("GET", &missing, alice, None, None),
        404,
        "artifact_not_found",
    );
    refused(
        &f.send("GET", &format!("{missing}?raw=1"), alice, None, None),
        404,
        "artifact_not_found",
    );
    refused(
        &f.send("GET", &missing, None, None, None),
        401,
        "token_missing",
    );
    let bad = br#"{"content_base64":"not base64!"}"#;
    refused(
        &f.send(
            "POST",
            "/v1/artifacts",
            alice,
            Some("application/json"),
            Some(bad),
        ),
        400,
        "invalid_argument",
    );
    let big = vec![b'x'; 49_153];
    refused(
        &f.send(
            "POST",
            "/v1/artifacts",
            alice,
            Some("application/octet-stream"),
            Some(&big),
        ),
        409,
        "limit_exceeded",
    );
}

#[test]
fn bundle_routes_refuse_with_their_status() {
    let f = fixture();
    let alice = Some(f.alice.as_str());
    refused(
        &f.send("GET", "/v1/claims/cl_999/bundle", alice, None, None),
        404,
        "claim_not_found",
    );
    refused(
        &f.send("GET", "/v1/claims/cl_1/bundle", None, None, None),
        401,
        "token_missing",
    );
    let junk = br#"{"bundle":{"payload":1}}"#;
    refused(
        &f.send(
            "POST",
            "/v1/claims/import",
            alice,
            Some("application/json"),
            Some(junk),
        ),
        400,
        "bundle_invalid",
    );
}

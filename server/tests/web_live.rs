//! The web view's live updates (`/live`), against the server in this process: it
//! tells an open page of commits that touch it, and only those, sends heartbeats
//! and counts against the cap on waits, ends when the session is signed out, and
//! refuses a request without a session.

mod support;
mod web_scenario;

use std::time::Duration;

use serde_json::json;

use support::sse_client::Live;
use support::{http, Server, TempForum};
use web_scenario::*;

#[test]
fn live_refuses_a_request_without_a_session() {
    let s = Scenario::new();
    let (status, body) = Live::open(s.server.addr, "/live", None)
        .err()
        .expect("refused");
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("session_missing"), "{body}");
    let forged = format!("parley_session={}", "ab".repeat(32));
    let (status, _) = Live::open(s.server.addr, "/live?thread=th_1", Some(&forged))
        .err()
        .expect("refused");
    assert_eq!(status, 401);
    // A session, but a query /live does not take.
    let ann = sign_in(&s.server, &s.ann);
    let (status, body) = Live::open(s.server.addr, "/live?limit=3", Some(&ann))
        .err()
        .expect("refused");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("invalid_argument"), "{body}");
    // A token is not a session: a bearer token does not open the stream.
    let auth = format!("Bearer {}", s.ann);
    let resp = http(
        s.server.addr,
        "GET",
        "/live",
        &[("Authorization", auth.as_str())],
        None,
    );
    assert_eq!(resp.status, 401);
}

#[test]
fn live_sends_heartbeats_and_counts_against_the_cap_on_waits() {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let server = Server::start(
        &forum.db,
        Some(SETTINGS),
        &["--max-waits", "1", "--heartbeat-ms", "100"],
    );
    let cookie = sign_in(&server, &ann);
    let live = Live::open(server.addr, "/live", Some(&cookie)).unwrap();
    assert!(live.until(": heartbeat", Duration::from_secs(10)).is_some());
    let (status, body) = Live::open(server.addr, "/live", Some(&cookie))
        .err()
        .expect("past the cap");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("too_many_waits"), "{body}");
    drop(live);
}

#[test]
fn live_ends_when_the_session_is_signed_out() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);
    let live = Live::open(s.server.addr, "/live", Some(&ann)).unwrap();
    assert!(live
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    let (_, html) = page(&s.server, &ann, "/inbox");
    let csrf = attr_of(
        element(&html, r#"id="sign-out""#),
        r#"name="csrf""#,
        "value",
    )
    .unwrap();
    let form = format!("csrf={csrf}");
    let resp = http(
        s.server.addr,
        "POST",
        "/sign-out",
        &[
            ("Cookie", ann.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(form.as_bytes()),
    );
    assert_eq!(resp.status, 303, "{}", body(&resp));
    // The token still works; the session does not: the next change is not told.
    s.post(&s.bob, json!({"kind": "ask", "body": "Anyone there?"}));
    let last = live
        .until("<end>", Duration::from_secs(10))
        .expect("the stream ended");
    assert!(last.iter().any(|l| l == "event: ended"), "{last:?}");
    assert!(
        last.iter()
            .any(|l| l.contains("\"reason\":\"session_ended\"")),
        "{last:?}"
    );
    assert!(!last.iter().any(|l| l == "event: changed"), "{last:?}");
}

#[test]
fn a_stream_leaves_a_refused_form_for_the_page() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    let csrf = attr_of(
        element(&html, r#"id="sign-out""#),
        r#"name="csrf""#,
        "value",
    )
    .unwrap();
    // A note with an empty body is refused; the refusal waits in the session.
    let form = format!("csrf={csrf}&action=note&body=+");
    let resp = http(
        s.server.addr,
        "POST",
        "/threads/th_1/act",
        &[
            ("Cookie", ann.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(form.as_bytes()),
    );
    assert_eq!(resp.status, 303, "{}", body(&resp));
    // A stream opened before the page is shown does not take it.
    let live = Live::open(s.server.addr, "/live?thread=th_1", Some(&ann)).unwrap();
    assert!(live
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    let refusal = element(&html, r#"class="refusal""#);
    assert!(
        refusal.contains(r#"data-reason="invalid_body""#),
        "{refusal}"
    );
    // Shown once.
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    assert!(!html.contains(r#"class="refusal""#), "{html}");
}

//! The web view's read pages and live updates, through the built binary: a person
//! signs in through the sign-in form, and each page shows what a scenario posted
//! through REST (the proposals oldest first with who proposed them and why, threads
//! by state, a thread as its tree, a claim with its refutation chain, the event log
//! in pages, search results linking to their messages); a refused read is a page
//! with the refusal's reason and status; an agent's pages hold no action form;
//! bodies are escaped; and `/live` tells an open page of commits that touch it, and
//! only those, ends on shutdown and refuses a request without a session.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/web_pages.rs`.

mod common;
// The in-process tests' scenario and page lookups, over this file's server.
use common as support;
#[path = "../../../server/tests/web_scenario/mod.rs"]
mod web_scenario;

use std::time::Duration;

use common::http;
use common::sse_client::Live;
use serde_json::json;
use web_scenario::*;

#[test]
fn live_tells_a_page_of_commits_that_touch_it() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    let seen = attr_of(&html, "data-live-seen", "data-live-seen").expect("the page's print");

    // A thread page: opened with the print of the page, nothing is due…
    let thread = Live::open(
        s.server.addr,
        &format!("/live?thread=th_1&seen={seen}"),
        Some(&ann),
    )
    .unwrap();
    assert!(thread
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    // …nor after a commit to another thread…
    s.post(
        &s.carol,
        json!({"kind": "note", "thread": "th_2", "body": "Elsewhere."}),
    );
    assert!(
        thread
            .until("event: changed", Duration::from_millis(1500))
            .is_none(),
        "a commit to th_2 is not told to th_1"
    );
    // …but a post to it is.
    s.post(
        &s.carol,
        json!({"kind": "note", "thread": "th_1", "body": "One more thing."}),
    );
    let told = thread
        .until("event: changed", Duration::from_secs(10))
        .expect("a changed event");
    let id = told
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an id");
    // The id is the print the page now has.
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    assert_eq!(
        attr_of(&html, "data-live-seen", "data-live-seen").as_deref(),
        Some(id)
    );
    assert!(html.contains("One more thing."));

    // A stale print is told at once; a list page hears of every commit.
    let stale = Live::open(s.server.addr, "/live?thread=th_1&seen=t0", Some(&ann)).unwrap();
    assert!(stale
        .until("event: changed", Duration::from_secs(10))
        .is_some());
    let (_, html) = page(&s.server, &ann, "/threads");
    let seen = attr_of(&html, "data-live-seen", "data-live-seen").unwrap();
    let list = Live::open(s.server.addr, &format!("/live?seen={seen}"), Some(&ann)).unwrap();
    assert!(list
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    s.post(
        &s.carol,
        json!({"kind": "note", "thread": "th_2", "body": "Again elsewhere."}),
    );
    assert!(list
        .until("event: changed", Duration::from_secs(10))
        .is_some());

    // Shutdown ends every stream, and the server stops cleanly.
    let lines = s.server.terminate();
    for live in [&thread, &list] {
        assert!(
            live.until("<end>", Duration::from_secs(30)).is_some(),
            "{lines:?}"
        );
    }
    drop(s.forum);
}

#[test]
fn live_ends_when_the_sessions_token_is_revoked() {
    let s = Scenario::new();
    let carol = sign_in(&s.server, &s.carol);
    let live = Live::open(s.server.addr, "/live?thread=th_1", Some(&carol)).unwrap();
    assert!(live
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    // Revoked through the running server's admin channel.
    let out = s.forum.run(&["token", "revoke", &s.carol]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The next run after a commit reads with the revoked token: the stream ends.
    s.post(
        &s.bob,
        json!({"kind": "ask", "body": "A commit to wake the stream?"}),
    );
    let last = live
        .until("<end>", Duration::from_secs(10))
        .expect("the stream ended");
    assert!(last.iter().any(|l| l == "event: ended"), "{last:?}");
    assert!(
        last.iter()
            .any(|l| l.contains("\"reason\":\"token_invalid\"")),
        "{last:?}"
    );
    // And the session with it: a page now sends the browser to sign in.
    let resp = http(
        s.server.addr,
        "GET",
        "/inbox",
        &[("Cookie", carol.as_str())],
        None,
    );
    assert_eq!(resp.status, 303);
}

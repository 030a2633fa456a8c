//! The web view's read pages, against the server in this process: a person signs
//! in through the sign-in form, and each page shows what a scenario posted through
//! REST (the proposals oldest first with who proposed them and why, threads by
//! state, a thread as its tree, a claim with its refutation chain, the event log in
//! pages, search results linking to their messages); a refused read is a page with
//! the refusal's reason and status; an agent's pages hold no action form; bodies
//! are escaped. Live updates are `web_live.rs`.

mod support;
mod web_scenario;

use support::http;
use web_scenario::*;

#[test]
fn proposals_threads_and_the_tree_show_what_was_posted() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);

    // Proposals: oldest proposal first, with the proposer and the proposing message's body.
    let (status, html) = page(&s.server, &ann, "/proposals");
    assert_eq!(status, 200, "{html}");
    let list = element(&html, r#"id="proposals""#);
    let first = list.find("/threads/th_1").expect("th_1 listed");
    let second = list.find("/threads/th_2").expect("th_2 listed");
    assert!(first < second, "oldest proposal first: {list}");
    let th1 = element(list, r#"id="proposal-th_1""#);
    assert!(
        th1.contains(r#"<span class="proposer">ainotes:carol</span>"#),
        "{th1}"
    );
    assert!(
        th1.contains(r#"<q class="why">The LRU cache, it is simplest.</q>"#),
        "{th1}"
    );
    assert!(th1.contains(">answered</span>"), "{th1}");
    assert!(
        th1.contains(r#"data-action="confirm""#),
        "a person's confirm form: {th1}"
    );
    let th2 = element(list, r#"id="proposal-th_2""#);
    assert!(
        th2.contains(r#"<span class="proposer">ainotes:bob</span>"#),
        "{th2}"
    );
    assert!(
        th2.contains(r#"<q class="why">Later, not now.</q>"#),
        "{th2}"
    );
    assert!(
        !list.contains("/threads/th_3\""),
        "th_3 is confirmed open: {list}"
    );

    // Threads, filtered by state; the filter form keeps the choice.
    let (status, html) = page(&s.server, &ann, "/threads?state=deferred");
    assert_eq!(status, 200, "{html}");
    let list = element(&html, r#"id="threads""#);
    assert_eq!(links(list), ["/threads/th_2"], "{list}");
    assert!(
        list.contains(r#"<span class="state" data-state="deferred""#),
        "{list}"
    );
    let filter = element(&html, r#"id="thread-filter""#);
    assert!(
        filter.contains(r#"<option value="deferred" selected>"#),
        "{filter}"
    );
    assert!(html.contains(r#"action="/threads""#) && html.contains(r#"data-action="ask""#));
    // Unfiltered, two a page: a next link carries on where the first page ended.
    let (_, html) = page(&s.server, &ann, "/threads");
    let first_page = links(element(&html, r#"id="threads""#));
    assert_eq!(first_page.len(), 2, "{html}");
    let next = attr_of(&html, r#"rel="next""#, "href").expect("a next link");
    let (_, html) = page(&s.server, &ann, &next.replace("&amp;", "&"));
    let second_page = links(element(&html, r#"id="threads""#));
    assert_eq!(second_page.len(), 1, "{html}");
    assert!(!first_page.contains(&second_page[0]));
    assert!(!html.contains(r#"rel="next""#), "the last page: {html}");

    // The tree: the answer under the question, the note under the answer.
    let (status, html) = page(&s.server, &ann, "/threads/th_1");
    assert_eq!(status, 200, "{html}");
    let root = element(&html, r#"id="msg_1""#);
    assert!(
        root.starts_with(r#"<article class="message" id="msg_1" data-kind="ask">"#),
        "{root}"
    );
    let replies = element(root, r#"class="replies""#);
    let answer = element(replies, r#"id="msg_2""#);
    assert!(answer.contains(r#"data-kind="answer""#), "{answer}");
    assert!(
        answer.contains("ainotes:carol") && answer.contains("(llm)"),
        "{answer}"
    );
    let nested = element(answer, r#"class="replies""#);
    assert!(
        nested.contains(r#"id="msg_3" data-kind="note""#),
        "{nested}"
    );
    // The state with its standing, the turn, the event next to its message and in the log.
    let state = element(&html, r#"id="thread-state""#);
    assert!(
        state.contains(">answered</span>") && state.contains("unconfirmed"),
        "{state}"
    );
    assert!(state.contains("llm"), "the origin: {state}");
    let awaiting = element(&html, r#"id="awaiting""#);
    assert!(awaiting.contains("ainotes:bob"), "{awaiting}");
    assert!(
        answer.contains(r#"class="caused""#) && answer.contains("open → answered"),
        "{answer}"
    );
    let events = element(&html, r#"id="events""#);
    assert!(
        events.contains(r#"<li class="event" id="ev_1" data-type="transition">"#),
        "{events}"
    );
    assert!(
        links(events).contains(&"/threads/th_1#msg_2".to_string()),
        "{events}"
    );
    // Times are readable, and exact in `datetime`.
    let time = element(answer, "<time");
    assert!(
        time.contains("datetime=\"20") && time.contains(" UTC</time>"),
        "{time}"
    );
    // A person gets the action forms and reply forms, with the CSRF field.
    assert!(html.contains(r#"data-action="close""#), "{html}");
    assert!(
        html.contains(r#"name="parent" value="msg_2""#),
        "a reply form under msg_2"
    );
    // The live marker names the thread.
    assert!(html.contains(r#"data-live-thread="th_1""#), "{html}");

    // Escaping: the body's markup is text.
    assert!(!html.contains("<script>alert(1)</script>"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"),
        "{html}"
    );
    // The id in its number form shows the same thread.
    let (status, again) = page(&s.server, &ann, "/threads/1");
    assert_eq!(status, 200);
    assert!(again.contains(r#"id="msg_3""#));
}

#[test]
fn claims_events_search_and_refusals() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);

    // The claim, its support and its refutation chain, each linking to its message.
    let (status, html) = page(&s.server, &ann, "/claims/cl_1");
    assert_eq!(status, 200, "{html}");
    let h1 = element(&html, "<h1");
    assert!(
        h1.contains("cl_1") && h1.contains("The cache hit rate is 90 percent."),
        "{h1}"
    );
    let claim_status = element(&html, r#"id="claim-status""#);
    assert!(
        claim_status.contains(">supported</span>"),
        "the refutation fell: {claim_status}"
    );
    assert!(
        links(claim_status).contains(&"/threads/th_3#msg_6".to_string()),
        "{claim_status}"
    );
    let evidence = element(&html, r#"id="evidence""#);
    assert!(
        links(evidence).contains(&"https://example.org/metrics".to_string()),
        "{evidence}"
    );
    let attestations = element(&html, r#"id="attestations""#);
    assert!(attestations.contains("ainotes:carol"), "{attestations}");
    assert!(links(attestations).contains(&"/threads/th_3#msg_7".to_string()));
    assert!(html.contains(r#"<ul id="verifications""#), "{html}");
    let chain = element(&html, r#"id="refutations""#);
    let counter = element(chain, r#"data-claim="cl_2""#);
    assert!(counter.contains(">refuted</span>"), "{counter}");
    assert!(
        links(counter).contains(&"/claims/cl_2".to_string()),
        "{counter}"
    );
    assert!(
        links(counter).contains(&"/threads/th_3#msg_8".to_string()),
        "{counter}"
    );
    let below = element(counter, r#"data-claim="cl_3""#);
    assert!(below.contains(">unverified</span>"), "{below}");
    assert!(
        links(below).contains(&"/threads/th_3#msg_9".to_string()),
        "{below}"
    );

    // Events, two a page, filtered by thread.
    let (status, html) = page(&s.server, &ann, "/events");
    assert_eq!(status, 200, "{html}");
    let mut seen = Vec::new();
    let mut html = html;
    loop {
        let list = element(&html, r#"id="events""#);
        let ids: Vec<String> = list
            .split(r#"<li class="event" id=""#)
            .skip(1)
            .map(|rest| rest[..rest.find('"').unwrap()].to_string())
            .collect();
        assert!(ids.len() <= 2, "{list}");
        seen.extend(ids);
        match attr_of(&html, r#"rel="next""#, "href") {
            Some(next) => html = page(&s.server, &ann, &next.replace("&amp;", "&")).1,
            None => break,
        }
    }
    let expected: Vec<String> = (1..=seen.len()).map(|n| format!("ev_{n}")).collect();
    assert!(seen.len() >= 4, "transitions and claim events: {seen:?}");
    assert_eq!(seen, expected, "every event once, oldest first");
    let (_, html) = page(&s.server, &ann, "/events?thread=th_2");
    let list = element(&html, r#"id="events""#);
    assert!(
        list.contains("deferred") && !list.contains("th_1"),
        "{list}"
    );

    // Search: newest first, each result linking to its message in its thread, two
    // a page.
    let (status, mut html) = page(&s.server, &ann, "/search?q=cache");
    assert_eq!(status, 200, "{html}");
    let mut found = Vec::new();
    loop {
        found.extend(links(element(&html, r#"id="results""#)));
        match attr_of(&html, r#"rel="next""#, "href") {
            Some(next) => html = page(&s.server, &ann, &next.replace("&amp;", "&")).1,
            None => break,
        }
    }
    assert_eq!(
        found,
        [
            "/threads/th_3#msg_9",
            "/threads/th_3#msg_6",
            "/threads/th_1#msg_2",
            "/threads/th_1#msg_1"
        ]
    );
    let (status, html) = page(&s.server, &ann, "/search?q=nothingmatchesthis");
    assert_eq!(status, 200);
    assert!(element(&html, r#"id="results""#).contains("</ol>") && !html.contains("#msg_"));

    // Refusals: the reason and status of the read.
    for (path, status, reason) in [
        ("/threads/th_99", 404, "thread_not_found"),
        ("/threads/msg_1", 400, "invalid_argument"),
        ("/claims/cl_99", 404, "claim_not_found"),
        ("/threads?state=nonsense", 400, "invalid_argument"),
        ("/events?since=notacursor", 400, "invalid_cursor"),
        ("/search?q=a%FF", 400, "invalid_argument"),
    ] {
        let (got, html) = page(&s.server, &ann, path);
        assert_eq!(got, status, "{path}: {html}");
        let refusal = element(&html, r#"class="refusal""#);
        assert!(
            refusal.contains(&format!(r#"data-reason="{reason}""#)),
            "{path}: {refusal}"
        );
    }
}

#[test]
fn an_agent_reads_every_page_without_action_forms() {
    let s = Scenario::new();
    let bob = sign_in(&s.server, &s.bob);
    for path in [
        "/inbox",
        "/proposals",
        "/threads",
        "/threads/th_1",
        "/claims/cl_1",
        "/events",
        "/search?q=cache",
    ] {
        let (status, html) = page(&s.server, &bob, path);
        assert_eq!(status, 200, "{path}: {html}");
        assert!(html.contains(r#"id="read-only""#), "{path}");
        assert!(!html.contains(r#"<form class="action"#), "{path}: {html}");
        assert!(!html.contains(r#"name="body""#), "{path}: {html}");
    }
    // What bob sees waiting: carol's answer to his question.
    let (_, html) = page(&s.server, &bob, "/inbox");
    let inbox = element(&html, r#"id="inbox""#);
    assert!(
        links(inbox).contains(&"/threads/th_1".to_string()),
        "{inbox}"
    );
    // Without a session, a page sends the browser to sign in.
    let resp = http(s.server.addr, "GET", "/threads/th_1", &[], None);
    assert_eq!(resp.status, 303);
    assert_eq!(resp.header("location"), Some("/sign-in"));
}

//! `search` (SPEC §14.4) beyond the transcripts: results equal a brute-force scan
//! of every body for random forums and queries (forums large enough that the word
//! index merges its segments several times); the index stays right when a batch
//! holds a refused post.

#[path = "pg/support.rs"]
mod support;

use parley_forum::{Config, Forum, Right, TokenSpec};
use proptest::prelude::*;
use serde_json::{json, Value};

const VOCABULARY: [&str; 12] = [
    "port", "Server", "dev", "ÉCOLE", "grüße", "8080", "free", "ci", "retry", "log", "x²", "日本",
];

fn config() -> Config {
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    config.limits.thread_max_messages = 1_000_000;
    config
}

struct Cast {
    forum: Forum,
    alice: String,
    bob: String,
}

fn cast(forum: Forum) -> Cast {
    let rights = [Right::Read, Right::Write];
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &rights))
        .unwrap();
    let bob = forum.create_token(&TokenSpec::llm("bob", &rights)).unwrap();
    Cast { forum, alice, bob }
}

/// Posts `bodies` in a few threads (alice asks, bob notes), returning each
/// message's id, thread and body in posting order.
fn fill(c: &Cast, bodies: &[String]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut threads: Vec<String> = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let r = if i % 7 == 0 || threads.is_empty() {
            c.forum
                .call(
                    Some(&c.alice),
                    "post",
                    &json!({"kind": "ask", "body": body}),
                )
                .unwrap()
        } else {
            let t = &threads[i % threads.len()];
            c.forum
                .call(
                    Some(&c.bob),
                    "post",
                    &json!({"kind": "note", "thread": t, "body": body, "from": {"extension": format!("e{i}")}}),
                )
                .unwrap()
        };
        let thread = r["thread"]["id"].as_str().unwrap().to_string();
        if !threads.contains(&thread) {
            threads.push(thread.clone());
        }
        out.push((
            r["message"]["id"].as_str().unwrap().to_string(),
            thread,
            body.clone(),
        ));
    }
    out
}

/// Every page of a search, newest first.
fn search_all(c: &Cast, q: &str, thread: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut since: Option<String> = None;
    loop {
        let mut args = json!({ "q": q, "limit": 37 });
        if let Some(t) = thread {
            args["thread"] = json!(t);
        }
        if let Some(s) = &since {
            args["since"] = json!(s);
        }
        let page = c.forum.call(Some(&c.bob), "search", &args).unwrap();
        for item in page["items"].as_array().unwrap() {
            out.push(item["message"]["id"].as_str().unwrap().to_string());
        }
        if page["more"] != Value::Bool(true) {
            return out;
        }
        since = Some(page["cursor"].as_str().unwrap().to_string());
    }
}

/// The distinct words of `text`, sorted, as SPEC §14.4 defines them: lowercased,
/// split at every character outside the general categories L, M and N. On this
/// file's text (the vocabulary, ASCII separators and digits, no combining marks)
/// `char::is_alphanumeric` draws the same line.
fn words_of(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    words.sort();
    words.dedup();
    words
}

fn brute_force(posted: &[(String, String, String)], q: &str, thread: Option<&str>) -> Vec<String> {
    let wanted = words_of(q);
    posted
        .iter()
        .rev()
        .filter(|(_, t, _)| thread.is_none_or(|w| w == t))
        .filter(|(_, _, body)| {
            let held = words_of(body);
            wanted.iter().all(|w| held.contains(w))
        })
        .map(|(id, _, _)| id.clone())
        .collect()
}

fn body_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            0..VOCABULARY.len(),
            prop::sample::select(vec![" ", ", ", "-", "! ", "\n"]),
        ),
        1..9,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .map(|(w, sep)| format!("{}{sep}", VOCABULARY[w]))
            .collect::<String>()
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PARLEY_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(6),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn search_equals_a_brute_force_scan(
        bodies in prop::collection::vec(body_strategy(), 500..2300),
        queries in prop::collection::vec(prop::collection::vec(0..VOCABULARY.len(), 1..4), 6),
    ) {
        search_matches_brute_force(Forum::in_memory(config()).unwrap(), &bodies, &queries)?;
    }

    /// The same on the PostgreSQL backend, whose index is a table of its own.
    #[test]
    fn search_equals_a_brute_force_scan_on_postgres(
        bodies in prop::collection::vec(body_strategy(), 100..500),
        queries in prop::collection::vec(prop::collection::vec(0..VOCABULARY.len(), 1..4), 6),
    ) {
        if let Some(base) = support::server() {
            let mut config = config();
            config.durability = parley_forum::Durability::Volatile;
            let forum = parley_postgres::open(support::fresh_url(&base, "search"), config).unwrap();
            search_matches_brute_force(forum, &bodies, &queries)?;
        }
    }
}

fn search_matches_brute_force(
    forum: Forum,
    bodies: &[String],
    queries: &[Vec<usize>],
) -> Result<(), TestCaseError> {
    let c = cast(forum);
    // Unique bodies: the repeat guard must not refuse any.
    let bodies: Vec<String> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| format!("{b} n{i}"))
        .collect();
    let posted = fill(&c, &bodies);
    for q in queries {
        let text = q
            .iter()
            .map(|w| VOCABULARY[*w])
            .collect::<Vec<_>>()
            .join(" ");
        prop_assert_eq!(
            search_all(&c, &text, None),
            brute_force(&posted, &text, None),
            "q = {}",
            text
        );
        let thread = posted[posted.len() / 2].1.clone();
        prop_assert_eq!(
            search_all(&c, &text, Some(&thread)),
            brute_force(&posted, &text, Some(&thread)),
            "q = {} in {}",
            text,
            thread
        );
    }
    Ok(())
}

#[test]
fn the_index_stays_right_when_a_batch_holds_a_refused_post() {
    let c = cast(Forum::in_memory(config()).unwrap());
    let bodies: Vec<String> = (0..1021).map(|i| format!("filler {i}")).collect();
    let mut posted = fill(&c, &bodies);
    let asked = c
        .forum
        .call(
            Some(&c.alice),
            "post",
            &json!({"kind": "ask", "body": "needle one"}),
        )
        .unwrap();
    let thread = asked["thread"]["id"].as_str().unwrap().to_string();
    posted.push((
        asked["message"]["id"].as_str().unwrap().to_string(),
        thread.clone(),
        "needle one".into(),
    ));
    // Concurrent posts cross the merge point; the second is refused (self_reply).
    let ok1 = json!({"kind": "note", "thread": thread, "body": "needle two"});
    let refused = json!({"kind": "note", "thread": thread, "body": "needle refused"});
    let ok2 = json!({"kind": "note", "thread": thread, "body": "needle three", "from": {"extension": "x"}});
    let out = post_concurrently(
        &c.forum,
        &[
            (Some(c.bob.as_str()), &ok1),
            (Some(c.alice.as_str()), &refused),
            (Some(c.bob.as_str()), &ok2),
        ],
    );
    assert!(out[1].is_err(), "alice replying to her own question");
    // In the order the engine gave them their ids, whichever thread came first.
    let mut accepted: Vec<(u64, String, &str)> =
        [(&out[0], "needle two"), (&out[2], "needle three")]
            .into_iter()
            .map(|(r, body)| {
                let id = r.as_ref().unwrap()["message"]["id"]
                    .as_str()
                    .unwrap()
                    .to_string();
                (id.trim_start_matches("msg_").parse().unwrap(), id, body)
            })
            .collect();
    accepted.sort();
    for (_, id, body) in accepted {
        posted.push((id, thread.clone(), body.into()));
    }
    for more in 0..1100 {
        let r = c
            .forum
            .call(
                Some(&c.alice),
                "post",
                &json!({"kind": "ask", "body": format!("later {more} needle")}),
            )
            .unwrap();
        posted.push((
            r["message"]["id"].as_str().unwrap().to_string(),
            r["thread"]["id"].as_str().unwrap().to_string(),
            format!("later {more} needle"),
        ));
    }
    assert_eq!(
        search_all(&c, "needle", None),
        brute_force(&posted, "needle", None)
    );
    assert!(search_all(&c, "refused", None).is_empty());
}

/// Posts every envelope at once, each from a thread of its own, as concurrent
/// callers of `call(token, "post", envelope)` do; returns the outcomes in order.
fn post_concurrently(
    forum: &Forum,
    posts: &[(Option<&str>, &Value)],
) -> Vec<parley_forum::Result<Value>> {
    std::thread::scope(|s| {
        let posting: Vec<_> = posts
            .iter()
            .map(|&(token, envelope)| s.spawn(move || forum.call(token, "post", envelope)))
            .collect();
        posting.into_iter().map(|p| p.join().unwrap()).collect()
    })
}

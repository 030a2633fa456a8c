//! `list_threads` against a brute-force oracle (every thread read whole) while the
//! word index's tail fills, merges and fills again: the threads of the tail live
//! outside the thread list's blocks until the merge puts them back (schema
//! version 6), so the list must come out the same on both sides of a merge, across
//! a reopen, and with posts racing in one batch. The same runs on PostgreSQL,
//! whose thread list is its own, check it against the same oracle.

#[path = "pg/support.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};

use parley_forum::{Config, Forum, Right, TokenSpec};
use serde_json::{json, Value};

const STATES: [&str; 7] = [
    "open", "answered", "decided", "closed", "deferred", "obsolete", "rejected",
];
const THREADS: usize = 30;

/// The forum at `place`: a file's path or a `postgres://` URL.
fn open(place: &str) -> Forum {
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    // Thousands of notes without progress: the test is about the list's index,
    // not loops (SPEC §15).
    config.guards = false;
    parley_postgres::open(place, config).unwrap()
}

fn num(key: &str) -> u64 {
    key.split('_').nth(1).unwrap().parse().unwrap()
}

/// The highest message id under `m` (a message of `get_thread`, with replies).
fn newest(m: &Value) -> u64 {
    let own = num(m["id"].as_str().unwrap());
    m["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(newest)
        .fold(own, u64::max)
}

/// What `list_threads` should give for `state` (`None`: all): every thread of
/// that state, by its latest message, oldest first.
fn oracle(forum: &Forum, token: &str, threads: &[String], state: Option<&str>) -> Vec<String> {
    let mut found = Vec::new();
    for id in threads {
        let view = forum
            .call(Some(token), "get_thread", &json!({ "thread": id }))
            .unwrap();
        let last = view["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(newest)
            .max()
            .unwrap();
        if state.is_none_or(|s| view["thread"]["state"] == s) {
            found.push((last, id.clone()));
        }
    }
    found.sort();
    found.into_iter().map(|(_, id)| id).collect()
}

/// `list_threads` for `state`, read in pages of seven.
fn listed(forum: &Forum, token: &str, state: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = json!({ "limit": 7 });
    if let Some(s) = state {
        args["state"] = json!(s);
    }
    loop {
        let page = forum.call(Some(token), "list_threads", &args).unwrap();
        for t in page["items"].as_array().unwrap() {
            out.push(t["id"].as_str().unwrap().to_string());
        }
        if page["more"] != true {
            return out;
        }
        args["since"] = page["cursor"].clone();
    }
}

fn agrees(forum: &Forum, token: &str, threads: &[String], when: &str) {
    for state in std::iter::once(None).chain(STATES.map(Some)) {
        assert_eq!(
            listed(forum, token, state),
            oracle(forum, token, threads, state),
            "list_threads {state:?} {when}"
        );
    }
}

struct Cast {
    writers: Vec<String>,
    human: String,
}

fn cast(forum: &Forum) -> Cast {
    let rw = [Right::Read, Right::Write];
    Cast {
        writers: ["a", "b", "c", "d"]
            .iter()
            .map(|h| forum.create_token(&TokenSpec::llm(h, &rw)).unwrap())
            .collect(),
        human: forum.create_token(&TokenSpec::human("hana")).unwrap(),
    }
}

/// One post of step `n` into one of `threads`: mostly notes, sometimes a state set
/// by the person, or a reopening (a state set by a person locks the thread, and
/// notes to it are refused until then). Returns the message's id, unless the post
/// was refused.
fn step(forum: &Forum, cast: &Cast, threads: &[String], n: u64) -> Option<u64> {
    let x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7;
    let thread = &threads[(x % threads.len() as u64) as usize];
    let (token, env) = if x.is_multiple_of(9) {
        let pick = ((x >> 11) % (STATES.len() as u64 + 3)) as usize;
        let env = match STATES.get(pick) {
            Some(state) => {
                json!({ "kind": "mark", "thread": thread, "state": state, "body": format!("set {n}") })
            }
            None => json!({ "kind": "reopen", "thread": thread, "body": format!("again {n}") }),
        };
        (&cast.human, env)
    } else {
        // Not the asker (writer 0): a note under one's own question is refused.
        let writer = 1 + (n % (cast.writers.len() as u64 - 1)) as usize;
        (
            &cast.writers[writer],
            json!({ "kind": "note", "thread": thread, "body": format!("note {n} port cache") }),
        )
    };
    // A refusal (a locked thread, a state it cannot take) changes nothing.
    let posted = forum.call(Some(token), "post", &env).ok()?;
    posted["message"]["id"].as_str().map(num)
}

fn asks(forum: &Forum, cast: &Cast, count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let r = forum
                .call(
                    Some(&cast.writers[0]),
                    "post",
                    &json!({ "kind": "ask", "body": format!("question {i}") }),
                )
                .unwrap();
            r["thread"]["id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Posts one by one at `place`, checking the list on both sides of the first two
/// merges and after reopening just past each.
fn one_by_one(place: &str) {
    let mut forum = open(place);
    let cast = cast(&forum);
    let threads = asks(&forum, &cast, THREADS);
    agrees(&forum, &cast.human, &threads, "with the asks only");
    let mut reopened = [false; 2];
    let mut last = THREADS as u64;
    for n in 0..2_600u64 {
        last = step(&forum, &cast, &threads, n).unwrap_or(last);
        // Reopens a few posts past each of the first two merges (at 1,024 and 2,048).
        for (i, mark) in [1_027u64, 2_054].iter().enumerate() {
            if !reopened[i] && last >= *mark {
                reopened[i] = true;
                drop(forum);
                forum = open(place);
                agrees(
                    &forum,
                    &cast.human,
                    &threads,
                    &format!("reopened at {last}"),
                );
            }
        }
        if n.is_multiple_of(101) || (1_020..=1_028).contains(&last) {
            agrees(&forum, &cast.human, &threads, &format!("at message {last}"));
        }
    }
    assert!(reopened.iter().all(|r| *r), "the run passed both merges");
    agrees(&forum, &cast.human, &threads, "at the end");
}

/// Four writers on eight threads at `place`: batches hold several posts of one
/// thread, and some batch holds the post that merges the tail and posts after it.
fn racing(place: &str) {
    let forum = open(place);
    let cast = cast(&forum);
    let threads = asks(&forum, &cast, 8);
    // How many posts are refused (a locked thread) depends on how the writers
    // interleave, so each writes until the race is past the second merge, within
    // a bound that is far more than it needs.
    let newest = AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..4u64 {
            let (forum, cast, threads, newest) = (&forum, &cast, &threads, &newest);
            s.spawn(move || {
                for i in 0..2_000u64 {
                    if newest.load(Ordering::Relaxed) > 2_060 {
                        return;
                    }
                    if let Some(id) = step(forum, cast, threads, w * 10_000 + i) {
                        newest.fetch_max(id, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert!(
        newest.load(Ordering::Relaxed) > 2_048,
        "the race passed two merges"
    );
    agrees(&forum, &cast.human, &threads, "after the race");
    drop(forum);
    let forum = open(place);
    agrees(&forum, &cast.human, &threads, "after the race, reopened");
}

#[test]
fn the_list_is_right_before_and_after_each_merge_and_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    one_by_one(path.to_str().unwrap());
    let report = parley_forum::storage::check(&path).unwrap();
    assert!(report.unreadable.is_empty(), "{:?}", report.unreadable);
}

#[test]
fn posts_racing_into_one_batch_across_a_merge_keep_the_list_right() {
    let dir = tempfile::tempdir().unwrap();
    racing(dir.path().join("forum.redb").to_str().unwrap());
}

#[test]
fn the_list_is_right_on_postgres_too() {
    let Some(base) = support::server() else {
        return;
    };
    one_by_one(&support::fresh_url(&base, "list_seq"));
    racing(&support::fresh_url(&base, "list_race"));
}

//! Figures 19 and 20: `search` that does not grow with the forum, and the cost of
//! replaying an idempotent post (SPEC §14.3, §14.4).

use std::path::Path;

use parley_forum::{Forum, Right, TokenSpec};
use serde_json::{json, Value};

use crate::measure::{median, rounds, time_calls};
use crate::report::{Row, Target};
use crate::workload::{body, open, post, str_at};
use crate::{Res, Sizes};

/// Messages that hold the searched word, spread over the forum.
const HOLDERS: usize = 10;
/// The searched word: no generated body holds it.
const RARE: &str = "zeppelin";

fn token(forum: &Forum, handle: &str) -> Res<String> {
    forum
        .create_token(&TokenSpec::llm(handle, &[Right::Read, Right::Write]))
        .map_err(|e| format!("token {handle}: {e}"))
}

/// A forum of `messages` asks from eight writers at once (the group commit
/// batches them), `HOLDERS` of them holding [`RARE`].
fn search_forum(path: &Path, messages: usize) -> Res<(Forum, String)> {
    let forum = open(path, false)?;
    let writers: Vec<String> = (0..8)
        .map(|k| token(&forum, &format!("w{k}")))
        .collect::<Res<_>>()?;
    let every = messages / HOLDERS;
    let envelopes: Vec<Value> = (0..messages)
        .map(|i| {
            let mut text = body(i as u64);
            if i % every == every / 2 {
                text.truncate(400);
                text.push_str(&format!(" {RARE}"));
            }
            json!({ "kind": "ask", "body": text })
        })
        .collect();
    let filled: Vec<Res<()>> = std::thread::scope(|s| {
        let lanes: Vec<_> = (0..8)
            .map(|w| {
                let (forum, writer, envelopes) = (&forum, writers[w].as_str(), &envelopes);
                s.spawn(move || -> Res<()> {
                    for envelope in envelopes.iter().skip(w).step_by(8) {
                        forum
                            .call(Some(writer), "post", envelope)
                            .map_err(|e| format!("filling the search forum: {e}"))?;
                    }
                    Ok(())
                })
            })
            .collect();
        lanes
            .into_iter()
            .map(|lane| {
                lane.join()
                    .unwrap_or_else(|_| Err("a filling thread panicked".into()))
            })
            .collect()
    });
    filled.into_iter().collect::<Res<Vec<()>>>()?;
    Ok((forum, writers[0].clone()))
}

fn search_cost(forum: &Forum, token: &str, calls: usize) -> Res<f64> {
    let args = json!({ "q": RARE });
    let found = forum
        .call(Some(token), "search", &args)
        .map_err(|e| format!("search: {e}"))?;
    let n = found["items"].as_array().map_or(0, Vec::len);
    if n != HOLDERS {
        return Err(format!("search found {n} messages, not {HOLDERS}"));
    }
    time_calls(calls, || {
        forum
            .call(Some(token), "search", &args)
            .map(drop)
            .map_err(|e| format!("search: {e}"))
    })
}

/// Figure 19: `search` for a word held by 10 messages, on a forum of `big`
/// messages against one of `small`.
pub fn search(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let (big, big_token) = search_forum(&dir.join("search-big.redb"), sizes.search_big)?;
    let (small, small_token) = search_forum(&dir.join("search-small.redb"), sizes.search_small)?;
    let calls = sizes.read_calls;
    let mut m_big = || search_cost(&big, &big_token, calls);
    let mut m_small = || search_cost(&small, &small_token, calls);
    let series = rounds(sizes.reps, &mut [&mut m_big, &mut m_small])?;
    Ok(Row::new(
        "19",
        &format!("search, a word in {HOLDERS} messages, {} messages", sizes.search_big),
        &format!("the same on {} messages", sizes.search_small),
        "us/call",
        Target::RatioAtMost(1.5),
    )
    .measured(median(&series[0]), Some(median(&series[1])))
    .with_detail(json!({ "big": sizes.search_big, "small": sizes.search_small, "calls": calls, "series": series })))
}

/// Figure 20: a retried post under its idempotency key (a replay: nothing
/// written) against `get_thread` of a one-message thread, on one durable forum.
pub fn replay(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let forum = open(&dir.join("replay.redb"), true)?;
    let writer = token(&forum, "writer")?;
    let envelope = json!({ "kind": "ask", "body": body(1), "idempotency_key": "fig-20" });
    let first = post(&forum, &writer, &envelope)?;
    let thread = str_at(&first, &["thread", "id"])?;
    let calls = sizes.read_calls;
    let mut m_replay = || {
        time_calls(calls, || {
            let again = post(&forum, &writer, &envelope)?;
            if again["replayed"] != json!(true) {
                return Err("the retry was not a replay".to_string());
            }
            Ok(())
        })
    };
    let mut m_read = || {
        time_calls(calls, || {
            forum
                .call(Some(&writer), "get_thread", &json!({ "thread": thread }))
                .map(drop)
                .map_err(|e| format!("get_thread: {e}"))
        })
    };
    let series = rounds(sizes.reps, &mut [&mut m_replay, &mut m_read])?;
    Ok(Row::new(
        "20",
        "replay of an idempotent post (durable forum)",
        "get_thread of a one-message thread",
        "us/call",
        Target::RatioAtMost(1.5),
    )
    .measured(median(&series[0]), Some(median(&series[1])))
    .with_detail(json!({ "calls": calls, "series": series })))
}

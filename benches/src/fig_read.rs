//! Figures 5–7: reads that must not grow with the forum, and `get_thread` against
//! the bare cost of serializing its result.

use std::path::Path;

use parley_forum::{Forum, Right, TokenSpec};
use serde_json::{json, Value};

use crate::measure::{median, rounds, time_calls};
use crate::report::{Row, Target};
use crate::workload::{body, open, post, str_at};
use crate::{Res, Sizes};

/// New items a `since` read returns in figures 5 and 6.
const NEW: usize = 10;

pub(crate) fn token(forum: &Forum, handle: &str) -> Res<String> {
    forum
        .create_token(&TokenSpec::llm(handle, &[Right::Read, Right::Write]))
        .map_err(|e| format!("token {handle}: {e}"))
}

pub(crate) fn call(forum: &Forum, token: &str, op: &str, args: &Value) -> Res<Value> {
    forum
        .call(Some(token), op, args)
        .map_err(|e| format!("{op} failed: {e}"))
}

/// Pages `op` to its end and returns the final cursor.
pub(crate) fn cursor_at_end(forum: &Forum, token: &str, op: &str) -> Res<String> {
    let mut args = json!({ "limit": 200 });
    loop {
        let page = call(forum, token, op, &args)?;
        let cursor = str_at(&page, &["cursor"])?;
        if page["more"] != json!(true) {
            return Ok(cursor);
        }
        args["since"] = json!(cursor);
    }
}

/// A read on a forum, set up so that it returns exactly `NEW` items.
struct SinceRead {
    forum: Forum,
    reader: String,
    op: &'static str,
    args: Value,
}

impl SinceRead {
    fn check(&self) -> Res<()> {
        let got = call(&self.forum, &self.reader, self.op, &self.args)?;
        let n = got["items"].as_array().map_or(0, Vec::len);
        if n != NEW || got["more"] != json!(false) {
            return Err(format!("{} since: expected {NEW} items, got {n}", self.op));
        }
        Ok(())
    }

    fn cost(&self, calls: usize) -> Res<f64> {
        time_calls(calls, || {
            call(&self.forum, &self.reader, self.op, &self.args).map(drop)
        })
    }
}

/// A forum of `threads` open questions (each awaiting anyone, so each is in the
/// reader's inbox); the read is the inbox since a cursor taken before the last `NEW`.
fn inbox_forum(path: &Path, threads: usize) -> Res<SinceRead> {
    let forum = open(path, false)?;
    let askers: Vec<String> = (0..4)
        .map(|k| token(&forum, &format!("asker{k}")))
        .collect::<Res<_>>()?;
    let reader = token(&forum, "reader")?;
    let ask = |i: usize| {
        post(
            &forum,
            &askers[i % 4],
            &json!({"kind": "ask", "body": body(i as u64)}),
        )
    };
    for i in 0..threads - NEW {
        ask(i)?;
    }
    let since = cursor_at_end(&forum, &reader, "get_inbox")?;
    for i in threads - NEW..threads {
        ask(i)?;
    }
    let args = json!({ "since": since });
    Ok(SinceRead {
        forum,
        reader,
        op: "get_inbox",
        args,
    })
}

/// A forum of `events` events: questions answered, then decided by their asker
/// (two transitions each); the read is the event log since a cursor taken before
/// the last `NEW`.
fn events_forum(path: &Path, events: usize) -> Res<SinceRead> {
    let forum = open(path, false)?;
    let askers: Vec<String> = (0..4)
        .map(|k| token(&forum, &format!("asker{k}")))
        .collect::<Res<_>>()?;
    let answerer = token(&forum, "answerer")?;
    let mut seq = 0u64;
    let mut thread = |i: usize| -> Res<()> {
        let asker = &askers[i % 4];
        seq += 3;
        let asked = post(&forum, asker, &json!({"kind": "ask", "body": body(seq)}))?;
        let th = str_at(&asked, &["thread", "id"])?;
        post(
            &forum,
            &answerer,
            &json!({"kind": "answer", "thread": th, "body": body(seq + 1)}),
        )?;
        post(
            &forum,
            asker,
            &json!({"kind": "decide", "thread": th, "body": body(seq + 2)}),
        )?;
        Ok(())
    };
    let threads = events / 2;
    for i in 0..threads - NEW / 2 {
        thread(i)?;
    }
    let since = cursor_at_end(&forum, &answerer, "get_events")?;
    for i in threads - NEW / 2..threads {
        thread(i)?;
    }
    let args = json!({ "since": since });
    Ok(SinceRead {
        forum,
        reader: answerer,
        op: "get_events",
        args,
    })
}

fn since_figure(
    id: &str,
    what: &str,
    sizes: &Sizes,
    build: impl Fn(&Path, usize) -> Res<SinceRead>,
    dir: &Path,
) -> Res<Row> {
    let big = build(&dir.join(format!("fig{id}-big.redb")), sizes.big)?;
    let small = build(&dir.join(format!("fig{id}-small.redb")), sizes.small)?;
    big.check()?;
    small.check()?;
    let calls = sizes.read_calls;
    big.cost(calls / 10 + 1)?;
    small.cost(calls / 10 + 1)?;
    let series = rounds(
        sizes.reps,
        &mut [&mut || big.cost(calls), &mut || small.cost(calls)],
    )?;
    Ok(Row::new(
        id,
        &format!(
            "{what} since, {NEW} new, {} {}",
            sizes.big,
            if id == "5" { "threads" } else { "events" }
        ),
        &format!(
            "the same read on a forum of {} {}",
            sizes.small,
            if id == "5" { "threads" } else { "events" }
        ),
        "us/call",
        Target::RatioAtMost(1.5),
    )
    .measured(median(&series[0]), Some(median(&series[1])))
    .with_detail(
        json!({ "big": sizes.big, "small": sizes.small, "calls_per_rep": calls, "series": series }),
    ))
}

/// Figure 5.
pub fn inbox(dir: &Path, sizes: &Sizes) -> Res<Row> {
    since_figure("5", "get_inbox", sizes, inbox_forum, dir)
}

/// Figure 6.
pub fn events(dir: &Path, sizes: &Sizes) -> Res<Row> {
    since_figure("6", "get_events", sizes, events_forum, dir)
}

/// A thread of `len` messages as a tree: each reply goes under an earlier message
/// of another author, at most 24 levels deep.
pub(crate) fn build_thread(forum: &Forum, len: usize) -> Res<(String, String)> {
    let authors: Vec<String> = (0..4)
        .map(|k| token(forum, &format!("t{k}")))
        .collect::<Res<_>>()?;
    let root = post(forum, &authors[0], &json!({"kind": "ask", "body": body(1)}))?;
    let thread = str_at(&root, &["thread", "id"])?;
    // (message id, author, depth)
    let mut placed: Vec<(String, usize, usize)> = vec![(str_at(&root, &["message", "id"])?, 0, 0)];
    let kinds = [
        "note", "answer", "note", "object", "note", "propose", "note", "ask",
    ];
    for i in 1..len {
        let mut pick = (i * 7919) % placed.len();
        while placed[pick].2 >= 24 {
            pick = (pick + 1) % placed.len();
        }
        let (parent, parent_author, depth) = placed[pick].clone();
        let author = (parent_author + 1 + i % 3) % 4;
        let env =
            json!({"kind": kinds[i % kinds.len()], "parent": parent, "body": body(i as u64 + 1)});
        let done = post(forum, &authors[author], &env)?;
        placed.push((str_at(&done, &["message", "id"])?, author, depth + 1));
    }
    Ok((authors[1].clone(), thread))
}

/// Figure 7: `get_thread` of a 1000-message thread against `serde_json::to_string`
/// of the very value it returns.
pub fn thread(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let forum = open(&dir.join("fig7.redb"), false)?;
    let (reader, thread) = build_thread(&forum, sizes.thread_len)?;
    let args = json!({ "thread": thread });
    let result = call(&forum, &reader, "get_thread", &args)?;
    if result["thread"]["message_count"] != json!(sizes.thread_len) {
        return Err(format!(
            "thread holds {} messages",
            result["thread"]["message_count"]
        ));
    }
    let calls = (sizes.read_calls / 4).max(5);
    let mut m_call = || {
        time_calls(calls, || {
            call(&forum, &reader, "get_thread", &args).map(drop)
        })
    };
    let mut m_json = || {
        time_calls(calls, || {
            serde_json::to_string(&result)
                .map(|s| std::hint::black_box(s.len()))
                .map(drop)
                .map_err(|e| e.to_string())
        })
    };
    // The typed read of the same thread builds no `Value`: its time, beside the
    // figure, separates the engine's own work from the cost of a map per message.
    let session = forum.session(&reader);
    let mut m_typed = || {
        time_calls(calls, || {
            session
                .thread(thread.as_str())
                .map(|t| drop(std::hint::black_box(t)))
                .map_err(|e| format!("Session::thread failed: {e}"))
        })
    };
    m_call()?;
    m_json()?;
    m_typed()?;
    let series = rounds(sizes.reps, &mut [&mut m_call, &mut m_json, &mut m_typed])?;
    let bytes = serde_json::to_string(&result).map_or(0, |s| s.len());
    let typed = median(&series[2]);
    let typed_ratio = typed / median(&series[1]);
    Ok(Row::new(
        "7",
        &format!("get_thread of {} messages", sizes.thread_len),
        "serde_json::to_string of the same result value",
        "us/call",
        Target::RatioAtMost(2.0),
    )
    .measured(median(&series[0]), Some(median(&series[1])))
    .with_detail(json!({
        "messages": sizes.thread_len, "json_bytes": bytes, "calls_per_rep": calls,
        "typed_session_us": typed, "typed_session_ratio": typed_ratio, "series": series,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_return_exactly_the_new_items() {
        let dir = tempfile::tempdir().unwrap();
        inbox_forum(&dir.path().join("i.redb"), 250)
            .unwrap()
            .check()
            .unwrap();
        events_forum(&dir.path().join("e.redb"), 230)
            .unwrap()
            .check()
            .unwrap();
    }

    #[test]
    fn the_tree_thread_is_built_whole() {
        let dir = tempfile::tempdir().unwrap();
        let forum = open(&dir.path().join("t.redb"), false).unwrap();
        let (reader, thread) = build_thread(&forum, 120).unwrap();
        let got = call(&forum, &reader, "get_thread", &json!({ "thread": thread })).unwrap();
        assert_eq!(got["thread"]["message_count"], 120);
    }
}

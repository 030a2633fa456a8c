//! Figure 24: `get_digest` (SPEC §17) of a long thread against `get_thread` of the
//! same thread, in the same run.
//!
//! The thread is figure 7's: a tree of `thread_len` messages (1000 by default) of
//! four authors, with asks, answers, notes, objections and proposals, bodies of
//! 300–500 characters. Both reads go through the generic call and return JSON, as
//! an agent over MCP or HTTP would see them.

use std::path::Path;

use serde_json::{json, Value};

use crate::fig_read::{build_thread, call};
use crate::measure::{median, rounds, time_calls};
use crate::report::{Row, Target};
use crate::workload::open;
use crate::{Res, Sizes};

/// Figure 24. Skipped (with the reason) when the engine has no `get_digest`.
pub fn digest(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "24",
        &format!("get_digest of a {}-message thread", sizes.thread_len),
        "get_thread of the same thread",
        "us/call",
        Target::RatioAtMost(0.3),
    );
    if !parley_forum::OPERATIONS.contains(&"get_digest") {
        return Ok(row.skip("this engine has no get_digest (SPEC §17)"));
    }
    let forum = open(&dir.join("fig24.redb"), false)?;
    let (reader, thread) = build_thread(&forum, sizes.thread_len)?;
    let args = json!({ "thread": thread });
    let digest = call(&forum, &reader, "get_digest", &args)?;
    check(&digest, sizes.thread_len)?;
    let calls = (sizes.read_calls / 4).max(5);
    let mut m_digest = || {
        time_calls(calls, || {
            call(&forum, &reader, "get_digest", &args).map(drop)
        })
    };
    let mut m_thread = || {
        time_calls(calls, || {
            call(&forum, &reader, "get_thread", &args).map(drop)
        })
    };
    m_digest()?;
    m_thread()?;
    let series = rounds(sizes.reps, &mut [&mut m_digest, &mut m_thread])?;
    let bytes = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
    let whole = call(&forum, &reader, "get_thread", &args)?;
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "messages": sizes.thread_len,
            "digest_json_bytes": bytes(&digest),
            "thread_json_bytes": bytes(&whole),
            "open_questions": digest["open_questions"].as_array().map_or(0, Vec::len),
            "omitted": digest["omitted"],
            "calls_per_rep": calls,
            "series": series,
        })))
}

/// The digest covers the whole thread: what it shows plus what it left out is
/// every message.
fn check(digest: &Value, len: usize) -> Res<()> {
    let mut shown: Vec<&Value> = vec![&digest["root"]["id"]];
    if !digest["decision"].is_null() {
        shown.push(&digest["decision"]["id"]);
    }
    for key in ["open_questions", "recent"] {
        for m in digest[key].as_array().ok_or("a digest without lists")? {
            shown.push(&m["id"]);
        }
    }
    shown.sort_by_key(|v| v.to_string());
    shown.dedup();
    let omitted = digest["omitted"].as_u64().ok_or("no omitted")? as usize;
    if shown.len() + omitted != len {
        return Err(format!(
            "the digest shows {} messages and omits {omitted} of {len}",
            shown.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figure's thread yields a digest that covers it.
    #[test]
    fn the_digest_of_the_figure_s_thread_covers_it() {
        let dir = tempfile::tempdir().unwrap();
        let forum = open(&dir.path().join("d.redb"), false).unwrap();
        let (reader, thread) = build_thread(&forum, 120).unwrap();
        let d = call(&forum, &reader, "get_digest", &json!({ "thread": thread })).unwrap();
        check(&d, 120).unwrap();
        assert_eq!(d["recent"].as_array().unwrap().len(), 5);
    }
}

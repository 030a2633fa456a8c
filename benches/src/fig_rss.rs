//! Figure 11: peak resident memory of a process that opens a large forum, reads
//! it and appends to it. The forum is built here; the measuring happens in a child
//! process (this binary, re-executed with the hidden `rss-child` command), so the
//! building leaves no trace in the figure.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::report::{Row, Target};
use crate::workload::{body, open, post, str_at};
use crate::{Res, Sizes};

/// Messages per thread of the built forum.
const THREAD_LEN: usize = 20;

fn token(forum: &parley_forum::Forum, handle: &str) -> Res<String> {
    use parley_forum::{Right, TokenSpec};
    forum
        .create_token(&TokenSpec::llm(handle, &[Right::Read, Right::Write]))
        .map_err(|e| format!("token {handle}: {e}"))
}

/// Builds a forum of `messages` messages in threads of 20 (a question, an answer,
/// notes), non-durable for speed; returns what the child needs to know.
fn build(path: &Path, messages: usize) -> Res<Value> {
    let forum = open(path, false)?;
    let authors: Vec<String> = (0..4)
        .map(|k| token(&forum, &format!("a{k}")))
        .collect::<Res<_>>()?;
    let reader = token(&forum, "reader")?;
    let started = Instant::now();
    let mut seq = 0u64;
    let mut first_thread = None;
    let mut written = 0;
    while written < messages {
        let asker = (written / THREAD_LEN) % 4;
        seq += 1;
        let asked = post(
            &forum,
            &authors[asker],
            &json!({"kind": "ask", "body": body(seq)}),
        )?;
        let thread = str_at(&asked, &["thread", "id"])?;
        first_thread.get_or_insert_with(|| thread.clone());
        written += 1;
        for j in 0..(THREAD_LEN - 1).min(messages - written) {
            seq += 1;
            let author = (asker + 1 + j % 3) % 4;
            let kind = if j == 0 { "answer" } else { "note" };
            post(
                &forum,
                &authors[author],
                &json!({"kind": kind, "thread": thread, "body": body(seq)}),
            )?;
            written += 1;
        }
        if written % 100_000 < THREAD_LEN {
            eprintln!(
                "  figure 11: {written} messages in {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(json!({
        "authors": authors, "reader": reader, "thread": first_thread,
        "build_seconds": started.elapsed().as_secs_f64(),
    }))
}

/// Figure 11.
pub fn rss(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let path = dir.join("fig11.redb");
    let facts = build(&path, sizes.rss_messages)?;
    let facts_path = dir.join("fig11.json");
    std::fs::write(&facts_path, facts.to_string())
        .map_err(|e| format!("{}: {e}", facts_path.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let out = Command::new(exe)
        .arg("rss-child")
        .arg("--db")
        .arg(&path)
        .arg("--facts")
        .arg(&facts_path)
        .output()
        .map_err(|e| format!("rss child: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "rss child failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let got: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("rss child output: {e}"))?;
    let hwm_kib = got["vmhwm_kib"]
        .as_f64()
        .ok_or("rss child reported no VmHWM")?;
    let file_mib = std::fs::metadata(&path)
        .map(|m| m.len() as f64 / 1048576.0)
        .unwrap_or(0.0);
    Ok(Row::new(
        "11",
        &format!(
            "peak RSS, {}-message forum opened/read/appended",
            sizes.rss_messages
        ),
        "-",
        "MiB",
        Target::ValueAtMost(256.0),
    )
    .measured(hwm_kib / 1024.0, None)
    .with_detail(json!({
        "messages": sizes.rss_messages,
        "build_seconds": facts["build_seconds"],
        "file_mib": file_mib,
        "child": got,
    })))
}

/// Peak and current resident set of this process, in KiB.
fn memory() -> Res<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("/proc/self/status: {e}"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| format!("{name} missing from /proc/self/status"))
    };
    Ok((field("VmHWM:")?, field("VmRSS:")?))
}

/// The child: opens the forum durable, reads a thread, an inbox page, a thread
/// list page and an events page, appends posts, and prints its peak RSS.
pub fn child(db: &Path, facts: &Path, appends: usize) -> Res<()> {
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(facts).map_err(|e| e.to_string())?)
            .map_err(|e| format!("facts: {e}"))?;
    let (before_open, _) = memory()?;
    let started = Instant::now();
    let forum = open(db, true)?;
    let opened_ms = started.elapsed().as_secs_f64() * 1e3;
    let reader = str_at(&facts, &["reader"])?;
    let thread = str_at(&facts, &["thread"])?;
    let read = |op: &str, args: Value| {
        forum
            .call(Some(&reader), op, &args)
            .map_err(|e| format!("{op}: {e}"))
    };
    read("get_thread", json!({ "thread": thread }))?;
    let inbox = read("get_inbox", json!({ "limit": 200 }))?;
    read(
        "get_inbox",
        json!({ "since": inbox["cursor"], "limit": 200 }),
    )?;
    read("list_threads", json!({ "limit": 200 }))?;
    read("get_events", json!({ "limit": 200 }))?;
    let authors: Vec<String> = facts["authors"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if authors.len() < 2 {
        return Err("facts name no authors".into());
    }
    for i in 0..appends {
        let seq = 10_000_000_000 + i as u64;
        let env = if i % 4 == 0 {
            json!({"kind": "ask", "body": body(seq)})
        } else {
            json!({"kind": "note", "thread": thread, "body": body(seq)})
        };
        // The thread's root is by author 0; authors 1.. may write under it.
        post(&forum, &authors[1 + i % (authors.len() - 1)], &env)?;
    }
    read("get_thread", json!({ "thread": thread }))?;
    let (hwm, rss) = memory()?;
    println!(
        "{}",
        json!({ "vmhwm_kib": hwm, "vmrss_kib": rss, "vmhwm_before_open_kib": before_open,
                "open_ms": opened_ms, "appends": appends })
    );
    Ok(())
}

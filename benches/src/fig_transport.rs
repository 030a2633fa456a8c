//! Figures 8 and 10: what a transport or a binding adds on top of the generic call.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::measure::{median, micros_per, paired_reps, rounds, SLICE};
use crate::report::{Row, Target};
use crate::workload::{open, post, Cast};
use crate::{Res, Sizes};

fn mcp_request(id: usize, envelope: &Value) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "post", "arguments": envelope,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string()
}

/// Figure 8: `forum.mcp` with a `tools/call post` request (text in, text out)
/// against `forum.call("post")` (a parsed envelope in, a value out), both on one
/// non-durable forum so that the transport's share is not hidden behind fsync. The
/// two take turns in slices within each repetition (see [`SLICE`]).
pub fn mcp(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let forum = open(&dir.join("fig8.redb"), false)?;
    let cast = Cast::new(&forum, 1, 64)?;
    let token = cast.writers[0].clone();
    let n = sizes.mcp_posts;
    let mut next_id = 0usize;
    // One repetition: `n` posts each way, on this thread. Returns µs per call of
    // each.
    let rep = |count: usize| -> Res<(f64, f64)> {
        let envelopes = cast.batch(1, 2 * count).remove(0);
        let (mut t_mcp, mut t_call) = (Duration::ZERO, Duration::ZERO);
        for pair in envelopes.chunks(2 * SLICE) {
            let (by_mcp, by_call) = pair.split_at(pair.len() / 2);
            let requests: Vec<String> = by_mcp
                .iter()
                .map(|env| {
                    next_id += 1;
                    mcp_request(next_id, env)
                })
                .collect();
            let start = Instant::now();
            for req in &requests {
                let resp = forum.mcp(Some(&token), req).ok_or("no MCP response")?;
                // The flag sits at the end of the response: look there, so that
                // the check does not scan the whole text inside the timed loop
                // (the generic call's loop checks nothing of the kind).
                let flag = resp.rfind("\"isError\":").map(|at| &resp[at..]);
                if !flag.is_some_and(|f| f.starts_with("\"isError\":false")) {
                    return Err(format!("MCP post failed: {resp}"));
                }
            }
            t_mcp += start.elapsed();
            let start = Instant::now();
            for env in by_call {
                post(&forum, &token, env)?;
            }
            t_call += start.elapsed();
        }
        Ok((micros_per(t_mcp, count), micros_per(t_call, count)))
    };
    let series = paired_reps(sizes.reps, n, rep)?;
    let (mcp, call) = (median(&series[0]), median(&series[1]));
    Ok(Row::new(
        "8",
        "MCP tools/call post in-process (forum.mcp)",
        "the generic call forum.call(\"post\"), same non-durable forum",
        "us/call",
        Target::RatioAtMost(1.2),
    )
    .measured(mcp, Some(call))
    .with_detail(json!({ "posts_per_rep": n, "slice": SLICE, "durable": false, "series": series })))
}

/// The Rust half of figure 10: the generic call `post` on a fresh non-durable forum
/// set up exactly as `benches/python_call.py` sets up its own.
pub fn rust_call(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let n = sizes.call_posts;
    let mut rep = 0;
    let mut one = || -> Res<f64> {
        rep += 1;
        let forum = open(&dir.join(format!("fig10-rust-{rep}.redb")), false)?;
        let cast = Cast::new(&forum, 1, 64)?;
        for env in &cast.batch(1, 50)[0] {
            post(&forum, &cast.writers[0], env)?;
        }
        let envelopes = &cast.batch(1, n)[0];
        let start = std::time::Instant::now();
        for env in envelopes {
            post(&forum, &cast.writers[0], env)?;
        }
        Ok(micros_per(start.elapsed(), n))
    };
    let series = rounds(sizes.reps, &mut [&mut one])?;
    Ok(Row::new(
        "10-rust",
        "Rust forum.call(\"post\"), non-durable",
        "-",
        "us/call",
        Target::None,
    )
    .measured(median(&series[0]), None)
    .with_detail(json!({ "posts_per_rep": n, "durable": false, "series": series })))
}

fn python() -> String {
    if let Ok(p) = std::env::var("PARLEY_BENCH_PYTHON") {
        return p;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".into()
}

/// Figure 10, run through `benches/python_call.py`, which alternates Python
/// repetitions with runs of `parley-bench --only 10-rust`.
pub fn python_call(dir: &Path, sizes: &Sizes, quick: bool) -> Res<Row> {
    let row = Row::new(
        "10",
        "Python Forum.call(\"post\"), non-durable",
        "Rust forum.call(\"post\"), same settings",
        "us/call",
        Target::RatioAtMost(1.5),
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python_call.py");
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let mut cmd = Command::new(python());
    cmd.arg(&script)
        .arg("--json")
        .arg("--bench-bin")
        .arg(&exe)
        .arg("--dir")
        .arg(dir)
        .arg("--reps")
        .arg(sizes.reps.to_string());
    if quick {
        cmd.arg("--quick");
    }
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => return Ok(row.skip(format!("cannot run {}: {e}", python()))),
    };
    if !out.status.success() {
        return Err(format!(
            "python_call.py failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let rows: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("python_call.py printed no JSON: {e}"))?;
    let got = rows
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == json!(10)))
        .ok_or("python_call.py printed no row 10")?;
    if let Some(reason) = got["skipped"].as_str() {
        return Ok(row.skip(reason));
    }
    match (got["value"].as_f64(), got["baseline"].as_f64()) {
        (Some(v), Some(b)) => Ok(row.measured(v, Some(b)).with_detail(got["detail"].clone())),
        _ => Err(format!("python_call.py row without figures: {got}")),
    }
}

//! Figure 12: how soon a waiting read hears of the commit it waits for.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parley_forum::{Right, TokenSpec};
use serde_json::json;

use crate::report::{Row, Target};
use crate::workload::{open, post, str_at};
use crate::{Res, Sizes};

fn percentile(xs: &mut [f64], p: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let at = ((xs.len() as f64 - 1.0) * p).round() as usize;
    xs[at]
}

/// Figure 12: a durable forum, one agent waiting on `get_inbox` with `wait_ms`,
/// another asking it a question. Each round times, from just before the post, the
/// post's own return (the baseline) and the waiter's return (the figure).
pub fn wake(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let forum = Arc::new(open(&dir.join("listen.redb"), true)?);
    let err = |e: parley_forum::Error| e.to_string();
    let rights = [Right::Read, Right::Write];
    let asker = forum
        .create_token(&TokenSpec::llm("asker", &rights))
        .map_err(err)?;
    let waiter = forum
        .create_token(&TokenSpec::llm("waiter", &rights))
        .map_err(err)?;
    let rounds = sizes.wake_rounds;
    let (go, start) = mpsc::channel::<Option<String>>();
    let (woke, done) = mpsc::channel::<Res<(Instant, String)>>();
    let listener = {
        let forum = Arc::clone(&forum);
        std::thread::spawn(move || {
            while let Ok(Some(cursor)) = start.recv() {
                let args = json!({ "since": cursor, "wait_ms": 10_000 });
                let result = forum
                    .call(Some(&waiter), "get_inbox", &args)
                    .map_err(|e| e.to_string())
                    .and_then(|page| {
                        let at = Instant::now();
                        if page["items"].as_array().is_none_or(Vec::is_empty) {
                            return Err("the wait ended without the item".to_string());
                        }
                        Ok((at, str_at(&page, &["cursor"])?))
                    });
                if woke.send(result).is_err() {
                    break;
                }
            }
        })
    };
    let mut cursor = str_at(
        &forum
            .call(Some(&asker), "get_inbox", &json!({}))
            .map_err(err)?,
        &["cursor"],
    )?;
    let (mut posts, mut wakes) = (Vec::new(), Vec::new());
    for i in 0..rounds + 3 {
        go.send(Some(cursor.clone())).map_err(|e| e.to_string())?;
        // Let the waiter reach its wait (a commit before it would be seen at once).
        std::thread::sleep(Duration::from_millis(2));
        let ask = json!({ "kind": "ask", "to": "ainotes:waiter", "body": format!("round {i}: your turn?") });
        let t0 = Instant::now();
        post(&forum, &asker, &ask)?;
        let posted = t0.elapsed();
        let (at, next) = done.recv().map_err(|e| e.to_string())??;
        cursor = next;
        // The first rounds warm the caches.
        if i >= 3 {
            posts.push(posted.as_secs_f64() * 1e3);
            wakes.push(at.duration_since(t0).as_secs_f64() * 1e3);
        }
    }
    let _ = go.send(None);
    let _ = listener.join();
    let (post_p50, wake_p50) = (percentile(&mut posts, 0.5), percentile(&mut wakes, 0.5));
    let (post_p99, wake_p99) = (percentile(&mut posts, 0.99), percentile(&mut wakes, 0.99));
    Ok(Row::new(
        "12",
        "wake latency, commit -> waiting get_inbox returns (p99)",
        "the post's own latency (p99)",
        "ms",
        Target::AboveAtMost(1.0),
    )
    .measured(wake_p99, Some(post_p99))
    .with_detail(json!({
        "rounds": rounds,
        "wake_p50_ms": wake_p50, "post_p50_ms": post_p50,
        "wake_p99_ms": wake_p99, "post_p99_ms": post_p99,
    })))
}

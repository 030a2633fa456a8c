//! Figures 1–4: posting throughput and cost against raw redb and SQLite.

use std::path::Path;

use crate::baseline::{RawRedb, Sqlite};
use std::time::{Duration, Instant};

use crate::measure::{median, micros_per, paired_reps, rounds, SLICE};
use crate::report::{Row, Target};
use crate::workload::{open, post, post_rate, Cast};
use crate::{Res, Sizes};

/// Writer threads of figures 2 and 3.
const WRITERS: usize = 8;

/// Figures 1, 2 and 3, measured in one set of rounds: raw redb, one engine writer,
/// eight engine writers and eight SQLite writers take turns, so each ratio compares
/// series that saw the same machine.
pub fn durable(dir: &Path, sizes: &Sizes, want: &dyn Fn(&str) -> bool) -> Res<Vec<Row>> {
    let forum = open(&dir.join("durable.redb"), true)?;
    let cast = Cast::new(&forum, WRITERS, 64)?;
    let mut raw = RawRedb::create(&dir.join("raw-durable.redb"), true)?;
    let sqlite = if want("3") {
        Some(Sqlite::create(&dir.join("baseline.sqlite"), WRITERS)?)
    } else {
        None
    };
    let (single, per_writer) = (sizes.single_posts, sizes.multi_per_writer);

    // Warm-up: file growth and first-touch costs land outside the measured rounds.
    post_rate(&forum, &cast, &cast.batch(WRITERS, 4))?;
    raw.insert_rate(8)?;
    if let Some(s) = &sqlite {
        s.insert_rate(2)?;
    }

    let mut m_raw = || raw.insert_rate(single);
    let mut m_one = || post_rate(&forum, &cast, &cast.batch(1, single));
    let mut m_eight = || post_rate(&forum, &cast, &cast.batch(WRITERS, per_writer));
    let mut m_lite = || {
        sqlite
            .as_ref()
            .map_or(Ok(0.0), |s| s.insert_rate(per_writer))
    };
    let mut list: Vec<&mut dyn FnMut() -> Res<f64>> = vec![&mut m_raw, &mut m_one];
    let with_eight = want("2") || want("3");
    if with_eight {
        list.push(&mut m_eight);
    }
    if want("3") {
        list.push(&mut m_lite);
    }
    let series = rounds(sizes.reps, &mut list)?;
    let raw_rate = median(&series[0]);
    let one = median(&series[1]);

    let detail = serde_json::json!({
        "posts_per_rep_one_writer": single,
        "posts_per_rep_per_writer": per_writer,
        "writers": WRITERS,
        "reps": sizes.reps,
        "series": series,
    });
    let mut rows = Vec::new();
    if want("1") {
        rows.push(
            Row::new(
                "1",
                "durable posts/s, 1 writer",
                "raw redb, one 600-byte insert per durable transaction",
                "posts/s",
                Target::RatioAtLeast(0.7),
            )
            .measured(one, Some(raw_rate))
            .with_detail(detail.clone()),
        );
    }
    if with_eight {
        let eight = median(&series[2]);
        if want("2") {
            rows.push(
                Row::new(
                    "2",
                    "durable posts/s, 8 writer threads",
                    "figure 1: durable posts/s, 1 writer",
                    "posts/s",
                    Target::RatioAtLeast(4.0),
                )
                .measured(eight, Some(one))
                .with_detail(detail.clone()),
            );
        }
        if want("3") {
            let lite = median(&series[3]);
            rows.push(
                Row::new(
                    "3",
                    "durable posts/s, 8 writer threads",
                    "SQLite WAL synchronous=FULL, 1 row per transaction, 8 threads sharing 1 connection",
                    "posts/s",
                    Target::RatioAtLeast(2.0),
                )
                .measured(eight, Some(lite))
                .with_detail(detail),
            );
        }
    }
    Ok(rows)
}

/// Keys of figure 4's posts, unique in the run.
static KEYS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Figure 4: the cost of a non-durable post against a non-durable raw redb insert.
pub fn volatile(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let forum = open(&dir.join("volatile.redb"), false)?;
    let cast = Cast::new(&forum, 1, 64)?;
    let mut raw = RawRedb::create(&dir.join("raw-volatile.redb"), false)?;
    let n = sizes.volatile_posts;
    // Every post carries an idempotency key, as a careful client sends them
    // (SPEC §14.3), and feeds the word index.
    let keyed = |count: usize| {
        let mut batch = cast.batch(1, count).remove(0);
        for env in &mut batch {
            let key = format!(
                "fig4-{}",
                KEYS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            );
            env["idempotency_key"] = serde_json::json!(key);
        }
        batch
    };
    let writer = &cast.writers[0];
    // One repetition: `n` posts and `n` inserts, in alternating slices, on this
    // thread (as the figure's single writer). Returns µs per post and per insert.
    let rep = |count: usize| -> Res<(f64, f64)> {
        let envelopes = keyed(count);
        let (mut posts, mut inserts) = (Duration::ZERO, Duration::ZERO);
        for slice in envelopes.chunks(SLICE) {
            let start = Instant::now();
            for env in slice {
                post(&forum, writer, env)?;
            }
            posts += start.elapsed();
            inserts += raw.insert_time(slice.len())?;
        }
        Ok((micros_per(posts, count), micros_per(inserts, count)))
    };
    let series = paired_reps(sizes.reps, n, rep)?;
    Ok(Row::new(
        "4",
        "non-durable post cost, keyed, word index",
        "raw redb, one 600-byte insert per non-durable transaction",
        "us/post",
        // ≤ 4×: users feel durable latency and throughput, not a non-durable post's
        // last instructions (docs/decisions/0004-redb-file-layout.md).
        Target::RatioAtMost(4.0),
    )
    .measured(median(&series[0]), Some(median(&series[1])))
    .with_detail(serde_json::json!({
        "posts_per_rep": n, "reps": sizes.reps, "slice": SLICE, "series": series
    })))
}

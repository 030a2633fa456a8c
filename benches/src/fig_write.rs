//! Figures 1–4: posting throughput and cost against raw redb and SQLite.

use std::path::Path;

use crate::baseline::{RawRedb, Sqlite};
use crate::measure::{median, rounds};
use crate::report::{Row, Target};
use crate::workload::{open, open_redb_commit, post_rate, Cast};
use crate::{Res, Sizes};

/// Writer threads of figures 2 and 3.
const WRITERS: usize = 8;

/// Figures 1, 2 and 3, measured in one set of rounds: raw redb, one engine writer,
/// eight engine writers and eight SQLite writers take turns, so each ratio compares
/// series that saw the same machine. The engine's series run twice, through the
/// page log and through redb's own durable commit (rows `1r`–`3r`), and rows
/// `1g` and `2g` give the log's gain: the page log's posts/s over redb's commit's.
pub fn durable(dir: &Path, sizes: &Sizes, want: &dyn Fn(&str) -> bool) -> Res<Vec<Row>> {
    let forum = open(&dir.join("durable.redb"), true)?;
    let cast = Cast::new(&forum, WRITERS, 64)?;
    let plain = open_redb_commit(&dir.join("durable-redb-commit.redb"))?;
    let plain_cast = Cast::new(&plain, WRITERS, 64)?;
    let mut raw = RawRedb::create(&dir.join("raw-durable.redb"), true)?;
    let sqlite = if want("3") {
        Some(Sqlite::create(&dir.join("baseline.sqlite"), WRITERS)?)
    } else {
        None
    };
    let (single, per_writer) = (sizes.single_posts, sizes.multi_per_writer);

    // Warm-up: file growth and first-touch costs land outside the measured rounds.
    post_rate(&forum, &cast, &cast.batch(WRITERS, 4))?;
    post_rate(&plain, &plain_cast, &plain_cast.batch(WRITERS, 4))?;
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
    let mut m_one_plain = || post_rate(&plain, &plain_cast, &plain_cast.batch(1, single));
    let mut m_eight_plain =
        || post_rate(&plain, &plain_cast, &plain_cast.batch(WRITERS, per_writer));
    // Every series always runs (a skipped one would shift the indices below); the
    // SQLite one costs nothing when figure 3 is not asked for.
    let mut list: Vec<&mut dyn FnMut() -> Res<f64>> = vec![
        &mut m_raw,
        &mut m_one,
        &mut m_eight,
        &mut m_lite,
        &mut m_one_plain,
        &mut m_eight_plain,
    ];
    let series = rounds(sizes.reps, &mut list)?;
    let raw_rate = median(&series[0]);
    let one = median(&series[1]);
    let one_plain = median(&series[4]);
    let eight_plain = median(&series[5]);
    let with_eight = want("2") || want("3");

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
                .with_detail(detail.clone()),
            );
        }
    }
    rows.extend(without_log(
        want,
        Plain {
            raw: raw_rate,
            one,
            eight: median(&series[2]),
            lite: median(&series[3]),
            one_plain,
            eight_plain,
        },
        &detail,
    ));
    Ok(rows)
}

/// The medians of figures 1–3's series.
struct Plain {
    raw: f64,
    one: f64,
    eight: f64,
    lite: f64,
    one_plain: f64,
    eight_plain: f64,
}

/// Figures 1–3 measured over redb's own durable commit (no page log), and the
/// log's gain over it: the numbers its keeping is decided by.
fn without_log(want: &dyn Fn(&str) -> bool, m: Plain, detail: &serde_json::Value) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut row = |id: &str, figure: &str, base: &str, target, value, baseline| {
        rows.push(
            Row::new(id, figure, base, "posts/s", target)
                .measured(value, Some(baseline))
                .with_detail(detail.clone()),
        );
    };
    if want("1") {
        row(
            "1r",
            "figure 1 over redb's durable commit, no page log",
            "raw redb, one 600-byte insert per durable transaction",
            Target::RatioAtLeast(0.7),
            m.one_plain,
            m.raw,
        );
        row(
            "1g",
            "durable posts/s, 1 writer, page log",
            "the same over redb's durable commit (1r)",
            Target::RatioAtLeast(1.5),
            m.one,
            m.one_plain,
        );
    }
    if want("2") || want("3") {
        row(
            "2r",
            "figure 2 over redb's durable commit, no page log",
            "1r",
            Target::RatioAtLeast(4.0),
            m.eight_plain,
            m.one_plain,
        );
        row(
            "2g",
            "durable posts/s, 8 writers, page log",
            "the same over redb's durable commit (2r)",
            Target::RatioAtLeast(1.5),
            m.eight,
            m.eight_plain,
        );
    }
    if want("3") {
        row(
            "3r",
            "figure 3 over redb's durable commit, no page log",
            "SQLite WAL synchronous=FULL, 8 threads sharing 1 connection",
            Target::RatioAtLeast(2.0),
            m.eight_plain,
            m.lite,
        );
    }
    rows
}

/// Figure 4: the cost of a non-durable post against a non-durable raw redb insert.
pub fn volatile(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let forum = open(&dir.join("volatile.redb"), false)?;
    let cast = Cast::new(&forum, 1, 64)?;
    let mut raw = RawRedb::create(&dir.join("raw-volatile.redb"), false)?;
    let n = sizes.volatile_posts;
    post_rate(&forum, &cast, &cast.batch(1, n / 10 + 1))?;
    raw.insert_rate(n / 10 + 1)?;
    let mut m_post = || post_rate(&forum, &cast, &cast.batch(1, n)).map(|r| 1e6 / r);
    let mut m_raw = || raw.insert_rate(n).map(|r| 1e6 / r);
    let series = rounds(sizes.reps, &mut [&mut m_post, &mut m_raw])?;
    Ok(Row::new(
        "4",
        "non-durable post cost",
        "raw redb, one 600-byte insert per non-durable transaction",
        "us/post",
        Target::RatioAtMost(4.0),
    )
    .measured(median(&series[0]), Some(median(&series[1])))
    .with_detail(serde_json::json!({ "posts_per_rep": n, "reps": sizes.reps, "series": series })))
}

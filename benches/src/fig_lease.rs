//! Figure 23: the cost of a `lease` plus its `release` (SPEC §16.2), against one
//! durable post, in the same run and on the same forum.
//!
//! Both are durable: a lease and a release are each a write transaction of their
//! own, committed to disk before the call returns, as a post is. The pair is
//! what an agent pays to guard one piece of work; the post is what it pays to say
//! one thing. One writer calls one after the other (no concurrency, so no group
//! commit shares a sync); the two take turns in slices, as figure 22's do. Each
//! lease names a resource of its own under `bench/`, so none conflicts and none
//! renews.

use std::path::Path;
use std::time::{Duration, Instant};

use parley_forum::Forum;
use serde_json::{json, Value};

use crate::measure::{median, micros_per, paired_reps};
use crate::report::{Row, Target};
use crate::workload::{open, post, Cast};
use crate::{Res, Sizes};

/// Calls of each kind per slice: a durable call takes milliseconds, so slices of
/// a few calls already see the same machine.
const SLICE: usize = 10;

/// One lease and its release by `token`; the resource is the `n`th of its own.
fn lease_and_release(forum: &Forum, token: &str, n: usize) -> Res<()> {
    let args = json!({ "resource": format!("bench/file-{n}.rs"), "ttl_s": 60 });
    let granted = forum
        .call(Some(token), "lease", &args)
        .map_err(|e| format!("lease refused or failed: {e}"))?;
    let id = granted["lease"]["id"].clone();
    forum
        .call(Some(token), "release", &json!({ "lease": id }))
        .map_err(|e| format!("release refused or failed: {e}"))?;
    Ok(())
}

/// Figure 23. Skipped (with the reason) when the engine has no leases.
pub fn lease(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "23",
        "durable lease plus its release",
        "one durable post",
        "us/pair",
        Target::RatioAtMost(2.0),
    );
    let forum = open(&dir.join("lease.redb"), true)?;
    let cast = Cast::new(&forum, 1, 16)?;
    let writer = &cast.writers[0];
    if let Err(e) = lease_and_release(&forum, writer, 0) {
        return Ok(row.skip(format!("this engine has no leases (SPEC §16.2): {e}")));
    }
    let n = sizes.single_posts;
    let mut next = 1;
    // One repetition: `count` pairs and `count` posts, in alternating slices, the
    // order flipping from slice to slice. Returns µs per pair and per post.
    let mut rep = |count: usize| -> Res<(f64, f64)> {
        let posts: Vec<Value> = cast.batch(1, count).remove(0);
        let (mut t_pair, mut t_post) = (Duration::ZERO, Duration::ZERO);
        for (k, slice) in posts.chunks(SLICE).enumerate() {
            let mut pairs = || -> Res<Duration> {
                let start = Instant::now();
                for _ in 0..slice.len() {
                    lease_and_release(&forum, writer, next)?;
                    next += 1;
                }
                Ok(start.elapsed())
            };
            let time_posts = || -> Res<Duration> {
                let start = Instant::now();
                for env in slice {
                    post(&forum, writer, env)?;
                }
                Ok(start.elapsed())
            };
            if k % 2 == 0 {
                t_pair += pairs()?;
                t_post += time_posts()?;
            } else {
                t_post += time_posts()?;
                t_pair += pairs()?;
            }
        }
        Ok((micros_per(t_pair, count), micros_per(t_post, count)))
    };
    let series = paired_reps(sizes.reps, n, &mut rep)?;
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "pairs_per_rep": n,
            "posts_per_rep": n,
            "reps": sizes.reps,
            "slice": SLICE,
            "series": series,
        })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::config;

    /// The figure's pairs are never refused: each resource is fresh, and a
    /// released lease leaves nothing held.
    #[test]
    fn the_pairs_are_granted_and_leave_nothing_held() {
        let forum = Forum::in_memory(config(false).unwrap()).unwrap();
        let cast = Cast::new(&forum, 1, 1).unwrap();
        let writer = &cast.writers[0];
        for n in 0..50 {
            lease_and_release(&forum, writer, n).unwrap();
        }
        let held = forum.call(Some(writer), "get_leases", &json!({})).unwrap();
        assert_eq!(held["items"], json!([]));
    }
}

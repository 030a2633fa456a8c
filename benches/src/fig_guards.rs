//! Figure 22: the cost of a post with the guards profile (SPEC §15: `echoed_body`,
//! `no_progress`) on, against the same posts with it off, in the same run.
//!
//! The posts are those of figure 4 without keys: `note`s under root questions by
//! `llm` writers, fresh bodies. With the profile on, every post is judged by both
//! rules and passes them: its folded body is compared with the thread's echo
//! window (8 messages by default) and the thread's count of messages since
//! progress is read and raised. `progress_max_messages` is raised on both forums
//! so that the count never reaches it (a refused post would end the figure); the
//! work of the check is the same below the limit as at it.

use std::path::Path;
use std::time::{Duration, Instant};

use parley_forum::{Config, Forum};
use serde_json::{json, Value};

use crate::measure::{median, micros_per, paired_reps, SLICE};
use crate::report::{Row, Target};
use crate::workload::{post, settings, Cast};
use crate::{Res, Sizes};

/// Root questions of each forum: the notes spread over them, so every thread
/// fills its echo window early and the window is full from then on.
const ROOTS: usize = 64;

/// The settings of one side: figure 4's (non-durable, no rate limit), the profile
/// switched by the `guards` key of the settings, and room for long threads.
pub fn guards_settings(on: bool) -> Value {
    let mut s = settings(false);
    s["guards"] = json!(on);
    s["limits"]["progress_max_messages"] = json!(1_000_000);
    s
}

/// The config of one side, or why this engine has none (no guards switch yet).
fn config(on: bool) -> Result<Config, String> {
    Config::from_json(&guards_settings(on)).map_err(|e| e.to_string())
}

/// Figure 22. Skipped (with the reason) when the engine has no guards switch.
pub fn guards(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "22",
        "non-durable post cost, guards profile on",
        "the same posts, guards profile off",
        "us/post",
        Target::RatioAtMost(1.1),
    );
    let (on_config, off_config) = match (config(true), config(false)) {
        (Ok(on), Ok(off)) => (on, off),
        (Err(e), _) | (_, Err(e)) => {
            return Ok(row.skip(format!(
                "this engine has no guards profile switch (SPEC §15): {e}"
            )))
        }
    };
    let open = |name: &str, config: Config| {
        let path = dir.join(name);
        Forum::open(&path, config).map_err(|e| format!("open {}: {e}", path.display()))
    };
    let on = open("guards-on.redb", on_config)?;
    let off = open("guards-off.redb", off_config)?;
    let cast_on = Cast::new(&on, 1, ROOTS)?;
    let cast_off = Cast::new(&off, 1, ROOTS)?;
    let n = sizes.volatile_posts;
    // One repetition: `count` posts on each forum, in alternating slices, the
    // order flipping from slice to slice. Returns µs per post, on and off.
    let rep = |count: usize| -> Res<(f64, f64)> {
        let batch_on = cast_on.batch(1, count).remove(0);
        let batch_off = cast_off.batch(1, count).remove(0);
        let (mut t_on, mut t_off) = (Duration::ZERO, Duration::ZERO);
        let slices = batch_on.chunks(SLICE).zip(batch_off.chunks(SLICE));
        for (k, (slice_on, slice_off)) in slices.enumerate() {
            let time = |forum: &Forum, cast: &Cast, slice: &[Value]| -> Res<Duration> {
                let start = Instant::now();
                for env in slice {
                    post(forum, &cast.writers[0], env)?;
                }
                Ok(start.elapsed())
            };
            if k % 2 == 0 {
                t_on += time(&on, &cast_on, slice_on)?;
                t_off += time(&off, &cast_off, slice_off)?;
            } else {
                t_off += time(&off, &cast_off, slice_off)?;
                t_on += time(&on, &cast_on, slice_on)?;
            }
        }
        Ok((micros_per(t_on, count), micros_per(t_off, count)))
    };
    let series = paired_reps(sizes.reps, n, rep)?;
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "posts_per_rep": n,
            "reps": sizes.reps,
            "slice": SLICE,
            "roots": ROOTS,
            "settings_on": guards_settings(true),
            "series": series,
        })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::post_rate;

    /// The figure's workload passes both rules: no post is refused with the
    /// profile on (when this engine has it).
    #[test]
    fn the_workload_is_never_refused_with_the_profile_on() {
        let Ok(config) = config(true) else {
            assert!(config(false).is_err(), "a switch that turns off but not on");
            return;
        };
        let forum = Forum::in_memory(config).unwrap();
        let manifest = forum.call(None, "get_manifest", &json!({})).unwrap();
        assert!(manifest["profiles"]["guards"].is_object(), "{manifest}");
        let cast = Cast::new(&forum, 1, 4).unwrap();
        // 4 roots, 200 notes: 50 llm notes per thread, over the default limit of 24.
        post_rate(&forum, &cast, &cast.batch(1, 200)).unwrap();
    }
}

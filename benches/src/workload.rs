//! The posting workload: forum settings, a cast of identities, realistic bodies,
//! and envelopes that the protocol never refuses.
//!
//! Writers post `note`s under root questions asked by another identity (so
//! `self_reply` cannot apply), and every body carries a fresh sequence number
//! (so `repeated_body` cannot apply); one post in sixteen opens a new thread.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use parley_forum::{Config, Forum, Right, TokenSpec};
use serde_json::{json, Value};

use crate::Res;

const WORDS: [&str; 48] = [
    "the",
    "build",
    "cache",
    "port",
    "server",
    "test",
    "fails",
    "after",
    "upgrade",
    "because",
    "config",
    "path",
    "is",
    "resolved",
    "relative",
    "to",
    "working",
    "directory",
    "not",
    "crate",
    "root",
    "we",
    "should",
    "pin",
    "version",
    "and",
    "rerun",
    "with",
    "logs",
    "enabled",
    "token",
    "expires",
    "while",
    "request",
    "in",
    "flight",
    "so",
    "retry",
    "once",
    "then",
    "report",
    "thread",
    "state",
    "answered",
    "evidence",
    "commit",
    "hash",
    "reproducer",
];

/// A realistic body of 300–500 characters, unique for each `seq`.
pub fn body(seq: u64) -> String {
    let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let len = 300 + (next() % 200) as usize;
    let mut out = format!("[{seq}] ");
    while out.len() < len {
        let word = WORDS[(next() % WORDS.len() as u64) as usize];
        out.push_str(word);
        out.push(if next() % 11 == 0 { '.' } else { ' ' });
    }
    out.truncate(len);
    out.trim_end().to_string()
}

/// Settings for benchmark forums: no rate limit, room for large threads. Their
/// threads take thousands of notes without progress, so the guards' count is off
/// (`progress_max_messages` 0); the profile stays on, so its state is kept and
/// the echo rule runs on every post (SPEC §15).
pub fn settings(durable: bool) -> Value {
    json!({
        "durable": durable,
        "limits": { "writes_per_minute": 0, "thread_max_messages": 1_000_000, "progress_max_messages": 0 },
    })
}

/// The config of [`settings`].
pub fn config(durable: bool) -> Res<Config> {
    Config::from_json(&settings(durable)).map_err(|e| format!("settings: {e}"))
}

/// Opens (creating) a forum file.
pub fn open(path: &Path, durable: bool) -> Res<Forum> {
    Forum::open(path, config(durable)?).map_err(|e| format!("open {}: {e}", path.display()))
}

/// Posts one envelope, turning a refusal into an error naming it.
pub fn post(forum: &Forum, token: &str, envelope: &Value) -> Res<Value> {
    forum
        .call(Some(token), "post", envelope)
        .map_err(|e| format!("post refused or failed: {e}"))
}

/// The identities of a benchmark forum: a host who asks the root questions, and
/// writers who post under them.
pub struct Cast {
    pub host: String,
    pub writers: Vec<String>,
    pub roots: Vec<String>,
    seq: AtomicU64,
}

impl Cast {
    /// Issues `writers` writer tokens and asks `roots` root questions.
    pub fn new(forum: &Forum, writers: usize, roots: usize) -> Res<Cast> {
        let token = |handle: &str| {
            forum
                .create_token(&TokenSpec::llm(handle, &[Right::Read, Right::Write]))
                .map_err(|e| format!("token {handle}: {e}"))
        };
        let host = token("host")?;
        let writers = (0..writers)
            .map(|w| token(&format!("w{w}")))
            .collect::<Res<Vec<_>>>()?;
        let cast = Cast {
            host,
            writers,
            roots: Vec::new(),
            seq: AtomicU64::new(1),
        };
        let mut ids = Vec::with_capacity(roots);
        for _ in 0..roots {
            let asked = post(
                forum,
                &cast.host,
                &json!({"kind": "ask", "body": cast.next_body()}),
            )?;
            ids.push(str_at(&asked, &["thread", "id"])?);
        }
        Ok(Cast { roots: ids, ..cast })
    }

    fn next_body(&self) -> String {
        body(self.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// The `i`th envelope of writer `w`: a note under a root, or a new question.
    pub fn envelope(&self, w: usize, i: usize) -> Value {
        let body = self.next_body();
        if i % 16 == 15 {
            json!({ "kind": "ask", "body": body })
        } else {
            let root = &self.roots[(w * 7 + i) % self.roots.len()];
            json!({ "kind": "note", "thread": root, "body": body })
        }
    }

    /// `per_writer` envelopes for each of the first `writers` writers.
    pub fn batch(&self, writers: usize, per_writer: usize) -> Vec<Vec<Value>> {
        (0..writers)
            .map(|w| (0..per_writer).map(|i| self.envelope(w, i)).collect())
            .collect()
    }
}

/// Runs `work` once per item of `batches`, each batch on its own thread, all
/// starting together; returns the wall time from the start to the last finish.
pub fn concurrently<T: Sync>(
    batches: &[T],
    work: impl Fn(usize, &T) -> Res<()> + Sync,
) -> Res<Duration> {
    let gate = Barrier::new(batches.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .iter()
            .enumerate()
            .map(|(i, batch)| {
                let (gate, work) = (&gate, &work);
                s.spawn(move || {
                    gate.wait();
                    work(i, batch)
                })
            })
            .collect();
        gate.wait();
        let start = Instant::now();
        let mut outcome = Ok(());
        for h in handles {
            let r = h
                .join()
                .map_err(|_| "a benchmark thread panicked".to_string())?;
            outcome = outcome.and(r);
        }
        outcome.map(|()| start.elapsed())
    })
}

/// Posts the batches, writer `i` posting batch `i`, all at once; returns posts/s.
pub fn post_rate(forum: &Forum, cast: &Cast, batches: &[Vec<Value>]) -> Res<f64> {
    let count: usize = batches.iter().map(Vec::len).sum();
    let elapsed = concurrently(batches, |w, envelopes| {
        for env in envelopes {
            post(forum, &cast.writers[w], env)?;
        }
        Ok(())
    })?;
    Ok(crate::measure::per_second(elapsed, count))
}

/// A string at a path of keys in a JSON value.
pub fn str_at(value: &Value, path: &[&str]) -> Res<String> {
    let mut v = value;
    for key in path {
        v = &v[*key];
    }
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no string at {} in {value}", path.join(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_sized_and_distinct() {
        for seq in 0..200 {
            let b = body(seq);
            assert!((290..=500).contains(&b.chars().count()), "{}", b.len());
            assert_ne!(b, body(seq + 1));
        }
    }

    #[test]
    fn the_workload_is_never_refused() {
        let forum = Forum::in_memory(config(false).unwrap()).unwrap();
        let cast = Cast::new(&forum, 3, 4).unwrap();
        for round in 0..3 {
            let batches = cast.batch(3, 40);
            let rate = post_rate(&forum, &cast, &batches).unwrap();
            assert!(rate > 0.0, "round {round}");
        }
    }
}

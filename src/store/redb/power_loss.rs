//! Power loss, simulated: the forum runs over a storage backend that records every
//! write, length change and sync redb makes. A power cut at any point keeps every
//! write before the last completed sync, and any subset of the later ones, some of
//! them torn at a sector. Each such crash state must open, pass redb's integrity
//! check, and hold every post acknowledged before the cut, with ids that go on.
//!
//! Sizes: `PARLEY_POWER_POSTS` posts (default 120) and `PARLEY_POWER_STATES` crash
//! states (default 160), so the test runs in seconds.
//!
//! A unit test of the store, not an integration test: its backend is a redb type,
//! which the public API never takes (`RedbStore::with_backend` is crate-private).

use std::io::Write;
use std::sync::{Arc, Mutex};

use super::RedbStore;
use crate::{Config, Durability, Forum, Right, TokenSpec};
use serde_json::{json, Value};

#[derive(Debug, Clone)]
enum Op {
    Write(u64, Vec<u8>),
    SetLen(u64),
    Sync,
}

/// What the process sees (the page cache) and every operation that made it.
#[derive(Debug, Default)]
struct Disk {
    image: Vec<u8>,
    ops: Vec<Op>,
}

#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Disk>>);

impl Recorder {
    fn ops(&self) -> usize {
        self.0.lock().unwrap().ops.len()
    }
}

fn apply(image: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write(at, data) => {
            let end = *at as usize + data.len();
            if image.len() < end {
                image.resize(end, 0);
            }
            image[*at as usize..end].copy_from_slice(data);
        }
        Op::SetLen(len) => image.resize(*len as usize, 0),
        Op::Sync => {}
    }
}

impl redb::StorageBackend for Recorder {
    fn len(&self) -> Result<u64, redb::BackendError> {
        Ok(self.0.lock().unwrap().image.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), redb::BackendError> {
        let disk = self.0.lock().unwrap();
        let end = offset as usize + out.len();
        let src = disk
            .image
            .get(offset as usize..end)
            .ok_or_else(|| std::io::Error::other("read past the end"))?;
        out.copy_from_slice(src);
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), redb::BackendError> {
        let mut disk = self.0.lock().unwrap();
        let op = Op::SetLen(len);
        apply(&mut disk.image, &op);
        disk.ops.push(op);
        Ok(())
    }

    fn sync_data(&self) -> Result<(), redb::BackendError> {
        self.0.lock().unwrap().ops.push(Op::Sync);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), redb::BackendError> {
        let mut disk = self.0.lock().unwrap();
        let op = Op::Write(offset, data.to_vec());
        apply(&mut disk.image, &op);
        disk.ops.push(op);
        Ok(())
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// A post that returned success, and how many operations had been made by then.
struct Acked {
    message: String,
    thread: String,
    ops: usize,
}

/// Posts from `writers` threads (notes under their own question, so batches mix).
fn workload(forum: &Forum, token: &str, disk: &Recorder, posts: usize) -> Vec<Acked> {
    let writers = 4;
    let acked = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for w in 0..writers {
            let acked = &acked;
            s.spawn(move || {
                let mut thread: Option<String> = None;
                for i in 0..posts / writers {
                    let args = match &thread {
                        Some(t) if i % 10 != 0 => json!({
                            "kind": "note", "thread": t, "from": {"extension": format!("w{w}")},
                            "body": format!("note {i} of writer {w}: {}", "z".repeat(i * 7 % 300))
                        }),
                        _ => json!({"kind": "ask", "body": format!("question {i} of writer {w}")}),
                    };
                    let r = forum.call(Some(token), "post", &args).unwrap();
                    let thread_id = r["thread"]["id"].as_str().unwrap().to_string();
                    let ops = disk.ops();
                    acked.lock().unwrap().push(Acked {
                        message: r["message"]["id"].as_str().unwrap().to_string(),
                        thread: thread_id.clone(),
                        ops,
                    });
                    thread = Some(thread_id);
                }
            });
        }
    });
    acked.into_inner().unwrap()
}

/// The file after a power cut just before operation `cut`: every operation up to
/// the last sync before it, then each later one kept, dropped or (a write) torn at a
/// 512-byte sector, at random.
fn crash_state(ops: &[Op], cut: usize, seed: &mut u64) -> Vec<u8> {
    let last_sync = ops[..cut]
        .iter()
        .rposition(|op| matches!(op, Op::Sync))
        .map_or(0, |i| i + 1);
    let mut image = Vec::new();
    for op in &ops[..last_sync] {
        apply(&mut image, op);
    }
    for op in &ops[last_sync..cut] {
        match (op, next(seed) % 4) {
            (_, 0) => {}
            (Op::Write(at, data), 1) if data.len() > 512 => {
                let sectors = data.len().div_ceil(512);
                let kept = (next(seed) as usize % sectors) * 512;
                apply(&mut image, &Op::Write(*at, data[..kept].to_vec()));
            }
            (op, _) => apply(&mut image, op),
        }
    }
    image
}

fn verify(image: &[u8], dir: &std::path::Path, token: &str, acked: &[&Acked]) {
    let path = dir.join("crashed.redb");
    let _ = std::fs::remove_file(&path);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(image)
        .unwrap();
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    let forum = Forum::open(&path, config).expect("a crash state opens");
    let mut views: std::collections::HashMap<&str, String> = Default::default();
    for a in acked {
        let view = views.entry(&a.thread).or_insert_with(|| {
            forum
                .call(Some(token), "get_thread", &json!({"thread": a.thread}))
                .unwrap_or_else(|e| panic!("thread {} of an acknowledged post: {e}", a.thread))
                .to_string()
        });
        assert!(
            view.contains(&format!("\"id\":\"{}\"", a.message)),
            "acknowledged {} is missing",
            a.message
        );
    }
    // Ids go on from what survived: a new post takes a fresh id.
    let r: Value = forum
        .call(
            Some(token),
            "post",
            &json!({"kind": "ask", "body": "after the cut"}),
        )
        .unwrap();
    let fresh = r["message"]["id"].as_str().unwrap();
    assert!(
        acked.iter().all(|a| a.message != fresh),
        "{fresh} reused an acknowledged id"
    );
    drop(forum);
    assert!(crate::store::check_integrity(&path).unwrap());
}

#[test]
fn every_power_cut_keeps_every_acknowledged_post() {
    let disk = Recorder::default();
    let store = RedbStore::with_backend(disk.clone(), Durability::Durable).unwrap();
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    let forum = Forum::with_store(Box::new(store), config).unwrap();
    let token = forum
        .create_token(&TokenSpec::llm("writer", &[Right::Read, Right::Write]))
        .unwrap();
    let start = disk.ops();
    let acked = workload(&forum, &token, &disk, env_usize("PARLEY_POWER_POSTS", 120));
    let ops = disk.0.lock().unwrap().ops.clone();
    drop(forum);
    let syncs = ops.iter().filter(|op| matches!(op, Op::Sync)).count();
    assert!(syncs > 10, "the workload synced ({syncs} syncs)");

    let dir = tempfile::tempdir().unwrap();
    let states = env_usize("PARLEY_POWER_STATES", 160);
    let mut seed = 0x2545_f491_4f6c_dd1d;
    for n in 0..states {
        // Cuts right after a sync, and anywhere.
        let cut = if n % 2 == 0 {
            let sync_points: Vec<usize> = ops
                .iter()
                .enumerate()
                .filter(|(i, op)| *i >= start && matches!(op, Op::Sync))
                .map(|(i, _)| i + 1)
                .collect();
            sync_points[next(&mut seed) as usize % sync_points.len()]
        } else {
            start + next(&mut seed) as usize % (ops.len() - start + 1)
        };
        let image = crash_state(&ops, cut, &mut seed);
        let before: Vec<&Acked> = acked.iter().filter(|a| a.ops <= cut).collect();
        verify(&image, dir.path(), &token, &before);
    }
}

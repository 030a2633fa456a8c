//! Crash safety: a child process posts in a loop on a file forum (one writer, or
//! four sharing batches) and is killed with
//! SIGKILL at random moments; after each kill the file reopens, passes redb's
//! integrity check and holds every post whose call had returned success.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use parley_forum::{Config, Forum, Right, TokenSpec};
use serde_json::{json, Value};

const CHILD_ENV: &str = "PARLEY_CRASH_CHILD_DB";

/// The child: posts until killed, printing each acknowledged message id.
#[test]
#[ignore = "run by `killed_writers_lose_no_acknowledged_post` as a child process"]
fn crash_child_writer() {
    let Ok(db) = std::env::var(CHILD_ENV) else {
        return;
    };
    let token = std::env::var("PARLEY_CRASH_TOKEN").unwrap();
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    let forum = Forum::open(&db, config).unwrap();
    let writers: usize = std::env::var("PARLEY_CRASH_WRITERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    std::thread::scope(|s| {
        for w in 0..writers {
            let (forum, token) = (&forum, &token);
            s.spawn(move || write_until_killed(forum, token, w));
        }
    });
}

/// One writer of the child: its own thread of notes, a new question every 50 posts.
fn write_until_killed(forum: &Forum, token: &str, writer: usize) {
    let mut thread: Option<String> = None;
    for i in 0u64.. {
        let args = match &thread {
            Some(t) if i % 50 != 0 => json!({
                "kind": "note", "thread": t, "from": {"extension": format!("w{writer}")},
                "body": format!("note {i} of {writer}")
            }),
            _ => json!({"kind": "ask", "body": format!("question {i} of {writer}")}),
        };
        let result = forum.call(Some(token), "post", &args).unwrap();
        thread = Some(result["thread"]["id"].as_str().unwrap().to_string());
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "{} {}",
            result["message"]["id"].as_str().unwrap(),
            result["thread"]["id"].as_str().unwrap()
        )
        .unwrap();
        out.flush().unwrap();
    }
}

fn pseudo_random(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn verify(db: &Path, token: &str, acked: &[(String, String)]) -> u64 {
    assert!(
        parley_forum::storage::check_integrity(db).unwrap(),
        "integrity check failed"
    );
    let forum = Forum::open(db, Config::default()).unwrap();
    let mut threads: std::collections::HashMap<String, Value> = Default::default();
    for (msg, thread) in acked {
        let view = threads.entry(thread.clone()).or_insert_with(|| {
            forum
                .call(Some(token), "get_thread", &json!({"thread": thread}))
                .unwrap()
        });
        let text = view.to_string();
        assert!(
            text.contains(&format!("\"id\":\"{msg}\"")),
            "acknowledged {msg} is missing from {thread}"
        );
    }
    // Ids stay dense and increasing: the newest thread's message count agrees with its tree.
    let listed = forum
        .call(Some(token), "list_threads", &json!({"limit": 200}))
        .unwrap();
    for item in listed["items"].as_array().unwrap() {
        let id = item["id"].as_str().unwrap();
        let view = forum
            .call(Some(token), "get_thread", &json!({"thread": id}))
            .unwrap();
        let count = view.to_string().matches("\"kind\":").count() as u64;
        assert_eq!(
            count,
            item["message_count"].as_u64().unwrap(),
            "message_count of {id}"
        );
    }
    listed["items"].as_array().unwrap().len() as u64
}

/// The names the child writes through.
#[derive(Clone, Copy)]
enum Names {
    /// The forum's own name.
    Real,
    /// A symbolic link and a hard link to it, in turn; the parent reads through the
    /// real name. A forum has one lock and one state whatever name opens it.
    Links,
}

#[test]
fn killed_writers_lose_no_acknowledged_post() {
    kill_rounds(1, "one", Names::Real);
}

/// Concurrent writers share batches, and a kill lands inside a batch's commit too.
#[test]
fn killed_concurrent_writers_lose_no_acknowledged_post() {
    kill_rounds(4, "four", Names::Real);
}

/// Posts acknowledged through a symbolic or a hard link are all there through the
/// real name after a kill, and the ids go on from them.
#[test]
fn killed_writers_through_links_lose_no_acknowledged_post() {
    kill_rounds(2, "links", Names::Links);
}

fn kill_rounds(writers: usize, name: &str, names: Names) {
    let dir = std::env::temp_dir().join(format!("parley-crash-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("forum.redb");
    let (symlink, hardlink) = (dir.join("via-symlink.redb"), dir.join("via-hardlink.redb"));
    let token = {
        let forum = Forum::open(&db, Config::default()).unwrap();
        forum
            .create_token(&TokenSpec::llm("writer", &[Right::Read, Right::Write]))
            .unwrap()
    };
    let rounds: u64 = std::env::var("PARLEY_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(12);
    let mut seed = 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id());
    if let Names::Links = names {
        std::os::unix::fs::symlink(&db, &symlink).unwrap();
        std::fs::hard_link(&db, &hardlink).unwrap();
    }
    let mut acked_total = Vec::new();
    for round in 0..rounds {
        let through = match names {
            Names::Real => &db,
            Names::Links if round % 2 == 0 => &symlink,
            Names::Links => &hardlink,
        };
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crash_child_writer",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, through)
            .env("PARLEY_CRASH_TOKEN", &token)
            .env("PARLEY_CRASH_WRITERS", writers.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let kill_after = 1 + pseudo_random(&mut seed) % (40 * writers as u64);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while let Some(Ok(line)) = lines.next() {
            let mut parts = line.split_whitespace();
            if let (Some(m), Some(t)) = (parts.next(), parts.next()) {
                if m.starts_with("msg_") {
                    acked_total.push((m.to_string(), t.to_string()));
                    seen += 1;
                }
            }
            if seen >= kill_after {
                break;
            }
        }
        // Land the kill at a random point of the next commits, not only between them.
        std::thread::sleep(std::time::Duration::from_micros(
            pseudo_random(&mut seed) % 3000,
        ));
        child.kill().unwrap(); // SIGKILL on Unix: no destructor, no flush.
        child.wait().unwrap();
        assert!(seen > 0, "the child acknowledged nothing");
        verify(&db, &token, &acked_total);
        if let Names::Links = names {
            // Every name is one file: the links still see what the real name holds.
            verify(through, &token, &acked_total);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

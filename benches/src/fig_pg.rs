//! Figures 16–18: the PostgreSQL backend. Durable posts of one engine against
//! one-row inserts into a plain table of the same database, the same posts from two
//! engines (processes: this binary, re-executed with the hidden `pg-writers`
//! command), and `get_inbox` since a cursor on a large forum against a small one.
//!
//! Every forum of a run is a fresh schema (its name carries the pid and the time),
//! dropped at the end unless `--keep`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parley_forum::Forum;
use postgres::{Client, NoTls, Statement};
use serde_json::{json, Value};

use crate::fig_read::{call, cursor_at_end, token};
use crate::measure::{median, per_second, rounds, time_calls};
use crate::report::{Row, Target};
use crate::workload::{body, concurrently, config, post, post_rate, Cast};
use crate::{Res, Sizes};

/// Why figures 16–18 are skipped when no server is named.
const NO_SERVER: &str = "no PostgreSQL server: pass --pg URL or set PARLEY_TEST_PG";
/// Writer threads of figure 16 and of its baseline.
const WRITERS: usize = 8;
/// Engines of figure 17.
const ENGINES: usize = 2;
/// New items the `since` read of figure 18 returns.
const NEW: usize = 10;
/// Threads filling figure 18's forums, and the posts each sends at once (a thread
/// per post, so that the group commit stores a bunch in one transaction).
const FILL_THREADS: usize = 4;
const FILL_BUNCH: usize = 128;

/// The PostgreSQL server of a run and the names of its forums.
pub struct Pg {
    /// The URL as given, without a `forum` parameter.
    base: String,
    /// The stem of this run's forum names: `b<pid>_<unix seconds>`.
    run: String,
    keep: bool,
}

impl Pg {
    /// The server of `--pg`, else of `PARLEY_TEST_PG`; `None` when neither is set.
    pub fn new(url: Option<&str>, keep: bool) -> Option<Pg> {
        let url = match url {
            Some(u) => u.to_string(),
            None => std::env::var("PARLEY_TEST_PG")
                .ok()
                .filter(|u| !u.is_empty())?,
        };
        let (head, query) = url.split_once('?').unwrap_or((&url, ""));
        let rest: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty() && !p.starts_with("forum="))
            .collect();
        let base = if rest.is_empty() {
            head.to_string()
        } else {
            format!("{head}?{}", rest.join("&"))
        };
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Some(Pg {
            base,
            run: format!("b{}_{secs}", std::process::id()),
            keep,
        })
    }

    /// The URL of this run's forum `name`.
    fn forum_url(&self, name: &str) -> String {
        let sep = if self.base.contains('?') { '&' } else { '?' };
        format!("{}{sep}forum={}_{name}", self.base, self.run)
    }

    /// The schema that holds this run's forum `name` (`parley_<forum>`, as
    /// `parley_postgres::PgStore::open` documents).
    fn forum_schema(&self, name: &str) -> String {
        format!("parley_{}_{name}", self.run)
    }

    fn connect(&self) -> Res<Client> {
        Client::connect(&self.base, NoTls).map_err(|e| format!("cannot reach PostgreSQL: {e}"))
    }

    /// A plain connection to the database, synchronous commit on.
    fn client(&self) -> Res<Client> {
        let mut client = self.connect()?;
        client
            .batch_execute("SET synchronous_commit TO on")
            .map_err(|e| format!("PostgreSQL: {e}"))?;
        Ok(client)
    }

    /// A setting as a new session gets it: what a durable forum's connections
    /// commit with (the engine sets `synchronous_commit` only for a volatile forum).
    fn show(&self, setting: &str) -> Res<String> {
        let row = self
            .connect()?
            .query_one(&format!("SHOW {setting}"), &[])
            .map_err(|e| format!("PostgreSQL: {e}"))?;
        Ok(row.get(0))
    }

    fn open(&self, name: &str, durable: bool) -> Res<Forum> {
        parley_postgres::open(self.forum_url(name), config(durable)?)
            .map_err(|e| format!("open the PostgreSQL forum {name}: {e}"))
    }
}

/// Drops the schemas of a run when dropped (unless `--keep`): a server named with
/// `--pg` is not left holding benchmark forums.
struct Schemas<'a> {
    pg: &'a Pg,
    names: Vec<String>,
}

impl Drop for Schemas<'_> {
    fn drop(&mut self) {
        if self.pg.keep {
            eprintln!(
                "parley-bench: keeping the PostgreSQL schemas {}",
                self.names.join(", ")
            );
            return;
        }
        let dropped = self.pg.client().and_then(|mut c| {
            let sql: String = self
                .names
                .iter()
                .map(|s| format!("DROP SCHEMA IF EXISTS {s} CASCADE;"))
                .collect();
            c.batch_execute(&sql).map_err(|e| e.to_string())
        });
        if let Err(e) = dropped {
            eprintln!("parley-bench: cannot drop the schemas of this run: {e}");
        }
    }
}

/// The baseline of figure 16: one-row inserts into a plain table, each its own
/// autocommit transaction, one connection per thread.
struct Baseline {
    conns: Vec<Mutex<(Client, Statement)>>,
    seq: AtomicU64,
}

impl Baseline {
    fn create(pg: &Pg, schema: &str, connections: usize) -> Res<Baseline> {
        let fail = |e: postgres::Error| format!("baseline table: {e}");
        pg.client()?
            .batch_execute(&format!(
                "CREATE SCHEMA {schema}; \
                 CREATE TABLE {schema}.bench_baseline (id bigserial PRIMARY KEY, body text NOT NULL)"
            ))
            .map_err(fail)?;
        let conns = (0..connections)
            .map(|_| {
                let mut c = pg.client()?;
                c.batch_execute(&format!("SET search_path TO {schema}"))
                    .map_err(fail)?;
                let insert = c
                    .prepare("INSERT INTO bench_baseline (body) VALUES ($1)")
                    .map_err(fail)?;
                Ok(Mutex::new((c, insert)))
            })
            .collect::<Res<_>>()?;
        Ok(Baseline {
            conns,
            seq: AtomicU64::new(1),
        })
    }

    /// `per_connection` inserts on every connection at once; inserts/s.
    fn insert_rate(&self, per_connection: usize) -> Res<f64> {
        let batches: Vec<Vec<String>> = (0..self.conns.len())
            .map(|_| {
                (0..per_connection)
                    .map(|_| body(self.seq.fetch_add(1, Ordering::Relaxed)))
                    .collect()
            })
            .collect();
        let elapsed = concurrently(&batches, |i, bodies| {
            let mut conn = self.conns[i].lock().map_err(|_| "a poisoned connection")?;
            let (client, insert) = &mut *conn;
            for b in bodies {
                client
                    .execute(&*insert, &[b])
                    .map_err(|e| format!("baseline insert: {e}"))?;
            }
            Ok(())
        })?;
        Ok(per_second(elapsed, self.conns.len() * per_connection))
    }
}

/// One engine of figure 17: a `pg-writers` child, ready to post on a line.
struct Engine {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Engine {
    /// Starts a child that opens `url`, and waits until it says it is ready.
    fn start(url: &str, writers: usize, posts: usize) -> Res<Engine> {
        let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
        let mut child = Command::new(exe)
            .args(["pg-writers", "--url", url])
            .args(["--writers", &writers.to_string()])
            .args(["--posts", &posts.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a pg-writers process: {e}"))?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let mut engine = Engine {
            child,
            stdin,
            stdout: BufReader::new(stdout.ok_or("no stdout of pg-writers")?),
        };
        let ready = engine.line()?;
        if ready["ready"] != json!(true) {
            return Err(format!("pg-writers did not get ready: {ready}"));
        }
        Ok(engine)
    }

    fn line(&mut self) -> Res<Value> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| format!("pg-writers: {e}"))?;
        if n == 0 {
            return Err("a pg-writers process ended early (see its stderr)".into());
        }
        serde_json::from_str(&line).map_err(|e| format!("pg-writers said {line:?}: {e}"))
    }

    /// Tells the child to post with its first `writers` writers.
    fn go(&mut self, writers: usize) -> Res<()> {
        let stdin = self.stdin.as_mut().ok_or("pg-writers has no stdin")?;
        writeln!(stdin, "go {writers}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("pg-writers: {e}"))
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // End of input asks the child to leave; one that does not is ended.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One round of figure 17: every engine posts with `writers` threads, all told at
/// once; total posts over the wall time from the first start to the last finish.
fn engines_rate(engines: &mut [Engine], writers: usize) -> Res<f64> {
    for e in engines.iter_mut() {
        e.go(writers)?;
    }
    let (mut first, mut last, mut posts) = (f64::MAX, f64::MIN, 0.0);
    for e in engines.iter_mut() {
        let done = e.line()?;
        let field = |k: &str| {
            done[k]
                .as_f64()
                .ok_or_else(|| format!("pg-writers said {done}"))
        };
        first = first.min(field("start")?);
        last = last.max(field("end")?);
        posts += field("posts")?;
    }
    Ok(posts / (last - first).max(1e-9))
}

fn epoch_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The hidden `pg-writers` command: opens the forum durable with a cast of
/// `writers` writers, says `{"ready":true}`, then for each line `go N` posts
/// `posts` envelopes with each of its first N writers and prints the posts and the
/// wall-clock start and end (seconds since the epoch, comparable across processes).
/// Ends at the end of its input.
pub fn writers_child(url: &str, writers: usize, posts: usize) -> Res<()> {
    let forum =
        parley_postgres::open(url, config(true)?).map_err(|e| format!("open {url}: {e}"))?;
    let cast = Cast::new(&forum, writers, 64)?;
    post_rate(&forum, &cast, &cast.batch(writers, 2))?;
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock, v: Value| {
        writeln!(out, "{v}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))
    };
    say(&mut out, json!({ "ready": true }))?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("stdin: {e}"))?;
        let n = line
            .strip_prefix("go ")
            .and_then(|n| n.trim().parse::<usize>().ok())
            .filter(|n| (1..=writers).contains(n))
            .ok_or_else(|| format!("expected `go N` (N of 1..={writers}), got {line:?}"))?;
        let batches = cast.batch(n, posts);
        let start = epoch_seconds();
        let rate = post_rate(&forum, &cast, &batches)?;
        let end = epoch_seconds();
        say(
            &mut out,
            json!({ "posts": n * posts, "start": start, "end": end, "rate": rate }),
        )?;
    }
    Ok(())
}

/// Figures 16 and 17, measured in one set of rounds: the baseline, one engine and
/// two engines take turns on one server.
pub fn writes(pg: Option<&Pg>, sizes: &Sizes, want: &dyn Fn(&str) -> bool) -> Res<Vec<Row>> {
    let sixteen = Row::new(
        "16",
        "durable posts/s, 8 writer threads, PostgreSQL",
        "PostgreSQL, 1-row INSERT per autocommit transaction, 8 connections",
        "posts/s",
        Target::RatioAtLeast(1.0),
    );
    let seventeen = Row::new(
        "17",
        "the same, 2 engines (processes) x 8 writers",
        "figure 16: durable posts/s, 1 engine, 8 writer threads",
        "posts/s",
        Target::RatioAtLeast(1.3),
    );
    let Some(pg) = pg else {
        return Ok([("16", sixteen), ("17", seventeen)]
            .into_iter()
            .filter(|(id, _)| want(id))
            .map(|(_, row)| row.skip(NO_SERVER))
            .collect());
    };
    let baseline_schema = format!("{}_baseline", pg.run);
    let _schemas = Schemas {
        pg,
        names: vec![baseline_schema.clone(), pg.forum_schema("writes")],
    };
    let forum = pg.open("writes", true)?;
    let cast = Cast::new(&forum, WRITERS, 64)?;
    let baseline = Baseline::create(pg, &baseline_schema, WRITERS)?;
    let per_writer = sizes.pg_per_writer;
    let mut engines = if want("17") {
        let url = pg.forum_url("writes");
        (0..ENGINES)
            .map(|_| Engine::start(&url, WRITERS, per_writer))
            .collect::<Res<Vec<_>>>()?
    } else {
        Vec::new()
    };

    // Warm-up: connections, prepared statements, first pages.
    post_rate(&forum, &cast, &cast.batch(WRITERS, 4))?;
    baseline.insert_rate(4)?;
    let started = Instant::now();
    let engines = std::cell::RefCell::new(&mut engines);
    let mut m_base = || baseline.insert_rate(per_writer);
    let mut m_one = || post_rate(&forum, &cast, &cast.batch(WRITERS, per_writer));
    let mut m_two = || engines_rate(&mut engines.borrow_mut(), WRITERS);
    let mut m_split = || engines_rate(&mut engines.borrow_mut(), WRITERS / ENGINES);
    let mut list: Vec<&mut dyn FnMut() -> Res<f64>> = vec![&mut m_base, &mut m_one];
    if want("17") {
        list.push(&mut m_two);
        list.push(&mut m_split);
    }
    let series = rounds(sizes.reps, &mut list)?;
    let (base, one) = (median(&series[0]), median(&series[1]));
    let mut detail = json!({
        "server_synchronous_commit": pg.show("synchronous_commit")?,
        "posts_per_rep_per_writer": per_writer,
        "writers": WRITERS,
        "reps": sizes.reps,
        "rounds_seconds": started.elapsed().as_secs_f64(),
        "series": { "baseline": series[0], "one_engine": series[1] },
    });
    let mut rows = Vec::new();
    if want("16") {
        rows.push(
            sixteen
                .measured(one, Some(base))
                .with_detail(detail.clone()),
        );
    }
    if want("17") {
        let (two, split) = (median(&series[2]), median(&series[3]));
        detail["series"]["two_engines_8_each"] = json!(series[2]);
        detail["series"]["two_engines_4_each"] = json!(series[3]);
        detail["two_engines_4_each_median"] = json!(split);
        detail["two_engines_4_each_ratio"] = json!(split / one);
        rows.push(seventeen.measured(two, Some(one)).with_detail(detail));
    }
    Ok(rows)
}

/// Asks questions `from..to` (body `i`, asker `i % 4`) from several threads at
/// once, each sending bunches of posts at once (a thread per post), so that the
/// group commit stores many of them in one transaction.
fn fill(forum: &Forum, askers: &[String], from: usize, to: usize) -> Res<()> {
    let bunches: Vec<usize> = (from..to).step_by(FILL_BUNCH).collect();
    let lanes: Vec<Vec<usize>> = (0..FILL_THREADS)
        .map(|t| {
            bunches
                .iter()
                .copied()
                .skip(t)
                .step_by(FILL_THREADS)
                .collect()
        })
        .collect();
    concurrently(&lanes, |_, starts| {
        for &start in starts {
            let envelopes: Vec<Value> = (start..(start + FILL_BUNCH).min(to))
                .map(|i| json!({"kind": "ask", "body": body(i as u64)}))
                .collect();
            let outcomes: Vec<_> = std::thread::scope(|s| {
                let posting: Vec<_> = envelopes
                    .iter()
                    .enumerate()
                    .map(|(k, env)| {
                        let asker = askers[(start + k) % 4].as_str();
                        s.spawn(move || forum.call(Some(asker), "post", env))
                    })
                    .collect();
                posting.into_iter().map(|p| p.join()).collect()
            });
            for outcome in outcomes {
                let outcome = outcome.map_err(|_| "fill: a posting thread panicked".to_string())?;
                outcome.map_err(|e| format!("fill: post refused or failed: {e}"))?;
            }
        }
        Ok(())
    })
    .map(drop)
}

/// A forum of `threads` open questions on PostgreSQL, with the read of figure 18:
/// the reader's inbox since a cursor taken before the last `NEW`.
struct InboxForum {
    forum: Forum,
    reader: String,
    args: Value,
    fill_seconds: f64,
    cursor_seconds: f64,
}

impl InboxForum {
    /// Filled non-durable (the read does not depend on it), then reopened durable.
    fn build(pg: &Pg, name: &str, threads: usize) -> Res<InboxForum> {
        let forum = pg.open(name, false)?;
        let askers: Vec<String> = (0..4)
            .map(|k| token(&forum, &format!("asker{k}")))
            .collect::<Res<_>>()?;
        let reader = token(&forum, "reader")?;
        let started = Instant::now();
        fill(&forum, &askers, 0, threads - NEW)?;
        let fill_seconds = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let since = cursor_at_end(&forum, &reader, "get_inbox")?;
        let cursor_seconds = started.elapsed().as_secs_f64();
        for i in threads - NEW..threads {
            post(
                &forum,
                &askers[i % 4],
                &json!({"kind": "ask", "body": body(i as u64)}),
            )?;
        }
        drop(forum);
        eprintln!(
            "  figure 18: {threads} threads filled in {fill_seconds:.1} s, \
             inbox paged to its end in {cursor_seconds:.1} s"
        );
        Ok(InboxForum {
            forum: pg.open(name, true)?,
            reader,
            args: json!({ "since": since }),
            fill_seconds,
            cursor_seconds,
        })
    }

    fn check(&self) -> Res<()> {
        let got = call(&self.forum, &self.reader, "get_inbox", &self.args)?;
        let n = got["items"].as_array().map_or(0, Vec::len);
        if n != NEW || got["more"] != json!(false) {
            return Err(format!("get_inbox since: expected {NEW} items, got {n}"));
        }
        Ok(())
    }

    fn cost(&self, calls: usize) -> Res<f64> {
        time_calls(calls, || {
            call(&self.forum, &self.reader, "get_inbox", &self.args).map(drop)
        })
    }
}

/// Figure 18: figure 5 on PostgreSQL.
pub fn inbox(pg: Option<&Pg>, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "18",
        &format!("get_inbox since, {NEW} new, {} threads, PG", sizes.big),
        &format!(
            "the same read on a PostgreSQL forum of {} threads",
            sizes.small
        ),
        "us/call",
        Target::RatioAtMost(1.5),
    );
    let Some(pg) = pg else {
        return Ok(row.skip(NO_SERVER));
    };
    let _schemas = Schemas {
        pg,
        names: vec![pg.forum_schema("inbox_big"), pg.forum_schema("inbox_small")],
    };
    let big = InboxForum::build(pg, "inbox_big", sizes.big)?;
    let small = InboxForum::build(pg, "inbox_small", sizes.small)?;
    big.check()?;
    small.check()?;
    let calls = sizes.pg_read_calls;
    big.cost(calls / 10 + 1)?;
    small.cost(calls / 10 + 1)?;
    let series = rounds(
        sizes.reps,
        &mut [&mut || big.cost(calls), &mut || small.cost(calls)],
    )?;
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "big": sizes.big, "small": sizes.small, "calls_per_rep": calls,
            "fill_seconds": { "big": big.fill_seconds, "small": small.fill_seconds },
            "cursor_seconds": { "big": big.cursor_seconds, "small": small.cursor_seconds },
            "fill_threads": FILL_THREADS, "fill_bunch": FILL_BUNCH, "series": series,
        })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forum_urls_carry_a_fresh_forum_and_keep_the_rest() {
        let pg = Pg::new(Some("postgres://u@h/db?host=/tmp/x&forum=old"), false).unwrap();
        assert_eq!(pg.base, "postgres://u@h/db?host=/tmp/x");
        let url = pg.forum_url("writes");
        assert!(
            url.starts_with("postgres://u@h/db?host=/tmp/x&forum=b"),
            "{url}"
        );
        assert!(url.ends_with("_writes"));
        let name = url.rsplit_once("forum=").unwrap().1;
        assert!(name.len() <= 40, "{name}");
        assert!(name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
        assert_eq!(pg.forum_schema("writes"), format!("parley_{name}"));
        let bare = Pg::new(Some("postgres://u@h/db"), false).unwrap();
        assert!(bare.forum_url("x").starts_with("postgres://u@h/db?forum=b"));
    }
}

//! `parley-bench`: the performance figures of the Parley engine, each as a ratio
//! against a baseline measured in the same run (machines are noisy; ratios inside
//! one run are not). Every figure and its baseline is the median of several
//! repetitions, taken in alternation. See `docs/performance.md`.

mod baseline;
mod fig_device;
mod fig_digest;
mod fig_guards;
mod fig_http;
mod fig_lease;
mod fig_listen;
mod fig_listen_http;
mod fig_pg;
mod fig_provenance;
mod fig_read;
mod fig_rss;
mod fig_search;
mod fig_trace;
mod fig_transport;
mod fig_write;
mod measure;
mod report;
mod workload;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use report::Row;

/// Errors of the benchmark: a message for the user.
pub type Res<T> = Result<T, String>;

/// Every figure id `--only` accepts, in the order they run.
const FIGURES: [&str; 28] = [
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "10-rust", "11", "12", "13", "14", "15",
    "16", "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27",
];

/// Figures measured together, in one set of rounds: each ratio compares series
/// that saw the same machine.
const SHARED_ROUNDS: [&[&str]; 2] = [&["1", "2", "3"], &["16", "17"]];

#[derive(Parser)]
#[command(
    name = "parley-bench",
    version,
    about = "Parley performance figures, each a ratio against a baseline measured in the same run"
)]
struct Cli {
    /// Small sizes: a smoke run for CI, well under a minute.
    #[arg(long)]
    quick: bool,
    /// Print a JSON array (one object per figure) instead of the table.
    #[arg(long)]
    json: bool,
    /// Only these figures, comma-separated (1-26; `10-rust` is the Rust half of 10;
    /// 16-18 need PostgreSQL: --pg).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Where the temporary forum files go: a fresh directory is made inside it and
    /// removed afterwards (default: inside the system temp dir, or the current
    /// directory when the temp dir is a RAM file system).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the forum files (their directory is printed on stderr).
    #[arg(long)]
    keep: bool,
    /// Repetitions of each figure and baseline (default 7, or 3 with --quick).
    #[arg(long)]
    reps: Option<usize>,
    /// Messages of the figure-11 forum (default 1000000, or 20000 with --quick).
    #[arg(long)]
    rss_messages: Option<usize>,
    /// The PostgreSQL database of figures 16-18, a `postgres://` URL (default: the
    /// PARLEY_TEST_PG environment variable; without either they are skipped). Each
    /// run makes forums of its own in it and drops them afterwards.
    #[arg(long)]
    pg: Option<String>,
    #[command(subcommand)]
    command: Option<Hidden>,
}

#[derive(Subcommand)]
enum Hidden {
    /// The measuring process of figure 11.
    #[command(hide = true)]
    RssChild {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        facts: PathBuf,
        #[arg(long, default_value_t = 200)]
        appends: usize,
    },
    /// One of the engines of figure 17.
    #[command(hide = true)]
    PgWriters {
        #[arg(long)]
        url: String,
        #[arg(long)]
        writers: usize,
        #[arg(long)]
        posts: usize,
    },
}

/// The sizes of one run.
pub struct Sizes {
    pub reps: usize,
    pub single_posts: usize,
    pub multi_per_writer: usize,
    pub volatile_posts: usize,
    pub big: usize,
    pub small: usize,
    pub read_calls: usize,
    pub thread_len: usize,
    pub mcp_posts: usize,
    pub http_per_client: usize,
    pub call_posts: usize,
    pub rss_messages: usize,
    pub wake_rounds: usize,
    pub idle_waiters: usize,
    pub search_big: usize,
    pub search_small: usize,
    pub pg_per_writer: usize,
    pub pg_read_calls: usize,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                reps: 3,
                single_posts: 30,
                multi_per_writer: 10,
                volatile_posts: 300,
                big: 5_000,
                small: 500,
                read_calls: 40,
                thread_len: 1000,
                mcp_posts: 300,
                http_per_client: 5,
                call_posts: 300,
                rss_messages: 20_000,
                wake_rounds: 30,
                idle_waiters: 50,
                search_big: 20_000,
                search_small: 2_000,
                pg_per_writer: 50,
                pg_read_calls: 200,
            }
        } else {
            Sizes {
                reps: 7,
                single_posts: 600,
                multi_per_writer: 150,
                volatile_posts: 3_000,
                big: 100_000,
                small: 1_000,
                read_calls: 400,
                thread_len: 1000,
                mcp_posts: 2_000,
                http_per_client: 50,
                call_posts: 2_000,
                rss_messages: 1_000_000,
                wake_rounds: 400,
                idle_waiters: 1_000,
                search_big: 1_000_000,
                search_small: 10_000,
                pg_per_writer: 200,
                pg_read_calls: 400,
            }
        }
    }
}

/// A directory on a real disk for temporary forums: the system temp dir, unless it
/// is a RAM file system (fsync there costs nothing), then the current directory.
fn disk_base() -> PathBuf {
    let tmp = std::env::temp_dir();
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let fs_of_tmp = mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, fs) = (f.next()?, f.next()?, f.next()?);
            tmp.starts_with(at).then(|| (at.len(), fs.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fs)| fs);
    match fs_of_tmp.as_deref() {
        Some("tmpfs" | "ramfs") => std::env::current_dir().unwrap_or(tmp),
        _ => tmp,
    }
}

fn run_figure(
    id: &str,
    dir: &Path,
    sizes: &Sizes,
    quick: bool,
    pg: Option<&fig_pg::Pg>,
) -> Res<Vec<Row>> {
    let sub = dir.join(format!("fig{id}"));
    std::fs::create_dir_all(&sub).map_err(|e| format!("{}: {e}", sub.display()))?;
    let one = |r: Res<Row>| r.map(|row| vec![row]);
    match id {
        "4" => one(fig_write::volatile(&sub, sizes)),
        "5" => one(fig_read::inbox(&sub, sizes)),
        "6" => one(fig_read::events(&sub, sizes)),
        "7" => one(fig_read::thread(&sub, sizes)),
        "8" => one(fig_transport::mcp(&sub, sizes)),
        "9" => one(fig_http::http(&sub, sizes)),
        "10" => one(fig_transport::python_call(&sub, sizes, quick)),
        "10-rust" => one(fig_transport::rust_call(&sub, sizes)),
        "11" => one(fig_rss::rss(&sub, sizes)),
        "12" => one(fig_listen::wake(&sub, sizes)),
        "13" => fig_listen_http::wake(&sub, sizes),
        "14" => one(fig_listen_http::busy(&sub, sizes)),
        "15" => one(fig_listen_http::memory(&sub, sizes)),
        "18" => one(fig_pg::inbox(pg, sizes)),
        "19" => one(fig_search::search(&sub, sizes)),
        "20" => one(fig_search::replay(&sub, sizes)),
        "21" => one(fig_device::device(&sub, sizes)),
        "22" => one(fig_guards::guards(&sub, sizes)),
        "23" => one(fig_lease::lease(&sub, sizes)),
        "24" => one(fig_digest::digest(&sub, sizes)),
        "25" => one(fig_provenance::export(&sub, sizes)),
        "26" => one(fig_provenance::import(&sub, sizes)),
        "27" => one(fig_trace::trace(&sub, sizes)),
        other => Err(format!("no figure {other}")),
    }
}

fn run(cli: Cli) -> Res<Vec<Row>> {
    for id in &cli.only {
        if !FIGURES.contains(&id.as_str()) {
            return Err(format!(
                "unknown figure `{id}` (known: {})",
                FIGURES.join(", ")
            ));
        }
    }
    // `10-rust` is a helper of figure 10, measured only when asked for by name.
    let selected: BTreeSet<&str> = FIGURES
        .into_iter()
        .filter(|f| {
            if cli.only.is_empty() {
                *f != "10-rust"
            } else {
                cli.only.iter().any(|o| o == f)
            }
        })
        .collect();
    let mut sizes = Sizes::new(cli.quick);
    if let Some(r) = cli.reps {
        sizes.reps = r.max(1);
    }
    if let Some(m) = cli.rss_messages {
        sizes.rss_messages = m.max(1);
    }
    let base = match &cli.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            d.clone()
        }
        None => disk_base(),
    };
    // Each figure (1-3 together) runs in a process of its own, so that no figure
    // measures the heap or the page cache another one left behind.
    let groups = figure_groups(&selected);
    if groups.len() > 1 && std::env::var_os(CHILD_ENV).is_none() {
        let mut rows = Vec::new();
        for group in groups {
            settle();
            eprintln!("parley-bench: figure {} ...", group.join(","));
            rows.extend(run_child(&cli, &base, &group));
        }
        return Ok(rows);
    }
    let temp = tempfile::Builder::new()
        .prefix("parley-bench-")
        .tempdir_in(&base)
        .map_err(|e| format!("temporary directory in {}: {e}", base.display()))?;
    let dir = if cli.keep {
        let kept = temp.keep();
        eprintln!(
            "parley-bench: keeping the forum files in {}",
            kept.display()
        );
        kept
    } else {
        temp.path().to_path_buf()
    };
    let want = |id: &str| selected.contains(id);
    let pg = fig_pg::Pg::new(cli.pg.as_deref(), cli.keep);
    let mut rows = Vec::new();
    for group in figure_groups(&selected) {
        settle();
        if !cli.json || std::env::var_os("PARLEY_BENCH_PROGRESS").is_some() {
            eprintln!("parley-bench: figure {} ...", group.join(","));
        }
        let measured = match group[0].as_str() {
            "1" | "2" | "3" => {
                let sub = dir.join("fig1-3");
                std::fs::create_dir_all(&sub)
                    .map_err(|e| format!("{}: {e}", sub.display()))
                    .and_then(|()| fig_write::durable(&sub, &sizes, &want))
            }
            "16" | "17" => fig_pg::writes(pg.as_ref(), &sizes, &want),
            id => run_figure(id, &dir, &sizes, cli.quick, pg.as_ref()),
        };
        match measured {
            Ok(r) => rows.extend(r),
            Err(e) => rows.extend(group.iter().map(|f| Row::failed(f, e.clone()))),
        }
    }
    Ok(rows)
}

/// Set in the child processes that measure one group of figures each.
const CHILD_ENV: &str = "PARLEY_BENCH_CHILD";

/// The selected figures as they run, in the order of [`FIGURES`]: those of one
/// [`SHARED_ROUNDS`] set together, the others one by one.
fn figure_groups(selected: &BTreeSet<&str>) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    for id in FIGURES.iter().filter(|f| selected.contains(*f)) {
        let shared = SHARED_ROUNDS.iter().find(|set| set.contains(id));
        match (shared, groups.last_mut()) {
            (Some(set), Some(last)) if set.contains(&last[0].as_str()) => last.push(id.to_string()),
            _ => groups.push(vec![id.to_string()]),
        }
    }
    groups
}

/// Measures `group` in a child `parley-bench --json --only …` with this run's
/// settings; a child that fails reports its figures as errors.
fn run_child(cli: &Cli, base: &std::path::Path, group: &[String]) -> Vec<Row> {
    let failed = |why: String| -> Vec<Row> {
        group
            .iter()
            .map(|id| Row::failed(id, why.clone()))
            .collect()
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return failed(format!("cannot find this executable: {e}")),
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.env(CHILD_ENV, "1")
        .arg("--json")
        .arg("--only")
        .arg(group.join(","))
        .arg("--dir")
        .arg(base)
        .stderr(std::process::Stdio::inherit());
    if cli.quick {
        cmd.arg("--quick");
    }
    if cli.keep {
        cmd.arg("--keep");
    }
    if let Some(r) = cli.reps {
        cmd.arg("--reps").arg(r.to_string());
    }
    if let Some(m) = cli.rss_messages {
        cmd.arg("--rss-messages").arg(m.to_string());
    }
    if let Some(url) = &cli.pg {
        cmd.arg("--pg").arg(url);
    }
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => return failed(format!("cannot run the figure's process: {e}")),
    };
    let parsed: Option<Vec<Row>> = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| {
            v.as_array()
                .map(|a| a.iter().filter_map(Row::from_json).collect())
        });
    match parsed {
        Some(rows) if !rows.is_empty() => rows,
        _ => failed(format!("the figure's process ended with {}", out.status)),
    }
}

/// Lets the disk go quiet before a figure: the write-back of what earlier figures
/// left in the page cache would otherwise land in the next figure's rounds (a
/// CPU-bound figure measured right after the durable ones read 15-20 % slower).
fn settle() {
    // `sync` is there on every Unix; without it the pause alone helps.
    let _ = std::process::Command::new("sync").status();
    std::thread::sleep(std::time::Duration::from_millis(300));
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Hidden::RssChild { db, facts, appends }) = &cli.command {
        return match fig_rss::child(db, facts, *appends) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("parley-bench rss-child: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(Hidden::PgWriters {
        url,
        writers,
        posts,
    }) = &cli.command
    {
        return match fig_pg::writers_child(url, *writers, *posts) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("parley-bench pg-writers: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "parley-bench: warning: this is a debug build; build with --release for real figures"
        );
    }
    let json = cli.json;
    match run(cli) {
        Ok(rows) => {
            let failed = rows.iter().any(|r| r.error.is_some());
            if json {
                let all: Vec<_> = rows.iter().map(Row::to_json).collect();
                println!("{}", serde_json::Value::Array(all));
            } else {
                print!("{}", report::table(&rows));
            }
            if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("parley-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_sharing_rounds_run_as_one_group() {
        let selected: BTreeSet<&str> = ["1", "3", "4", "16", "17", "18", "20"].into();
        let groups = figure_groups(&selected);
        let want: Vec<Vec<String>> = [&["1", "3"][..], &["4"], &["16", "17"], &["18"], &["20"]]
            .iter()
            .map(|g| g.iter().map(|s| s.to_string()).collect())
            .collect();
        assert_eq!(groups, want);
        let alone: BTreeSet<&str> = ["17"].into();
        assert_eq!(figure_groups(&alone), vec![vec!["17".to_string()]]);
    }
}

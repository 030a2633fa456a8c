//! `parley presence`, `parley leases`, `parley lease`, `parley release` and
//! `parley lease check`: the coordination profile (SPEC §16) from the command line,
//! through the same generic call as every other verb.
//!
//! `lease check PATH…` is meant for a git pre-commit hook: it exits with
//! [`EXIT_HELD`] and names the holder when another identity holds an active
//! exclusive lease covering one of the paths (with no path: the staged ones).

use std::fmt::Write as _;
use std::process::Command;

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use crate::human::Call;
use crate::reads::print_json;
use crate::terminal::visible;
use crate::token_arg::TokenArg;
use crate::view::author;
use crate::{CmdResult, Failure, Target};

/// Exit code of `lease check` when a path is held by another identity.
pub(crate) const EXIT_HELD: u8 = 5;

/// The verbs of this module, flattened into the command line's.
#[derive(Subcommand)]
pub(crate) enum Verb {
    /// Show who is working, idle or away (stale past their time), or set your own
    /// presence with `presence set STATUS`.
    Presence(PresenceArgs),
    /// List the active leases.
    Leases {
        #[command(flatten)]
        auth: TokenArg,
        /// Only leases overlapping this resource.
        #[arg(long)]
        resource: Option<String>,
        /// Only leases held by this identity.
        #[arg(long)]
        identity: Option<String>,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Take or renew a lease on a resource (a file, a prefix like `src/`, a job), or
    /// check paths against the leases of others (`lease check`, for a pre-commit hook).
    Lease(LeaseArgs),
    /// Release a lease: its holder's identity, a token with the lock right, or a person.
    Release {
        #[command(flatten)]
        auth: TokenArg,
        /// The lease id (`ls_3` or `3`).
        lease: String,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one of the verbs. The token is read before the forum is opened.
pub(crate) fn run(here: Here<'_>, verb: Verb) -> CmdResult {
    match verb {
        Verb::Presence(args) => presence(here, args),
        Verb::Leases {
            auth,
            resource,
            identity,
            json,
        } => {
            let token = auth.resolve()?;
            let forum = here(false)?;
            leases(forum.calls(), token.as_deref(), resource, identity, json)
        }
        Verb::Lease(args) => lease(here, args),
        Verb::Release { auth, lease, json } => {
            let token = auth.resolve()?;
            release(here(false)?.calls(), token.as_deref(), &lease, json)
        }
    }
}

/// Reports what `lease check` found held, a line each, and exits with [`EXIT_HELD`].
pub(crate) fn held(lines: &str) -> std::process::ExitCode {
    for line in lines.lines() {
        eprintln!("parley: {}", visible(line));
    }
    std::process::ExitCode::from(EXIT_HELD)
}

/// `parley presence [IDENTITY]` or `parley presence set STATUS`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct PresenceArgs {
    #[command(subcommand)]
    set: Option<PresenceCommand>,
    #[command(flatten)]
    auth: TokenArg,
    /// Only this identity's presence (e.g. `ainotes:alice`).
    identity: Option<String>,
    /// Print the raw result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum PresenceCommand {
    /// Say what you are doing: working, idle or away, for --ttl seconds.
    Set {
        #[command(flatten)]
        auth: TokenArg,
        /// working, idle or away.
        status: String,
        /// A note others see (at most 200 characters).
        #[arg(long)]
        note: Option<String>,
        /// Seconds until the presence reads as stale (1–86400) [default: 900].
        #[arg(long, value_name = "S")]
        ttl: Option<u64>,
        /// The extension of your identity this presence is for.
        #[arg(long)]
        extension: Option<String>,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `parley lease RESOURCE` or `parley lease check PATH…`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct LeaseArgs {
    #[command(subcommand)]
    check: Option<LeaseCommand>,
    #[command(flatten)]
    auth: TokenArg,
    /// The resource: segments separated by `/`; a trailing `/` covers everything
    /// under it (`src/` covers `src/main.rs`). A resource named `check` is given
    /// after `--`.
    #[arg(required = true)]
    resource: Option<String>,
    /// A shared lease: conflicts only with exclusive ones [default: exclusive].
    #[arg(long)]
    shared: bool,
    /// Seconds the lease lasts [default: 600, or lease_ttl_max_s when smaller].
    #[arg(long, value_name = "S")]
    ttl: Option<u64>,
    /// The thread the work is discussed in.
    #[arg(long)]
    thread: Option<String>,
    /// A note others see (at most 200 characters).
    #[arg(long)]
    note: Option<String>,
    /// The extension of your identity that holds the lease.
    #[arg(long)]
    extension: Option<String>,
    /// Print the raw result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum LeaseCommand {
    /// Exit 5, naming the holder, when another identity holds an active exclusive
    /// lease covering one of PATHS (with none: the paths staged in git); 0 otherwise.
    Check {
        #[command(flatten)]
        auth: TokenArg,
        /// Paths relative to the repository's top (as `git diff --name-only` prints them).
        paths: Vec<String>,
    },
}

/// `parley presence …`.
fn presence(here: Here<'_>, args: PresenceArgs) -> CmdResult {
    match args.set {
        Some(PresenceCommand::Set {
            auth,
            status,
            note,
            ttl,
            extension,
            json,
        }) => {
            let token = auth.resolve()?;
            let mut call = Map::new();
            call.insert("status".into(), json!(status));
            put(&mut call, "note", note.map(Value::from));
            put(&mut call, "ttl_s", ttl.map(Value::from));
            put(&mut call, "extension", extension.map(Value::from));
            let forum = here(false)?;
            let forum = forum.calls();
            let result = forum.call(token.as_deref(), "set_presence", &Value::Object(call))?;
            show(&result, json, |r| presence_line(&r["presence"]) + "\n");
            Ok(())
        }
        None => {
            let token = args.auth.resolve()?;
            let mut call = Map::new();
            put(&mut call, "identity", args.identity.map(Value::from));
            let forum = here(false)?;
            let forum = forum.calls();
            let result = forum.call(token.as_deref(), "get_presence", &Value::Object(call))?;
            show(&result, args.json, describe_presence);
            Ok(())
        }
    }
}

/// `parley leases [--resource R] [--identity I]`.
fn leases(
    forum: &dyn Call,
    token: Option<&str>,
    resource: Option<String>,
    identity: Option<String>,
    raw: bool,
) -> CmdResult {
    let mut call = Map::new();
    put(&mut call, "resource", resource.map(Value::from));
    put(&mut call, "identity", identity.map(Value::from));
    let result = forum.call(token, "get_leases", &Value::Object(call))?;
    show(&result, raw, |r| {
        let items = items(r);
        if items.is_empty() {
            return "No active lease.\n".into();
        }
        items.iter().map(|l| lease_line(l) + "\n").collect()
    });
    Ok(())
}

/// `parley lease …`.
fn lease(here: Here<'_>, args: LeaseArgs) -> CmdResult {
    if let Some(LeaseCommand::Check { auth, paths }) = args.check {
        let token = auth.resolve()?;
        return check(here, token.as_deref(), paths);
    }
    let token = args.auth.resolve()?;
    let mut call = Map::new();
    put(&mut call, "resource", args.resource.map(Value::from));
    if args.shared {
        call.insert("mode".into(), json!("shared"));
    }
    put(&mut call, "ttl_s", args.ttl.map(Value::from));
    put(&mut call, "thread", args.thread.map(Value::from));
    put(&mut call, "note", args.note.map(Value::from));
    put(&mut call, "extension", args.extension.map(Value::from));
    let forum = here(false)?;
    let forum = forum.calls();
    match forum.call(token.as_deref(), "lease", &Value::Object(call)) {
        Ok(result) => {
            show(&result, args.json, |r| lease_line(&r["lease"]) + "\n");
            Ok(())
        }
        Err(err) => Err(conflict_named(err)),
    }
}

/// `parley release LEASE`.
fn release(forum: &dyn Call, token: Option<&str>, id: &str, raw: bool) -> CmdResult {
    let result = forum.call(token, "release", &json!({ "lease": id }))?;
    show(&result, raw, |r| {
        let l = &r["lease"];
        format!(
            "released {} on {} at {}\n",
            field(l, "id"),
            field(l, "resource"),
            field(l, "released_at")
        )
    });
    Ok(())
}

/// Where a verb's calls go (see `crate::target`), opened only once its token has
/// been read, as the other verbs do: a bad token file is reported before the
/// forum is touched.
pub(crate) type Here<'a> = &'a dyn Fn(bool) -> Result<Target, Failure>;

/// `lease check`: the paths (or the staged ones) against the active exclusive
/// leases of other identities.
fn check(here: Here<'_>, token: Option<&str>, paths: Vec<String>) -> CmdResult {
    let paths = if paths.is_empty() { staged()? } else { paths };
    let paths: Vec<String> = paths.iter().map(|p| normal(p)).collect();
    if paths.is_empty() {
        return Ok(());
    }
    let forum = here(false)?;
    let forum = forum.calls();
    let me = forum.call(token, "whoami", &Value::Null)?;
    let me = me["identity"].as_str().unwrap_or_default().to_string();
    // One read of every active lease: a commit may stage thousands of paths, and a
    // path need not be a valid resource (too long, say) to lie under a leased prefix.
    let active = forum.call(token, "get_leases", &json!({}))?;
    let mut held = String::new();
    for path in &paths {
        for lease in items(&active) {
            let holder = lease["holder"]["identity"].as_str().unwrap_or_default();
            let exclusive = lease["mode"].as_str() == Some("exclusive");
            let resource = lease["resource"].as_str().unwrap_or_default();
            if exclusive && holder != me && covers(resource, path) {
                let _ = writeln!(
                    held,
                    "{path} is leased by {} ({} on {}, exclusive, until {}){}",
                    author(&lease["holder"]),
                    field(lease, "id"),
                    resource,
                    field(lease, "expires_at"),
                    note_suffix(lease)
                );
            }
        }
    }
    if held.is_empty() {
        return Ok(());
    }
    Err(Failure::Held(held.trim_end().to_string()))
}

/// Whether a lease on `resource` covers the file `path` (SPEC §16.2's overlap, for
/// a path that names a file): the same string, or a prefix ending in `/` of the
/// path with a `/` appended.
fn covers(resource: &str, path: &str) -> bool {
    if resource == path {
        return true;
    }
    resource.ends_with('/') && format!("{path}/").starts_with(resource)
}

/// A path as the leases name it: without a leading `./`.
fn normal(path: &str) -> String {
    let mut path = path;
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path.to_string()
}

/// The paths staged in the git repository of the working directory.
fn staged() -> Result<Vec<String>, Failure> {
    let out = Command::new("git")
        .args(["diff", "--cached", "--name-only", "-z"])
        .output()
        .map_err(|e| Failure::Other(format!("cannot run git to list the staged paths: {e}")))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(Failure::Other(format!(
            "git diff --cached failed: {}",
            why.trim()
        )));
    }
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// A `lease_conflict` refusal with the holders it names, one per line; any other
/// failure as it is.
fn conflict_named(err: parley_forum::Error) -> Failure {
    let Some(refusal) = err.refusal() else {
        return err.into();
    };
    let conflicting = refusal.to_json()["leases"].clone();
    let mut failure = Failure::from(err);
    if let (Failure::Refused(line), Some(leases)) = (&mut failure, conflicting.as_array()) {
        for lease in leases {
            line.push_str("\n  held: ");
            line.push_str(&lease_line(lease));
        }
    }
    failure
}

/// `ls_3 src/ exclusive by ainotes:alice/w1 until 2026-…Z (th_2) — note`.
fn lease_line(l: &Value) -> String {
    let mut line = format!(
        "{} {} {} by {} until {}",
        field(l, "id"),
        field(l, "resource"),
        field(l, "mode"),
        author(&l["holder"]),
        field(l, "expires_at")
    );
    if let Some(thread) = l["thread"].as_str() {
        let _ = write!(line, " ({thread})");
    }
    line + &note_suffix(l)
}

/// `ainotes:alice/w1 working since … until … — note`, `(stale)` past its time.
fn presence_line(p: &Value) -> String {
    let mut line = format!(
        "{} {} since {} until {}",
        author(p),
        field(p, "status"),
        field(p, "since"),
        field(p, "expires_at")
    );
    if p["stale"].as_bool() == Some(true) {
        line.push_str(" (stale)");
    }
    line + &note_suffix(p)
}

fn describe_presence(result: &Value) -> String {
    let items = items(result);
    if items.is_empty() {
        return "No presence set.\n".into();
    }
    items.iter().map(|p| presence_line(p) + "\n").collect()
}

fn note_suffix(value: &Value) -> String {
    match value["note"].as_str() {
        Some(note) if !note.is_empty() => format!(" — {note}"),
        _ => String::new(),
    }
}

fn items(result: &Value) -> &[Value] {
    result["items"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or("?")
}

fn put(args: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        args.insert(key.into(), value);
    }
}

fn show(result: &Value, raw: bool, describe: impl Fn(&Value) -> String) {
    if raw {
        print_json(result);
    } else {
        print!("{}", visible(&describe(result)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_covers_its_path_and_what_lies_under_its_prefix() {
        assert!(covers("src/main.rs", "src/main.rs"));
        assert!(covers("src/", "src/main.rs"));
        assert!(covers("src/", "src/a/b.rs"));
        assert!(covers("src/", "src"));
        assert!(!covers("src", "src/main.rs"));
        assert!(!covers("src/", "srcs/main.rs"));
        assert!(!covers("src/main.rs", "src/main.rs.orig"));
        assert!(!covers("src/a/", "src/b.rs"));
    }

    #[test]
    fn paths_lose_a_leading_dot_segment() {
        assert_eq!(normal("./src/main.rs"), "src/main.rs");
        assert_eq!(normal("././a"), "a");
        assert_eq!(normal("src/./a"), "src/./a");
    }
}

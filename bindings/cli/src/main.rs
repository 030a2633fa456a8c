//! `parley`: the command-line host of a Parley forum.
//!
//! It serves the forum over MCP (stdio and Streamable HTTP) and REST, issues and
//! revokes tokens, posts and reads on the command line, and runs a demo. Every
//! protocol decision is the engine's (`parley_forum`); this crate only maps.

mod admin;
mod check;
mod coordination;
mod demo;
mod digest;
mod progress;
mod provenance;
mod reads;
mod search;
mod serve;
mod stdio;
mod token_arg;
mod verbs;
mod view;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use parley_forum::{Config, Forum};
use parley_server::{control, human, terminal};
use token_arg::TokenArg;

/// Exit code of a command line that could not be parsed (clap's, and the shell's, convention).
const EXIT_USAGE: u8 = 2;
/// Exit code of a protocol refusal (the request was understood and declined).
const EXIT_REFUSED: u8 = 3;
/// Exit code of an act refused because the thread is no longer in the state given
/// with `--if-state` (or, for `confirm`, the state it read): look again.
const EXIT_STATE_CHANGED: u8 = 4;

#[derive(Parser)]
#[command(
    name = "parley",
    version,
    about = "Parley v1 forum: MCP and REST server, token admin, reading views, demo",
    after_help = "Exit status: 0 on success, 3 when the forum refused the request (the reason is printed), \
                  4 when an act was refused because the thread's state changed (state_changed), \
                  5 when `lease check` finds a path leased by another identity, \
                  6 when `verify-bundle` finds a bundle malformed or tampered (bundle_invalid), \
                  7 when its realm is not trusted or its signature does not verify (realm_untrusted), \
                  2 for a command line that cannot be parsed, 1 on any other error."
)]
struct Cli {
    /// The forum file (made by `token create` and `serve` when missing or empty), or a
    /// PostgreSQL database as `postgres://user@host/db?forum=NAME`, which any number
    /// of servers and commands may open at once (docs/deployment.md).
    #[arg(
        long,
        global = true,
        env = "PARLEY_DB",
        default_value = "./parley.redb"
    )]
    db: PathBuf,

    /// Forum settings as JSON, e.g. '{"limits":{"writes_per_minute":0}}'; the guards
    /// profile (SPEC §15): '{"guards":false}' or '{"limits":{"progress_max_messages":40}}'.
    #[arg(long, global = true, env = "PARLEY_SETTINGS")]
    settings: Option<String>,

    /// Trust a realm's signed claims (SPEC §18.3): `REALM=ed25519:KEY`, repeatable,
    /// added to the `trusted_realms` of --settings (a realm named in both: this key).
    #[arg(long = "trust", global = true, value_name = "REALM=KEY")]
    trust: Vec<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the forum over MCP (stdio or Streamable HTTP) and REST.
    ///
    /// While it serves, it also answers the other `parley` commands (token, post,
    /// thread, inbox, events, claim, search, digest and the
    /// verbs) on the Unix socket
    /// `<forum-file>.sock` beside the forum file, which only this user can reach
    /// (mode 0600, peer uid checked). Those commands use it when it answers and
    /// open the file themselves when not. The socket is removed at shutdown; a stale
    /// one left by a killed server is replaced; a file of that name that is not a
    /// socket stops the server from starting and is left untouched.
    Serve(serve::ServeArgs),
    /// Issue, revoke and list tokens (through a running server when one holds the file).
    #[command(subcommand)]
    Token(admin::TokenCommand),
    /// Post one envelope and print the result.
    Post {
        #[command(flatten)]
        auth: TokenArg,
        /// The envelope as JSON, or `-` to read it from stdin.
        envelope: String,
    },
    /// Show a thread as a tree.
    Thread {
        #[command(flatten)]
        auth: TokenArg,
        /// The thread id (`th_1` or `1`).
        id: String,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the threads waiting for you.
    Inbox {
        #[command(flatten)]
        auth: TokenArg,
        #[command(flatten)]
        page: reads::Page,
        /// Only what is due for this extension of your identity.
        #[arg(long)]
        extension: Option<String>,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the event log (state changes, confirmations, claim status changes).
    Events {
        #[command(flatten)]
        auth: TokenArg,
        #[command(flatten)]
        page: reads::Page,
        /// Only the events of this thread.
        #[arg(long)]
        thread: Option<String>,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a claim with its evidence, attestations and refutations.
    Claim {
        #[command(flatten)]
        auth: TokenArg,
        /// The claim id (`cl_1` or `1`).
        id: String,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Find messages holding every one of WORDS, newest first.
    Search(search::Args),
    /// Show what matters of a thread: root, decision, open questions, claims, the
    /// last messages, and how many it left out.
    Digest(digest::Args),
    /// List the threads, by last activity, oldest first.
    Threads {
        #[command(flatten)]
        auth: TokenArg,
        /// Only threads in this state (open, answered, decided, closed, deferred, obsolete, rejected).
        #[arg(long)]
        state: Option<String>,
        #[command(flatten)]
        page: reads::Page,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what awaits confirmation: each thread whose state is a proposal, who proposed it and why.
    Proposals {
        #[command(flatten)]
        auth: TokenArg,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    #[command(flatten)]
    Coordination(coordination::Verb),
    #[command(flatten)]
    Provenance(provenance::Verb),
    /// Confirm a thread's proposed state (a mark of that state by a confirmer).
    Confirm(ActArgs),
    /// Close a thread; closed by a person, it is confirmed and so locked.
    Close(ActArgs),
    /// Reopen a closed thread or one in a side state.
    Reopen(ActArgs),
    /// Set a thread's state: answered, decided, closed, deferred, obsolete, rejected, or open (a person only).
    Mark {
        #[command(flatten)]
        auth: TokenArg,
        /// The thread id (`th_3` or `3`).
        thread: String,
        /// The state to set.
        state: String,
        /// The message body [default: "State set."].
        body: Option<String>,
        #[command(flatten)]
        seen: IfState,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Answer a thread (under its root message).
    Answer {
        #[command(flatten)]
        auth: TokenArg,
        /// The thread id (`th_3` or `3`).
        thread: String,
        /// The answer.
        text: Option<String>,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a closed forum file offline (every page's checksum, every record) and say what was found.
    Check {
        /// The forum file [default: the --db file].
        path: Option<PathBuf>,
    },
    /// Run a scripted conversation on a temporary forum and print it.
    Demo,
}

/// A thread and an optional body: what `confirm`, `close` and `reopen` take.
#[derive(Args)]
struct ActArgs {
    #[command(flatten)]
    auth: TokenArg,
    /// The thread id (`th_3` or `3`).
    thread: String,
    /// The message body [default: the act's own, e.g. "Closed."].
    body: Option<String>,
    #[command(flatten)]
    seen: IfState,
    /// Print the raw result as JSON.
    #[arg(long)]
    json: bool,
}

/// The state a person saw, which an act is conditioned on (SPEC §14.5).
#[derive(Args)]
struct IfState {
    /// Act only while the thread is in this state, the one you saw; else the act is
    /// refused as state_changed (exit 4) and nothing is posted. `confirm` without it
    /// confirms the state it reads, on the same condition.
    #[arg(long = "if-state", value_name = "STATE")]
    if_state: Option<String>,
}

/// A failure the command reports on one line of stderr.
#[derive(Debug)]
enum Failure {
    /// The forum refused the request (exit 3).
    Refused(String),
    /// The thread's state is no longer the one the act was conditioned on (exit 4).
    StateChanged(String),
    /// `lease check` found paths leased by another identity (exit 5); one line each.
    Held(String),
    /// A failure with an exit code of its own (`verify-bundle`: 6 or 7).
    Exit(u8, String),
    /// Anything else (exit 1).
    Other(String),
}

impl From<parley_forum::Error> for Failure {
    fn from(err: parley_forum::Error) -> Self {
        match err.refusal() {
            Some(r) => {
                let line = format!(
                    "refused: {} ({}): {}",
                    r.reason.as_str(),
                    r.status(),
                    r.message
                );
                match (r.reason, r.state) {
                    (parley_forum::Reason::StateChanged, Some(now)) => Failure::StateChanged(
                        format!("{line} (the thread is `{}` now)", now.as_str()),
                    ),
                    (parley_forum::Reason::StateChanged, None) => Failure::StateChanged(line),
                    _ => Failure::Refused(line),
                }
            }
            None => Failure::Other(err.to_string()),
        }
    }
}

impl From<parley_server::Error> for Failure {
    fn from(err: parley_server::Error) -> Self {
        Failure::Other(err.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        Failure::Other(err.to_string())
    }
}

type CmdResult = Result<(), Failure>;

fn main() -> ExitCode {
    // A panic is a bug; it is reported on one line, never with a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string().replace('\n', " ");
        eprintln!("parley: internal error: {}", terminal::visible(&text));
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version: their text is the output.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            // clap's message, without the usage block and tips, on one line.
            let text = err.to_string();
            let message: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:"))
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("tip:")
                        && !l.starts_with("For more information")
                })
                .collect();
            let message = message.join(" ");
            let message = message.trim_start_matches("error: ");
            eprintln!("parley: {} (see parley --help)", terminal::visible(message));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Refused(line)) => {
            eprintln!("parley: {}", terminal::visible(&line));
            ExitCode::from(EXIT_REFUSED)
        }
        Err(Failure::StateChanged(line)) => {
            eprintln!("parley: {}", terminal::visible(&line));
            ExitCode::from(EXIT_STATE_CHANGED)
        }
        Err(Failure::Held(lines)) => coordination::held(&lines),
        Err(Failure::Exit(code, line)) => {
            eprintln!("parley: {}", terminal::visible(&line));
            ExitCode::from(code)
        }
        Err(Failure::Other(line)) => {
            eprintln!("parley: error: {}", terminal::visible(&line));
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> CmdResult {
    let config = || settings(cli.settings.as_deref(), &cli.trust);
    // The running server of the file when its admin channel answers, else the file.
    let here = |create: bool| -> Result<Target, Failure> { target(&cli.db, config()?, create) };
    match cli.command {
        Command::Serve(args) => serve::run(&cli.db, args, config),
        Command::Token(cmd) => {
            let create = matches!(cmd, admin::TokenCommand::Create { .. });
            admin::run(here(create)?.tokens(), cmd)
        }
        Command::Post { auth, envelope } => {
            let token = auth.resolve()?;
            reads::post(here(false)?.calls(), token.as_deref(), &envelope)
        }
        Command::Thread { auth, id, json } => {
            let token = auth.resolve()?;
            reads::thread(here(false)?.calls(), token.as_deref(), &id, json)
        }
        Command::Inbox {
            auth,
            page,
            extension,
            json,
        } => {
            let token = auth.resolve()?;
            let forum = here(false)?;
            reads::inbox(forum.calls(), token.as_deref(), &page, extension, json)
        }
        Command::Events {
            auth,
            page,
            thread,
            json,
        } => {
            let token = auth.resolve()?;
            let forum = here(false)?;
            reads::events(forum.calls(), token.as_deref(), &page, thread, json)
        }
        Command::Claim { auth, id, json } => {
            let token = auth.resolve()?;
            reads::claim(here(false)?.calls(), token.as_deref(), &id, json)
        }
        Command::Search(args) => {
            let token = args.auth.resolve()?;
            search::run(here(false)?.calls(), token.as_deref(), &args)
        }
        Command::Digest(args) => {
            let token = args.auth.resolve()?;
            digest::run(here(false)?.calls(), token.as_deref(), &args)
        }
        Command::Threads {
            auth,
            state,
            page,
            json,
        } => {
            let token = auth.resolve()?;
            let forum = here(false)?;
            verbs::threads(forum.calls(), token.as_deref(), state, &page, json)
        }
        Command::Proposals { auth, json } => {
            let token = auth.resolve()?;
            verbs::proposals(here(false)?.calls(), token.as_deref(), json)
        }
        Command::Coordination(verb) => coordination::run(&here, verb),
        Command::Provenance(verb) => {
            provenance::run(&here, verb, (cli.settings.as_deref(), &cli.trust))
        }
        Command::Confirm(a) => act(&here, a, &human::Act::Confirm),
        Command::Close(a) => act(&here, a, &human::Act::Close),
        Command::Reopen(a) => act(&here, a, &human::Act::Reopen),
        Command::Mark {
            auth,
            thread,
            state,
            body,
            seen,
            json,
        } => {
            let mark = human::Act::parse("mark", Some(&state))?;
            let token = auth.resolve()?;
            let forum = here(false)?;
            let (token, body, seen) = (token.as_deref(), body.as_deref(), seen.if_state);
            verbs::act(
                forum.calls(),
                token,
                &thread,
                &mark,
                body,
                seen.as_deref(),
                json,
            )
        }
        Command::Answer {
            auth,
            thread,
            text,
            json,
        } => {
            let token = auth.resolve()?;
            let forum = here(false)?;
            let (token, text) = (token.as_deref(), text.as_deref());
            verbs::act(
                forum.calls(),
                token,
                &thread,
                &human::Act::Answer,
                text,
                None,
                json,
            )
        }
        Command::Check { path } => check::run(path.as_deref().unwrap_or(&cli.db)),
        Command::Demo => demo::run(config()?),
    }
}

/// `confirm`, `close` and `reopen`: one act on one thread. The token is read
/// before the forum is opened.
fn act(here: &dyn Fn(bool) -> Result<Target, Failure>, a: ActArgs, act: &human::Act) -> CmdResult {
    let token = a.auth.resolve()?;
    let forum = here(false)?;
    let (token, body, seen) = (token.as_deref(), a.body.as_deref(), a.seen.if_state);
    verbs::act(
        forum.calls(),
        token,
        &a.thread,
        act,
        body,
        seen.as_deref(),
        a.json,
    )
}

/// Where a command's calls go: a running server, through its admin channel, or the
/// forum file, opened by this process.
enum Target {
    Server(control::Client),
    // Boxed: a forum is several times the size of a client, and there is one target.
    File(Box<Forum>),
}

impl Target {
    fn calls(&self) -> &dyn human::Call {
        match self {
            Target::Server(client) => client,
            Target::File(forum) => &**forum,
        }
    }

    fn tokens(&self) -> &dyn admin::Tokens {
        match self {
            Target::Server(client) => client,
            Target::File(forum) => &**forum,
        }
    }
}

/// The running server of `path` when its admin channel answers (the server's
/// settings then apply, not `config`), else the file itself.
fn target(path: &Path, config: Config, create: bool) -> Result<Target, Failure> {
    match control::Client::connect(path).map_err(Failure::Other)? {
        Some(client) => Ok(Target::Server(client)),
        None => Ok(Target::File(Box::new(open(path, config, create)?))),
    }
}

/// The settings of `--settings`/`PARLEY_SETTINGS`, or the defaults.
fn settings(json: Option<&str>, trust: &[String]) -> Result<Config, Failure> {
    let value = match json {
        None => None,
        Some(text) => Some(
            serde_json::from_str(text)
                .map_err(|e| Failure::Other(format!("--settings is not valid JSON: {e}")))?,
        ),
    };
    let mut config = match provenance::with_trust(value, trust)? {
        None => Config::default(),
        Some(value) => Config::from_json(&value)?,
    };
    config.progress = Some(progress::on_stderr());
    Ok(config)
}

/// Opens the forum file; only commands that may start a forum (`serve`, `token
/// create`) adopt a missing or empty file, so that a mistyped `--db` on a read is
/// reported, and the file left as it was, rather than made into a forum.
fn open(path: &Path, config: Config, create: bool) -> Result<Forum, Failure> {
    if control::is_shared(path) {
        // The backend's errors name the database without its password; the URL
        // itself is never printed.
        return parley_postgres::open(path, config).map_err(|err| Failure::Other(err.to_string()));
    }
    if !create && !path.exists() {
        return Err(Failure::Other(format!(
            "no forum at {} (set --db or PARLEY_DB; `parley token create` starts one)",
            path.display()
        )));
    }
    let opened = if create {
        parley_postgres::open(path, config)
    } else {
        parley_postgres::open_existing(path, config)
    };
    opened.map_err(|err| {
        let (text, shown) = (err.to_string(), path.display().to_string());
        let mut line = if text.contains(&shown) {
            text
        } else {
            format!("cannot open {shown}: {text}")
        };
        if line.contains("is empty, not a forum") {
            line.push_str("; `parley token create` or `parley serve` starts a forum in it");
        }
        // redb holds the file for one process at a time.
        if line.contains("already open") {
            let socket = control::socket_path(path);
            if matches!(control::Client::connect(path), Ok(Some(_))) {
                line.push_str(&format!(
                    " (a running `parley serve` holds it; its admin channel answers at {}, \
                     and the other commands go through it)",
                    socket.display()
                ));
            } else {
                line.push_str(&format!(
                    " (another process holds it, and no admin channel answers at {}: \
                     stop that process, or serve the file with `parley serve`, whose channel \
                     the commands use)",
                    socket.display()
                ));
            }
        }
        Failure::Other(line)
    })
}

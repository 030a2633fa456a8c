//! Connections: the URL's target, a pool, and prepared statements per connection.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use postgres::types::ToSql;
use postgres::{Client, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use parley_forum::Durability;
use parley_forum::{Error, Result};

use super::tls::{self, SslMode};
use parley_forum::storage::without_password;

/// The most connections a store's calls hold at once when the URL's
/// `max_connections` does not say (its listener holds one more).
const MAX_CONNECTIONS: usize = 16;
/// The range `max_connections` may take: a store needs one; a server's
/// `max_connections` is rarely set above a few thousand.
const MAX_CONNECTIONS_RANGE: std::ops::RangeInclusive<usize> = 1..=1000;
/// How long a connection attempt may take when the URL does not say; also how
/// long a call waits for one of a full pool's connections.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The forum of a URL without a `forum` parameter.
const DEFAULT_FORUM: &str = "main";

/// Where a forum lives: the server, the schema, and how to connect.
pub(super) struct Target {
    config: postgres::Config,
    /// `parley_<forum>`: every table of the forum is in it.
    pub(super) schema: String,
    /// The key of the forum's advisory lock.
    pub(super) lock: i64,
    /// The channel its commits are announced on.
    pub(super) channel: String,
    /// The URL without its password, for messages.
    pub(super) shown: String,
    pub(super) durability: Durability,
    /// The most connections the store's calls hold at once.
    max_connections: usize,
    /// TLS as the URL's `sslmode` and `sslrootcert` ask (`tls.rs`).
    tls: MakeRustlsConnect,
}

impl Target {
    pub(super) fn parse(url: &str, durability: Durability) -> Result<Target> {
        let shown = without_password(url);
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut forum = DEFAULT_FORUM.to_string();
        let mut max_connections = MAX_CONNECTIONS;
        // libpq's default: TLS when the server offers it.
        let mut ssl_mode = SslMode::Prefer;
        let mut root_cert = None;
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            if let Some(name) = pair.strip_prefix("forum=") {
                forum = name.to_string();
            } else if let Some(mode) = pair.strip_prefix("sslmode=") {
                ssl_mode = SslMode::parse(mode).ok_or_else(|| tls::unknown_mode(&shown, mode))?;
            } else if let Some(path) = pair.strip_prefix("sslrootcert=") {
                root_cert = Some(std::path::PathBuf::from(percent_decoded(path)));
            } else if let Some(n) = pair.strip_prefix("max_connections=") {
                max_connections = n
                    .parse()
                    .ok()
                    .filter(|n| MAX_CONNECTIONS_RANGE.contains(n))
                    .ok_or_else(|| {
                        Error::storage(format!(
                            "{shown}: max_connections=`{n}` must be a whole number from {} to {}",
                            MAX_CONNECTIONS_RANGE.start(),
                            MAX_CONNECTIONS_RANGE.end()
                        ))
                    })?;
            } else {
                rest.push(pair);
            }
        }
        if forum.is_empty()
            || forum.len() > 40
            || !forum
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(Error::storage(format!(
                "{shown}: the forum name `{forum}` must be 1 to 40 characters of a-z, 0-9 and _"
            )));
        }
        // libpq's parser knows the schemes in lower case only.
        let base = match base.split_once("://") {
            Some((_, after)) => format!("postgresql://{after}"),
            None => base.to_string(),
        };
        let libpq = if rest.is_empty() {
            base
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut config = postgres::Config::from_str(&libpq).map_err(|e| {
            Error::storage_caused_by(format!("{shown} is not a PostgreSQL URL: {e}"), e)
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("parley");
        }
        config.ssl_mode(ssl_mode.driver());
        let tls = tls::connector(&shown, ssl_mode, root_cert.as_deref())?;
        let schema = format!("parley_{forum}");
        Ok(Target {
            config,
            lock: lock_key(&schema),
            channel: schema.clone(),
            schema,
            shown,
            durability,
            max_connections,
            tls,
        })
    }

    /// A new connection, its session set for this forum.
    pub(super) fn connect(&self) -> Result<Client> {
        let mut client = self.config.connect(self.tls.clone()).map_err(|e| {
            // The driver's message names the step ("error performing TLS
            // handshake"); its causes say why (a certificate for another name).
            let mut text = format!("cannot reach PostgreSQL at {}: {e}", self.shown);
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            Error::storage_caused_by(text, e)
        })?;
        // The schema name is checked to be [a-z0-9_]: it needs no quoting.
        // Literals of queued writes (`sql.rs`) rely on standard strings.
        let mut setup = format!(
            "SET search_path TO {}; SET standard_conforming_strings TO on",
            self.schema
        );
        if self.durability == Durability::Volatile {
            // Commits return before the WAL is flushed: a crash may lose the last
            // ones, never corrupt the database (like the volatile redb forum).
            setup.push_str("; SET synchronous_commit TO off");
        }
        client.batch_execute(&setup).map_err(failed)?;
        Ok(client)
    }
}

/// `text` with its `%XX` escapes decoded (a URL parameter's value); an escape
/// that is not one is kept as it is.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The advisory lock key of a schema: FNV-1a of its name, fixed for all releases
/// (engines of different releases on one forum must take the same lock).
fn lock_key(schema: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in b"parley:".iter().chain(schema.as_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

/// A failure of a statement or of the connection, as a storage error.
pub(super) fn failed(e: postgres::Error) -> Error {
    let text = match e.as_db_error() {
        Some(db) => format!(
            "PostgreSQL refused a statement: {} ({})",
            db.message(),
            db.code().code()
        ),
        None if e.is_closed() => "the connection to PostgreSQL was lost".to_string(),
        None => format!("PostgreSQL: {e}"),
    };
    Error::storage_caused_by(text, e)
}

/// A connection and the statements prepared on it.
pub(super) struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
    /// Set when a call failed without an answer from the server: the server may
    /// be gone, and with it every idle connection.
    lost: bool,
    /// Whether the connection prepared the statements of a batch's posts
    /// (`posts::PREPARE`, sent by a writer's first round trip).
    pub(super) posts_prepared: bool,
}

impl Conn {
    fn check<T>(&mut self, out: std::result::Result<T, postgres::Error>) -> Result<T> {
        out.map_err(|e| {
            if e.as_db_error().is_none() {
                self.lost = true;
            }
            failed(e)
        })
    }

    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let prepared = self.client.prepare(sql);
        let s = self.check(prepared)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Every row `sql` returns.
    pub(super) fn rows(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let s = self.statement(sql)?;
        let out = self.client.query(&s, params);
        self.check(out)
    }

    /// The one row `sql` returns, if any.
    pub(super) fn row(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let s = self.statement(sql)?;
        let out = self.client.query_opt(&s, params);
        self.check(out)
    }

    /// Runs `sql`; the rows it changed.
    pub(super) fn exec(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let s = self.statement(sql)?;
        let out = self.client.execute(&s, params);
        self.check(out)
    }

    /// Runs statements without parameters, in one round trip, and returns the
    /// rows (as text) of each statement in turn.
    pub(super) fn simple_sets(&mut self, sql: &str) -> Result<Vec<Vec<postgres::SimpleQueryRow>>> {
        let out = self.client.simple_query(sql);
        let messages = self.check(out)?;
        let mut sets = vec![Vec::new()];
        for m in messages {
            match m {
                postgres::SimpleQueryMessage::Row(row) => {
                    sets.last_mut().expect("one set at least").push(row)
                }
                postgres::SimpleQueryMessage::CommandComplete(_) => sets.push(Vec::new()),
                _ => {}
            }
        }
        sets.pop();
        Ok(sets)
    }

    /// Runs statements without parameters, in one round trip.
    pub(super) fn batch(&mut self, sql: &str) -> Result<()> {
        let out = self.client.batch_execute(sql);
        self.check(out)
    }
}

/// Open connections to one forum's database.
pub(super) struct Pool {
    pub(super) target: Target,
    /// What this engine's writers need not read again (`cache.rs`).
    pub(super) cache: super::cache::Shared,
    /// This engine's name among the engines of the forum (random hex): the payload
    /// of its commits' notifications, by which its listener knows its own.
    pub(super) engine: String,
    /// Set by the listener when another engine committed: this engine's cache is
    /// then stale (a hint for the next writer; the forum's generation decides).
    pub(super) foreign: AtomicBool,
    slots: Mutex<Slots>,
    /// Rung when a connection goes back idle or is closed.
    freed: Condvar,
}

/// The pool's connections: those idle, and how many are open (idle or on loan).
#[derive(Default)]
struct Slots {
    idle: Vec<Conn>,
    open: usize,
}

impl Pool {
    pub(super) fn new(target: Target) -> Result<Pool> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::storage(format!("OS random source: {e}")))?;
        Ok(Pool {
            target,
            cache: Default::default(),
            engine: format!("{:016x}", u64::from_le_bytes(bytes)),
            foreign: AtomicBool::new(false),
            slots: Mutex::default(),
            freed: Condvar::new(),
        })
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle connection, or a new one while fewer than `max_connections` are
    /// open; else the first one freed, waited for up to the connect timeout. So
    /// however many calls arrive at once, the store never holds more connections
    /// than the URL allows, and the database's are left for others. A connection
    /// the server closed is never handed out again: after an outage the next call
    /// connects anew.
    pub(super) fn take(&self) -> Result<Pooled<'_>> {
        let max = self.target.max_connections;
        let wait = self
            .target
            .config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        let deadline = Instant::now() + wait;
        let mut slots = self.slots();
        loop {
            while let Some(conn) = slots.idle.pop() {
                if conn.client.is_closed() {
                    slots.open -= 1;
                    continue;
                }
                return Ok(Pooled {
                    conn: Some(conn),
                    pool: self,
                    discarded: false,
                });
            }
            if slots.open < max {
                slots.open += 1;
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::storage(format!(
                    "all {max} connections to PostgreSQL at {} stayed busy for {} ms \
                     (the URL's max_connections)",
                    self.target.shown,
                    wait.as_millis()
                )));
            }
            slots = self
                .freed
                .wait_timeout(slots, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(slots);
        let client = match self.target.connect() {
            Ok(client) => client,
            Err(e) => {
                self.closed(1);
                return Err(e);
            }
        };
        Ok(Pooled {
            conn: Some(Conn {
                client,
                statements: HashMap::new(),
                lost: false,
                posts_prepared: false,
            }),
            pool: self,
            discarded: false,
        })
    }

    /// Counts `n` connections closed, and wakes calls waiting for one.
    fn closed(&self, n: usize) {
        if n == 0 {
            return;
        }
        self.slots().open -= n;
        self.freed.notify_all();
    }

    /// Drops every idle connection (after a failure that may have hit them all).
    fn clear(&self) {
        let dropped = std::mem::take(&mut self.slots().idle);
        self.closed(dropped.len());
    }
}

/// A connection on loan; back to the pool when dropped, unless it is broken or
/// `discard` was called.
pub(super) struct Pooled<'p> {
    /// `Some` until dropped.
    conn: Option<Conn>,
    pool: &'p Pool,
    discarded: bool,
}

impl Pooled<'_> {
    pub(super) fn target(&self) -> &Target {
        &self.pool.target
    }

    pub(super) fn engine(&self) -> &str {
        &self.pool.engine
    }

    pub(super) fn get(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a pooled connection is present until dropped")
    }

    /// Closes the connection when dropped instead of returning it: after a
    /// failure its state (an aborted transaction, a lost socket) is unknown.
    pub(super) fn discard(&mut self) {
        self.discarded = true;
        if self.conn.as_ref().is_some_and(|c| c.lost) {
            self.pool.clear();
        }
    }

    pub(super) fn discarded(&self) -> bool {
        self.discarded
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if self.discarded || conn.client.is_closed() {
            drop(conn);
            self.pool.closed(1);
            return;
        }
        self.pool.slots().idle.push(conn);
        self.pool.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            without_password("postgres://me:secret@db:5432/x?forum=a"),
            "postgres://me:***@db:5432/x?forum=a"
        );
        assert_eq!(without_password("postgres://me@db/x"), "postgres://me@db/x");
        assert_eq!(
            without_password("postgresql://db/x?user=me&password=secret&forum=a"),
            "postgresql://db/x?user=me&password=***&forum=a"
        );
        let err = Target::parse(
            "postgres://me:secret@db/x?forum=Bad-Name",
            Durability::Durable,
        )
        .err()
        .expect("a bad forum name is refused");
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(err.to_string().contains("forum name"), "{err}");
    }

    #[test]
    fn the_forum_parameter_names_the_schema_and_is_not_passed_on() {
        let t = Target::parse(
            "postgres://u@h/db?forum=team_7&connect_timeout=2",
            Durability::Durable,
        )
        .expect("parses");
        assert_eq!(t.schema, "parley_team_7");
        assert_eq!(
            t.config.get_connect_timeout(),
            Some(&Duration::from_secs(2))
        );
        let d = Target::parse("postgres://u@h/db", Durability::Durable).expect("parses");
        assert_eq!(d.schema, "parley_main");
        assert_ne!(t.lock, d.lock);
        assert!(Target::parse("postgres://u@h/db?bogus=1", Durability::Durable).is_err());
    }

    #[test]
    fn sslrootcert_paths_are_percent_decoded_and_kept_from_libpq() {
        assert_eq!(percent_decoded("/etc/my%20ca.pem"), "/etc/my ca.pem");
        assert_eq!(percent_decoded("/a%2Fb%zz%4"), "/a/b%zz%4");
        // sslrootcert is read when the URL is parsed, not passed on.
        let err = Target::parse(
            "postgres://u@h/db?sslmode=require&sslrootcert=%2Fnonexistent%2Fa%20b.pem",
            Durability::Durable,
        )
        .err()
        .expect("the file is read at once");
        assert!(err.to_string().contains("/nonexistent/a b.pem"), "{err}");
    }

    #[test]
    fn max_connections_is_16_unless_the_url_says_and_stays_in_its_range() {
        let parse = |url: &str| Target::parse(url, Durability::Durable);
        assert_eq!(parse("postgres://u@h/db").unwrap().max_connections, 16);
        let t = parse("postgres://u@h/db?max_connections=3&forum=a").unwrap();
        assert_eq!(t.max_connections, 3);
        assert_eq!(t.schema, "parley_a");
        assert_eq!(
            parse("postgres://u@h/db?max_connections=1000")
                .unwrap()
                .max_connections,
            1000
        );
        for bad in ["0", "1001", "-1", "many", ""] {
            let err = parse(&format!("postgres://u:pw@h/db?max_connections={bad}"))
                .err()
                .unwrap_or_else(|| panic!("max_connections={bad} is refused"));
            let text = err.to_string();
            assert!(text.contains("max_connections=`"), "{text}");
            assert!(text.contains("from 1 to 1000"), "{text}");
            assert!(!text.contains(":pw@"), "{text}");
        }
    }
}

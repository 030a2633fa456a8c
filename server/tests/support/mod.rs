//! The in-process harness of the server tests: a forum in a temporary directory,
//! its tokens made through the engine, and the server's router served on a
//! loopback listener inside the test's own runtime (`parley_server::serve_on`),
//! with the minimal HTTP/1.1 client the tests speak to it with. No process is
//! spawned: `Server::start` takes the flags of `parley serve` that the tests use
//! and makes the same `Options` and settings of them.
//!
//! Its interface is that of `bindings/cli/tests/common`, whose tests spawn the
//! real binary, so that a test moves between the two with small edits.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use parley_forum::{Config, Forum, TokenSpec};
use parley_server::{App, Limits, Options};
use serde_json::{json, Value};
use tokio::sync::watch;

/// A forum file in a fresh temporary directory.
pub struct TempForum {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
}

impl TempForum {
    pub fn new() -> TempForum {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("forum.redb");
        TempForum { dir, db }
    }

    /// What `parley token create HANDLE EXTRA…` makes (`--human`, `--rights a,b`,
    /// `--label L`), made through the engine; returns the secret.
    /// While a [`Server`] of this process serves the file, the token is made
    /// through its forum, as `parley` makes it through the admin channel.
    pub fn token(&self, handle: &str, extra: &[&str]) -> String {
        if let Some(forum) = serving(&self.db) {
            return make_token(&forum, handle, extra);
        }
        let forum = Forum::open(&self.db, Config::default()).expect("open the forum");
        make_token(&forum, handle, extra)
    }
}

impl TempForum {
    /// What `parley post ENVELOPE` prints, posted through the engine (through the
    /// served forum while a server of this process serves the file).
    pub fn post(&self, token: &str, envelope: &Value) -> Value {
        let posted = match serving(&self.db) {
            Some(forum) => forum.call(Some(token), "post", envelope),
            None => Forum::open(&self.db, Config::default())
                .expect("open the forum")
                .call(Some(token), "post", envelope),
        };
        posted.unwrap_or_else(|e| panic!("{envelope}: {e}"))
    }
}

/// The forums served by this process's servers, by path.
fn served() -> &'static Mutex<HashMap<PathBuf, Weak<Forum>>> {
    static SERVED: OnceLock<Mutex<HashMap<PathBuf, Weak<Forum>>>> = OnceLock::new();
    SERVED.get_or_init(Mutex::default)
}

/// The forum a server of this process serves at `db`, if one does.
fn serving(db: &Path) -> Option<Arc<Forum>> {
    served().lock().unwrap().get(db).and_then(Weak::upgrade)
}

/// A token of `handle` with the `token create` flags `extra`, on `forum`.
pub fn make_token(forum: &Forum, handle: &str, extra: &[&str]) -> String {
    let mut spec = json!({ "handle": handle });
    let mut args = extra.iter();
    while let Some(flag) = args.next() {
        match *flag {
            "--human" => spec["kind"] = json!("human"),
            "--rights" => {
                let rights: Vec<&str> = args
                    .next()
                    .expect("--rights takes a value")
                    .split(',')
                    .collect();
                spec["rights"] = json!(rights);
            }
            "--label" => spec["label"] = json!(args.next().expect("--label takes a value")),
            other => panic!("the harness does not know `token create {other}`"),
        }
    }
    let spec = TokenSpec::from_json(&spec).expect("a token spec");
    forum.create_token(&spec).expect("create the token")
}

/// The settings of `--settings JSON`, as `parley` reads them.
pub fn settings(json: Option<&str>) -> Config {
    match json {
        None => Config::default(),
        Some(text) => {
            let value: Value = serde_json::from_str(text).expect("settings are JSON");
            Config::from_json(&value).expect("valid settings")
        }
    }
}

/// The `Options` of `parley serve --http 127.0.0.1:0` with its defaults.
pub fn default_options() -> Options {
    let (max_connections, _) = parley_server::fit_to_descriptors(2048);
    let max_waits = 1000.min(max_connections / 2).max(1);
    Options {
        addr: "127.0.0.1:0".into(),
        allow_origins: Vec::new(),
        allow_hosts: Vec::new(),
        grace: Duration::from_millis(10_000),
        limits: Limits {
            header_timeout: Duration::from_millis(10_000),
            idle_timeout: Duration::from_millis(60_000),
            body_timeout: Duration::from_millis(10_000),
            max_connections,
        },
        max_waits,
        max_waits_per_token: parley_server::default_share(max_waits),
        heartbeat: Duration::from_millis(15_000),
        web_session_idle: Duration::from_secs(1800),
        web_session_max: Duration::from_secs(43_200),
        web_secure_cookie: false,
    }
}

/// The server's router over `forum`, served on a loopback port in a runtime of its
/// own; dropping it stops it as SIGTERM stops `parley serve`.
pub struct Server {
    pub addr: SocketAddr,
    pub forum: Arc<Forum>,
    stop: watch::Sender<bool>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// `parley --db DB [--settings SETTINGS] serve --http 127.0.0.1:0 EXTRA…`, in
    /// this process.
    pub fn start(db: &Path, settings: Option<&str>, extra: &[&str]) -> Server {
        let mut config = self::settings(settings);
        let mut options = default_options();
        let mut args = extra.iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                *args
                    .next()
                    .unwrap_or_else(|| panic!("{flag} takes a value"))
            };
            let ms = |v: &str| Duration::from_millis(v.parse().expect("milliseconds"));
            match *flag {
                "--header-timeout-ms" => options.limits.header_timeout = ms(value()),
                "--body-timeout-ms" => options.limits.body_timeout = ms(value()),
                "--idle-timeout-ms" => options.limits.idle_timeout = ms(value()),
                "--max-connections" => options.limits.max_connections = value().parse().unwrap(),
                "--heartbeat-ms" => options.heartbeat = ms(value()),
                "--shutdown-grace-ms" => options.grace = ms(value()),
                "--max-waits" => {
                    let n: usize = value().parse().unwrap();
                    let cap = options.limits.max_connections.saturating_sub(1).max(1);
                    options.max_waits = n.min(cap);
                    options.max_waits_per_token = parley_server::default_share(options.max_waits);
                }
                "--max-waits-per-token" => options.max_waits_per_token = value().parse().unwrap(),
                "--allow-origin" => options.allow_origins.push(value().to_string()),
                "--allow-host" => options.allow_hosts.push(value().to_string()),
                "--web-secure-cookie" => options.web_secure_cookie = true,
                "--web-session-idle-s" => {
                    options.web_session_idle = Duration::from_secs(value().parse().unwrap())
                }
                "--web-session-max-s" => {
                    options.web_session_max = Duration::from_secs(value().parse().unwrap())
                }
                "--mcp-output-schemas" => {
                    config.mcp_output_schemas = value().parse().expect("an output schema mode")
                }
                other => panic!("the harness does not know `serve {other}`"),
            }
        }
        let forum = Forum::open(db, config).expect("open the forum");
        let server = Server::serve(forum, &options);
        served()
            .lock()
            .unwrap()
            .insert(db.to_path_buf(), Arc::downgrade(&server.forum));
        server
    }

    /// Serves `forum` under `options` (its `addr` is ignored: a free loopback port).
    pub fn serve(forum: Forum, options: &Options) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(64)
            .enable_all()
            .build()
            .expect("a runtime");
        let forum = Arc::new(forum);
        let (stop, stopping) = watch::channel(false);
        let app = App::new(Arc::clone(&forum), options, stopping.clone()).expect("the state");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port");
        let addr = listener.local_addr().unwrap();
        runtime.spawn(parley_server::serve_on(
            listener,
            app,
            options.limits,
            stopping,
        ));
        Server {
            addr,
            forum,
            stop,
            runtime: Some(runtime),
        }
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> Response {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        http(self.addr, "GET", path, &headers, None)
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &str) -> Response {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        headers.push(("Content-Type", "application/json"));
        http(self.addr, "POST", path, &headers, Some(body.as_bytes()))
    }

    /// Stops serving as SIGTERM would: no new connection, every wait and stream
    /// ended; returns once the runtime is down.
    pub fn stop(&mut self) {
        let _ = self.stop.send(true);
        self.forum.end_waits();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

#[path = "http_client.rs"]
mod http_client;
pub use http_client::*;

#[path = "sse_client.rs"]
pub mod sse_client;

#[path = "digest_thread.rs"]
pub mod digest_thread;

#[path = "connection_cap.rs"]
pub mod connection_cap;

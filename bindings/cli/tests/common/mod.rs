//! Helpers shared by the integration tests: running the built `parley` binary, a
//! server on a free loopback port, and a minimal HTTP/1.1 client over `TcpStream`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_parley");

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

    /// Runs `parley --db <db> ARGS` with `PARLEY_*` variables cleared.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run parley")
    }

    /// Runs `parley --db <db> ARGS` with `token` in `PARLEY_TOKEN` (a token on the
    /// command line would be visible to other users, and `--token` says so).
    pub fn run_as(&self, token: &str, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        cmd.env("PARLEY_TOKEN", token);
        cmd.output().expect("run parley")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("--db").arg(&self.db).args(args);
        for var in ["PARLEY_DB", "PARLEY_TOKEN", "PARLEY_SETTINGS"] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// `parley token create HANDLE EXTRA…`; returns the secret.
    pub fn token(&self, handle: &str, extra: &[&str]) -> String {
        let mut args = vec!["token", "create", handle];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "token create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let secret = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            secret.lines().count(),
            1,
            "the secret alone on stdout: {secret:?}"
        );
        secret.trim().to_string()
    }
}

/// A running `parley serve --http 127.0.0.1:0`.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
}

impl Server {
    pub fn start(db: &Path, settings: Option<&str>, extra: &[&str]) -> Server {
        let mut cmd = Command::new(BIN);
        cmd.arg("--db").arg(db);
        if let Some(settings) = settings {
            cmd.arg("--settings").arg(settings);
        }
        cmd.args(["serve", "--http", "127.0.0.1:0"]).args(extra);
        for var in ["PARLEY_DB", "PARLEY_TOKEN", "PARLEY_SETTINGS", "RUST_LOG"] {
            cmd.env_remove(var);
        }
        Server::spawn(cmd)
    }

    /// Starts `cmd`, a `parley … serve --http ADDR` command, and waits for the
    /// address it reports.
    pub fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn server");
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).unwrap_or_else(|_| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server did not report its address");
            });
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest.split_whitespace().next().unwrap().parse().unwrap();
                return Server {
                    child,
                    addr,
                    stderr: rx,
                };
            }
        }
    }

    /// Sends SIGTERM and waits (bounded) for a clean exit; returns the stderr lines.
    pub fn terminate(self) -> Vec<String> {
        self.stop("TERM")
    }

    /// Sends SIGINT (Ctrl-C) and waits (bounded) for a clean exit.
    pub fn interrupt(self) -> Vec<String> {
        self.stop("INT")
    }

    fn stop(mut self, signal: &str) -> Vec<String> {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        let exit = loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                break exit;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not stop after SIG{signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(exit.success(), "the server exited with {exit}");
        // The reader thread ends at the pipe's end, which the exit has closed.
        let mut lines = Vec::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            lines.push(line);
        }
        lines
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
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[path = "../../../../server/tests/support/http_client.rs"]
mod http_client;
pub use http_client::*;

#[path = "../../../../server/tests/support/sse_client.rs"]
pub mod sse_client;

#[path = "../../../../server/tests/support/digest_thread.rs"]
pub mod digest_thread;

#[path = "../../../../server/tests/support/connection_cap.rs"]
pub mod connection_cap;

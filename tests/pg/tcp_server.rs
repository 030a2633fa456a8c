//! A second throwaway PostgreSQL server of its own, on a TCP port of 127.0.0.1,
//! for the tests of TLS: the shared server of `server.sh` listens on a Unix socket
//! only, where PostgreSQL speaks no TLS. Stopped, and its files removed, when the
//! value is dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct TcpServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
}

/// The directory of the server's binaries (`server.sh` installed them).
fn bin() -> PathBuf {
    std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's server is installed (tests/pg/server.sh)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .find(|b| b.join("pg_ctl").exists())
        .expect("pg_ctl")
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// A command that runs a server binary as the server's user (`postgres` when we
/// are root: the server refuses to run as root).
fn server_command(program: &Path) -> Command {
    if as_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Runs a server binary as the server's user; it must succeed.
fn run(program: &Path, args: &[&str]) {
    let out = server_command(program).args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{} {args:?}: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn give_to_server(path: &Path) {
    if as_root() {
        let ok = Command::new("chown")
            .args(["-R", "postgres"])
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "chown {}", path.display());
    }
}

impl TcpServer {
    /// Starts a server; with `tls` (a PEM certificate chain and its key) it
    /// speaks TLS, else it refuses TLS as a server with `ssl = off` does.
    pub fn start(tls: Option<(&str, &str)>) -> TcpServer {
        let bin = bin();
        let dir = tempfile::Builder::new()
            .prefix("parley-pg-tcp.")
            .tempdir()
            .expect("a directory");
        give_to_server(dir.path());
        let data = dir.path().join("data");
        run(
            &bin.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "parley",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
        );
        let mut options = format!(
            "-c listen_addresses=127.0.0.1 -c port={{port}} -k {} -c max_connections=40",
            dir.path().display()
        );
        if let Some((cert, key)) = tls {
            let (cert_file, key_file) = (data.join("server.crt"), data.join("server.key"));
            std::fs::write(&cert_file, cert).unwrap();
            std::fs::write(&key_file, key).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
            give_to_server(&data);
            options.push_str(" -c ssl=on");
        }
        // A free port now; another process may take it before the server does,
        // so a failed start tries the next one.
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let log = dir.path().join("server.log");
            let started = server_command(&bin.join("pg_ctl"))
                .args([
                    "-D",
                    data.to_str().unwrap(),
                    "-l",
                    log.to_str().unwrap(),
                    "-w",
                ])
                .args(["-o", &options.replace("{port}", &port.to_string()), "start"])
                .output()
                .expect("pg_ctl runs");
            if started.status.success() {
                return TcpServer { dir, bin, port };
            }
        }
        panic!(
            "the TCP server did not start: {}",
            std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default()
        );
    }

    /// The URL of database `postgres` on this server, by `host`, with `params`.
    pub fn url(&self, host: &str, params: &str) -> String {
        format!("postgres://parley@{host}:{}/postgres?{params}", self.port)
    }

    /// A plain connection over the server's Unix socket, for checks.
    pub fn admin(&self) -> postgres::Client {
        let url = format!(
            "postgres://parley@localhost/postgres?host={}&port={}",
            self.dir.path().display(),
            self.port
        );
        postgres::Client::connect(&url, postgres::NoTls).expect("connects")
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let pg_ctl = self.bin.join("pg_ctl");
        let args = [
            "-D",
            data.to_str().unwrap_or(""),
            "-m",
            "immediate",
            "-w",
            "stop",
        ];
        let _ = server_command(&pg_ctl).args(args).output();
    }
}

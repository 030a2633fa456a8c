//! The admin channel of a running server: `parley token …` and the other commands
//! reach a server that holds the forum file, through `<forum-file>.sock`, while it
//! serves HTTP under load; the socket is private, never harms a file that is not
//! its own, and goes away with the server.
//!
//! A peer of another user is refused by the server's uid check; the tests may run
//! as root, where no such peer can be made, so that check is tested in the unit
//! tests of `control::server` with a peer uid the test chooses.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Server, TempForum, BIN};
use serde_json::{json, Value};

const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

fn socket(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".sock");
    PathBuf::from(name)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every thread of the forum, by paging `parley threads --json`.
fn thread_count(forum: &TempForum, token: &str) -> usize {
    let mut count = 0;
    let mut since: Option<String> = None;
    loop {
        let mut args = vec!["threads", "--json", "--limit", "200"];
        if let Some(cursor) = &since {
            args.extend(["--since", cursor.as_str()]);
        }
        let out = forum.run_as(token, &args);
        assert!(out.status.success(), "threads: {}", stderr(&out));
        let page: Value = serde_json::from_slice(&out.stdout).unwrap();
        count += page["items"].as_array().unwrap().len();
        if page["more"] != true {
            return count;
        }
        since = Some(page["cursor"].as_str().unwrap().to_string());
    }
}

#[test]
fn tokens_are_issued_and_revoked_through_a_server_under_load_and_no_write_is_lost() {
    let forum = TempForum::new();
    let human = forum.token("ann", &["--human"]);
    let agent = forum.token("bob", &["--rights", "read,write"]);
    let server = Server::start(&forum.db, Some(SETTINGS), &[]);
    let addr = server.addr;

    // Eight clients post over HTTP, each counting the posts acknowledged (201).
    let stop = Arc::new(AtomicBool::new(false));
    let posters: Vec<_> = (0..8)
        .map(|n| {
            let (stop, auth) = (Arc::clone(&stop), format!("Bearer {agent}"));
            std::thread::spawn(move || {
                let mut acked = 0usize;
                let deadline = Instant::now() + Duration::from_secs(20);
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    let body = json!({"kind": "ask", "body": format!("question {n}-{acked}")});
                    let headers = [
                        ("Authorization", auth.as_str()),
                        ("Content-Type", "application/json"),
                    ];
                    let body = body.to_string();
                    let resp = common::http(
                        addr,
                        "POST",
                        "/v1/messages",
                        &headers,
                        Some(body.as_bytes()),
                    );
                    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
                    acked += 1;
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));

    // Issued through the command line while the server holds the file…
    let fresh = forum.token("dana", &["--rights", "read,write"]);
    // …and good at once over HTTP.
    let who = server.get("/v1/whoami", Some(&fresh));
    assert_eq!(who.status, 200, "{}", String::from_utf8_lossy(&who.body));
    assert_eq!(who.json()["identity"], "ainotes:dana");
    let listed = forum.run(&["token", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let line = stdout(&listed)
        .lines()
        .find(|l| l.starts_with("ainotes:dana"))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        line.split_whitespace()
            .eq(["ainotes:dana", "llm", "1", "dana"]),
        "{line:?}"
    );

    // A post through the channel counts like any other.
    let out = forum.run_as(
        &fresh,
        &["post", r#"{"kind":"ask","body":"through the channel"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    // Revoked through the command line: the very next request is refused.
    let out = forum.run(&["token", "revoke", &fresh]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("token revoked"));
    let after = server.get("/v1/whoami", Some(&fresh));
    assert_eq!(
        (after.status, after.reason()),
        (401, "token_invalid".to_string())
    );
    // Revoking it again says so, as on the file.
    let again = forum.run(&["token", "revoke", &fresh]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("no active token matches"),
        "{}",
        stderr(&again)
    );
    // A spec the engine refuses comes back as it would from the file.
    let bad = forum.run(&["token", "create", "Not A Handle"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("handle `Not A Handle`"),
        "{}",
        stderr(&bad)
    );

    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let acked: usize = posters.into_iter().map(|p| p.join().unwrap()).sum();
    assert!(acked > 0);
    server.terminate();
    // Every acknowledged post is in the file, read back without a server.
    assert_eq!(thread_count(&forum, &human), acked + 1);
}

#[test]
fn the_socket_is_private_and_goes_with_the_server() {
    let forum = TempForum::new();
    let human = forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, None, &[]);
    let meta = std::fs::symlink_metadata(socket(&forum.db)).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.mode() & 0o777, 0o600);
    // Nothing is left of the private directory it was made in.
    let names: Vec<String> = std::fs::read_dir(forum.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".parley-admin")),
        "{names:?}"
    );

    // A second server on the same file is told who holds it.
    let second = forum.run(&["serve", "--http", "127.0.0.1:0"]);
    assert_eq!(second.status.code(), Some(1));
    assert!(
        stderr(&second).contains("its admin channel answers at"),
        "{}",
        stderr(&second)
    );

    let out = forum.run(&["whoami-does-not-exist"]);
    assert_eq!(out.status.code(), Some(2));
    let out = forum.run_as(&human, &["threads"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "No threads.\n");
    let lines = server.terminate();
    assert!(!socket(&forum.db).exists(), "{lines:?}");
}

#[test]
fn a_file_at_the_socket_path_stops_the_server_and_is_left_untouched() {
    let forum = TempForum::new();
    let path = socket(&forum.db);
    assert!(!forum.db.exists());
    let content = b"not a socket, and not parley's\n";
    std::fs::write(&path, content).unwrap();
    let before = std::fs::metadata(&path).unwrap();
    let out = forum.run(&["serve", "--http", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("exists and is not a socket"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("left untouched"), "{}", stderr(&out));
    // Refused before the forum file is made: no new file is left behind.
    assert!(
        !forum.db.exists(),
        "a refused serve made {}",
        forum.db.display()
    );
    assert_eq!(std::fs::read(&path).unwrap(), content);
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(
        (after.ino(), after.mtime_nsec()),
        (before.ino(), before.mtime_nsec())
    );
    // The commands do not take it for a channel: they open the file as usual.
    let out = forum.run(&["token", "create", "ann", "--human"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_stale_socket_is_replaced() {
    let forum = TempForum::new();
    forum.token("ann", &["--human"]);
    // A socket nobody listens on any more, as a killed server leaves it.
    drop(UnixListener::bind(socket(&forum.db)).unwrap());
    assert!(UnixStream::connect(socket(&forum.db)).is_err());
    // A mode the server would never give its own (an inode number may be reused,
    // so the mode and an answer tell the new socket from the stale one).
    let loose = std::fs::Permissions::from_mode(0o644);
    std::fs::set_permissions(socket(&forum.db), loose).unwrap();
    let server = Server::start(&forum.db, None, &[]);
    let fresh = std::fs::symlink_metadata(socket(&forum.db)).unwrap();
    assert_eq!(fresh.mode() & 0o777, 0o600);
    assert!(UnixStream::connect(socket(&forum.db)).is_ok());
    let out = forum.run(&["token", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("human:ann"));
    server.terminate();
    assert!(!socket(&forum.db).exists());
}

#[test]
fn a_held_file_without_a_channel_is_reported_as_such() {
    let forum = TempForum::new();
    let human = forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, None, &[]);
    // The socket is gone (removed by hand): the commands cannot reach the server.
    std::fs::remove_file(socket(&forum.db)).unwrap();
    let out = forum.run_as(&human, &["inbox"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(text.contains("no admin channel answers at"), "{text}");
    assert!(!text.contains("HTTP API"), "{text}");
    server.terminate();
}

/// One request line and its reply, on a raw connection to the channel.
fn exchange(stream: &mut UnixStream, reader: &mut BufReader<UnixStream>, line: &[u8]) -> Value {
    stream.write_all(line).unwrap();
    stream.write_all(b"\n").unwrap();
    let mut reply = String::new();
    reader.read_line(&mut reply).unwrap();
    serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{e}: {reply:?}"))
}

#[test]
fn malformed_and_oversized_requests_get_stable_errors() {
    let forum = TempForum::new();
    let human = forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, None, &[]);
    let mut stream = UnixStream::connect(socket(&forum.db)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    for (line, kind) in [
        (&b"{not json"[..], "bad_request"),
        (b"42", "bad_request"),
        (br#"{"op":"format_disk"}"#, "bad_request"),
        (br#"{"op":"call"}"#, "bad_request"),
        (br#"{"op":"token_create","spec":"ann"}"#, "bad_request"),
        (b"\xff\xfe{}", "not_utf8"),
    ] {
        let reply = exchange(&mut stream, &mut reader, line);
        assert_eq!(
            reply["error"]["kind"],
            kind,
            "{}",
            String::from_utf8_lossy(line)
        );
        assert!(reply["error"]["message"].is_string());
    }
    // The same connection still serves well-formed requests, refusals included.
    let ok = exchange(
        &mut stream,
        &mut reader,
        json!({"op": "call", "token": human, "operation": "whoami"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(ok["ok"]["identity"], "human:ann");
    let refused = exchange(
        &mut stream,
        &mut reader,
        br#"{"op":"call","operation":"whoami"}"#,
    );
    assert_eq!(refused["refused"]["reason"], "token_missing");
    assert_eq!(refused["refused"]["status"], 401);

    // A line over 1 MiB: the error, then the connection is closed.
    let long = vec![b'x'; (1 << 20) + 10];
    let _ = stream.write_all(&long);
    let mut reply = String::new();
    reader.read_line(&mut reply).unwrap();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["error"]["kind"], "line_too_long");
    let mut rest = String::new();
    assert_eq!(reader.read_line(&mut rest).unwrap_or(0), 0, "{rest:?}");
    // The server is none the worse.
    let out = forum.run(&["token", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    server.terminate();
}

#[test]
fn serve_stdio_offers_the_channel_too() {
    let forum = TempForum::new();
    let human = forum.token("ann", &["--human"]);
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(&forum.db)
        .args(["serve", "--stdio"])
        .env_remove("PARLEY_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while UnixStream::connect(socket(&forum.db)).is_err() {
        assert!(Instant::now() < deadline, "no admin channel appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let token = forum.token("bob", &["--rights", "read,write"]);
    let out = forum.run_as(
        &token,
        &["post", r#"{"kind":"ask","body":"via stdio's channel"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = forum.run_as(&human, &["close", "th_1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("th_1 closed (confirmed, user)"),
        "{}",
        stdout(&out)
    );
    // End of input ends the server, and its socket with it.
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(!socket(&forum.db).exists());
    let out = forum.run(&["token", "list"]);
    assert!(stdout(&out).contains("ainotes:bob"), "{}", stdout(&out));
}

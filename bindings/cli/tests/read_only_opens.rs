//! Only the commands that start a forum (`serve`, `token create`) adopt a missing or
//! empty file. Every other command refuses it without writing a byte, and `parley
//! check` writes nothing to any file, ever: an empty, missing or foreign file is
//! refused as it is (same bytes, same mtime), and a real forum is checked on a
//! private copy, the file itself unchanged.

mod common;

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

use common::{Server, TempForum};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The file's bytes and mtime, after setting the mtime an hour back, so that a
/// write within the same second still shows.
fn snapshot(path: &Path) -> (Vec<u8>, SystemTime) {
    let past = SystemTime::now() - Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(past)
        .unwrap();
    (std::fs::read(path).unwrap(), mtime(path))
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn assert_unchanged(path: &Path, before: &(Vec<u8>, SystemTime), what: &str) {
    assert_eq!(
        std::fs::read(path).unwrap(),
        before.0,
        "{what} wrote to the file"
    );
    assert_eq!(mtime(path), before.1, "{what} changed the file's mtime");
}

/// Every command but `serve` and `token create`, each with what it needs.
const READS: [&[&str]; 15] = [
    &["threads"],
    &["thread", "th_1"],
    &["inbox"],
    &["events"],
    &["claim", "cl_1"],
    &["search", "port"],
    &["proposals"],
    &["post", r#"{"kind":"ask","body":"Which port?"}"#],
    &["confirm", "th_1"],
    &["close", "th_1"],
    &["reopen", "th_1"],
    &["mark", "th_1", "deferred"],
    &["answer", "th_1", "7878"],
    &["token", "list"],
    &[
        "token",
        "revoke",
        "pt_0000000000000000000000000000000000000000000",
    ],
];

#[test]
fn no_command_but_serve_and_token_create_adopts_an_empty_file() {
    let forum = TempForum::new();
    File::create(&forum.db).unwrap();
    let before = snapshot(&forum.db);
    for args in READS {
        let out = forum.run_as("pt_0000000000000000000000000000000000000000000", args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("is empty, not a forum"), "{args:?}: {err}");
        assert!(err.contains("`parley token create`"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_unchanged(&forum.db, &before, &format!("{args:?}"));
    }
    // The command that starts a forum does, in the same empty file.
    let token = forum.token("ann", &["--human"]);
    assert!(std::fs::metadata(&forum.db).unwrap().len() > 0);
    let out = forum.run_as(&token, &["threads"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn serve_adopts_an_empty_file() {
    let forum = TempForum::new();
    File::create(&forum.db).unwrap();
    let server = Server::start(&forum.db, None, &[]);
    assert_eq!(server.get("/v1/manifest", None).status, 200);
    server.terminate();
    assert!(std::fs::metadata(&forum.db).unwrap().len() > 0);
}

#[test]
fn no_command_but_serve_and_token_create_makes_a_missing_file() {
    let forum = TempForum::new();
    for args in READS.iter().chain([&["check"][..]].iter()) {
        let out = forum.run_as("pt_0000000000000000000000000000000000000000000", args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(!forum.db.exists(), "{args:?} created the forum file");
    }
}

#[test]
fn check_refuses_an_empty_or_foreign_file_without_writing() {
    let forum = TempForum::new();
    for (contents, needle) in [
        (&b""[..], "is empty, not a forum"),
        (b"SQLite format 3\0 and more", "not a Parley forum"),
        (b"re", "not a Parley forum"),
    ] {
        std::fs::write(&forum.db, contents).unwrap();
        let before = snapshot(&forum.db);
        for out in [
            forum.run(&["check"]),
            forum.run(&["check", forum.db.to_str().unwrap()]),
        ] {
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert!(err.contains(needle), "{needle}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert_unchanged(&forum.db, &before, "check");
        }
    }
    assert!(
        std::fs::read_dir(forum.dir.path()).unwrap().count() == 1,
        "nothing beside it"
    );
}

#[test]
fn check_writes_nothing_to_a_real_forum() {
    let forum = TempForum::new();
    let bob = forum.token("bob", &["--rights", "read,write"]);
    for n in 0..5 {
        let body = format!(r#"{{"kind":"ask","body":"question {n}"}}"#);
        let out = forum.run_as(&bob, &["post", &body]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // Readable by others: the note about the mode is the file's, not the copy's.
    std::fs::set_permissions(&forum.db, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = snapshot(&forum.db);
    for _ in 0..2 {
        let out = forum.run(&["check"]);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{said} {}", stderr(&out));
        assert!(said.contains("pages: sound"), "{said}");
        assert!(said.contains("5 threads, 5 messages"), "{said}");
        assert!(
            said.contains("other users may read it (mode 640)"),
            "{said}"
        );
        assert!(
            said.starts_with(&format!("{}: ", forum.db.display())),
            "{said}"
        );
        assert_unchanged(&forum.db, &before, "check");
    }
    let names: Vec<_> = std::fs::read_dir(forum.dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing made beside the forum: {names:?}");
}

#[test]
fn check_refuses_a_file_a_server_holds() {
    let forum = TempForum::new();
    forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, None, &[]);
    let out = forum.run(&["check"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("a process holds it open as a forum"), "{err}");
    server.terminate();
    let out = forum.run(&["check"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

//! The command line at the edges of the forum file: a SQLite database in WAL mode
//! keeps every row when `parley` is pointed at it, and `parley check` says what it
//! found in a sound, a damaged and a foreign file.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_parley");

fn parley(db: &Path, args: &[&str]) -> Output {
    command(db, args).output().unwrap()
}

/// `parley ARGS` with `token` in PARLEY_TOKEN.
fn parley_as(db: &Path, token: &str, args: &[&str]) -> Output {
    command(db, args)
        .env("PARLEY_TOKEN", token)
        .output()
        .unwrap()
}

fn command(db: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--db").arg(db).args(args);
    for var in ["PARLEY_DB", "PARLEY_TOKEN", "PARLEY_SETTINGS"] {
        cmd.env_remove(var);
    }
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn rows(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM items", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_sqlite_database_in_wal_mode_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    let wal = dir.path().join("app.db-wal");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // The rows stay in the WAL: no checkpoint moves them into the main file.
    conn.execute_batch("PRAGMA wal_autocheckpoint=0; CREATE TABLE items(n INTEGER, body TEXT);")
        .unwrap();
    for n in 0..1000 {
        conn.execute("INSERT INTO items VALUES (?1, 'a committed row')", [n])
            .unwrap();
    }
    let (main_before, wal_before) = (std::fs::read(&db).unwrap(), std::fs::read(&wal).unwrap());
    assert!(wal_before.len() > 4096, "the rows are in the WAL");

    let token = "pt_0000000000000000000000000000000000000000000";
    for args in [
        vec!["thread", "th_1"],
        vec!["inbox"],
        vec!["token", "create", "mallory"],
        vec!["check"],
    ] {
        let out = parley_as(&db, token, &args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(err.contains("not a Parley forum"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(
            std::fs::read(&db).unwrap(),
            main_before,
            "{args:?} wrote app.db"
        );
        assert_eq!(
            std::fs::read(&wal).unwrap(),
            wal_before,
            "{args:?} wrote app.db-wal"
        );
    }
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(names, 3, "app.db, its -wal and -shm only");
    assert_eq!(rows(&conn), 1000);
    drop(conn);
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(rows(&conn), 1000, "every row after SQLite reopens");
}

fn forum_with_posts(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("forum.redb");
    let out = parley(&db, &["token", "create", "alice", "--rights", "read,write"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_string();
    for i in 0..20 {
        let envelope = format!(r#"{{"kind":"ask","body":"question {i} of the check"}}"#);
        let out = Command::new(BIN)
            .arg("--db")
            .arg(&db)
            .args(["--settings", r#"{"limits":{"writes_per_minute":0}}"#])
            .args(["post", &envelope])
            .env("PARLEY_TOKEN", &token)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    db
}

#[test]
fn check_reports_a_sound_forum() {
    let dir = tempfile::tempdir().unwrap();
    let db = forum_with_posts(dir.path());
    let out = parley(&db, &["check"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said} {}", text(&out.stderr));
    assert!(said.contains("a Parley forum, schema version 1"), "{said}");
    assert!(said.contains("pages: sound"), "{said}");
    assert!(said.contains("20 threads, 20 messages"), "{said}");
    assert!(said.contains("1 tokens"), "{said}");
    assert!(
        !said.contains("other users may read it"),
        "created 0600: {said}"
    );
    // The path as an argument, instead of --db.
    let out = Command::new(BIN).arg("check").arg(&db).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn check_reports_damage_and_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let db = forum_with_posts(dir.path());
    let sound = std::fs::read(&db).unwrap();
    // One flipped bit anywhere past the header: the check fails and says so, or
    // (a bit redb never reads) passes; it never crashes.
    let mut failures = 0;
    for at in (4096..sound.len()).step_by(4096 + 517) {
        let mut bytes = sound.clone();
        bytes[at] ^= 0x10;
        std::fs::write(&db, &bytes).unwrap();
        let out = parley(&db, &["check"]);
        let err = text(&out.stderr);
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "byte {at}: {:?} {err}",
            out.status
        );
        if !out.status.success() {
            failures += 1;
            assert!(
                err.contains("forum.redb"),
                "the error names the file: {err}"
            );
        }
    }
    assert!(failures > 0, "no flipped bit was noticed");
}

#[test]
fn check_refuses_a_foreign_or_missing_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not a forum").unwrap();
    let out = parley(&notes, &["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not a Parley forum"));
    assert_eq!(std::fs::read(&notes).unwrap(), b"not a forum");
    let missing = dir.path().join("missing.redb");
    let out = parley(&missing, &["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!missing.exists(), "check creates nothing");
}

#[test]
fn search_finds_messages_by_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let db = forum_with_posts(dir.path());
    let out = parley(&db, &["token", "create", "bob"]);
    let bob = text(&out.stdout).trim().to_string();
    let out = parley_as(&db, &bob, &["search", "QUESTION", "7"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(said.contains("msg_8 in th_8"), "{said}");
    assert!(said.contains("question 7 of the check"), "{said}");
    assert_eq!(said.matches(" in th_").count(), 1, "{said}");
    let out = parley_as(&db, &bob, &["search", "question", "--limit", "3", "--json"]);
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 3);
    assert_eq!(page["items"][0]["message"]["id"], "msg_20", "newest first");
    let out = parley_as(&db, &bob, &["search", "nothing-like-this"]);
    assert!(text(&out.stdout).contains("No message holds"));
    let out = parley_as(&db, &bob, &["search", "!!!"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "a refusal: {}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("invalid_argument"));
}

//! The edges of the forum file: whatever a path points at, Parley writes only to a
//! file that is its own, one file has one lock whatever name opens it, a new file is
//! private, and a full disk is survived without a reopen.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use parley_forum::{Config, Error, Forum, Right, TokenSpec};
use serde_json::json;

fn writer(forum: &Forum) -> String {
    forum
        .create_token(&TokenSpec::llm("writer", &[Right::Read, Right::Write]))
        .unwrap()
}

fn config() -> Config {
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    config
}

#[test]
fn every_name_of_one_file_shares_one_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("forum.redb");
    let (sym, hard) = (dir.path().join("sym.redb"), dir.path().join("hard.redb"));
    drop(Forum::open(&db, config()).unwrap());
    std::os::unix::fs::symlink(&db, &sym).unwrap();
    std::fs::hard_link(&db, &hard).unwrap();
    for (first, second) in [(&db, &sym), (&sym, &hard), (&hard, &db), (&db, &db)] {
        let held = Forum::open(first, config()).unwrap();
        let err = Forum::open(second, config()).expect_err("a second open");
        assert!(err.to_string().contains("already open"), "{err}");
        drop(held);
    }
    // Nothing else appeared beside the forum: no second log, no lock file.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["forum.redb", "hard.redb", "sym.redb"]);
}

#[test]
fn a_new_forum_file_is_private_to_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("forum.redb");
    let forum = Forum::open(&db, config()).unwrap();
    let token = writer(&forum);
    forum
        .call(
            Some(&token),
            "post",
            &json!({"kind": "ask", "body": "private?"}),
        )
        .unwrap();
    drop(forum);
    let mode = std::fs::metadata(&db).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
}

/// Bytes of some other program's file, with its `-wal` beside it.
fn foreign_pair(dir: &Path) -> (PathBuf, Vec<u8>, PathBuf, Vec<u8>) {
    let db = dir.join("app.db");
    let wal = dir.join("app.db-wal");
    let mut main = b"SQLite format 3\0".to_vec();
    main.resize(8192, 7);
    let log = vec![0x5a; 12_345];
    std::fs::write(&db, &main).unwrap();
    std::fs::write(&wal, &log).unwrap();
    (db, main, wal, log)
}

#[test]
fn a_file_of_another_program_and_its_wal_are_never_touched() {
    let dir = tempfile::tempdir().unwrap();
    let (db, main, wal, log) = foreign_pair(dir.path());
    for _ in 0..2 {
        let err = Forum::open(&db, config()).err().unwrap();
        assert!(matches!(err, Error::NotAForum(_)), "{err}");
        assert!(err.to_string().contains("untouched"), "{err}");
        let err = parley_forum::storage::check_integrity(&db).err().unwrap();
        assert!(matches!(err, Error::NotAForum(_)), "{err}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), main);
    assert_eq!(std::fs::read(&wal).unwrap(), log);
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(names, 2, "nothing was created beside them");
}

#[test]
fn checking_a_missing_file_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("missing.redb");
    assert!(parley_forum::storage::check_integrity(&db).is_err());
    assert!(!db.exists());
}

/// A page log as earlier versions wrote it beside their forum (`<forum>-wal`),
/// holding one unreplayed record of its generation.
fn earlier_log(salt: u64) -> Vec<u8> {
    let mut log = b"parley page log2".to_vec();
    log.extend_from_slice(&salt.to_le_bytes());
    let crc = crc32(&log);
    log.extend_from_slice(&crc.to_le_bytes());
    log.resize(4096, 0);
    log.extend_from_slice(&0x504C_5247u32.to_le_bytes());
    log.extend_from_slice(&[0; 4]);
    log.extend_from_slice(&salt.to_le_bytes());
    log.resize(8192, 0);
    log
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn a_log_left_by_an_earlier_version_is_refused_and_both_files_stay_intact() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.redb");
    {
        let forum = Forum::open(&a, config()).unwrap();
        let token = writer(&forum);
        forum
            .call(
                Some(&token),
                "post",
                &json!({"kind": "ask", "body": "in A"}),
            )
            .unwrap();
    }
    let forum_bytes = std::fs::read(&a).unwrap();
    let log = dir.path().join("a.redb-wal");
    let log_bytes = earlier_log(0x1234_5678);
    std::fs::write(&log, &log_bytes).unwrap();
    let err = Forum::open(&a, config()).err().unwrap();
    let text = err.to_string();
    assert!(text.contains("earlier Parley version"), "{text}");
    assert!(
        text.contains("move the log aside"),
        "the error says how to proceed: {text}"
    );
    assert_eq!(std::fs::read(&a).unwrap(), forum_bytes);
    assert_eq!(std::fs::read(&log).unwrap(), log_bytes);
    // Moved aside, as the error says: A opens with everything it had.
    std::fs::rename(&log, dir.path().join("a.redb-wal.kept")).unwrap();
    let forum = Forum::open(&a, config()).unwrap();
    let token = writer(&forum);
    let threads = forum
        .call(Some(&token), "list_threads", &json!({}))
        .unwrap();
    assert_eq!(threads["items"].as_array().unwrap().len(), 1);
}

/// A size-limited file system (tmpfs), mounted for the test and unmounted after.
struct Mount(tempfile::TempDir);

impl Mount {
    fn tmpfs(size: &str) -> Option<Mount> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Mount(dir))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Fills the file system with a ballast file until it refuses a write.
fn fill(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap();
    let block = vec![0xab; 64 << 10];
    loop {
        match file.write(&block) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(28), "ENOSPC expected: {e}");
                break;
            }
        }
    }
    // The last partial block: write byte by byte until refused.
    while file.write(&[1]).is_ok_and(|n| n == 1) {}
}

#[test]
fn a_full_disk_is_recovered_without_a_reopen_and_loses_nothing() {
    let Some(mount) = Mount::tmpfs("6m") else {
        eprintln!("skipped: cannot mount a size-limited tmpfs here (needs root)");
        return;
    };
    let db = mount.0.path().join("forum.redb");
    let ballast = mount.0.path().join("ballast");
    let forum = Forum::open(&db, config()).unwrap();
    let token = writer(&forum);
    let ask = forum
        .call(
            Some(&token),
            "post",
            &json!({"kind": "ask", "body": "root"}),
        )
        .unwrap();
    let thread = ask["thread"]["id"].as_str().unwrap().to_string();
    let mut acked = vec![ask["message"]["id"].as_str().unwrap().to_string()];
    fill(&ballast);
    let body = "x".repeat(450);
    let mut refused = 0;
    for i in 0..4000 {
        let post = json!({
            "kind": "note", "thread": thread, "from": {"extension": format!("e{}", i % 2)},
            "body": format!("{i} {body}")
        });
        match forum.call(Some(&token), "post", &post) {
            Ok(r) => acked.push(r["message"]["id"].as_str().unwrap().to_string()),
            Err(Error::Storage(msg)) => {
                refused += 1;
                if refused == 3 {
                    break;
                }
                assert!(!msg.message().is_empty());
            }
            Err(other) => panic!("unexpected refusal: {other}"),
        }
    }
    assert!(
        refused >= 3,
        "the disk never filled ({} posts)",
        acked.len()
    );
    // Reads keep working, or fail clearly; they never panic.
    let _ = forum.call(Some(&token), "get_thread", &json!({"thread": thread}));
    std::fs::remove_file(&ballast).unwrap();
    // Room again: the same forum handle posts, without being reopened.
    for i in 0..20 {
        let post = json!({
            "kind": "note", "thread": thread, "from": {"extension": format!("e{}", i % 2)},
            "body": format!("after {i}")
        });
        let r = forum
            .call(Some(&token), "post", &post)
            .expect("posts succeed once there is room");
        acked.push(r["message"]["id"].as_str().unwrap().to_string());
    }
    drop(forum);
    assert!(parley_forum::storage::check_integrity(&db).unwrap());
    let forum = Forum::open(&db, config()).unwrap();
    let view = forum
        .call(Some(&token), "get_thread", &json!({"thread": thread}))
        .unwrap()
        .to_string();
    for id in &acked {
        assert!(
            view.contains(&format!("\"id\":\"{id}\"")),
            "{id} was acknowledged"
        );
    }
    drop(forum);
    drop(mount);
}

#[test]
fn a_failed_open_carries_the_io_error_as_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no such directory").join("forum.redb");
    let err = Forum::open(&path, Config::default()).unwrap_err();
    let Error::Storage(storage) = &err else {
        panic!("{err:?}");
    };
    assert!(storage.message().contains("cannot open"), "{storage}");
    let source = std::error::Error::source(storage).expect("the cause");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    // And the chain starts at the library's error.
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn only_an_open_that_may_create_adopts_a_missing_or_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.redb");
    std::fs::File::create(&db).unwrap();
    let err = Forum::open_existing(&db, config()).err().unwrap();
    assert!(matches!(err, Error::NotAForum(_)), "{err}");
    assert!(err.to_string().contains("is empty, not a forum"), "{err}");
    let err = parley_forum::storage::check(&db).err().unwrap();
    assert!(matches!(err, Error::NotAForum(_)), "{err}");
    assert!(parley_forum::storage::check_integrity(&db).is_err());
    assert_eq!(
        std::fs::metadata(&db).unwrap().len(),
        0,
        "not a byte written"
    );
    let missing = dir.path().join("missing.redb");
    assert!(Forum::open_existing(&missing, config()).is_err());
    assert!(!missing.exists());
    // `Forum::open` adopts the empty file; then it opens as an existing forum.
    drop(Forum::open(&db, config()).unwrap());
    let forum = Forum::open_existing(&db, config()).unwrap();
    assert!(forum
        .call(None, "get_manifest", &serde_json::json!({}))
        .is_ok());
}

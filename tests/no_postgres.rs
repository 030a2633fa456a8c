//! The engine alone (`Forum::open`, without the crate parley-postgres): a
//! `postgres://` or `postgresql://` forum is refused in words that say how to open
//! it, never taken for a file's name, and its password never shown.

use parley_forum::{Config, Error, Forum};

const URLS: [&str; 3] = [
    "postgres://me:secret@db.example/parley?forum=team",
    "postgresql:///parley?host=/tmp&password=secret",
    "POSTGRES://me:secret@db.example/parley",
];

/// Asserts that `result` is the refusal of a build without PostgreSQL.
fn assert_refused(result: parley_forum::Result<Forum>, url: &str) {
    let err = result
        .err()
        .unwrap_or_else(|| panic!("{url} must be refused"));
    assert!(matches!(err, Error::Storage(_)), "{url}: {err:?}");
    let text = err.to_string();
    assert!(
        text.contains("this build of Parley has no PostgreSQL support"),
        "{text}"
    );
    assert!(text.contains("the `parley-postgres` crate"), "{text}");
    assert!(text.contains("parley_postgres::open"), "{text}");
    assert!(text.contains("--features postgres"), "{text}");
    assert!(!text.contains("secret"), "the password is shown: {text}");
}

#[test]
fn postgres_urls_are_refused_by_open_and_open_existing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let before = std::env::current_dir().expect("a working directory");
    // A URL taken for a relative path would create `postgres:/…` here.
    std::env::set_current_dir(dir.path()).expect("cd");
    for url in URLS {
        assert_refused(Forum::open(url, Config::default()), url);
        assert_refused(Forum::open_existing(url, Config::default()), url);
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("lists")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    std::env::set_current_dir(before).expect("cd back");
    assert!(left.is_empty(), "files were created: {left:?}");
}

#[test]
fn a_file_path_still_opens() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("postgres.parley");
    Forum::open(&path, Config::default()).expect("a forum file opens");
    assert!(path.exists());
}

#[test]
fn settings_are_checked_before_the_backend() {
    let bad = Config {
        realm: String::new(),
        ..Config::default()
    };
    let err = Forum::open(URLS[0], bad).expect_err("refused");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
}

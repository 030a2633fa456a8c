//! Only an open that may create a forum starts one in PostgreSQL: `parley_postgres::open`
//! does, `open_existing` (every read of the command line) refuses a forum
//! the database does not hold and creates nothing, not even its schema. Anything
//! but a `postgres://` URL goes to the engine's own open, unchanged.

#[path = "../../tests/pg/support.rs"]
mod support;

use parley_forum::{Config, Error};

fn schemas_named(base: &str, schema: &str) -> i64 {
    let mut admin = postgres::Client::connect(base, postgres::NoTls).expect("connects");
    admin
        .query_one(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1",
            &[&schema],
        )
        .expect("counts")
        .get(0)
}

#[test]
fn open_existing_refuses_a_missing_forum_and_creates_nothing() {
    let Some(base) = support::server() else {
        return;
    };
    let name = support::fresh_name("exist");
    let url = support::with_forum(&base, &name);
    let schema = format!("parley_{name}");
    match parley_postgres::open_existing(&url, Config::default()) {
        Err(Error::NotAForum(message)) => {
            assert!(message.contains("no forum"), "{message}");
            assert!(!message.contains("password"), "{message}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a missing forum was opened"),
    }
    assert_eq!(
        schemas_named(&base, &schema),
        0,
        "a refused open created its schema"
    );
    // The open that may create does; afterwards the forum is there for every open.
    drop(parley_postgres::open(&url, Config::default()).expect("created"));
    assert_eq!(schemas_named(&base, &schema), 1);
    let forum = parley_postgres::open_existing(&url, Config::default()).expect("it exists now");
    drop(forum);
}

#[test]
fn a_path_opens_as_the_engine_opens_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("forum.parley");
    // A missing file is refused by `open_existing`, left missing, as by the engine.
    let err = parley_postgres::open_existing(&path, Config::default()).expect_err("missing");
    assert!(matches!(err, Error::Storage(_)), "{err:?}");
    assert!(!path.exists(), "a refused open created the file");
    let forum = parley_postgres::open(&path, Config::default()).expect("a forum file");
    assert!(!forum.is_shared());
    drop(forum);
    parley_postgres::open_existing(&path, Config::default()).expect("it exists now");
    // Another database's URL is the engine's refusal, its password not shown.
    let err = parley_postgres::open("mysql://me:hunter2@localhost/x", Config::default())
        .expect_err("not ours");
    assert!(matches!(err, Error::Storage(_)), "{err:?}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[test]
fn settings_are_checked_before_the_database_is_reached() {
    // Nothing listens there: a connection attempt would be a storage error.
    let url = "postgres://me:secret@127.0.0.1:1/parley?forum=x&connect_timeout=1";
    let bad = Config {
        realm: String::new(),
        ..Config::default()
    };
    let err = parley_postgres::open(url, bad).expect_err("refused");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
}

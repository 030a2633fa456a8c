//! Only an open that may create a forum starts one in PostgreSQL: `parley_postgres::open`
//! does, `open_existing` (every read of the command line) refuses a forum
//! the database does not hold and creates nothing, not even its schema.

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

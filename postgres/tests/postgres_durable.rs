//! A durable forum in PostgreSQL acknowledges a post only once it is on disk, even
//! where the role or the database turns `synchronous_commit` off (a common tuning):
//! the commit whose flush the engine relies on forces it on.

#[path = "../../tests/pg/database.rs"]
mod database;
#[path = "../../tests/pg/support.rs"]
mod support;

use parley_forum::{Config, Right, TokenSpec};
use serde_json::json;

/// The server's log from byte `from` on (the server of `tests/pg/server.sh` logs
/// to `server.log` beside its data directory).
fn log_since(client: &mut postgres::Client, from: i64) -> String {
    let row = client
        .query_one(
            "SELECT convert_from(pg_read_binary_file(\
             current_setting('data_directory') || '/../server.log', $1, \
             (pg_stat_file(current_setting('data_directory') || '/../server.log')).size - $1), \
             'UTF8')",
            &[&from],
        )
        .expect("the server's log is readable");
    row.get(0)
}

fn log_size(client: &mut postgres::Client) -> i64 {
    client
        .query_one(
            "SELECT (pg_stat_file(current_setting('data_directory') || '/../server.log')).size",
            &[],
        )
        .expect("the server's log")
        .get(0)
}

#[test]
fn the_flushing_commit_runs_with_synchronous_commit_on_where_the_database_turns_it_off() {
    let Some(base) = support::server() else {
        return;
    };
    let db = database::Database::create(&base, "durable");
    db.admin(&format!(
        "ALTER DATABASE {0} SET synchronous_commit = off; \
         ALTER DATABASE {0} SET log_statement = 'all'",
        db.name
    ));
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    let mut probe = postgres::Client::connect(&db.url, postgres::NoTls).expect("connects");
    let default: String = probe
        .query_one("SHOW synchronous_commit", &[])
        .expect("shows")
        .get(0);
    assert_eq!(default, "off", "the database's sessions start with it off");
    drop(probe);

    let from = log_size(&mut admin);
    let forum = parley_postgres::open(support::fresh_url(&db.url, "durable"), Config::default())
        .expect("opens durable");
    let token = forum
        .create_token(&TokenSpec::llm("bob", &[Right::Read, Right::Write]))
        .expect("a token");
    for n in 0..3 {
        forum
            .call(
                Some(&token),
                "post",
                &json!({"parley": "1", "kind": "ask", "body": format!("kept {n}")}),
            )
            .expect("acknowledged");
    }
    drop(forum);
    let log = log_since(&mut admin, from);

    // The flushing commits are the transactions that take an id (`txid_current`):
    // each post's own commit is asynchronous by design, and durable by the next.
    let flushes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("statement:") && l.contains("txid_current()"))
        .collect();
    assert!(
        flushes.len() >= 4,
        "the token and the three posts each waited for a flush:\n{log}"
    );
    for line in &flushes {
        let forced = line
            .find("synchronous_commit TO on")
            .zip(line.find("COMMIT"))
            .is_some_and(|(set, commit)| set < commit);
        assert!(
            forced,
            "a flushing commit ran with the database's synchronous_commit = off:\n{line}"
        );
    }
}

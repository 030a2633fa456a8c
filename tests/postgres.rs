//! The PostgreSQL backend: every conformance transcript, and what a shared,
//! versioned database adds (several engines on one forum, refusals of schemas that
//! are not ours or are newer).

#[path = "conformance/harness.rs"]
mod harness;
#[path = "pg/support.rs"]
mod support;

use parley_forum::{Config, Error, Forum};

use harness::{direct_call, load_transcript, run_transcript_on, transcript_paths};

#[test]
fn every_transcript_passes_on_postgres() {
    let Some(base) = support::server() else {
        return;
    };
    let mut failures = Vec::new();
    let mut steps = 0;
    for path in transcript_paths() {
        steps += load_transcript(&path).map(|t| t.steps.len()).unwrap_or(0);
        let open = |config: Config| Forum::open(support::fresh_url(&base, "tr"), config);
        failures.extend(run_transcript_on(&path, &mut direct_call, &open));
    }
    assert!(steps > 100, "only {steps} steps ran");
    assert!(
        failures.is_empty(),
        "{} mismatching step(s) of {steps}:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn a_schema_of_another_application_is_refused_and_left_untouched() {
    let Some(base) = support::server() else {
        return;
    };
    let name = support::fresh_name("foreign");
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    client
        .batch_execute(&format!(
            "CREATE SCHEMA parley_{name}; CREATE TABLE parley_{name}.orders (id int); \
             INSERT INTO parley_{name}.orders VALUES (1), (2)"
        ))
        .expect("a foreign schema");
    let err =
        Forum::open(support::with_forum(&base, &name), Config::default()).expect_err("not a forum");
    assert!(matches!(err, Error::NotAForum(_)), "{err}");
    assert!(err.to_string().contains("orders"), "{err}");
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1",
            &[&format!("parley_{name}")],
        )
        .expect("counts")
        .get(0);
    assert_eq!(tables, 1, "nothing was added to the foreign schema");
    let rows: i64 = client
        .query_one(&format!("SELECT count(*) FROM parley_{name}.orders"), &[])
        .expect("counts")
        .get(0);
    assert_eq!(rows, 2);
}

#[test]
fn a_schema_written_by_a_newer_release_is_refused() {
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "newer");
    drop(Forum::open(&url, Config::default()).expect("a new forum"));
    let name = url.rsplit("forum=").next().expect("named").to_string();
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    client
        .execute(
            &format!(
                "UPDATE parley_{name}.parley_meta SET value = 99 WHERE key = 'schema_version'"
            ),
            &[],
        )
        .expect("updated");
    let err = Forum::open(&url, Config::default()).expect_err("too new");
    assert!(
        matches!(err, Error::SchemaTooNew { found: 99, .. }),
        "{err}"
    );
}

#[test]
fn an_unreachable_server_is_a_clear_storage_error() {
    let err = Forum::open(
        "postgres://nobody@localhost/none?host=/nonexistent-dir&connect_timeout=1",
        Config::default(),
    )
    .expect_err("no server");
    assert!(matches!(err, Error::Storage(_)), "{err}");
    assert!(err.to_string().contains("cannot reach PostgreSQL"), "{err}");
    let err = Forum::open(
        "postgres://me:hunter2@localhost/x?forum=BAD",
        Config::default(),
    )
    .expect_err("bad name");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

//! The PostgreSQL backend: every conformance transcript, and what a versioned
//! database adds (refusals of schemas that are not ours or are newer). Several
//! engines on one forum are in `postgres_engines.rs`.

#[path = "../../tests/conformance/harness.rs"]
mod harness;
#[path = "../../tests/pg/support.rs"]
mod support;

use parley_forum::{Config, Error, Forum, Right, TokenSpec};
use serde_json::{json, Value};

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
        let open = |config: Config| parley_postgres::open(support::fresh_url(&base, "tr"), config);
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
    let err = parley_postgres::open(support::with_forum(&base, &name), Config::default())
        .expect_err("not a forum");
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
    drop(parley_postgres::open(&url, Config::default()).expect("a new forum"));
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
    let err = parley_postgres::open(&url, Config::default()).expect_err("too new");
    assert!(
        matches!(err, Error::SchemaTooNew { found: 99, .. }),
        "{err}"
    );
}

/// Version 1's word index: a row per word of each message.
fn downgrade_to_version_1(client: &mut postgres::Client, name: &str) {
    client
        .batch_execute(&format!(
            "SET search_path TO parley_{name};
             CREATE TABLE words (word text NOT NULL, message bigint NOT NULL,
                                 thread bigint NOT NULL, PRIMARY KEY (word, message));
             INSERT INTO words SELECT unnest(words), message, thread FROM message_words;
             DROP TABLE message_words;
             DROP TABLE changes;
             ALTER TABLE turns ALTER COLUMN identity TYPE text COLLATE \"default\";
             ALTER TABLE writes ALTER COLUMN identity TYPE text COLLATE \"default\";
             ALTER TABLE idempotency ALTER COLUMN identity TYPE text COLLATE \"default\",
                                     ALTER COLUMN key TYPE text COLLATE \"default\";
             ALTER TABLE parley_meta ALTER COLUMN key TYPE text COLLATE \"default\";
             DROP TABLE presence;
             DROP TABLE leases;
             DELETE FROM parley_meta WHERE key = 'lease_last';
             DROP TABLE realm_key;
             DROP TABLE artifacts;
             DROP TABLE imports;
             UPDATE parley_meta SET value = 1 WHERE key = 'schema_version';"
        ))
        .expect("downgraded");
}

/// The collation of each text column of the forum's tables, as `table.column`.
fn collations(client: &mut postgres::Client, name: &str) -> Vec<(String, String)> {
    client
        .query(
            "SELECT t.relname::text || '.' || a.attname::text, c.collname::text
             FROM pg_attribute a
             JOIN pg_class t ON t.oid = a.attrelid AND t.relkind = 'r'
             JOIN pg_namespace n ON n.oid = t.relnamespace
             JOIN pg_collation c ON c.oid = a.attcollation
             WHERE n.nspname = $1 AND a.attnum > 0 AND NOT a.attisdropped
             ORDER BY 1",
            &[&format!("parley_{name}")],
        )
        .expect("lists")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// Asserts that the server compares the text the engine looks up bytewise: each
/// such column in the "C" collation.
fn assert_bytewise(client: &mut postgres::Client, name: &str) {
    let found = collations(client, name);
    for column in [
        "message_words.words",
        "turns.identity",
        "writes.identity",
        "idempotency.identity",
        "idempotency.key",
        "parley_meta.key",
        "identities.name",
    ] {
        let coll = found
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, coll)| coll.as_str());
        assert_eq!(coll, Some("C"), "{column} in {found:?}");
    }
}

#[test]
fn a_version_1_schema_gains_the_array_word_index_the_change_log_the_c_collation_and_leases() {
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "v1");
    let name = url.rsplit("forum=").next().expect("named").to_string();
    let (token, other, thread) = {
        let forum = parley_postgres::open(&url, Config::default()).expect("a new forum");
        let token = forum
            .create_token(&TokenSpec::llm("a", &[Right::Read, Right::Write]))
            .expect("token");
        let other = forum
            .create_token(&TokenSpec::llm("b", &[Right::Read, Right::Write]))
            .expect("token");
        let asked = forum
            .call(
                Some(&token),
                "post",
                &json!({"parley": "1", "kind": "ask", "body": "Why does the cache miss?"}),
            )
            .expect("asked");
        let thread = asked["thread"]["id"].as_str().expect("id").to_string();
        forum
            .call(
                Some(&other),
                "post",
                &json!({"parley": "1", "kind": "note", "thread": thread,
                        "body": "The cache key holds the path."}),
            )
            .expect("noted");
        (token, other, thread)
    };
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    assert_bytewise(&mut client, &name);
    downgrade_to_version_1(&mut client, &name);
    assert!(
        collations(&mut client, &name)
            .iter()
            .any(|(c, coll)| c == "turns.identity" && coll == "default"),
        "version 1 compared in the database's collation"
    );
    let forum = parley_postgres::open(&url, Config::default()).expect("migrated on open");
    assert_bytewise(&mut client, &name);
    let version: i64 = client
        .query_one(
            &format!("SELECT value FROM parley_{name}.parley_meta WHERE key = 'schema_version'"),
            &[],
        )
        .expect("reads")
        .get(0);
    assert_eq!(version, 6);
    let tables: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
            &[&format!("parley_{name}")],
        )
        .expect("lists")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.contains(&"message_words".to_string()), "{tables:?}");
    assert!(!tables.contains(&"words".to_string()), "{tables:?}");
    assert!(tables.contains(&"changes".to_string()), "{tables:?}");
    assert!(tables.contains(&"presence".to_string()), "{tables:?}");
    assert!(tables.contains(&"leases".to_string()), "{tables:?}");
    assert!(tables.contains(&"realm_key".to_string()), "{tables:?}");
    assert!(tables.contains(&"artifacts".to_string()), "{tables:?}");
    // The coordination profile's tables work on the migrated forum.
    let leased = forum
        .call(Some(&token), "lease", &json!({ "resource": "src/" }))
        .expect("leased");
    assert_eq!(leased["lease"]["id"], "ls_1");
    // And the provenance profile's.
    let put = forum
        .call(
            Some(&token),
            "put_artifact",
            &json!({ "content_base64": "aGVsbG8=" }),
        )
        .expect("stored");
    assert_eq!(put["artifact"]["size"], 5);
    let found = |q: &str| -> Vec<String> {
        let page = forum
            .call(Some(&token), "search", &json!({ "q": q }))
            .expect("searched");
        page["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["message"]["body"].as_str().expect("body").to_string())
            .collect()
    };
    assert_eq!(
        found("cache"),
        ["The cache key holds the path.", "Why does the cache miss?"]
    );
    assert_eq!(found("cache path"), ["The cache key holds the path."]);
    assert!(found("cache nowhere").is_empty());
    // New posts are indexed in the new layout, beside the migrated ones.
    forum
        .call(
            Some(&other),
            "post",
            &json!({"parley": "1", "kind": "note", "thread": thread,
                    "body": "A second cache for the path."}),
        )
        .expect("noted");
    assert_eq!(
        found("path cache"),
        [
            "A second cache for the path.",
            "The cache key holds the path."
        ]
    );
}

#[test]
fn an_unreachable_server_is_a_clear_storage_error() {
    let err = parley_postgres::open(
        "postgres://nobody@localhost/none?host=/nonexistent-dir&connect_timeout=1",
        Config::default(),
    )
    .expect_err("no server");
    assert!(matches!(err, Error::Storage(_)), "{err}");
    assert!(err.to_string().contains("cannot reach PostgreSQL"), "{err}");
    let err = parley_postgres::open(
        "postgres://me:hunter2@localhost/x?forum=BAD",
        Config::default(),
    )
    .expect_err("bad name");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    // Another database's URL is no file name, and its password is not echoed.
    let err = parley_postgres::open("mysql://me:hunter2@localhost/x", Config::default())
        .expect_err("not ours");
    assert!(matches!(err, Error::Storage(_)), "{err}");
    assert!(err.to_string().contains("mysql://"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(!std::path::Path::new("mysql:").exists(), "no file was made");
}

/// A result with its cursors masked: they are signed with each forum's own key.
fn without_cursors(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    // Cursors are signed with each forum's own secret, and each
                    // forum has its own realm key (SPEC §18.3).
                    let v = if k == "cursor" && v.is_string() {
                        json!("<cursor>")
                    } else if matches!(k.as_str(), "realm_key" | "keyid" | "sig" | "key")
                        && v.is_string()
                    {
                        json!("<realm key or signature>")
                    } else {
                        without_cursors(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cursors).collect()),
        other => other.clone(),
    }
}

#[test]
fn every_transcript_gives_the_same_results_on_both_backends() {
    let Some(base) = support::server() else {
        return;
    };
    let mut calls = 0;
    for path in transcript_paths() {
        let mut results: [Vec<(String, Result<Value, Value>)>; 2] = [Vec::new(), Vec::new()];
        for (i, on_postgres) in [false, true].into_iter().enumerate() {
            let log = &mut results[i];
            let mut record = |f: &Forum, t: Option<&str>, op: &str, a: &Value| {
                let r = direct_call(f, t, op, a);
                let shown = r.as_ref().map(without_cursors).map_err(without_cursors);
                log.push((op.to_string(), shown));
                r
            };
            let open = |config: Config| {
                if on_postgres {
                    parley_postgres::open(support::fresh_url(&base, "same"), config)
                } else {
                    Forum::in_memory(config)
                }
            };
            run_transcript_on(&path, &mut record, &open);
        }
        let [redb, pg] = results;
        assert_eq!(redb.len(), pg.len(), "{}", path.display());
        for (n, (a, b)) in redb.iter().zip(&pg).enumerate() {
            assert_eq!(
                a,
                b,
                "{} call {n}: redb and PostgreSQL differ",
                path.display()
            );
        }
        calls += redb.len();
    }
    assert!(calls > 100, "only {calls} calls compared");
}

#[test]
fn quotes_and_backslashes_are_stored_as_they_are() {
    let Some(base) = support::server() else {
        return;
    };
    let forum =
        parley_postgres::open(support::fresh_url(&base, "quotes"), Config::default()).unwrap();
    let token = forum
        .create_token(&TokenSpec::llm("quoter", &[Right::Read, Right::Write]))
        .unwrap();
    let body = r"It's '); DROP TABLE messages; -- and \x00ff \\ ''";
    let key = "k.e:y-1";
    let envelope = json!({"parley": "1", "kind": "ask", "body": body, "idempotency_key": key});
    let first = forum.call(Some(&token), "post", &envelope).unwrap();
    let again = forum.call(Some(&token), "post", &envelope).unwrap();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(again["message"]["id"], first["message"]["id"]);
    let thread = first["thread"]["id"].clone();
    let view = forum
        .call(Some(&token), "get_thread", &json!({"thread": thread}))
        .unwrap();
    assert_eq!(view["messages"][0]["body"], body);
    let found = forum
        .call(Some(&token), "search", &json!({"q": "drop messages"}))
        .unwrap();
    assert_eq!(found["items"].as_array().unwrap().len(), 1, "{found}");
}

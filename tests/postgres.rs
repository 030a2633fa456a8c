//! The PostgreSQL backend: every conformance transcript, and what a shared,
//! versioned database adds (several engines on one forum, refusals of schemas that
//! are not ours or are newer).

#[path = "conformance/harness.rs"]
mod harness;
#[path = "pg/support.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parley_forum::{Config, Error, Forum, Reason, Right, TokenSpec};
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
        let forum = Forum::open(&url, Config::default()).expect("a new forum");
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
    let forum = Forum::open(&url, Config::default()).expect("migrated on open");
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
    // Another database's URL is no file name, and its password is not echoed.
    let err =
        Forum::open("mysql://me:hunter2@localhost/x", Config::default()).expect_err("not ours");
    assert!(matches!(err, Error::Storage(_)), "{err}");
    assert!(err.to_string().contains("mysql://"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(!std::path::Path::new("mysql:").exists(), "no file was made");
}

/// Two engines on one forum, as two processes would have.
struct Pair {
    a: Arc<Forum>,
    b: Arc<Forum>,
}

fn pair(base: &str, settings: Value) -> Pair {
    let url = support::fresh_url(base, "pair");
    let open = || Arc::new(Forum::open(&url, Config::from_json(&settings).unwrap()).unwrap());
    Pair {
        a: open(),
        b: open(),
    }
}

fn llm(forum: &Forum, who: &str) -> String {
    forum
        .create_token(&TokenSpec::llm(who, &[Right::Read, Right::Write]))
        .unwrap()
}

fn ask(forum: &Forum, token: &str, body: &str) -> Value {
    forum
        .call(
            Some(token),
            "post",
            &json!({"parley": "1", "kind": "ask", "body": body}),
        )
        .unwrap()
}

/// A post with `token` is refused for `reason`.
fn post_is_refused(forum: &Forum, token: &str, reason: Reason) {
    let err = forum
        .call(
            Some(token),
            "post",
            &json!({"parley": "1", "kind": "ask", "body": "still here?"}),
        )
        .unwrap_err();
    assert_eq!(err.refusal().map(|r| r.reason), Some(reason), "{err}");
}

/// A post with `token` is refused: the token is no longer valid.
fn post_is_refused_as_revoked(forum: &Forum, token: &str) {
    post_is_refused(forum, token, Reason::TokenInvalid);
}

#[test]
fn writers_on_two_engines_get_strictly_increasing_ids_and_lose_nothing() {
    let Some(base) = support::server() else {
        return;
    };
    let p = pair(&base, json!({"limits": {"writes_per_minute": 0}}));
    let token = llm(&p.a, "writer");
    let (per_writer, writers) = (25, 8);
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let forum = Arc::clone(if w % 2 == 0 { &p.a } else { &p.b });
            let token = token.clone();
            std::thread::spawn(move || {
                (0..per_writer)
                    .map(|i| {
                        support::num(
                            &ask(&forum, &token, &format!("writer {w} post {i}"))["message"]["id"],
                        )
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut acknowledged: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    acknowledged.sort_unstable();
    acknowledged.dedup();
    assert_eq!(
        acknowledged.len(),
        per_writer * writers,
        "an id was given twice"
    );
    // A reader following the feed with cursors, on either engine, sees every
    // message once, in increasing id order.
    for reader in [&p.a, &p.b] {
        let (mut seen, mut cursor) = (Vec::new(), Value::Null);
        loop {
            let mut args = json!({"limit": 37});
            if !cursor.is_null() {
                args["since"] = cursor.clone();
            }
            let page = reader.call(Some(&token), "get_messages", &args).unwrap();
            let items = page["items"].as_array().unwrap();
            if items.is_empty() {
                break;
            }
            seen.extend(items.iter().map(|m| support::num(&m["id"])));
            cursor = page["cursor"].clone();
        }
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "ids must strictly increase"
        );
        assert_eq!(seen, acknowledged);
    }
}

#[test]
fn a_token_revoked_on_one_engine_is_refused_on_the_other_at_once() {
    let Some(base) = support::server() else {
        return;
    };
    let p = pair(&base, json!({}));
    let token = llm(&p.a, "agent");
    // The other engine has used the token (a cache would now hold it).
    p.b.call(Some(&token), "whoami", &json!({})).unwrap();
    assert!(p.a.revoke_token(&token).unwrap());
    let err = p.b.call(Some(&token), "whoami", &json!({})).unwrap_err();
    assert_eq!(
        err.refusal().map(|r| r.reason),
        Some(Reason::TokenInvalid),
        "{err}"
    );
    post_is_refused_as_revoked(&p.b, &token);
}

/// The other engine's writer holds the token in its cache (it posted with it):
/// the revoking commit's change record makes it forget the token.
#[test]
fn a_token_revoked_on_one_engine_is_refused_by_the_other_engines_writer_that_cached_it() {
    let Some(base) = support::server() else {
        return;
    };
    let p = pair(&base, json!({"limits": {"writes_per_minute": 0}}));
    let token = llm(&p.a, "agent");
    ask(&p.b, &token, "first, while the token is good");
    assert!(p.a.revoke_token(&token).unwrap());
    post_is_refused_as_revoked(&p.b, &token);
}

/// A commit without a change record (as an older release makes) leaves a gap in
/// the change log: the other engine's writer starts its cache over rather than
/// trust it.
#[test]
fn a_commit_without_a_change_record_makes_the_other_engines_start_their_caches_over() {
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "gap");
    let name = url.rsplit("forum=").next().expect("named").to_string();
    let forum = Forum::open(&url, Config::default()).unwrap();
    let token = llm(&forum, "agent");
    ask(&forum, &token, "cached now");
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    client
        .batch_execute(&format!(
            "SET search_path TO parley_{name};
             DELETE FROM tokens;
             UPDATE parley_meta SET value = value + 1 WHERE key = 'generation';"
        ))
        .expect("a commit of another kind");
    post_is_refused_as_revoked(&forum, &token);
}

/// The change log keeps the last 1,024 commits' records (dropping older ones in
/// bulk every 64 commits), not one row per commit forever.
#[test]
fn the_change_log_keeps_only_the_last_commits() {
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "log");
    let name = url.rsplit("forum=").next().expect("named").to_string();
    let settings = json!({"durable": false, "limits": {"writes_per_minute": 0}});
    let forum = Forum::open(&url, Config::from_json(&settings).unwrap()).unwrap();
    let token = llm(&forum, "agent");
    for n in 0..1200 {
        ask(&forum, &token, &format!("question {n}"));
    }
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("connects");
    let row = client
        .query_one(
            &format!(
                "SELECT count(*), min(generation), max(generation) FROM parley_{name}.changes"
            ),
            &[],
        )
        .expect("reads");
    let (count, oldest, newest): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert!(newest >= 1201, "{newest}");
    assert!((1024..=1024 + 64).contains(&count), "{count} rows");
    assert_eq!(
        newest - oldest + 1,
        count,
        "the kept rows are the last ones"
    );
}

#[test]
fn the_rate_limit_counts_writes_on_every_engine() {
    let Some(base) = support::server() else {
        return;
    };
    let p = pair(&base, json!({"limits": {"writes_per_minute": 3}}));
    let token = llm(&p.a, "chatty");
    ask(&p.a, &token, "one");
    ask(&p.b, &token, "two");
    ask(&p.a, &token, "three");
    post_is_refused(&p.b, &token, Reason::RateLimited);
}

#[test]
fn a_wait_on_one_engine_wakes_for_a_post_on_the_other() {
    let Some(base) = support::server() else {
        return;
    };
    let p = pair(&base, json!({"limits": {"writes_per_minute": 0}}));
    let (alice, bob) = (llm(&p.a, "alice"), llm(&p.a, "bob"));
    let waiter = {
        let (b, bob) = (Arc::clone(&p.b), bob.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            let page = b
                .call(Some(&bob), "get_inbox", &json!({"wait_ms": 20000}))
                .unwrap();
            (page, start.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    p.a.call(
        Some(&alice),
        "post",
        &json!({"parley": "1", "kind": "ask", "body": "bob, a question", "to": "ainotes:bob"}),
    )
    .unwrap();
    let (page, took) = waiter.join().unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
    assert!(took < Duration::from_secs(10), "woke after {took:?}");
}

/// The other engine posts without a pause (every 20 ms, its listener's poll is
/// 250 ms): the waiter still wakes for the post meant for it, not once the stream
/// stops.
#[test]
fn a_wait_wakes_while_the_other_engine_posts_without_a_pause() {
    let Some(base) = support::server() else {
        return;
    };
    let p = pair(&base, json!({"limits": {"writes_per_minute": 0}}));
    let (alice, bob, carol) = (llm(&p.a, "alice"), llm(&p.a, "bob"), llm(&p.a, "carol"));
    llm(&p.a, "dave");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stream = {
        let (a, stop) = (Arc::clone(&p.a), Arc::clone(&stop));
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(8);
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < until {
                // Asked of dave: nothing of it is in bob's inbox.
                a.call(
                    Some(&carol),
                    "post",
                    &json!({"parley": "1", "kind": "ask", "to": "ainotes:dave",
                            "body": format!("dave, question {n}")}),
                )
                .unwrap();
                n += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            n
        })
    };
    let waiter = {
        let (b, bob) = (Arc::clone(&p.b), bob.clone());
        std::thread::spawn(move || {
            let page = b
                .call(Some(&bob), "get_inbox", &json!({"wait_ms": 20000}))
                .unwrap();
            (page, Instant::now())
        })
    };
    std::thread::sleep(Duration::from_millis(600));
    let posted = Instant::now();
    p.a.call(
        Some(&alice),
        "post",
        &json!({"parley": "1", "kind": "ask", "body": "bob, a question", "to": "ainotes:bob"}),
    )
    .unwrap();
    let (page, woke) = waiter.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let streamed = stream.join().unwrap();
    assert!(
        streamed > 20,
        "the other engine posted only {streamed} times"
    );
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{}", items.len());
    assert_eq!(items[0]["message"]["body"], "bob, a question");
    let took = woke.duration_since(posted);
    assert!(
        took < Duration::from_secs(3),
        "woke {took:?} after the post, while the other engine kept posting"
    );
}

#[test]
fn posts_of_one_engine_share_transactions_and_reads_never_block_the_writer() {
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "group");
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    let forum = Arc::new(Forum::open(&url, config).unwrap());
    let token = llm(&forum, "writer");

    // A snapshot held open on the side: it sees none of the posts below, and the
    // writer does not wait for it.
    let store =
        parley_forum::storage::PgStore::open(&url, parley_forum::Durability::Durable).unwrap();
    let snapshot = parley_forum::storage::Store::read(&store).unwrap();
    let before = snapshot
        .last_id(parley_forum::storage::IdKind::Message)
        .unwrap();

    let commits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let _hook = {
        let commits = Arc::clone(&commits);
        forum.on_commit(move || {
            commits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let (writers, per_writer) = (8, 20);
    let started = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (forum, token) = (Arc::clone(&forum), token.clone());
            std::thread::spawn(move || {
                for i in 0..per_writer {
                    ask(&forum, &token, &format!("writer {w} asks {i}"));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(60));
    let commits = commits.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        commits < writers * per_writer,
        "{commits} commits for {} posts: group commit coalesced nothing",
        writers * per_writer
    );
    assert_eq!(
        snapshot
            .last_id(parley_forum::storage::IdKind::Message)
            .unwrap(),
        before,
        "a snapshot sees only what was committed before it began"
    );
    drop(snapshot);
    let fresh = parley_forum::storage::Store::read(&store).unwrap();
    assert_eq!(
        fresh
            .last_id(parley_forum::storage::IdKind::Message)
            .unwrap(),
        before + (writers * per_writer) as u64
    );
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
                    Forum::open(support::fresh_url(&base, "same"), config)
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
    let forum = Forum::open(support::fresh_url(&base, "quotes"), Config::default()).unwrap();
    let token = llm(&forum, "quoter");
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

#[test]
fn engines_taking_turns_on_one_thread_each_see_the_others_posts() {
    let Some(base) = support::server() else {
        return;
    };
    let p = pair(&base, json!({"limits": {"writes_per_minute": 0}}));
    let (alice, bob) = (llm(&p.a, "alice"), llm(&p.b, "bob"));
    let asked = ask(&p.a, &alice, "Which port, and why?");
    let thread = asked["thread"]["id"].clone();
    // Each engine writes the thread's record from what it last read: a stale
    // record would count the messages wrong or lose the other's turn.
    let mut last = asked["message"]["id"].clone();
    for i in 0..20u64 {
        let (forum, token) = if i % 2 == 0 {
            (&p.b, &bob)
        } else {
            (&p.a, &alice)
        };
        let envelope =
            json!({"parley": "1", "kind": "note", "parent": last, "body": format!("turn {i}")});
        let posted = forum.call(Some(token), "post", &envelope).unwrap();
        assert_eq!(posted["thread"]["message_count"], i + 2, "{posted}");
        last = posted["message"]["id"].clone();
    }
    for forum in [&p.a, &p.b] {
        let view = forum
            .call(Some(&alice), "get_thread", &json!({"thread": thread}))
            .unwrap();
        assert_eq!(view["thread"]["message_count"], 21);
    }
}

//! The PostgreSQL backend shared by several engines, as several processes would
//! share one forum: ids, token revocation, rate limits, waits and batches across
//! engines.

#[path = "../../tests/pg/support.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parley_forum::{Config, Forum, Reason, Right, TokenSpec};
use serde_json::{json, Value};

/// Two engines on one forum, as two processes would have.
struct Pair {
    a: Arc<Forum>,
    b: Arc<Forum>,
}

fn pair(base: &str, settings: Value) -> Pair {
    let url = support::fresh_url(base, "pair");
    let open =
        || Arc::new(parley_postgres::open(&url, Config::from_json(&settings).unwrap()).unwrap());
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
    let forum = parley_postgres::open(&url, Config::default()).unwrap();
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
    let forum = parley_postgres::open(&url, Config::from_json(&settings).unwrap()).unwrap();
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
    let forum = Arc::new(parley_postgres::open(&url, config).unwrap());
    let token = llm(&forum, "writer");

    // A snapshot held open on the side: it sees none of the posts below, and the
    // writer does not wait for it.
    let store = parley_postgres::PgStore::open(&url, parley_forum::Durability::Durable).unwrap();
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

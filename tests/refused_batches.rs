//! A batch of posts that were all refused commits nothing (issue 38, failure 10):
//! no write transaction is committed, so no disk sync on redb and no durable
//! commit on PostgreSQL. Strangers with a bogus token cannot make the disk work.
//!
//! What is measured is what a commit leaves behind: the bytes of the redb file
//! (every redb commit writes its header), and on PostgreSQL the forum's
//! generation, which every commit of a batch moves on by one.

#[path = "pg/support.rs"]
mod support;

use parley_forum::{Config, Forum, Reason, Right, TokenSpec};
use serde_json::{json, Value};

/// Posts that are each refused, for a reason found inside the batch: no token, a
/// bogus one, a token without `write`, a malformed envelope, a thread that does
/// not exist, a reply to one's own message.
fn refused_posts(forum: &Forum, writer: &str, reader: &str, thread: &str) -> Vec<Reason> {
    let bogus = "pt_0000000000000000000000000000000000000000000";
    let ask = json!({ "kind": "ask", "body": "Let me in?" });
    let malformed = json!({ "kind": "ask", "body": "x", "colour": "red" });
    let lost = json!({ "kind": "answer", "thread": "th_999", "body": "Lost." });
    let own = json!({ "kind": "note", "thread": thread, "body": "Me again." });
    let posts: Vec<(Option<&str>, &Value)> = vec![
        (None, &ask),
        (Some(bogus), &ask),
        (Some(reader), &ask),
        (Some(writer), &malformed),
        (Some(writer), &lost),
        (Some(writer), &own),
    ];
    // One by one (a batch each), then all at once (batches the group commit makes).
    let mut reasons: Vec<Reason> = posts
        .iter()
        .map(|(token, env)| refusal(forum.call(*token, "post", env)))
        .collect();
    let bunch: Vec<(Option<&str>, &Value)> = (0..50).map(|_| (Some(bogus), &ask)).collect();
    reasons.extend(post_concurrently(forum, &bunch).into_iter().map(refusal));
    reasons.extend(post_concurrently(forum, &posts).into_iter().map(refusal));
    reasons
}

/// Posts every envelope at once, each from a thread of its own, as concurrent
/// callers of `call(token, "post", envelope)` do; returns the outcomes in order.
fn post_concurrently(
    forum: &Forum,
    posts: &[(Option<&str>, &Value)],
) -> Vec<parley_forum::Result<Value>> {
    std::thread::scope(|s| {
        let posting: Vec<_> = posts
            .iter()
            .map(|&(token, envelope)| s.spawn(move || forum.call(token, "post", envelope)))
            .collect();
        posting.into_iter().map(|p| p.join().unwrap()).collect()
    })
}

fn refusal(outcome: parley_forum::Result<Value>) -> Reason {
    match outcome {
        Ok(v) => panic!("expected a refusal, got {v}"),
        Err(e) => {
            e.refusal()
                .unwrap_or_else(|| panic!("not a refusal: {e}"))
                .reason
        }
    }
}

/// A forum with a writer, a reader and one thread; returns the tokens and the
/// thread.
fn setup(forum: &Forum) -> (String, String, String) {
    let writer = forum
        .create_token(&TokenSpec::llm("writer", &[Right::Read, Right::Write]))
        .unwrap();
    let reader = forum
        .create_token(&TokenSpec::llm("reader", &[Right::Read]))
        .unwrap();
    let asked = forum
        .call(
            Some(&writer),
            "post",
            &json!({ "kind": "ask", "body": "First post." }),
        )
        .unwrap();
    let thread = asked["thread"]["id"].as_str().unwrap().to_string();
    (writer, reader, thread)
}

fn expected_reasons() -> Vec<Reason> {
    let each = [
        Reason::TokenMissing,
        Reason::TokenInvalid,
        Reason::TokenRightMissing,
        Reason::InvalidBody,
        Reason::ThreadNotFound,
        Reason::SelfReply,
    ];
    let mut all = each.to_vec();
    all.extend(std::iter::repeat_n(Reason::TokenInvalid, 50));
    all.extend(each);
    all
}

#[test]
fn refused_posts_leave_the_redb_file_byte_for_byte_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let forum = Forum::open(&path, Config::default()).unwrap();
    let (writer, reader, thread) = setup(&forum);
    let before = std::fs::read(&path).unwrap();

    assert_eq!(
        refused_posts(&forum, &writer, &reader, &thread),
        expected_reasons()
    );
    assert!(
        std::fs::read(&path).unwrap() == before,
        "a batch of refused posts wrote to the forum file"
    );

    // The measure sees a commit: one accepted post changes the file.
    let other = forum
        .create_token(&TokenSpec::llm("other", &[Right::Read, Right::Write]))
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    forum
        .call(
            Some(&other),
            "post",
            &json!({ "kind": "note", "thread": thread, "body": "Second post." }),
        )
        .unwrap();
    assert!(std::fs::read(&path).unwrap() != before);
}

#[test]
fn a_batch_with_one_accepted_post_among_refused_ones_commits_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let forum = Forum::open(&path, Config::default()).unwrap();
    let (_, _, thread) = setup(&forum);
    let other = forum
        .create_token(&TokenSpec::llm("other", &[Right::Read, Right::Write]))
        .unwrap();
    let bogus = json!({ "kind": "ask", "body": "Let me in?" });
    let good = json!({ "kind": "note", "thread": thread, "body": "Accepted." });
    let outcomes = post_concurrently(
        &forum,
        &[
            (Some("pt_bogus"), &bogus),
            (Some(&other), &good),
            (None, &bogus),
        ],
    );
    assert!(outcomes[0].is_err() && outcomes[1].is_ok() && outcomes[2].is_err());
    drop(forum);
    let forum = Forum::open(&path, Config::default()).unwrap();
    let view = forum
        .call(Some(&other), "get_thread", &json!({ "thread": thread }))
        .unwrap();
    assert_eq!(view["thread"]["message_count"], 2);
}

/// The forum's generation on PostgreSQL: every commit of a batch adds one.
fn generation(base: &str, name: &str) -> i64 {
    let mut client = postgres::Client::connect(base, postgres::NoTls).expect("connects");
    let row = client
        .query_one(
            &format!("SELECT value FROM parley_{name}.parley_meta WHERE key = 'generation'"),
            &[],
        )
        .expect("the generation");
    row.get(0)
}

#[test]
fn refused_posts_make_no_commit_on_postgres() {
    let Some(base) = support::server() else {
        return;
    };
    let name = support::fresh_name("refused");
    let forum =
        parley_postgres::open(support::with_forum(&base, &name), Config::default()).unwrap();
    let (writer, reader, thread) = setup(&forum);
    let before = generation(&base, &name);

    assert_eq!(
        refused_posts(&forum, &writer, &reader, &thread),
        expected_reasons()
    );
    assert_eq!(
        generation(&base, &name),
        before,
        "a batch of refused posts committed"
    );

    // The measure sees a commit: one accepted post moves the generation on.
    let other = forum
        .create_token(&TokenSpec::llm("other", &[Right::Read, Right::Write]))
        .unwrap();
    let before = generation(&base, &name);
    forum
        .call(
            Some(&other),
            "post",
            &json!({ "kind": "note", "thread": thread, "body": "Second post." }),
        )
        .unwrap();
    assert_eq!(generation(&base, &name), before + 1);
}

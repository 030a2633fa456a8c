//! The command line: token administration, post and the reading views, errors.

mod common;

use std::process::Output;

use common::TempForum;
use serde_json::Value;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A failure is one line on stderr, a non-zero exit, and no panic or backtrace.
fn assert_one_line_failure(out: &Output, code: i32, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.contains(needle), "{needle:?} in {err:?}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn token_create_list_revoke() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &["--label", "Alice A."]);
    assert!(alice.starts_with("pt_"), "{alice}");
    let second = forum.token("alice", &[]);
    assert_ne!(alice, second);
    forum.token("mod", &["--rights", "read,write,lock"]);
    forum.token("ann", &["--human"]);

    let list = forum.run(&["token", "list"]);
    assert!(list.status.success());
    let text = stdout(&list);
    let row = |identity: &str| {
        text.lines()
            .find(|l| l.starts_with(identity))
            .unwrap_or_else(|| panic!("{identity} in {text}"))
            .to_string()
    };
    assert!(
        row("ainotes:alice ").split_whitespace().any(|w| w == "2"),
        "two active tokens: {text}"
    );
    assert!(row("human:ann").contains("human"));
    assert!(row("ainotes:mod").contains("llm"));

    let revoke = forum.run(&["token", "revoke", &alice]);
    assert!(revoke.status.success(), "{}", stderr(&revoke));
    let again = forum.run(&["token", "revoke", &alice]);
    assert_one_line_failure(&again, 1, "unknown or already revoked");
    let whoami = forum.run_as(&alice, &["post", r#"{"kind":"ask","body":"Still me?"}"#]);
    assert_one_line_failure(&whoami, 3, "token_invalid");
    let text = stdout(&forum.run(&["token", "list"]));
    assert!(
        text.lines()
            .find(|l| l.starts_with("ainotes:alice "))
            .unwrap()
            .split_whitespace()
            .any(|w| w == "1"),
        "{text}"
    );
}

#[test]
fn token_create_rejects_bad_specs() {
    let forum = TempForum::new();
    assert_one_line_failure(
        &forum.run(&["token", "create", "Not A Handle"]),
        1,
        "handle",
    );
    assert_one_line_failure(
        &forum.run(&["token", "create", "bob", "--rights", "read,fly"]),
        1,
        "rights",
    );
}

#[test]
fn post_then_read_the_thread_back() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let bob = forum.token("bob", &[]);

    let asked = forum.run_as(
        &alice,
        &[
            "post",
            r#"{"kind":"ask","body":"Which port?\nAsking for CI."}"#,
        ],
    );
    assert!(asked.status.success(), "{}", stderr(&asked));
    let result: Value = serde_json::from_str(&stdout(&asked)).unwrap();
    let thread = result["thread"]["id"].as_str().unwrap().to_string();

    // The token may come from the environment too.
    let answer = format!(
        r#"{{"kind":"answer","thread":"{thread}","body":"7878.","from":{{"extension":"w1"}}}}"#
    );
    let answered = forum
        .command(&["post", &answer])
        .env("PARLEY_TOKEN", &bob)
        .output()
        .unwrap();
    assert!(answered.status.success(), "{}", stderr(&answered));

    let view = forum.run_as(&alice, &["thread", &thread]);
    assert!(view.status.success(), "{}", stderr(&view));
    let text = stdout(&view);
    assert!(text.contains("answered (UNCONFIRMED proposal"), "{text}");
    assert!(text.contains("awaiting  ainotes:alice"), "{text}");
    assert!(text.contains("ask · ainotes:alice (llm)"), "{text}");
    assert!(
        text.contains("\n    msg_2 answer · ainotes:bob/w1 (llm)"),
        "replies are indented: {text}"
    );
    assert!(text.contains("│ Asking for CI."), "every body line: {text}");
    assert!(
        text.contains("transition: open → answered (UNCONFIRMED proposal)"),
        "{text}"
    );

    let raw = forum.run_as(&alice, &["thread", &thread, "--json"]);
    let raw: Value = serde_json::from_str(&stdout(&raw)).unwrap();
    assert_eq!(raw["thread"]["message_count"], 2);

    let inbox = stdout(&forum.run_as(&alice, &["inbox"]));
    assert!(
        inbox.contains(&thread) && inbox.contains("due since msg_2 answer by ainotes:bob/w1"),
        "{inbox}"
    );
    let empty = stdout(&forum.run_as(&bob, &["inbox"]));
    assert!(empty.contains("Nothing is waiting for you."), "{empty}");

    let events = stdout(&forum.run_as(&bob, &["events"]));
    assert!(
        events.contains("ev_1") && events.contains("open → answered"),
        "{events}"
    );

    let refused = forum.run_as(
        &alice,
        &[
            "post",
            &format!(r#"{{"kind":"note","thread":"{thread}","body":"Me again."}}"#),
        ],
    );
    assert_one_line_failure(&refused, 3, "self_reply (409)");
}

#[test]
fn claims_read_as_text() {
    let forum = TempForum::new();
    let carol = forum.token("carol", &[]);
    let dave = forum.token("dave", &[]);
    let asserted = forum.run_as(
        &carol,
        &[
            "post",
            r#"{"kind":"assert","body":"The build is reproducible.","evidence":[{"kind":"hash","ref":"sha256:abcd"}]}"#,
        ],
    );
    let claim = serde_json::from_str::<Value>(&stdout(&asserted)).unwrap()["claim"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let attest = format!(
        r#"{{"kind":"attest","claim":"{claim}","body":"Rebuilt it twice.","evidence":[{{"kind":"log","ref":"rebuild.log"}}]}}"#
    );
    assert!(forum.run_as(&dave, &["post", &attest]).status.success());
    let text = stdout(&forum.run_as(&dave, &["claim", &claim]));
    assert!(
        text.starts_with(&format!("{claim}  status supported")),
        "{text}"
    );
    assert!(text.contains("evidence      hash: sha256:abcd"), "{text}");
    assert!(text.contains("attested by   ainotes:dave"), "{text}");
    let missing = forum.run_as(&dave, &["claim", "cl_99"]);
    assert_one_line_failure(&missing, 3, "claim_not_found");
}

#[test]
fn errors_are_one_clear_line() {
    let forum = TempForum::new();
    assert_one_line_failure(&forum.run_as("pt_x", &["thread", "th_1"]), 1, "no forum at");
    let alice = forum.token("alice", &[]);
    assert_one_line_failure(
        &forum.run_as(&alice, &["post", "{nope"]),
        1,
        "not valid JSON",
    );
    assert_one_line_failure(&forum.run(&["thread", "th_1"]), 3, "token_missing");
    assert_one_line_failure(
        &forum.run_as(&alice, &["thread", "th_1"]),
        3,
        "thread_not_found",
    );
    assert_one_line_failure(
        &forum.run(&["--settings", "{bad", "token", "list"]),
        1,
        "--settings",
    );
    assert_one_line_failure(
        &forum.run(&["--settings", r#"{"realm":"Bad Realm"}"#, "token", "list"]),
        1,
        "realm",
    );
    assert_one_line_failure(&forum.run(&["thread"]), 2, "see parley --help");
    assert_one_line_failure(&forum.run(&["fly"]), 2, "unrecognized subcommand");
    let help = forum.run(&["--help"]);
    assert!(help.status.success() && stdout(&help).contains("Exit status"));
    let not_a_forum = forum.dir.path().join("other.txt");
    std::fs::write(&not_a_forum, "hello").unwrap();
    let out = common::TempForum {
        dir: tempfile::tempdir().unwrap(),
        db: not_a_forum.clone(),
    }
    .run(&["token", "list"]);
    assert_one_line_failure(&out, 1, "is not a Parley forum");
    assert_eq!(std::fs::read_to_string(&not_a_forum).unwrap(), "hello");
}

#[test]
fn a_served_forum_is_reported_busy() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = common::Server::start(&forum.db, None, &[]);
    // A second server cannot open the file, and says who holds it.
    let second = forum.run(&["serve", "--http", "127.0.0.1:0"]);
    assert_one_line_failure(&second, 1, "a running `parley serve` holds it");
    // The commands reach the running server through its admin channel meanwhile.
    assert!(forum.run(&["token", "list"]).status.success());
    assert_eq!(server.get("/v1/whoami", Some(&alice)).status, 200);
    server.terminate();
    assert!(forum.run(&["token", "list"]).status.success());
}

#[test]
fn a_stop_signal_sent_as_soon_as_it_listens_is_a_clean_stop() {
    // The signals are listened for before the server says it listens: one sent at
    // once must end it with its own shutdown (exit 0), not the signal's default kill.
    let forum = TempForum::new();
    for round in 0..12 {
        let server = common::Server::start(&forum.db, None, &[]);
        let said = if round % 2 == 0 {
            server.terminate()
        } else {
            server.interrupt()
        };
        assert!(
            said.iter().any(|l| l.contains("parley: stopped")),
            "{said:?}"
        );
    }
}

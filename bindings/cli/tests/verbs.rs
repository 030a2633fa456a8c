//! The verbs of a person at a terminal (`threads`, `proposals`, `confirm`, `close`,
//! `reopen`, `mark`, `answer`), each run twice: on the forum file, and through a
//! running server's admin channel (the server holds the file, so a command that
//! succeeds then went through the channel). The output and the refusals are the same.

mod common;

use std::process::Output;

use common::{Server, TempForum};
use serde_json::Value;

struct Scene {
    forum: TempForum,
    ann: String,
    bob: String,
    carl: String,
}

fn scene() -> Scene {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let carl = forum.token("carl", &["--rights", "read,write"]);
    Scene {
        forum,
        ann,
        bob,
        carl,
    }
}

impl Scene {
    /// `parley ARGS` with PARLEY_TOKEN=TOKEN, which must succeed; returns stdout.
    fn ok(&self, token: &str, args: &[&str]) -> String {
        let out = self.run(token, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `parley ARGS` with PARLEY_TOKEN=TOKEN, which must be refused; returns the stderr line.
    fn refused(&self, token: &str, args: &[&str], reason: &str, status: u16) -> String {
        let out = self.run(token, args);
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(3), "{args:?}: {text}");
        let head = format!("parley: refused: {reason} ({status}): ");
        assert!(text.starts_with(&head), "{args:?}: {text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        text
    }

    fn run(&self, token: &str, args: &[&str]) -> Output {
        self.forum.run_as(token, args)
    }

    fn json(&self, token: &str, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(token, &all)).unwrap()
    }
}

/// The whole story of a thread, told through the verbs; the same in both modes.
fn story(s: &Scene) {
    assert_eq!(s.ok(&s.ann, &["threads"]), "No threads.\n");
    assert_eq!(
        s.ok(&s.ann, &["proposals"]),
        "Nothing awaits confirmation.\n"
    );
    s.ok(&s.bob, &["post", r#"{"kind":"ask","body":"Which store?"}"#]);

    // An agent's mark is a proposal; it waits for a person.
    let line = s.ok(&s.bob, &["mark", "th_1", "deferred", "after the release"]);
    assert_eq!(line, "th_1 deferred (proposed, llm) by msg_2\n");
    let text = s.ok(&s.ann, &["proposals"]);
    assert!(
        text.contains("th_1  Which store?\n    deferred proposed by ainotes:bob (msg_2, "),
        "{text}"
    );
    assert!(text.contains("): after the release\n"), "{text}");
    let raw = s.json(&s.ann, &["proposals"]);
    assert_eq!(raw["items"][0]["thread"]["id"], "th_1");
    assert_eq!(raw["items"][0]["message"]["body"], "after the release");

    let line = s.ok(&s.ann, &["confirm", "th_1"]);
    assert_eq!(line, "th_1 deferred (confirmed, llm) by msg_3\n");
    assert_eq!(
        s.ok(&s.ann, &["proposals"]),
        "Nothing awaits confirmation.\n"
    );
    // Nothing left to confirm.
    let text = s.refused(&s.ann, &["confirm", "th_1"], "invalid_transition", 409);
    assert!(text.contains("already confirmed"), "{text}");

    let line = s.ok(&s.ann, &["reopen", "th_1", "back on the table"]);
    assert_eq!(line, "th_1 open (confirmed, user) by msg_4\n");
    // The body is the point of an answer.
    s.refused(&s.ann, &["answer", "th_1"], "invalid_body", 400);
    s.refused(&s.ann, &["answer", "th_1", "   "], "invalid_body", 400);
    let line = s.ok(&s.ann, &["answer", "th_1", "redb"]);
    assert_eq!(line, "th_1 answered (confirmed, user) by msg_5\n");
    s.refused(&s.ann, &["mark", "th_1", "finished"], "invalid_body", 400);
    s.refused(&s.ann, &["mark", "th_1", " "], "invalid_body", 400);
    let raw = s.json(&s.ann, &["mark", "th_1", "decided", "we take redb"]);
    assert_eq!(raw["thread"]["state"], "decided");
    assert_eq!(raw["message"]["body"], "we take redb");

    // Carl did not open the thread and holds no lock right.
    s.refused(&s.carl, &["close", "th_1"], "thread_authority_missing", 403);
    let line = s.ok(&s.ann, &["close", "th_1"]);
    assert_eq!(line, "th_1 closed (confirmed, user) by msg_7\n");
    // A locked thread takes nothing but a reopen.
    s.refused(&s.ann, &["close", "th_1"], "thread_closed", 409);
    s.refused(&s.ann, &["answer", "th_1", "late"], "thread_closed", 409);

    for verb in [
        &["confirm", "th_99"][..],
        &["close", "th_99"],
        &["reopen", "99"],
    ] {
        s.refused(&s.ann, verb, "thread_not_found", 404);
    }
    s.refused(
        &s.ann,
        &["mark", "th_99", "closed"],
        "thread_not_found",
        404,
    );

    let list = s.ok(&s.ann, &["threads"]);
    assert!(
        list.starts_with("th_1  Which store?  [closed (confirmed "),
        "{list}"
    );
    assert!(
        list.contains("    7 messages, by ainotes:bob, last "),
        "{list}"
    );
    let closed = s.json(&s.ann, &["threads", "--state", "closed"]);
    assert_eq!(closed["items"][0]["id"], "th_1");
    let open = s.json(&s.ann, &["threads", "--state", "open"]);
    assert_eq!(open["items"], serde_json::json!([]));
    s.refused(
        &s.ann,
        &["threads", "--state", "done"],
        "invalid_argument",
        400,
    );
    s.refused("pt_unknown", &["threads"], "token_invalid", 401);
}

#[test]
fn the_verbs_work_on_the_file() {
    story(&scene());
}

#[test]
fn the_verbs_work_through_a_running_server() {
    let s = scene();
    let server = Server::start(&s.forum.db, None, &[]);
    story(&s);
    // The web view and the verbs see one forum: the closed thread, over HTTP.
    let thread = server.get("/v1/threads/th_1", Some(&s.ann));
    assert_eq!(thread.json()["thread"]["locked"], true);
    server.terminate();
}

#[test]
fn threads_pages_with_a_cursor() {
    let s = scene();
    for n in 0..3 {
        let body = format!(r#"{{"kind":"ask","body":"question {n}"}}"#);
        s.ok(&s.bob, &["post", &body]);
    }
    let first = s.json(&s.ann, &["threads", "--limit", "2"]);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["more"], true);
    let cursor = first["cursor"].as_str().unwrap().to_string();
    let text = s.ok(&s.ann, &["threads", "--limit", "2"]);
    assert!(
        text.ends_with(&format!("(more after --since {cursor})\n")),
        "{text}"
    );
    let rest = s.json(&s.ann, &["threads", "--since", &cursor]);
    assert_eq!(rest["items"][0]["id"], "th_3");
    assert_eq!(rest["more"], false);
}

//! A person acts on the state they saw (SPEC §14.5): `confirm`, `close`, `reopen`
//! and `mark` take `--if-state STATE` and are refused as `state_changed` (exit 4,
//! nothing posted) when the thread has moved since; `proposals` prints the confirm
//! command with the state it shows. On the file and through a running server.

mod common;

use std::process::Output;

use common::{Server, TempForum};
use serde_json::Value;

struct Scene {
    forum: TempForum,
    ann: String,
    bob: String,
    carol: String,
}

fn scene() -> Scene {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let carol = forum.token("carol", &["--rights", "read,write"]);
    Scene {
        forum,
        ann,
        bob,
        carol,
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

impl Scene {
    fn ok(&self, token: &str, args: &[&str]) -> String {
        let out = self.forum.run_as(token, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    fn thread(&self) -> Value {
        let text = self.ok(&self.ann, &["thread", "th_1", "--json"]);
        serde_json::from_str::<Value>(&text).unwrap()["thread"].clone()
    }
}

fn story(s: &Scene) {
    // Bob asks, Carol answers: `answered`, a proposal.
    s.ok(&s.bob, &["post", r#"{"kind":"ask","body":"Which port?"}"#]);
    s.ok(&s.carol, &["answer", "th_1", "7878"]);
    let shown = s.ok(&s.ann, &["proposals"]);
    assert!(
        shown.contains("parley confirm th_1 --if-state answered  |  parley mark th_1 STATE --if-state answered"),
        "{shown}"
    );
    // Meanwhile Bob proposes `closed`.
    s.ok(&s.bob, &["mark", "th_1", "closed", "done here"]);
    for args in [
        &["confirm", "th_1", "--if-state", "answered"][..],
        &["close", "th_1", "--if-state", "answered"],
        &["mark", "th_1", "decided", "--if-state", "answered"],
        &["reopen", "th_1", "--if-state", "answered"],
    ] {
        let out = s.forum.run_as(&s.ann, args);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {text}");
        assert!(
            text.starts_with(
                "parley: refused: state_changed (409): th_1 is closed now, not answered"
            ),
            "{args:?}: {text}"
        );
        assert!(text.ends_with("(the thread is `closed` now)\n"), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(out.stdout.is_empty());
    }
    // Nothing was posted: closed, Bob's unconfirmed proposal, not locked.
    let t = s.thread();
    assert_eq!(t["state"], "closed");
    assert!(t["state_confirmed_at"].is_null(), "{t}");
    assert_eq!(t["locked"], false);
    assert_eq!(t["message_count"], 3);
    // Not a state: the engine's invalid_body, exit 3.
    let out = s
        .forum
        .run_as(&s.ann, &["confirm", "th_1", "--if-state", "shut"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid_body"), "{}", stderr(&out));
    // The state seen now: confirmed.
    let line = s.ok(&s.ann, &["confirm", "th_1", "--if-state", "closed"]);
    assert_eq!(line, "th_1 closed (confirmed, llm) by msg_4\n");
    assert_eq!(s.thread()["locked"], true);
    let line = s.ok(&s.ann, &["reopen", "th_1", "--if-state", "closed"]);
    assert_eq!(line, "th_1 open (confirmed, user) by msg_5\n");
    let line = s.ok(&s.ann, &["mark", "th_1", "deferred", "--if-state", "open"]);
    assert!(
        line.starts_with("th_1 deferred (confirmed, user)"),
        "{line}"
    );
}

#[test]
fn acts_hold_only_in_the_state_seen_on_the_file() {
    story(&scene());
}

#[test]
fn acts_hold_only_in_the_state_seen_through_a_running_server() {
    let s = scene();
    let server = Server::start(&s.forum.db, None, &[]);
    story(&s);
    server.terminate();
}

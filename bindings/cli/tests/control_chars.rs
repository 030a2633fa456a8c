//! Control characters written by an agent never reach the person's terminal raw:
//! every view (`threads`, `proposals`, `thread`, `digest`, `inbox`, `events`, `search`,
//! `claim`, the acts' outcome lines, `token list`, `--json`, refusals on stderr)
//! shows them as escapes (`\u001b`), and so does the web view's page.

mod common;
// The web client of the server's own tests, which names its harness `support`.
use common as support;
#[path = "../../../server/tests/web_client/mod.rs"]
mod web_client;

use std::process::Output;

use common::{Server, TempForum};
use web_client::Browser;

/// Moves the cursor up and erases the line, then writes the clipboard (OSC 52), then
/// C1 CSI (U+009B) and DEL.
const TRAP: &str = "\x1b[1A\x1b[2Kall is well\x1b]52;c;cm0gLXJmIH4=\x07 \u{9b}2J \x7f.";

/// The bytes of a raw ESC, BEL, DEL, any other C0 control but newline and tab, and
/// a C1 control in UTF-8 (C2 80 to C2 9F).
fn raw_controls(bytes: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        let c0 = b < 0x20 && b != b'\n' && b != b'\t';
        let c1 = b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n));
        if c0 || b == 0x7f || c1 {
            found.push(i);
        }
    }
    found
}

fn assert_clean(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let raw = raw_controls(bytes);
        assert!(
            raw.is_empty(),
            "{what}: raw control bytes at {raw:?} of {stream}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

struct Scene {
    forum: TempForum,
    ann: String,
    bob: String,
}

impl Scene {
    fn new() -> Scene {
        let forum = TempForum::new();
        let ann = forum.token("ann", &["--human"]);
        let bob = forum.token("bob", &["--rights", "read,write"]);
        let s = Scene { forum, ann, bob };
        // The topic is the body's first line: it carries the trap too.
        let ask = serde_json::json!({"kind": "ask", "body": format!("Q {TRAP}\nbody {TRAP}")});
        s.posted(&["post", &ask.to_string()]);
        s.posted(&["mark", "th_1", "answered", &format!("why {TRAP}")]);
        let claim = serde_json::json!({"kind": "assert", "body": format!("claim {TRAP}"),
            "evidence": [{"kind": "log", "ref": format!("run {TRAP}"), "note": TRAP}]});
        s.posted(&["post", &claim.to_string()]);
        s
    }

    /// Bob's post, which must succeed (its output is looked at in the views).
    fn posted(&self, args: &[&str]) {
        let out = self.run(&self.bob, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `parley ARGS` with the token in PARLEY_TOKEN; must succeed and print no raw
    /// control character.
    fn ok(&self, token: &str, args: &[&str]) -> String {
        let out = self.run(token, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_clean(&format!("{args:?}"), &out);
        String::from_utf8(out.stdout).unwrap()
    }

    fn run(&self, token: &str, args: &[&str]) -> Output {
        let mut cmd = self.forum.command(args);
        cmd.env("PARLEY_TOKEN", token);
        cmd.output().unwrap()
    }
}

fn every_view(s: &Scene) {
    let views: [&[&str]; 9] = [
        &["threads"],
        &["proposals"],
        &["thread", "th_1"],
        &["digest", "th_1"],
        &["inbox"],
        &["events"],
        &["search", "body"],
        &["claim", "cl_1"],
        &["token", "list"],
    ];
    for view in views {
        let text = s.ok(&s.ann, view);
        if view[0] != "events" && view[0] != "token" {
            assert!(text.contains("\\u001b[1A\\u001b[2K"), "{view:?}: {text}");
        }
        let mut json = view.to_vec();
        if view[0] != "token" {
            json.push("--json");
            let raw = s.ok(&s.ann, &json);
            serde_json::from_str::<serde_json::Value>(&raw).expect("still JSON");
        }
    }
    let thread = s.ok(&s.ann, &["thread", "th_1"]);
    for shown in ["\\u001b]52;c;cm0gLXJmIH4=\\u0007", "\\u009b2J", "\\u007f."] {
        assert!(thread.contains(shown), "{shown} in {thread}");
    }
    // The acts print the thread's state line; a refusal's reason goes to stderr.
    s.ok(&s.ann, &["answer", "th_1", TRAP]);
    let out = s.run(&s.ann, &["mark", "th_1", TRAP]);
    assert_eq!(out.status.code(), Some(3));
    assert_clean("a refused mark", &out);
    let out = s.run(&s.ann, &["thread", TRAP]);
    assert_ne!(out.status.code(), Some(0));
    assert_clean("a refused read", &out);
}

#[test]
fn terminal_views_show_control_characters_as_escapes() {
    every_view(&Scene::new());
}

#[test]
fn views_through_a_running_server_show_them_as_escapes_too() {
    let s = Scene::new();
    let server = Server::start(&s.forum.db, None, &[]);
    every_view(&s);
    server.terminate();
}

#[test]
fn the_web_view_shows_control_characters_as_escapes() {
    let s = Scene::new();
    let server = Server::start(&s.forum.db, None, &[]);
    let mut browser = Browser::signed_in(&server, &s.ann);
    for path in [
        "/threads/th_1",
        "/threads",
        "/proposals",
        "/claims/cl_1",
        "/search?q=body",
    ] {
        let page = browser.get(path);
        assert_eq!(page.status, 200, "{path}");
        let raw = raw_controls(&page.body);
        assert!(raw.is_empty(), "{path}: raw control bytes at {raw:?}");
        let text = String::from_utf8(page.body).unwrap();
        assert!(text.contains("\\u001b[1A\\u001b[2K"), "{path}: {text}");
    }
    server.terminate();
}

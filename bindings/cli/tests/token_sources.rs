//! Where a command's token comes from: `--token-file PATH` (the owner's alone),
//! `PARLEY_TOKEN`, or `--token`, which still works but warns that every local user
//! can read it. The flags exclude each other; a flag beats the variable. A token
//! file that is missing, empty, not a file, or open to group or others is refused
//! before the forum is touched.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;

use common::TempForum;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

struct Scene {
    forum: TempForum,
    /// A person's token, and one that was never issued.
    ann: String,
    bogus: &'static str,
}

fn scene() -> Scene {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    Scene {
        forum,
        ann,
        bogus: "pt_0000000000000000000000000000000000000000000",
    }
}

impl Scene {
    /// A file in the forum's directory holding `text`, with mode `mode`.
    fn file(&self, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = self.forum.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    /// `parley ARGS` with PARLEY_TOKEN set to `env` (or unset).
    fn run(&self, env: Option<&str>, args: &[&str]) -> Output {
        let mut cmd = self.forum.command(args);
        if let Some(token) = env {
            cmd.env("PARLEY_TOKEN", token);
        }
        cmd.output().unwrap()
    }
}

/// A command that read with the person's token: it lists no threads.
fn read_as_ann(out: &Output) {
    assert!(out.status.success(), "{}", stderr(out));
    assert_eq!(stdout(out), "No threads.\n");
}

fn refused_as_invalid(out: &Output) {
    assert_eq!(out.status.code(), Some(3), "{}", stderr(out));
    assert!(stderr(out).contains("token_invalid"), "{}", stderr(out));
}

#[test]
fn each_source_gives_the_token_and_only_the_flag_warns() {
    let s = scene();
    // PARLEY_TOKEN: silent.
    let out = s.run(Some(&s.ann), &["threads"]);
    read_as_ann(&out);
    assert_eq!(stderr(&out), "");
    // --token-file: silent; a trailing newline is not part of the token.
    let file = s.file("ann.token", &format!("{}\n", s.ann), 0o600);
    let out = s.run(None, &["threads", "--token-file", file.to_str().unwrap()]);
    read_as_ann(&out);
    assert_eq!(stderr(&out), "");
    let strict = s.file("strict.token", &s.ann, 0o400);
    read_as_ann(&s.run(None, &["threads", "--token-file", strict.to_str().unwrap()]));
    // --token: works, and says on stderr who else can see it.
    let out = s.run(None, &["threads", "--token", &s.ann]);
    read_as_ann(&out);
    let warning = stderr(&out);
    assert_eq!(warning.lines().count(), 1, "{warning}");
    assert!(
        warning.starts_with("parley: warning: --token shows the token to every local user")
            && warning.contains("/proc/PID/cmdline")
            && warning.contains("--token-file"),
        "{warning}"
    );
    // No token at all: the forum asks for one.
    let out = s.run(None, &["threads"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("token_missing"), "{}", stderr(&out));
}

#[test]
fn a_flag_beats_the_variable_and_the_two_flags_exclude_each_other() {
    let s = scene();
    let file = s.file("ann.token", &s.ann, 0o600);
    let file = file.to_str().unwrap();
    read_as_ann(&s.run(Some(s.bogus), &["threads", "--token-file", file]));
    read_as_ann(&s.run(Some(s.bogus), &["threads", "--token", &s.ann]));
    refused_as_invalid(&s.run(Some(&s.ann), &["threads", "--token", s.bogus]));
    let bogus = s.file("bogus.token", s.bogus, 0o600);
    refused_as_invalid(&s.run(
        Some(&s.ann),
        &["threads", "--token-file", bogus.to_str().unwrap()],
    ));
    // Both flags: a usage error, whichever would have won.
    let out = s.run(None, &["threads", "--token", &s.ann, "--token-file", file]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("--token")
            && text.contains("--token-file")
            && text.contains("cannot be used with"),
        "{text}"
    );
    assert_eq!(stdout(&out), "");
}

#[test]
fn a_token_file_that_is_missing_empty_or_open_to_others_is_refused() {
    let s = scene();
    let missing = s.forum.dir.path().join("nowhere.token");
    let cases: Vec<(PathBuf, &str)> = vec![
        (missing, "cannot open it"),
        (s.file("empty.token", "", 0o600), "is empty"),
        (s.file("blank.token", " \n\n", 0o600), "is empty"),
        (
            s.file("group.token", &s.ann, 0o640),
            "other users may read it (mode 640)",
        ),
        (s.file("world.token", &s.ann, 0o644), "`chmod 600"),
        (s.file("writable.token", &s.ann, 0o602), "mode 602"),
        (
            s.file("two.token", &format!("{}\n{}\n", s.ann, s.bogus), 0o600),
            "more than one token",
        ),
        (s.forum.dir.path().to_path_buf(), "not a regular file"),
    ];
    for (path, needle) in cases {
        let shown = path.to_str().unwrap();
        // PARLEY_TOKEN holds a good token: a bad file is refused, never passed over.
        let out = s.run(Some(&s.ann), &["threads", "--token-file", shown]);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{shown}: {text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.starts_with(&format!("parley: error: --token-file {shown}: ")),
            "{text}"
        );
        assert!(text.contains(needle), "{needle:?} in {text}");
        assert_eq!(stdout(&out), "");
    }
}

#[test]
fn every_command_that_takes_a_token_takes_a_token_file() {
    let s = scene();
    let file = s.file("ann.token", &s.ann, 0o600);
    let file = file.to_str().unwrap();
    let open = s.file("open.token", &s.ann, 0o644);
    let open = open.to_str().unwrap();
    let post = r#"{"kind":"ask","body":"Which port?"}"#;
    let commands: [&[&str]; 13] = [
        &["post", post],
        &["thread", "th_1"],
        &["inbox"],
        &["events"],
        &["claim", "cl_1"],
        &["search", "port"],
        &["threads"],
        &["proposals"],
        &["mark", "th_1", "deferred"],
        &["answer", "th_1", "7878"],
        &["confirm", "th_1"],
        &["close", "th_1"],
        &["reopen", "th_1"],
    ];
    for command in commands {
        // Refused for the open file, before the forum is read or written.
        let mut args = command.to_vec();
        args.extend(["--token-file", open]);
        let out = s.run(None, &args);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("other users may read it"),
            "{command:?}"
        );
        // Served with the private one (a refusal by the forum is still the forum's
        // answer to the person's token: claim cl_1 does not exist, say).
        let mut args = command.to_vec();
        args.extend(["--token-file", file]);
        let out = s.run(None, &args);
        let text = stderr(&out);
        assert!(
            out.status.success() || (out.status.code() == Some(3) && !text.contains("token_")),
            "{command:?}: {text}"
        );
    }
}

//! The coordination verbs of the built `parley` (SPEC §16): `presence`, `leases`,
//! `lease`, `release`, and `lease check` run as a git pre-commit hook would, in a
//! real git repository with staged files, on the forum file and through a running
//! server.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{Server, TempForum};
use serde_json::Value;

/// Exit code of `lease check` finding a path held by another identity.
const HELD: i32 = 5;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        stderr(out)
    );
    stdout(out)
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

/// `git ARGS` in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// A git repository in `dir` with `paths` written and staged.
fn repo_with_staged(dir: &Path, paths: &[&str]) {
    git(dir, &["init", "-q"]);
    for path in paths {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "x\n").unwrap();
    }
    let mut add = vec!["add", "--"];
    add.extend_from_slice(paths);
    git(dir, &add);
}

/// `parley lease check ARGS` as `token`, run in `dir`.
fn check(forum: &TempForum, token: &str, dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["lease", "check"];
    all.extend_from_slice(args);
    let mut cmd = forum.command(&all);
    cmd.current_dir(dir).env("PARLEY_TOKEN", token);
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null");
    cmd.output().expect("run parley")
}

#[test]
fn lease_leases_release_and_presence_on_the_file() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &["--rights", "read,write"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);

    let line = ok(&forum.run_as(
        &alice,
        &[
            "lease",
            "src/",
            "--ttl",
            "300",
            "--note",
            "parser work",
            "--extension",
            "w1",
        ],
    ));
    assert!(
        line.starts_with("ls_1 src/ exclusive by ainotes:alice/w1 until "),
        "{line}"
    );
    assert!(line.contains("parser work"), "{line}");
    let shared = json(&forum.run_as(&bob, &["lease", "docs/", "--shared", "--json"]));
    assert_eq!(shared["lease"]["mode"], "shared");

    // A conflict exits 3 and names the holder.
    let out = forum.run_as(&bob, &["lease", "src/main.rs"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("lease_conflict (409)"), "{err}");
    assert!(
        err.contains("held: ls_1 src/ exclusive by ainotes:alice/w1"),
        "{err}"
    );

    let all = ok(&forum.run_as(&bob, &["leases"]));
    assert_eq!(all.lines().count(), 2, "{all}");
    let listed = json(&forum.run_as(&bob, &["leases", "--resource", "src/a.rs", "--json"]));
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed["items"][0]["id"], "ls_1");
    let bobs = json(&forum.run_as(&bob, &["leases", "--identity", "ainotes:bob", "--json"]));
    assert_eq!(bobs["items"][0]["id"], shared["lease"]["id"]);

    let out = forum.run_as(&bob, &["release", "ls_1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("lease_authority_missing (403)"),
        "{}",
        stderr(&out)
    );
    let released = ok(&forum.run_as(&alice, &["release", "1"]));
    assert!(
        released.starts_with("released ls_1 on src/ at "),
        "{released}"
    );
    let out = forum.run_as(&alice, &["release", "ls_1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("lease_not_found (404)"),
        "{}",
        stderr(&out)
    );
    // A resource named `check` is leased after `--`.
    let named = json(&forum.run_as(&alice, &["lease", "--json", "--", "check"]));
    assert_eq!(named["lease"]["resource"], "check");

    let set = ok(&forum.run_as(
        &alice,
        &[
            "presence", "set", "working", "--note", "on ls_1", "--ttl", "60",
        ],
    ));
    assert!(set.starts_with("ainotes:alice working since "), "{set}");
    ok(&forum.run_as(&bob, &["presence", "set", "away", "--extension", "w2"]));
    let seen = ok(&forum.run_as(&bob, &["presence"]));
    assert_eq!(seen.lines().count(), 2, "{seen}");
    assert!(seen.contains("ainotes:bob/w2 away"), "{seen}");
    let one = json(&forum.run_as(&bob, &["presence", "ainotes:alice", "--json"]));
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    assert_eq!(one["items"][0]["note"], "on ls_1");
    let out = forum.run_as(&bob, &["presence", "set", "asleep"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("invalid_argument"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn lease_check_guards_staged_paths_in_a_git_repository() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &["--rights", "read,write"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let repo = tempfile::tempdir().unwrap();
    repo_with_staged(repo.path(), &["src/parser.rs", "README.md", "docs/a.md"]);

    // Nothing leased: the commit may go ahead, silently.
    let out = check(&forum, &bob, repo.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");

    ok(&forum.run_as(
        &alice,
        &[
            "lease",
            "src/",
            "--note",
            "big refactor",
            "--extension",
            "w1",
        ],
    ));
    ok(&forum.run_as(&alice, &["lease", "docs/", "--shared"]));
    let out = check(&forum, &bob, repo.path(), &[]);
    assert_eq!(out.status.code(), Some(HELD), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.lines().count(),
        1,
        "only the exclusive lease holds: {err}"
    );
    assert!(
        err.contains(
            "src/parser.rs is leased by ainotes:alice/w1 (ls_1 on src/, exclusive, until "
        ),
        "{err}"
    );
    assert!(err.contains("big refactor"), "{err}");
    // The holder's own identity is not stopped by its own lease.
    let out = check(&forum, &alice, repo.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Paths given: checked instead of the staged ones, `./` or not.
    let out = check(&forum, &bob, repo.path(), &["README.md", "docs/a.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = check(&forum, &bob, repo.path(), &["./src/new.rs", "src"]);
    assert_eq!(out.status.code(), Some(HELD));
    assert_eq!(stderr(&out).lines().count(), 2, "{}", stderr(&out));

    // Released, the same staged paths pass.
    ok(&forum.run_as(&alice, &["release", "ls_1"]));
    let out = check(&forum, &bob, repo.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Outside a repository, with no path to check: an error, not a pass.
    let plain = tempfile::tempdir().unwrap();
    let out = check(&forum, &bob, plain.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("git diff --cached failed"),
        "{}",
        stderr(&out)
    );
    // A bad token is the forum's refusal (exit 3), never a pass.
    let out = check(&forum, "pt_nope", repo.path(), &["src/a.rs"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn a_pre_commit_hook_stops_a_commit_through_a_running_server() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &["--rights", "read,write"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let server = Server::start(&forum.db, None, &[]);
    ok(&forum.run_as(&alice, &["lease", "src/parser.rs", "--ttl", "120"]));

    let repo = tempfile::tempdir().unwrap();
    repo_with_staged(repo.path(), &["src/parser.rs"]);
    let hook = repo.path().join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nexec '{}' --db '{}' lease check\n",
            common::BIN,
            forum.db.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let commit = |token: &str| {
        Command::new("git")
            .current_dir(repo.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(["commit", "-q", "-m", "edit the parser"])
            .env("PARLEY_TOKEN", token)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("PARLEY_DB")
            .output()
            .unwrap()
    };
    let out = commit(&bob);
    assert!(!out.status.success(), "the hook stops bob's commit");
    assert!(
        stderr(&out).contains("src/parser.rs is leased by ainotes:alice (ls_1 on src/parser.rs"),
        "{}",
        stderr(&out)
    );
    let out = commit(&alice);
    assert!(out.status.success(), "the holder commits: {}", stderr(&out));
    server.terminate();
}

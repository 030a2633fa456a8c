//! DNS-rebinding protection by `Host`: loopback names pass, any other name is
//! refused with 421 on every route (REST, `/mcp`, unknown routes) unless
//! `--allow-host` admits it.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/host_check.rs`.

mod common;

use common::TempForum;

#[test]
fn allow_host_must_be_a_host_name() {
    let forum = TempForum::new();
    for bad in [
        "http://forum.example",
        "forum.example/",
        "",
        "a b",
        "forum.example:port",
        "user@forum.example",
    ] {
        let out = forum.run(&["serve", "--http", "127.0.0.1:0", "--allow-host", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--allow-host"), "{err}");
    }
}

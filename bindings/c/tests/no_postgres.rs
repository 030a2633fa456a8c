//! The C library built without its `postgres` feature (the default): a
//! `postgres://` path is `PARLEY_STORAGE`, with a message that says how to get a
//! build with PostgreSQL, `*out` untouched and no panic.
//! Runs only without the feature: `cargo test -p parley-c --test no_postgres`.

#![cfg(not(feature = "postgres"))]

use std::ffi::{CStr, CString};
use std::ptr;

use parley::*;

#[test]
fn a_postgres_path_is_refused_in_words() {
    for url in [
        "postgres://me:secret@db.example/parley?forum=team",
        "postgresql:///parley?host=/tmp",
    ] {
        let path = CString::new(url).expect("no NUL");
        let mut forum: *mut parley_forum = ptr::null_mut();
        // SAFETY: a NUL-terminated path, NULL settings, a valid out-pointer.
        let rc = unsafe { parley_forum_open(path.as_ptr(), ptr::null(), &mut forum) };
        assert_eq!(rc, PARLEY_STORAGE, "{url}");
        assert!(forum.is_null(), "*out was written on a refusal");
        // SAFETY: the library's own NUL-terminated string, read before the next call.
        let message = unsafe { CStr::from_ptr(parley_last_error()) }
            .to_str()
            .expect("UTF-8")
            .to_owned();
        assert!(
            message.contains("no PostgreSQL support"),
            "{url}: {message}"
        );
        assert!(
            message.contains("cargo cbuild -p parley-c --features postgres"),
            "{message}"
        );
        assert!(message.contains("parley-postgres"), "{message}");
        assert!(
            !message.contains("secret"),
            "the password is shown: {message}"
        );
    }
}

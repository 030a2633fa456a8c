//! Waiting from C (SPEC §14.2): ending the waits, and the commit descriptors that
//! let a host wait in its own `poll` loop. The reads with `wait_ms` themselves go
//! through `parley_call`, which blocks only its calling thread.

use std::ffi::c_int;

use crate::boundary::{guard, out_arg, Failure};
use crate::forum::{handle, parley_forum};
use crate::result::{parley_result, PARLEY_STORAGE};

/// Ends every wait on the forum, now and later (SPEC §14.2): each call blocked in
/// a read with `wait_ms` returns at once with its current result, and later reads
/// with `wait_ms` no longer block. Every commit descriptor becomes readable. For a
/// host that is shutting down: end the waits, join the threads that wait, then
/// `parley_forum_free`. Calling it again is harmless.
///
/// Works on a poisoned handle too, so that its threads can still be joined.
/// Results: `PARLEY_OK`, `PARLEY_NULL_PARAMETER` (`forum`).
///
/// # Safety
/// `forum` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn parley_forum_end_waits(forum: *const parley_forum) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        handle.bell.end_waits(&handle.forum);
        Ok(())
    })
}

/// A new file descriptor for waiting on the forum in the host's own `poll`,
/// `epoll` or `select` loop: it is non-blocking and close-on-exec, and becomes
/// readable after every durable commit (one byte a commit; while bytes are
/// waiting, more commits may add none) and when the waits are ended
/// (`parley_forum_end_waits`, and `parley_forum_free`).
///
/// The loop: poll for `POLLIN`; when readable, first drain it (`read` until it
/// fails with `EAGAIN`), then run the read again through `parley_call` with
/// `"wait_ms": 0`; a commit after the drain makes the descriptor readable again,
/// so none is missed. A `read` that returns 0 (end-of-file) means the forum was
/// freed. The descriptor is the caller's: close it with `close()`, before or after
/// the forum is freed. Each call makes a new one.
///
/// On `PARLEY_OK`, `*out_fd` receives the descriptor; otherwise it is not written.
/// Results: `PARLEY_OK`, `PARLEY_NULL_PARAMETER` (`forum`, `out_fd`),
/// `PARLEY_STORAGE` (no descriptor could be made: the process is out of them, or
/// the platform has no Unix sockets), `PARLEY_POISONED`.
///
/// # Safety
/// `forum` is NULL or a live handle; `out_fd` is NULL or points to writable
/// storage for one `int`.
#[no_mangle]
pub unsafe extern "C" fn parley_forum_commit_fd(
    forum: *const parley_forum,
    out_fd: *mut c_int,
) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        out_arg(out_fd, "out_fd")?;
        let fd = handle.enter(|forum| {
            handle.bell.open(forum).map_err(|e| {
                Failure::new(
                    PARLEY_STORAGE,
                    format!("cannot make a commit descriptor: {e}"),
                )
            })
        })?;
        *out_fd = fd;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::{c_char, CStr, CString};
    use std::ptr;
    use std::time::{Duration, Instant};

    use serde_json::Value;

    use super::*;
    use crate::forum::{
        parley_call, parley_forum_free, parley_forum_open, parley_string_free, parley_token_create,
    };
    use crate::result::{
        PARLEY_NULL_PARAMETER, PARLEY_OK, PARLEY_PANIC, PARLEY_POISONED, PARLEY_REFUSED,
    };

    unsafe fn text(p: *mut c_char) -> String {
        let s = CStr::from_ptr(p).to_str().unwrap().to_string();
        parley_string_free(p);
        s
    }

    /// A handle that a test hands to another thread.
    #[derive(Clone, Copy)]
    struct Shared(*mut parley_forum);
    // SAFETY: the handle is thread-safe; each test frees it after joining.
    unsafe impl Send for Shared {}

    unsafe fn open_with(settings: &CStr) -> *mut parley_forum {
        let mut forum = ptr::null_mut();
        let rc = parley_forum_open(ptr::null(), settings.as_ptr(), &mut forum);
        assert_eq!(rc, PARLEY_OK);
        forum
    }

    unsafe fn token(forum: *mut parley_forum, spec: &CStr) -> CString {
        let mut token = ptr::null_mut();
        assert_eq!(
            parley_token_create(forum, spec.as_ptr(), &mut token),
            PARLEY_OK
        );
        CString::new(text(token)).unwrap()
    }

    /// `operation` with `args` for `token`: the code and the JSON handed back.
    unsafe fn call(
        forum: *mut parley_forum,
        token: &CStr,
        operation: &CStr,
        args: &str,
    ) -> (parley_result, Value) {
        let args = CString::new(args).unwrap();
        let mut out = ptr::null_mut();
        let rc = parley_call(
            forum,
            token.as_ptr(),
            operation.as_ptr(),
            args.as_ptr(),
            &mut out,
        );
        let json = if out.is_null() {
            Value::Null
        } else {
            serde_json::from_str(&text(out)).unwrap()
        };
        (rc, json)
    }

    #[cfg(unix)]
    /// Bytes waiting on a commit descriptor: `Some(n)`, or `None` at end-of-file.
    fn drain(fd: &mut std::os::unix::net::UnixStream) -> Option<usize> {
        use std::io::{ErrorKind, Read};
        let (mut total, mut buf) = (0, [0u8; 64]);
        loop {
            match fd.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => total += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Some(total),
                Err(e) => panic!("{e}"),
            }
        }
    }

    const SETTINGS: &CStr = c"{\"limits\":{\"writes_per_minute\":0}}";
    const ASK_CAROL: &str = r#"{"kind":"ask","to":"ainotes:carol","body":"carol, which port?"}"#;
    const ASK_BOB: &str = r#"{"kind":"ask","to":"ainotes:bob","body":"bob, which port?"}"#;

    #[test]
    fn a_waiting_call_blocks_only_its_thread_and_wakes_on_a_post_from_another() {
        // SAFETY: valid pointers throughout; the waiter is joined before the free.
        unsafe {
            let forum = open_with(SETTINGS);
            let alice = token(forum, c"{\"handle\":\"alice\"}");
            let bob = token(forum, c"{\"handle\":\"bob\"}");
            token(forum, c"{\"handle\":\"carol\"}");
            let shared = Shared(forum);
            let bob_in_thread = bob.clone();
            let waiter = std::thread::spawn(move || {
                let shared = shared;
                let start = Instant::now();
                let got = call(
                    shared.0,
                    &bob_in_thread,
                    c"get_inbox",
                    r#"{"wait_ms":20000}"#,
                );
                (got, start.elapsed())
            });
            std::thread::sleep(Duration::from_millis(100));
            // The same handle, meanwhile: reads and a post that is not bob's.
            let (rc, _) = call(forum, &bob, c"get_inbox", "{}");
            assert_eq!(rc, PARLEY_OK);
            let (rc, _) = call(forum, &alice, c"post", ASK_CAROL);
            assert_eq!(rc, PARLEY_OK);
            std::thread::sleep(Duration::from_millis(100));
            assert!(!waiter.is_finished(), "no item for bob yet");
            let (rc, posted) = call(forum, &alice, c"post", ASK_BOB);
            assert_eq!(rc, PARLEY_OK);
            let ((rc, inbox), took) = waiter.join().unwrap();
            assert_eq!(rc, PARLEY_OK);
            assert_eq!(inbox["items"][0]["thread"]["id"], posted["thread"]["id"]);
            assert!(took < Duration::from_secs(15), "woken, not timed out");
            parley_forum_free(forum);
        }
    }

    #[test]
    fn end_waits_releases_a_blocked_call_and_later_ones() {
        // SAFETY: valid pointers throughout; the waiter is joined before the free.
        unsafe {
            let forum = open_with(SETTINGS);
            let bob = token(forum, c"{\"handle\":\"bob\"}");
            let shared = Shared(forum);
            let bob_in_thread = bob.clone();
            let waiter = std::thread::spawn(move || {
                let shared = shared;
                call(
                    shared.0,
                    &bob_in_thread,
                    c"get_inbox",
                    r#"{"wait_ms":30000}"#,
                )
            });
            std::thread::sleep(Duration::from_millis(100));
            let start = Instant::now();
            assert_eq!(parley_forum_end_waits(forum), PARLEY_OK);
            let (rc, inbox) = waiter.join().unwrap();
            assert_eq!(rc, PARLEY_OK);
            assert_eq!(inbox["items"], serde_json::json!([]));
            let (rc, _) = call(forum, &bob, c"get_events", r#"{"wait_ms":30000}"#);
            assert_eq!(rc, PARLEY_OK);
            assert!(start.elapsed() < Duration::from_secs(10));
            assert_eq!(
                parley_forum_end_waits(forum),
                PARLEY_OK,
                "again: nothing more"
            );
            assert_eq!(parley_forum_end_waits(ptr::null()), PARLEY_NULL_PARAMETER);
            parley_forum_free(forum);
        }
    }

    #[test]
    fn wait_ms_out_of_range_is_refused_as_an_invalid_argument() {
        // SAFETY: valid pointers throughout.
        unsafe {
            let forum = open_with(SETTINGS);
            let bob = token(forum, c"{\"handle\":\"bob\"}");
            for wait in ["30001", "-1", "1.5", "\"10\"", "true"] {
                let args = format!(r#"{{"wait_ms":{wait}}}"#);
                let (rc, refusal) = call(forum, &bob, c"get_inbox", &args);
                assert_eq!(rc, PARLEY_REFUSED, "{wait}");
                assert_eq!(refusal["reason"], "invalid_argument", "{wait}");
                assert_eq!(refusal["field"], "wait_ms", "{wait}");
            }
            parley_forum_free(forum);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_commit_descriptor_keeps_the_conventions() {
        use std::os::fd::FromRawFd;
        use std::os::unix::net::UnixStream;
        // SAFETY: valid pointers throughout; descriptors are owned once.
        unsafe {
            let forum = open_with(SETTINGS);
            let alice = token(forum, c"{\"handle\":\"alice\"}");
            let mut fd: c_int = -7;
            assert_eq!(
                parley_forum_commit_fd(ptr::null(), &mut fd),
                PARLEY_NULL_PARAMETER
            );
            assert_eq!(
                parley_forum_commit_fd(forum, ptr::null_mut()),
                PARLEY_NULL_PARAMETER
            );
            assert_eq!(fd, -7, "not written on failure");
            assert_eq!((*forum).bell.live(), 0, "nothing made for a NULL out_fd");
            assert_eq!(parley_forum_commit_fd(forum, &mut fd), PARLEY_OK);
            let mut reader = UnixStream::from_raw_fd(fd);
            assert_eq!(drain(&mut reader), Some(0), "non-blocking and empty");
            let (rc, _) = call(forum, &alice, c"post", r#"{"kind":"ask","body":"rung?"}"#);
            assert_eq!(rc, PARLEY_OK);
            assert_eq!(drain(&mut reader), Some(1));
            parley_forum_free(forum);
            assert_eq!(drain(&mut reader), None, "a last byte, then end-of-file");
        }
    }

    #[cfg(unix)]
    #[test]
    fn freeing_rings_then_closes_every_descriptor() {
        use std::os::fd::FromRawFd;
        use std::os::unix::net::UnixStream;
        // SAFETY: valid pointers throughout; descriptors are owned once.
        unsafe {
            let forum = open_with(SETTINGS);
            let mut readers: Vec<UnixStream> = (0..3)
                .map(|_| {
                    let mut fd: c_int = -1;
                    assert_eq!(parley_forum_commit_fd(forum, &mut fd), PARLEY_OK);
                    UnixStream::from_raw_fd(fd)
                })
                .collect();
            parley_forum_free(forum);
            for reader in &mut readers {
                let mut byte = [0u8; 1];
                assert_eq!(
                    std::io::Read::read(reader, &mut byte).unwrap(),
                    1,
                    "the last byte"
                );
                assert_eq!(drain(reader), None, "then end-of-file");
            }
        }
    }

    #[test]
    fn a_poisoned_handle_gives_no_descriptor_but_still_ends_its_waits() {
        // SAFETY: valid pointers throughout.
        unsafe {
            let forum = open_with(SETTINGS);
            let handle = &*forum;
            let code = guard(|| handle.enter(|_| -> Result<(), Failure> { panic!("engine bug") }));
            assert_eq!(code, PARLEY_PANIC);
            let mut fd: c_int = -7;
            assert_eq!(parley_forum_commit_fd(forum, &mut fd), PARLEY_POISONED);
            assert_eq!(fd, -7);
            assert_eq!(parley_forum_end_waits(forum), PARLEY_OK);
            parley_forum_free(forum);
        }
    }
}

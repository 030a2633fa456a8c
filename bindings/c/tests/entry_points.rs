//! Fuzzing the C entry points through their `extern "C"` functions, as a C host
//! calls them: random byte strings (invalid UTF-8 included) passed as proper C
//! strings, NULL in every pointer position, issued, revoked and random tokens,
//! random and near-valid JSON, and every `uint32_t` as a result code. A case is a
//! random sequence of calls on one forum, each checked against the contract of
//! `include/parley.h`:
//! - nothing panics or aborts: `PARLEY_PANIC` and `PARLEY_POISONED` never come
//!   back, and every result is a code the function documents;
//! - the first bad parameter, in parameter order, decides the code (NULL, then
//!   UTF-8, then JSON, then the engine's own checks), and a revoked token is
//!   revoked once;
//! - out-parameters are written exactly when documented; every string handed
//!   out is UTF-8 (JSON where documented) and is freed with `parley_string_free`;
//! - `parley_last_error` is "" after `PARLEY_OK` and a message otherwise, only
//!   functions that return a code change it, and `parley_last_error_copy` never
//!   writes past its buffer;
//! - a call that fails writes nothing to the forum, and a post that succeeds
//!   writes (the threads and events seen by an observer change);
//! - every commit descriptor the case opened is readable after a post that
//!   succeeded and after the waits are ended, and reads end-of-file once the
//!   forum is freed.
//!
//! Bounded by `PARLEY_FUZZ_CASES` (cases per target); deterministic unless
//! `PARLEY_FUZZ_SEED` is set (a number, or `random`); a failure names its seed.

use std::ffi::{c_char, c_int, CStr, CString, OsStr};
use std::io::{ErrorKind, Read};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use ::parley_forum::{Config, Reason, TokenSpec, OPERATIONS};
use parley::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

mod fuzz_support;
#[path = "fuzz_support/steps.rs"]
mod steps;

use fuzz_support::{fuzz, op, ptr_of, Op, PathArg, Text, TokenArg};
use steps::step;

// --- the model ------------------------------------------------------------------

/// A pointer value no call may write unless told to.
const SENTINEL: *mut c_char = 0x10 as *mut c_char;
const FIXED_CLOCK: &str = "2026-11-30T12:00:00.000Z";

fn name(code: parley_result) -> String {
    name_of(code).map_or_else(|| format!("<{code}>"), |n| n.to_string_lossy().into_owned())
}

fn last_error() -> String {
    // SAFETY: parley_last_error never returns NULL and the string lives until the
    // next call on this thread.
    unsafe { CStr::from_ptr(parley_last_error()) }
        .to_str()
        .expect("the last error is UTF-8")
        .to_owned()
}

/// Takes a string handed out by libparley: UTF-8, then freed.
fn take(out: *mut c_char) -> String {
    assert!(!out.is_null() && out != SENTINEL);
    // SAFETY: libparley returned a NUL-terminated string that the caller owns.
    let text = unsafe { CStr::from_ptr(out) }
        .to_str()
        .expect("UTF-8 out")
        .to_owned();
    // SAFETY: freed once, as the header says.
    unsafe { parley_string_free(out) };
    text
}

fn take_json(out: *mut c_char) -> Value {
    let text = take(out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The checks a function makes on its parameters, in order; the first that fails
/// gives the code.
enum Param<'a> {
    Pointer(bool),
    OptStr(&'a Text),
    Str(&'a Text),
    OptJson(&'a Text),
    Json(&'a Text),
}

fn first_failure(params: &[Param<'_>]) -> Option<parley_result> {
    params.iter().find_map(|param| {
        let (text, required, json) = match param {
            Param::Pointer(given) => return (!given).then_some(PARLEY_NULL_PARAMETER),
            Param::OptStr(t) => (*t, false, false),
            Param::Str(t) => (*t, true, false),
            Param::OptJson(t) => (*t, false, true),
            Param::Json(t) => (*t, true, true),
        };
        match text {
            Text::Null => required.then_some(PARLEY_NULL_PARAMETER),
            Text::Bytes(_) if text.utf8().is_none() => Some(PARLEY_INVALID_UTF8),
            Text::Bytes(_) if json && text.json().is_none() => Some(PARLEY_INVALID_JSON),
            Text::Bytes(_) => None,
        }
    })
}

/// A scratch directory, removed with everything in it.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "parley-c-fuzz-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        Scratch(dir)
    }

    fn path(&self, name: &[u8]) -> PathBuf {
        let mut file = b"f_".to_vec();
        file.extend(name.iter().filter(|b| **b != b'/' && **b != 0));
        self.0.join(OsStr::from_bytes(&file))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One case's forum and what the test knows about it.
struct World {
    forum: *mut parley_forum,
    /// The operations the forum's manifest lists.
    operations: Vec<String>,
    /// Reads threads and events to see whether a call wrote; never revoked.
    observer: CString,
    /// Every token issued by the case, and whether it is still live.
    tokens: Vec<(CString, bool)>,
    scratch: Scratch,
    /// Files a successful open created and closed again: forums, intact.
    forums_on_disk: Vec<PathBuf>,
    /// The commit descriptors handed out, as the host holds them.
    commit_fds: Vec<UnixStream>,
}

/// A limit of the case's forum set to an extreme, tiny or huge. `page_max` is
/// only ever raised: the observer reads pages of 200.
fn extreme_limit() -> impl Strategy<Value = Option<(&'static str, u64)>> {
    let huge = prop_oneof![Just(u64::MAX), Just(1u64 << 40)];
    prop::option::weighted(
        0.3,
        prop_oneof![
            (
                select(vec![
                    "body_max_chars",
                    "provenance_max_chars",
                    "extension_max_chars",
                    "thread_max_messages",
                    "thread_max_depth",
                    "evidence_max",
                    "evidence_ref_max_chars",
                    "supersedes_max",
                    "request_max_bytes",
                ]),
                prop_oneof![1..4u64, huge.clone()],
            ),
            huge.prop_map(|n| ("page_max", n)),
        ],
    )
}

impl World {
    fn new(dialectic: bool, extreme: Option<(&str, u64)>) -> World {
        let mut limits = json!({ "writes_per_minute": 0 });
        if let Some((name, value)) = extreme {
            limits[name] = json!(value);
        }
        let settings = CString::new(
            json!({
                "clock": FIXED_CLOCK,
                "durable": false,
                "limits": limits,
                "profiles": if dialectic { json!(["dialectic"]) } else { json!([]) },
            })
            .to_string(),
        )
        .unwrap();
        let mut forum = ptr::null_mut();
        // SAFETY: NUL-terminated settings, valid out-parameter.
        let rc = unsafe { parley_forum_open(ptr::null(), settings.as_ptr(), &mut forum) };
        assert_eq!(rc, PARLEY_OK, "{}", last_error());
        let mut json = ptr::null_mut();
        // SAFETY: live handle, valid out-parameter.
        let rc = unsafe { parley_forum_manifest(forum, &mut json) };
        assert_eq!(rc, PARLEY_OK, "{}", last_error());
        let operations = take_json(json)["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op.as_str().unwrap().to_string())
            .collect();
        let mut world = World {
            forum,
            operations,
            observer: CString::default(),
            tokens: Vec::new(),
            scratch: Scratch::new(),
            forums_on_disk: Vec::new(),
            commit_fds: Vec::new(),
        };
        world.observer = world.issue(r#"{"handle":"observer","rights":["read"]}"#);
        for spec in [
            r#"{"handle":"alice"}"#,
            r#"{"handle":"bob","rights":["read","write","lock","verify"]}"#,
            r#"{"handle":"ann","kind":"human"}"#,
        ] {
            let secret = world.issue(spec);
            world.tokens.push((secret, true));
        }
        world
    }

    fn issue(&self, spec: &str) -> CString {
        let spec = CString::new(spec).unwrap();
        let mut token = ptr::null_mut();
        // SAFETY: live handle, NUL-terminated spec, valid out-parameter.
        let rc = unsafe { parley_token_create(self.forum, spec.as_ptr(), &mut token) };
        assert_eq!(rc, PARLEY_OK, "{}", last_error());
        CString::new(take(token)).unwrap()
    }

    fn forum(&self, given: bool) -> *mut parley_forum {
        if given {
            self.forum
        } else {
            ptr::null_mut()
        }
    }

    /// The token parameter as C sees it, and as the checks see it.
    fn token(&self, token: &TokenArg) -> (Option<CString>, Text, Option<usize>) {
        match token {
            TokenArg::Null => (None, Text::Null, None),
            TokenArg::Issued(index) => {
                let i = index.index(self.tokens.len());
                let secret = self.tokens[i].0.clone();
                let text = Text::of(secret.as_bytes());
                (Some(secret), text, Some(i))
            }
            TokenArg::Random(text) => (text.c(), text.clone(), None),
        }
    }

    /// What the observer sees of the forum's threads and events: any post changes it.
    fn writes_seen(&self) -> (String, String) {
        let read = |operation: &CStr, args: &CStr| {
            let mut out = ptr::null_mut();
            // SAFETY: live handle, NUL-terminated strings, valid out-parameter.
            let rc = unsafe {
                parley_call(
                    self.forum,
                    self.observer.as_ptr(),
                    operation.as_ptr(),
                    args.as_ptr(),
                    &mut out,
                )
            };
            assert_eq!(rc, PARLEY_OK, "{}", last_error());
            take(out)
        };
        (
            read(c"list_threads", c"{\"limit\":200}"),
            read(c"get_events", c"{\"limit\":200}"),
        )
    }

    fn live_tokens(&self) -> u64 {
        1 + self.tokens.iter().filter(|t| t.1).count() as u64
    }
}

/// Bytes waiting on a commit descriptor: `Some(n)`, or `None` at end-of-file.
fn drain(fd: &mut UnixStream) -> Option<usize> {
    let (mut total, mut buf) = (0, [0u8; 256]);
    loop {
        match fd.read(&mut buf) {
            Ok(0) => return None,
            Ok(n) => total += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Some(total),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("reading a commit descriptor: {e}"),
        }
    }
}

impl World {
    /// Every commit descriptor has a byte waiting (and is drained).
    fn all_rung(&mut self, after: &str) -> Result<(), TestCaseError> {
        for (i, fd) in self.commit_fds.iter_mut().enumerate() {
            let waiting = drain(fd);
            prop_assert!(
                waiting.is_some_and(|n| n > 0),
                "commit descriptor {} after {}: {:?}",
                i,
                after,
                waiting
            );
        }
        Ok(())
    }

    /// Frees the forum; every commit descriptor then reads end-of-file.
    fn close(mut self) -> Result<(), TestCaseError> {
        let forum = std::mem::replace(&mut self.forum, ptr::null_mut());
        // SAFETY: the handle is live and freed once; Drop then sees NULL.
        unsafe { parley_forum_free(forum) };
        for (i, fd) in self.commit_fds.iter_mut().enumerate() {
            prop_assert_eq!(drain(fd), None, "commit descriptor {} after the free", i);
        }
        Ok(())
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // SAFETY: the handle is live (or NULL, a no-op) and freed once.
        unsafe { parley_forum_free(self.forum) };
    }
}

/// The code is documented for the function, and the last error agrees with it.
fn settle(what: &str, rc: parley_result, allowed: &[parley_result]) -> Result<(), TestCaseError> {
    prop_assert!(is_code(rc), "{}: {} is no code", what, rc);
    let message = last_error();
    prop_assert!(
        allowed.contains(&rc),
        "{}: {} ({}), expected one of {:?}",
        what,
        name(rc),
        message,
        allowed.iter().map(|c| name(*c)).collect::<Vec<_>>()
    );
    if rc == PARLEY_OK {
        prop_assert_eq!(message.as_str(), "", "{}: a message after PARLEY_OK", what);
    } else {
        prop_assert!(
            !message.is_empty(),
            "{}: {} without a message",
            what,
            name(rc)
        );
    }
    // SAFETY: NULL with a length of 0 asks for the length only.
    prop_assert_eq!(
        unsafe { parley_last_error_copy(ptr::null_mut(), 0) },
        message.len()
    );
    Ok(())
}

/// A refusal object as `parley_call` hands it out.
fn check_refusal(refusal: &Value) -> Result<(), TestCaseError> {
    let reason = refusal["reason"].as_str().unwrap_or_default();
    let known = Reason::from_name(reason);
    prop_assert!(
        known.is_some(),
        "refusal without a stable reason: {}",
        refusal
    );
    let status = known.map(Reason::status).map(u64::from);
    prop_assert_eq!(refusal["status"].as_u64(), status, "{}", refusal);
    prop_assert!(refusal["message"].is_string(), "{}", refusal);
    Ok(())
}
#[test]
fn entry_points_keep_their_contract() {
    fuzz(
        "entry_points_keep_their_contract",
        128,
        || (any::<bool>(), extreme_limit(), vec(op(), 1..24)),
        |(dialectic, extreme, ops)| {
            let mut world = World::new(dialectic, extreme);
            for (i, op) in ops.iter().enumerate() {
                step(&mut world, op).map_err(|e| TestCaseError::fail(format!("step {i}: {e}")))?;
            }
            world.close()
        },
    );
}

/// Every `uint32_t` class C can hand to `parley_result_name`: the codes, the
/// values next to them, and any other.
#[test]
fn every_result_code_value_is_named_or_unknown() {
    fuzz(
        "every_result_code_value_is_named_or_unknown",
        2048,
        || prop_oneof![0..64u32, any::<u32>(), (u32::MAX - 64)..=u32::MAX],
        |code| {
            let name = parley_result_name(code);
            prop_assert!(!name.is_null());
            // SAFETY: a static NUL-terminated string.
            let text = unsafe { CStr::from_ptr(name) }.to_str().unwrap();
            match name_of(code) {
                Some(known) => prop_assert_eq!(text, known.to_str().unwrap()),
                None => prop_assert_eq!(text, "PARLEY_UNKNOWN_RESULT"),
            }
            // The codes are dense from 0: appended, never skipped.
            if is_code(code) {
                prop_assert!((0..code).all(is_code), "a gap below {}", code);
            }
            Ok(())
        },
    );
}

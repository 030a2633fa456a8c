//! The exported functions: the forum handle, tokens, the generic call and MCP.

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use ::parley_forum::{Config, Forum, TokenSpec};
use serde_json::{json, Value};

use crate::boundary::{
    self, guard, guard_void, into_c, json_arg, opt_str_arg, out_arg, str_arg, Failure,
};
use crate::commits::Bell;
#[cfg(not(unix))]
use crate::result::PARLEY_INVALID_UTF8;
use crate::result::{parley_result, PARLEY_INVALID_ARGUMENT, PARLEY_POISONED};

/// A Parley forum. Opaque; thread-safe: one handle may be used from many threads
/// at once (writes are serialized inside, reads run on snapshots, and a call that
/// waits holds no lock). It must not be freed while any call on it is still
/// running, in any thread: end the waits first (`parley_forum_end_waits`), join
/// the threads, then free it.
#[allow(non_camel_case_types)]
pub struct parley_forum {
    pub(crate) forum: Forum,
    poisoned: AtomicBool,
    /// The commit descriptors handed out (`parley_forum_commit_fd`).
    pub(crate) bell: Bell,
}

/// Marks a handle poisoned when a panic unwinds through the code that holds it.
struct PoisonOnPanic<'a>(&'a AtomicBool);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

impl parley_forum {
    /// Runs `f` on the forum unless the handle is poisoned; a panic in `f` poisons
    /// it. The store itself stays consistent (an unfinished write transaction is
    /// dropped whole), but state the engine held in memory at the panic is not
    /// trusted again.
    pub(crate) fn enter<T>(
        &self,
        f: impl FnOnce(&Forum) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(Failure::new(
                PARLEY_POISONED,
                "the forum handle is poisoned by an earlier panic; free it and open the forum again",
            ));
        }
        let _poison = PoisonOnPanic(&self.poisoned);
        f(&self.forum)
    }
}

/// # Safety
/// `forum` is NULL or a live handle from `parley_forum_open`.
pub(crate) unsafe fn handle<'a>(forum: *const parley_forum) -> Result<&'a parley_forum, Failure> {
    forum.as_ref().ok_or_else(|| Failure::null("forum"))
}

/// Writes the result of a call, or its refusal, to `out`.
///
/// # Safety
/// `out` is a valid, checked out-parameter.
unsafe fn put_outcome(
    out: *mut *mut c_char,
    outcome: ::parley_forum::Result<Value>,
) -> Result<(), Failure> {
    match outcome {
        Ok(value) => {
            *out = into_c(&value.to_string());
            Ok(())
        }
        Err(error) => {
            if let Some(refusal) = error.refusal() {
                *out = into_c(&refusal.to_json().to_string());
            }
            Err(error.into())
        }
    }
}

#[cfg(unix)]
fn path_of(bytes: &CStr) -> Result<PathBuf, Failure> {
    use std::os::unix::ffi::OsStrExt;
    // Unix paths are bytes; a non-UTF-8 file name is still a file name.
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes.to_bytes())))
}

#[cfg(not(unix))]
fn path_of(bytes: &CStr) -> Result<PathBuf, Failure> {
    let text = bytes
        .to_str()
        .map_err(|_| Failure::new(PARLEY_INVALID_UTF8, "`path` is not valid UTF-8"))?;
    Ok(PathBuf::from(text))
}

/// A path's forum, with the `postgres` feature through the crate parley-postgres:
/// a `postgres://` path opens in PostgreSQL, any other goes to `Forum::open`.
#[cfg(feature = "postgres")]
fn open_path(path: &Path, config: Config) -> ::parley_forum::Result<Forum> {
    parley_postgres::open(path, config)
}

/// A path's forum, without the `postgres` feature: `Forum::open`, which refuses a
/// `postgres://` path in words that say how to get a library that opens it.
#[cfg(not(feature = "postgres"))]
fn open_path(path: &Path, config: Config) -> ::parley_forum::Result<Forum> {
    Forum::open(path, config)
}

/// Opens the forum file at `path`, creating it if it does not exist, or a forum in
/// memory when `path` is NULL. A `path` of the form `postgres://…?forum=NAME`
/// opens (or creates) a forum in that PostgreSQL database, which other processes
/// may share at once; an unreachable database is `PARLEY_STORAGE`. A library
/// built without the `postgres` feature refuses such a path with `PARLEY_STORAGE`
/// and a message that says so.
///
/// `settings_json` is NULL for the defaults, or a JSON object whose keys are all
/// optional: `{"realm": "ainotes", "limits": {"body_max_chars": 500,
/// "lease_ttl_max_s": 86400, "leases_max": 64, "verify_quorum": 1, …}, "profiles":
/// ["dialectic", "listen", "guards", "coordination", "provenance"], "guards": true,
/// "coordination": true, "provenance": true, "trusted_realms": {"north":
/// "ed25519:…"}, "durable": true, "clock": "2026-11-30T12:00:00.000Z"}`. A profile
/// not listed in `profiles` is off; `"guards"`, `"coordination"` and `"provenance"`
/// switch one profile alone. `trusted_realms` names the realms whose signed claims
/// `import_claim` accepts, each with its `realm_key` (the manifest's; SPEC §18.3);
/// a malformed realm or key is `PARLEY_INVALID_ARGUMENT`.
///
/// On `PARLEY_OK`, `*out` receives a new handle, owned by the caller and released
/// with `parley_forum_free`; on any other result `*out` is not written.
/// Results: `PARLEY_NULL_PARAMETER` (`out`), `PARLEY_INVALID_UTF8`,
/// `PARLEY_INVALID_JSON`, `PARLEY_INVALID_ARGUMENT` (bad settings),
/// `PARLEY_SCHEMA_TOO_NEW`, `PARLEY_NOT_A_FORUM`, `PARLEY_STORAGE` (cannot open,
/// damaged, locked by another process).
///
/// # Safety
/// `path` and `settings_json` are NULL or NUL-terminated strings; `out` is NULL or
/// points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn parley_forum_open(
    path: *const c_char,
    settings_json: *const c_char,
    out: *mut *mut parley_forum,
) -> parley_result {
    guard(|| {
        out_arg(out, "out")?;
        let config = match opt_str_arg(settings_json, "settings_json")? {
            None => Config::default(),
            Some(text) => Config::from_json(&boundary::parse_json(text, "settings_json")?)?,
        };
        let forum = if path.is_null() {
            Forum::in_memory(config)?
        } else {
            open_path(&path_of(CStr::from_ptr(path))?, config)?
        };
        *out = Box::into_raw(Box::new(parley_forum {
            forum,
            poisoned: AtomicBool::new(false),
            bell: Bell::new(),
        }));
        Ok(())
    })
}

/// Closes a forum and releases its handle. NULL is a no-op. A poisoned handle is
/// released like any other.
///
/// No call on the handle may be running when it is freed, in any thread, and
/// none may start after: a thread blocked in a waiting call is released with
/// `parley_forum_end_waits` and joined first. Freeing ends the waits itself, so
/// every commit descriptor (`parley_forum_commit_fd`) gets a last byte, and then
/// reads end-of-file: its write end is closed here. The descriptors themselves
/// stay the caller's to close.
///
/// # Safety
/// `forum` is NULL or a handle from `parley_forum_open` not yet freed, which no
/// other thread is using or will use.
#[no_mangle]
pub unsafe extern "C" fn parley_forum_free(forum: *mut parley_forum) {
    if forum.is_null() {
        return;
    }
    guard_void(|| {
        let handle = Box::from_raw(forum);
        handle.bell.end_waits(&handle.forum);
        // The bell before the forum: its hook goes and its write ends close.
        let parley_forum {
            forum: engine,
            bell,
            ..
        } = *handle;
        drop(bell);
        drop(engine);
    });
}

/// Issues a token (SPEC §2) and returns its secret, which is shown only here.
///
/// `spec_json`: `{"handle": "bob", "kind": "llm" | "human", "rights": ["read",
/// "write", "lock", "verify"], "label": "Bob"}`; `kind` defaults to `llm`,
/// `rights` to `["read", "write"]`, `label` to the handle.
///
/// On `PARLEY_OK`, `*out_token` receives the secret, owned by the caller and
/// released with `parley_string_free`; otherwise `*out_token` is not written.
/// Results: `PARLEY_NULL_PARAMETER`, `PARLEY_INVALID_UTF8`, `PARLEY_INVALID_JSON`,
/// `PARLEY_INVALID_ARGUMENT` (bad spec), `PARLEY_STORAGE`, `PARLEY_POISONED`.
///
/// # Safety
/// `forum` is NULL or a live handle; `spec_json` is NULL or a NUL-terminated
/// string; `out_token` is NULL or points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn parley_token_create(
    forum: *mut parley_forum,
    spec_json: *const c_char,
    out_token: *mut *mut c_char,
) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        out_arg(out_token, "out_token")?;
        let spec_text = str_arg(spec_json, "spec_json")?;
        let spec = TokenSpec::from_json(&boundary::parse_json(spec_text, "spec_json")?)?;
        let secret = handle.enter(|forum| Ok(forum.create_token(&spec)?))?;
        *out_token = into_c(&secret);
        Ok(())
    })
}

/// Revokes a token: from now on it is refused with `token_invalid`.
///
/// Results: `PARLEY_OK` when it was revoked; `PARLEY_INVALID_ARGUMENT` when the
/// forum knows no live token with this secret (unknown or already revoked);
/// `PARLEY_NULL_PARAMETER`, `PARLEY_INVALID_UTF8`, `PARLEY_STORAGE`, `PARLEY_POISONED`.
///
/// # Safety
/// `forum` is NULL or a live handle; `token` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn parley_token_revoke(
    forum: *mut parley_forum,
    token: *const c_char,
) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        let token = str_arg(token, "token")?;
        if handle.enter(|forum| Ok(forum.revoke_token(token)?))? {
            Ok(())
        } else {
            Err(Failure::new(
                PARLEY_INVALID_ARGUMENT,
                "the token is unknown or already revoked",
            ))
        }
    })
}

/// The generic call (SPEC §11.3): runs `operation` (one of the manifest's
/// `"operations"`: `"get_manifest"`, `"whoami"`, `"post"`, `"get_thread"`,
/// `"list_threads"`, `"get_inbox"`, `"get_events"`, `"get_claim"`,
/// `"get_messages"`, `"search"`, `"get_digest"`, and with the coordination profile (SPEC §16, on by
/// default) `"set_presence"`, `"get_presence"`, `"lease"`, `"release"`,
/// `"get_leases"`, and with the provenance profile (SPEC §18, on by default)
/// `"put_artifact"`, `"get_artifact"`, `"export_claim"`, `"import_claim"`) with the JSON object `args_json` (NULL: `{}`) for
/// the holder of `token` (NULL: no token; operations that need one are then
/// refused with `token_missing`).
///
/// With the listen profile (SPEC §14.2, on by default), `"get_inbox"`,
/// `"get_events"`, `"get_messages"` and `"list_threads"` take `"wait_ms"`: an
/// integer from 0 to the manifest's `wait_max_ms` (else `PARLEY_REFUSED` with
/// reason `invalid_argument`). A read that finds no item then blocks the calling
/// thread, and only it, until a commit gives it one, `wait_ms` has passed, or
/// `parley_forum_end_waits` is called; it holds no lock meanwhile, so other
/// threads go on calling on the same handle. For a host that waits in its own
/// `poll` loop instead, see `parley_forum_commit_fd`.
///
/// On `PARLEY_OK`, `*out_json` receives the result as JSON text; on
/// `PARLEY_REFUSED`, the refusal object `{"reason", "status", "message", …}`
/// (`lease_conflict` carries `"leases"`, the conflicting leases). An operation of
/// a profile that is off is refused with `invalid_argument`.
/// Either way the string is the caller's, released with `parley_string_free`. On
/// any other result `*out_json` is not written.
/// Results: `PARLEY_OK`, `PARLEY_REFUSED`, `PARLEY_NULL_PARAMETER` (`forum`,
/// `operation`, `out_json`), `PARLEY_INVALID_UTF8`, `PARLEY_INVALID_JSON`
/// (malformed `args_json`), `PARLEY_UNKNOWN_OPERATION`, `PARLEY_STORAGE`,
/// `PARLEY_POISONED`.
///
/// # Safety
/// `forum` is NULL or a live handle; `token`, `operation` and `args_json` are NULL
/// or NUL-terminated strings; `out_json` is NULL or points to writable storage for
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn parley_call(
    forum: *mut parley_forum,
    token: *const c_char,
    operation: *const c_char,
    args_json: *const c_char,
    out_json: *mut *mut c_char,
) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        out_arg(out_json, "out_json")?;
        let token = opt_str_arg(token, "token")?;
        let operation = str_arg(operation, "operation")?;
        let args = json_arg(args_json, "args_json", json!({}))?;
        let outcome = handle.enter(|forum| Ok(forum.call(token, operation, &args)))?;
        put_outcome(out_json, outcome)
    })
}

/// Handles one MCP JSON-RPC 2.0 message (SPEC §11.1) for the holder of `token`
/// (NULL: no token). Malformed JSON-RPC is answered inside the protocol, with a
/// JSON-RPC error response, not with a result code.
///
/// On `PARLEY_OK`, `*out_json` receives the response, owned by the caller and
/// released with `parley_string_free`, or NULL when the message was a notification
/// (nothing to answer). On any other result `*out_json` is not written. A
/// `tools/call` of a read with `"wait_ms"` blocks the calling thread as
/// `parley_call` does.
/// Results: `PARLEY_OK`, `PARLEY_NULL_PARAMETER` (`forum`, `request_json`,
/// `out_json`), `PARLEY_INVALID_UTF8`, `PARLEY_POISONED`.
///
/// # Safety
/// `forum` is NULL or a live handle; `token` and `request_json` are NULL or
/// NUL-terminated strings; `out_json` is NULL or points to writable storage for one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn parley_mcp_handle(
    forum: *mut parley_forum,
    token: *const c_char,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        out_arg(out_json, "out_json")?;
        let token = opt_str_arg(token, "token")?;
        let request = str_arg(request_json, "request_json")?;
        let response = handle.enter(|forum| Ok(forum.mcp(token, request)))?;
        *out_json = response.map_or(std::ptr::null_mut(), |text| into_c(&text));
        Ok(())
    })
}

/// The manifest (SPEC §13) as JSON text, the same as the `get_manifest` operation.
///
/// On `PARLEY_OK`, `*out_json` receives it, owned by the caller and released with
/// `parley_string_free`; otherwise `*out_json` is not written.
///
/// # Safety
/// `forum` is NULL or a live handle; `out_json` is NULL or points to writable
/// storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn parley_forum_manifest(
    forum: *mut parley_forum,
    out_json: *mut *mut c_char,
) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        out_arg(out_json, "out_json")?;
        let manifest = handle.enter(|forum| Ok(forum.manifest()))?;
        *out_json = into_c(&manifest.to_string());
        Ok(())
    })
}

/// The identities the forum has issued tokens to, as a JSON array of
/// `{"identity", "kind", "label", "active_tokens"}`, for the host's administration.
///
/// On `PARLEY_OK`, `*out_json` receives it, owned by the caller and released with
/// `parley_string_free`; otherwise `*out_json` is not written.
///
/// # Safety
/// `forum` is NULL or a live handle; `out_json` is NULL or points to writable
/// storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn parley_forum_identities(
    forum: *mut parley_forum,
    out_json: *mut *mut c_char,
) -> parley_result {
    guard(|| {
        let handle = handle(forum)?;
        out_arg(out_json, "out_json")?;
        let list = handle.enter(|forum| Ok(forum.identities()?))?;
        let items: Vec<Value> = list
            .iter()
            .map(|info| {
                json!({
                    "identity": info.identity,
                    "kind": info.kind.as_str(),
                    "label": info.label,
                    "active_tokens": info.active_tokens,
                })
            })
            .collect();
        *out_json = into_c(&Value::Array(items).to_string());
        Ok(())
    })
}

/// Checks a closed forum file: redb's page checksums, then that it is a Parley
/// forum this library can read.
///
/// On `PARLEY_OK`, `*out_ok` is set to whether every checksum held; otherwise it
/// is not written. The file must not be open elsewhere.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out_ok` is NULL or points to
/// writable storage for one `bool`.
#[no_mangle]
pub unsafe extern "C" fn parley_check_integrity(
    path: *const c_char,
    out_ok: *mut bool,
) -> parley_result {
    guard(|| {
        out_arg(out_ok, "out_ok")?;
        if path.is_null() {
            return Err(Failure::null("path"));
        }
        let ok = ::parley_forum::storage::check_integrity(&path_of(CStr::from_ptr(path))?)?;
        *out_ok = ok;
        Ok(())
    })
}

/// Releases a string returned by libparley. NULL is a no-op. Strings from any
/// other allocator must not be passed, nor a string whose length the caller
/// changed (by writing a NUL into it).
///
/// # Safety
/// `s` is NULL or a string returned by libparley and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn parley_string_free(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    guard_void(|| drop(std::ffi::CString::from_raw(s)));
}

/// The message of the last call on this thread that returned a result code: an
/// empty string after `PARLEY_OK`, otherwise one line saying what went wrong (for
/// `PARLEY_REFUSED`, `<reason>: <message>`).
///
/// Never NULL. The string belongs to the library and stays valid until the next
/// call on the same thread of a function that returns a `parley_result`; copy it
/// to keep it. Each thread has its own.
#[no_mangle]
pub extern "C" fn parley_last_error() -> *const c_char {
    catch_unwind(boundary::last_error_ptr).unwrap_or(c"".as_ptr())
}

/// Copies the message of `parley_last_error` into `buf`, `snprintf`-style: at
/// most `len - 1` bytes and a terminating NUL (nothing when `len` is 0, and then
/// `buf` may be NULL). Returns the full length of the message, not counting the
/// NUL: a result `>= len` means it was cut short.
///
/// # Safety
/// `buf` is NULL with `len == 0`, or points to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn parley_last_error_copy(buf: *mut c_char, len: usize) -> usize {
    catch_unwind(AssertUnwindSafe(|| boundary::last_error_copy(buf, len))).unwrap_or(0)
}

/// The version of libparley, e.g. `"0.1.0"`. Static: never NULL, never freed.
#[no_mangle]
pub extern "C" fn parley_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{PARLEY_OK, PARLEY_PANIC, PARLEY_REFUSED};
    use std::ptr;

    unsafe fn text(p: *mut c_char) -> String {
        let s = CStr::from_ptr(p).to_str().unwrap().to_string();
        parley_string_free(p);
        s
    }

    #[test]
    fn a_panic_inside_the_engine_poisons_the_handle() {
        let mut forum = ptr::null_mut();
        // SAFETY: valid out-parameter; the handle is freed below.
        unsafe {
            assert_eq!(
                parley_forum_open(ptr::null(), ptr::null(), &mut forum),
                PARLEY_OK
            );
            let handle = &*forum;
            let code = guard(|| handle.enter(|_| -> Result<(), Failure> { panic!("engine bug") }));
            assert_eq!(code, PARLEY_PANIC);
            let mut out = ptr::null_mut();
            let code = parley_call(
                forum,
                ptr::null(),
                c"get_manifest".as_ptr(),
                ptr::null(),
                &mut out,
            );
            assert_eq!(code, PARLEY_POISONED);
            assert!(out.is_null());
            parley_forum_free(forum);
        }
    }

    #[test]
    fn refusals_and_results_come_back_as_json() {
        let mut forum = ptr::null_mut();
        // SAFETY: valid pointers throughout; every string is freed.
        unsafe {
            assert_eq!(
                parley_forum_open(ptr::null(), ptr::null(), &mut forum),
                PARLEY_OK
            );
            let mut out = ptr::null_mut();
            let code = parley_call(
                forum,
                ptr::null(),
                c"whoami".as_ptr(),
                ptr::null(),
                &mut out,
            );
            assert_eq!(code, PARLEY_REFUSED);
            let refusal: Value = serde_json::from_str(&text(out)).unwrap();
            assert_eq!(refusal["reason"], "token_missing");
            assert_eq!(refusal["status"], 401);

            let mut token = ptr::null_mut();
            let code = parley_token_create(forum, c"{\"handle\":\"alice\"}".as_ptr(), &mut token);
            assert_eq!(code, PARLEY_OK);
            let code = parley_call(forum, token, c"whoami".as_ptr(), ptr::null(), &mut out);
            assert_eq!(code, PARLEY_OK);
            let me: Value = serde_json::from_str(&text(out)).unwrap();
            assert_eq!(me["identity"], "ainotes:alice");
            assert_eq!(parley_token_revoke(forum, token), PARLEY_OK);
            assert_eq!(parley_token_revoke(forum, token), PARLEY_INVALID_ARGUMENT);
            parley_string_free(token);
            parley_forum_free(forum);
        }
    }
}

//! The edge between C and Rust: the panic boundary, the thread's last error, and
//! the checked reading and writing of C strings.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use parley_forum::Error;
use serde_json::Value;

use crate::result::{
    parley_result, result_of, PARLEY_INVALID_JSON, PARLEY_INVALID_UTF8, PARLEY_NULL_PARAMETER,
    PARLEY_OK, PARLEY_PANIC,
};

/// Why a call did not return `PARLEY_OK`: the code and a one-line message that
/// `parley_last_error` hands to C.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) code: parley_result,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: parley_result, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn null(param: &str) -> Self {
        Failure::new(PARLEY_NULL_PARAMETER, format!("`{param}` is NULL"))
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure {
            code: result_of(&error),
            message: error.to_string(),
        }
    }
}

thread_local! {
    // Owned by the thread; C borrows it until the thread's next call.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A `CString` of `text`, with any NUL byte (which JSON input can smuggle into a
/// message as `\u0000`) replaced so that nothing is cut short.
pub(crate) fn c_string(text: &str) -> CString {
    let cleaned: Vec<u8> = text
        .bytes()
        .map(|b| if b == 0 { b'?' } else { b })
        .collect();
    CString::new(cleaned).unwrap_or_default()
}

// The slot is reached with `try_with` and `try_borrow`: a C thread may call in
// from its own TLS destructors, after this slot is gone, and that must not panic.

/// What `parley_last_error` shows when the thread's slot is gone.
const NO_MESSAGE: &CStr = c"";

pub(crate) fn set_last_error(message: &str) {
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = c_string(message);
        }
    });
}

/// The thread's last error, borrowed until its next call that returns a code.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| slot.try_borrow().map(|s| s.as_ptr()).ok())
        .ok()
        .flatten()
        .unwrap_or(NO_MESSAGE.as_ptr())
}

/// Copies the last error into a caller's buffer, `snprintf`-style.
pub(crate) fn last_error_copy(buf: *mut c_char, len: usize) -> usize {
    let ptr = last_error_ptr();
    // SAFETY: `ptr` is the slot's NUL-terminated string (or NO_MESSAGE), alive
    // until this thread's next call that sets it, which cannot happen here.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    if !buf.is_null() && len > 0 {
        let n = bytes.len().min(len - 1);
        // SAFETY: the caller promises `buf` holds `len` writable bytes; n < len.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    bytes.len()
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// The panic boundary of every export that returns a code. `f` reports success or
/// a failure; a panic becomes `PARLEY_PANIC`. The thread's last error is set on
/// every path: empty on success, the failure's message otherwise.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> parley_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_last_error("");
            PARLEY_OK
        }
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.code
        }
        Err(payload) => {
            set_last_error(&format!(
                "panic inside libparley: {}",
                panic_message(&*payload)
            ));
            PARLEY_PANIC
        }
    }
}

/// The panic boundary of the exports that return nothing (the `_free` functions).
pub(crate) fn guard_void(f: impl FnOnce()) {
    // A panic while freeing has nowhere to be reported; it must not reach C.
    let _ = catch_unwind(AssertUnwindSafe(f));
}

/// A required string parameter.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn str_arg<'a>(ptr: *const c_char, param: &str) -> Result<&'a str, Failure> {
    opt_str_arg(ptr, param)?.ok_or_else(|| Failure::null(param))
}

/// An optional string parameter: NULL is `None`.
///
/// # Safety
/// As for [`str_arg`].
pub(crate) unsafe fn opt_str_arg<'a>(
    ptr: *const c_char,
    param: &str,
) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    let bytes = CStr::from_ptr(ptr).to_bytes();
    std::str::from_utf8(bytes).map(Some).map_err(|e| {
        Failure::new(
            PARLEY_INVALID_UTF8,
            format!("`{param}` is not valid UTF-8 (at byte {})", e.valid_up_to()),
        )
    })
}

/// A JSON parameter; NULL gives `default`.
///
/// # Safety
/// As for [`str_arg`].
pub(crate) unsafe fn json_arg(
    ptr: *const c_char,
    param: &str,
    default: Value,
) -> Result<Value, Failure> {
    match opt_str_arg(ptr, param)? {
        None => Ok(default),
        Some(text) => parse_json(text, param),
    }
}

pub(crate) fn parse_json(text: &str, param: &str) -> Result<Value, Failure> {
    serde_json::from_str(text).map_err(|e| {
        Failure::new(
            PARLEY_INVALID_JSON,
            format!("`{param}` is not valid JSON: {e}"),
        )
    })
}

/// Checks that an out-parameter can be written; done before any work, so that
/// nothing is created that could not be handed back.
pub(crate) fn out_arg<T>(out: *mut T, param: &str) -> Result<(), Failure> {
    if out.is_null() {
        Err(Failure::null(param))
    } else {
        Ok(())
    }
}

/// Hands a string to C: it is the caller's, to release with `parley_string_free`.
pub(crate) fn into_c(text: &str) -> *mut c_char {
    c_string(text).into_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> String {
        // SAFETY: the slot always holds a NUL-terminated string.
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_a_code_and_a_message() {
        let code = guard(|| panic!("boom"));
        assert_eq!(code, PARLEY_PANIC);
        assert!(last_error().contains("boom"));
        assert_eq!(guard(|| Ok(())), PARLEY_OK);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn failures_set_the_last_error() {
        let code = guard(|| Err(Failure::null("forum")));
        assert_eq!(code, PARLEY_NULL_PARAMETER);
        assert_eq!(last_error(), "`forum` is NULL");
        let mut buf = [0x55 as c_char; 6];
        let full = last_error_copy(buf.as_mut_ptr(), buf.len());
        assert_eq!(full, "`forum` is NULL".len());
        // SAFETY: last_error_copy terminated the buffer.
        let copied = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(copied.to_str().unwrap(), "`foru");
        assert_eq!(last_error_copy(std::ptr::null_mut(), 0), full);
    }

    #[test]
    fn nul_bytes_never_truncate() {
        assert_eq!(c_string("a\0b").as_bytes(), b"a?b");
    }

    #[test]
    fn strings_are_checked() {
        let bad = b"\xff\xfe\0";
        // SAFETY: the literal is NUL-terminated.
        let err = unsafe { str_arg(bad.as_ptr().cast(), "token") }.unwrap_err();
        assert_eq!(err.code, PARLEY_INVALID_UTF8);
        // SAFETY: NULL is allowed.
        let err = unsafe { str_arg(std::ptr::null(), "token") }.unwrap_err();
        assert_eq!(err.code, PARLEY_NULL_PARAMETER);
        let err = parse_json("{", "args_json").unwrap_err();
        assert_eq!(err.code, PARLEY_INVALID_JSON);
    }
}

//! The result codes of the C ABI and their mapping from [`parley_forum::Error`].
//!
//! A code is a fixed-width integer with named constants, not a Rust or C `enum`:
//! C fixes neither the width nor the set of values of an `enum`, and a value
//! outside a Rust enum's variants is undefined behaviour the moment it is read.
//! So every code C hands in is a plain `u32`, and a function that takes one
//! checks its range (see [`parley_result_name`]).

use std::ffi::{c_char, CStr};

use parley_forum::Error;

/// What a call into libparley came to: one of the `PARLEY_*` constants. The numbers
/// are stable: new codes are only ever appended. A function that takes a
/// `parley_result` accepts every `uint32_t` and says what it does with a value that
/// is not a code.
///
/// `PARLEY_REFUSED` is a normal outcome of the protocol (SPEC §12), not a failure:
/// the refusal object is handed back like a result.
#[allow(non_camel_case_types)]
pub type parley_result = u32;

/// Success.
pub const PARLEY_OK: parley_result = 0;
/// The protocol declined the request; the out-parameter holds the refusal object
/// `{"reason", "status", "message", …}`. Nothing was written.
pub const PARLEY_REFUSED: parley_result = 1;
/// A pointer parameter that must not be NULL was NULL.
pub const PARLEY_NULL_PARAMETER: parley_result = 2;
/// A string parameter was not valid UTF-8.
pub const PARLEY_INVALID_UTF8: parley_result = 3;
/// A JSON parameter was not well-formed JSON.
pub const PARLEY_INVALID_JSON: parley_result = 4;
/// A host-side argument was malformed: settings, a token spec, an unknown token to
/// revoke.
pub const PARLEY_INVALID_ARGUMENT: parley_result = 5;
/// The forum file was written by a newer schema version of the library.
pub const PARLEY_SCHEMA_TOO_NEW: parley_result = 6;
/// The storage layer failed: I/O, a damaged file, a lock held by another process.
pub const PARLEY_STORAGE: parley_result = 7;
/// The library panicked: an internal error, a bug in Parley, not a sign of a
/// damaged file. A panic the engine caught leaves the forum handle usable; one
/// that reached the C boundary poisons the handle that was in use.
pub const PARLEY_PANIC: parley_result = 8;
/// The forum handle is poisoned by an earlier panic; only `parley_forum_end_waits`
/// and `parley_forum_free` are still meaningful on it.
pub const PARLEY_POISONED: parley_result = 9;
/// `parley_call` named an operation that does not exist.
pub const PARLEY_UNKNOWN_OPERATION: parley_result = 10;
/// The file is not a Parley forum (another application's database, or not a
/// database at all).
pub const PARLEY_NOT_A_FORUM: parley_result = 11;

/// What [`parley_result_name`] returns for a value that is not a code.
pub(crate) const UNKNOWN_RESULT_NAME: &CStr = c"PARLEY_UNKNOWN_RESULT";

/// The name of a code, e.g. `"PARLEY_OK"`; `None` for a value that is not a code.
/// The only place a code's name is written.
pub fn name_of(code: parley_result) -> Option<&'static CStr> {
    Some(match code {
        PARLEY_OK => c"PARLEY_OK",
        PARLEY_REFUSED => c"PARLEY_REFUSED",
        PARLEY_NULL_PARAMETER => c"PARLEY_NULL_PARAMETER",
        PARLEY_INVALID_UTF8 => c"PARLEY_INVALID_UTF8",
        PARLEY_INVALID_JSON => c"PARLEY_INVALID_JSON",
        PARLEY_INVALID_ARGUMENT => c"PARLEY_INVALID_ARGUMENT",
        PARLEY_SCHEMA_TOO_NEW => c"PARLEY_SCHEMA_TOO_NEW",
        PARLEY_STORAGE => c"PARLEY_STORAGE",
        PARLEY_PANIC => c"PARLEY_PANIC",
        PARLEY_POISONED => c"PARLEY_POISONED",
        PARLEY_UNKNOWN_OPERATION => c"PARLEY_UNKNOWN_OPERATION",
        PARLEY_NOT_A_FORUM => c"PARLEY_NOT_A_FORUM",
        _ => return None,
    })
}

/// Whether `code` is one of the `PARLEY_*` constants.
pub fn is_code(code: parley_result) -> bool {
    name_of(code).is_some()
}

/// The code for a library error.
pub fn result_of(error: &Error) -> parley_result {
    match error {
        Error::Refused(_) => PARLEY_REFUSED,
        Error::UnknownOperation(_) => PARLEY_UNKNOWN_OPERATION,
        Error::InvalidArgument(_) => PARLEY_INVALID_ARGUMENT,
        Error::SchemaTooNew { .. } => PARLEY_SCHEMA_TOO_NEW,
        Error::NotAForum(_) => PARLEY_NOT_A_FORUM,
        Error::Internal(_) => PARLEY_PANIC,
        // `Error` is non-exhaustive: a variant added later is a storage-side
        // failure until it earns a code of its own.
        _ => PARLEY_STORAGE,
    }
}

/// The name of a result code, e.g. `"PARLEY_REFUSED"`.
///
/// Returns a static string: never NULL, never to be freed. Every `uint32_t` is
/// accepted: a value that is not one of the `PARLEY_*` codes gets the fixed name
/// `"PARLEY_UNKNOWN_RESULT"` (the same pointer for every such value).
#[no_mangle]
pub extern "C" fn parley_result_name(r: parley_result) -> *const c_char {
    name_of(r).unwrap_or(UNKNOWN_RESULT_NAME).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_forum::{Reason, Refusal};

    #[test]
    fn numbers_are_dense_and_stable() {
        let count = (0..=u32::from(u8::MAX)).filter(|c| is_code(*c)).count();
        assert_eq!(count, 12);
        for code in 0..12 {
            let name = name_of(code).unwrap().to_str().unwrap();
            assert!(name.starts_with("PARLEY_"), "{name}");
        }
        assert_eq!(name_of(PARLEY_OK), Some(c"PARLEY_OK"));
        assert_eq!(name_of(PARLEY_NOT_A_FORUM), Some(c"PARLEY_NOT_A_FORUM"));
    }

    #[test]
    fn values_that_are_not_codes_get_the_unknown_name() {
        let unknown = parley_result_name(9999);
        for value in [12, 13, 255, 256, 9999, 1 << 31, u32::MAX - 1, u32::MAX] {
            assert!(!is_code(value));
            let name = parley_result_name(value);
            assert_eq!(name, unknown, "one static string for {value}");
            // SAFETY: parley_result_name returns a static NUL-terminated string.
            let name = unsafe { CStr::from_ptr(name) };
            assert_eq!(name, UNKNOWN_RESULT_NAME);
        }
        // SAFETY: as above.
        let ok = unsafe { CStr::from_ptr(parley_result_name(PARLEY_OK)) };
        assert_eq!(ok, c"PARLEY_OK");
    }

    #[test]
    fn errors_map_to_codes() {
        let refused = Error::Refused(Refusal::new(Reason::SelfReply, "x"));
        assert_eq!(result_of(&refused), PARLEY_REFUSED);
        let op = Error::UnknownOperation("fly".into());
        assert_eq!(result_of(&op), PARLEY_UNKNOWN_OPERATION);
        let newer = Error::SchemaTooNew {
            found: 9,
            supported: 1,
        };
        assert_eq!(result_of(&newer), PARLEY_SCHEMA_TOO_NEW);
        assert_eq!(result_of(&Error::NotAForum("x".into())), PARLEY_NOT_A_FORUM);
        assert_eq!(result_of(&Error::storage("x".into())), PARLEY_STORAGE);
        let bad = Error::InvalidArgument("x".into());
        assert_eq!(result_of(&bad), PARLEY_INVALID_ARGUMENT);
    }
}

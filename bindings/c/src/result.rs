//! The result codes of the C ABI and their mapping from [`parley_forum::Error`].

use std::ffi::c_char;

use parley_forum::Error;

/// What a call into libparley came to. The numbers are stable: new codes are only
/// ever appended.
///
/// `PARLEY_REFUSED` is a normal outcome of the protocol (SPEC §12), not a failure:
/// the refusal object is handed back like a result.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum parley_result {
    /// Success.
    PARLEY_OK = 0,
    /// The protocol declined the request; the out-parameter holds the refusal
    /// object `{"reason", "status", "message", …}`. Nothing was written.
    PARLEY_REFUSED = 1,
    /// A pointer parameter that must not be NULL was NULL.
    PARLEY_NULL_PARAMETER = 2,
    /// A string parameter was not valid UTF-8.
    PARLEY_INVALID_UTF8 = 3,
    /// A JSON parameter was not well-formed JSON.
    PARLEY_INVALID_JSON = 4,
    /// A host-side argument was malformed: settings, a token spec, an unknown token
    /// to revoke.
    PARLEY_INVALID_ARGUMENT = 5,
    /// The forum file was written by a newer schema version of the library.
    PARLEY_SCHEMA_TOO_NEW = 6,
    /// The storage layer failed: I/O, a damaged file, a lock held by another process.
    PARLEY_STORAGE = 7,
    /// The library panicked; the panic was caught at the boundary. A forum handle
    /// that was in use is poisoned.
    PARLEY_PANIC = 8,
    /// The forum handle is poisoned by an earlier panic; only `parley_forum_free`
    /// is still meaningful on it.
    PARLEY_POISONED = 9,
    /// `parley_call` named an operation that does not exist.
    PARLEY_UNKNOWN_OPERATION = 10,
    /// The file is not a Parley forum (another application's database, or not a
    /// database at all).
    PARLEY_NOT_A_FORUM = 11,
}

impl parley_result {
    /// The code's name with a trailing NUL, so C can borrow it for ever.
    pub(crate) const fn name_nul(self) -> &'static str {
        match self {
            parley_result::PARLEY_OK => "PARLEY_OK\0",
            parley_result::PARLEY_REFUSED => "PARLEY_REFUSED\0",
            parley_result::PARLEY_NULL_PARAMETER => "PARLEY_NULL_PARAMETER\0",
            parley_result::PARLEY_INVALID_UTF8 => "PARLEY_INVALID_UTF8\0",
            parley_result::PARLEY_INVALID_JSON => "PARLEY_INVALID_JSON\0",
            parley_result::PARLEY_INVALID_ARGUMENT => "PARLEY_INVALID_ARGUMENT\0",
            parley_result::PARLEY_SCHEMA_TOO_NEW => "PARLEY_SCHEMA_TOO_NEW\0",
            parley_result::PARLEY_STORAGE => "PARLEY_STORAGE\0",
            parley_result::PARLEY_PANIC => "PARLEY_PANIC\0",
            parley_result::PARLEY_POISONED => "PARLEY_POISONED\0",
            parley_result::PARLEY_UNKNOWN_OPERATION => "PARLEY_UNKNOWN_OPERATION\0",
            parley_result::PARLEY_NOT_A_FORUM => "PARLEY_NOT_A_FORUM\0",
        }
    }

    /// The code's name, e.g. `"PARLEY_OK"`.
    pub fn name(self) -> &'static str {
        let with_nul = self.name_nul();
        &with_nul[..with_nul.len() - 1]
    }

    /// The code for a library error.
    pub fn of(error: &Error) -> parley_result {
        match error {
            Error::Refused(_) => parley_result::PARLEY_REFUSED,
            Error::UnknownOperation(_) => parley_result::PARLEY_UNKNOWN_OPERATION,
            Error::InvalidArgument(_) => parley_result::PARLEY_INVALID_ARGUMENT,
            Error::SchemaTooNew { .. } => parley_result::PARLEY_SCHEMA_TOO_NEW,
            Error::NotAForum(_) => parley_result::PARLEY_NOT_A_FORUM,
            // `Error` is non-exhaustive: a variant added later is a storage-side
            // failure until it earns a code of its own.
            _ => parley_result::PARLEY_STORAGE,
        }
    }
}

/// The name of a result code, e.g. `"PARLEY_REFUSED"`.
///
/// Returns a static string: never NULL, never to be freed. `r` must be one of the
/// values of `parley_result`.
#[no_mangle]
pub extern "C" fn parley_result_name(r: parley_result) -> *const c_char {
    r.name_nul().as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_forum::{Reason, Refusal};

    /// Every code, in numeric order.
    const ALL: [parley_result; 12] = [
        parley_result::PARLEY_OK,
        parley_result::PARLEY_REFUSED,
        parley_result::PARLEY_NULL_PARAMETER,
        parley_result::PARLEY_INVALID_UTF8,
        parley_result::PARLEY_INVALID_JSON,
        parley_result::PARLEY_INVALID_ARGUMENT,
        parley_result::PARLEY_SCHEMA_TOO_NEW,
        parley_result::PARLEY_STORAGE,
        parley_result::PARLEY_PANIC,
        parley_result::PARLEY_POISONED,
        parley_result::PARLEY_UNKNOWN_OPERATION,
        parley_result::PARLEY_NOT_A_FORUM,
    ];

    #[test]
    fn numbers_are_dense_and_stable() {
        for (i, code) in ALL.iter().enumerate() {
            assert_eq!(*code as usize, i);
            assert!(code.name().starts_with("PARLEY_"));
            assert!(!code.name().contains('\0'));
        }
    }

    #[test]
    fn errors_map_to_codes() {
        let refused = Error::Refused(Refusal::new(Reason::SelfReply, "x"));
        assert_eq!(parley_result::of(&refused), parley_result::PARLEY_REFUSED);
        let op = Error::UnknownOperation("fly".into());
        assert_eq!(
            parley_result::of(&op),
            parley_result::PARLEY_UNKNOWN_OPERATION
        );
        let newer = Error::SchemaTooNew {
            found: 9,
            supported: 1,
        };
        assert_eq!(
            parley_result::of(&newer),
            parley_result::PARLEY_SCHEMA_TOO_NEW
        );
        assert_eq!(
            parley_result::of(&Error::NotAForum("x".into())),
            parley_result::PARLEY_NOT_A_FORUM
        );
        assert_eq!(
            parley_result::of(&Error::Storage("x".into())),
            parley_result::PARLEY_STORAGE
        );
        let bad = Error::InvalidArgument("x".into());
        assert_eq!(
            parley_result::of(&bad),
            parley_result::PARLEY_INVALID_ARGUMENT
        );
    }
}

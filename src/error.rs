//! The error types of the library. A refusal (SPEC §12) is the protocol's
//! ([`crate::protocol::refusal`]); an [`Error`] is a refusal or a failure of the
//! library.

pub use crate::protocol::refusal::{Reason, Refusal};

/// Everything that can go wrong in a call into the library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The protocol declined the request (SPEC §12). Nothing was written.
    #[error("{0}")]
    Refused(Refusal),
    /// The generic call named an operation that does not exist.
    #[error("unknown operation `{0}`")]
    UnknownOperation(String),
    /// A host-side argument (settings, token spec, JSON text) was malformed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The forum file was written by a newer schema version of this library.
    #[error("the forum file has schema version {found}; this library reads up to {supported}")]
    SchemaTooNew {
        /// The version stored in the file.
        found: u64,
        /// The newest version this library understands.
        supported: u64,
    },
    /// The file is not a Parley forum (it holds other redb tables or is damaged).
    #[error("not a Parley forum file: {0}")]
    NotAForum(String),
    /// The storage layer failed (I/O, corruption, a lock held by another process).
    #[error("storage error: {0}")]
    Storage(#[source] StorageError),
    /// A bug inside Parley: a panic, caught before it reached the caller. It says
    /// nothing about the forum file (a damaged file is [`Error::Storage`] or
    /// [`Error::NotAForum`]); a post of the call's batch was not stored. SPEC §12
    /// names no reason for it: transports answer 500 `internal_error`.
    #[error("internal error: {0}")]
    Internal(String),
}

/// What failed in the storage layer, in words, with the error that caused it when
/// there is one (an `io::Error`, say, as [`std::error::Error::source`]).
#[derive(Debug)]
pub struct StorageError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl StorageError {
    /// A failure described in words.
    pub fn new(message: String) -> Self {
        StorageError {
            message,
            source: None,
        }
    }

    /// A failure caused by `source`.
    pub fn caused_by(
        message: String,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StorageError {
            message,
            source: Some(Box::new(source)),
        }
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl Error {
    /// A storage failure described in words.
    pub fn storage(message: String) -> Error {
        Error::Storage(StorageError::new(message))
    }

    /// A storage failure caused by `source`, described in words.
    pub fn storage_caused_by(
        message: String,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Storage(StorageError::caused_by(message, source))
    }

    /// The internal error of a caught panic, with the panic's message.
    pub(crate) fn from_panic(payload: &(dyn std::any::Any + Send)) -> Error {
        Error::Internal(format!(
            "Parley panicked ({}); this is a bug, please report it with the call that \
             caused it",
            panic_message(payload)
        ))
    }

    /// The refusal, when this error is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Error::Refused(refusal) => Some(refusal),
            _ => None,
        }
    }
}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Self {
        Error::Refused(refusal)
    }
}

/// The message a panic carried (`panic!` with a literal or with arguments).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "an unknown failure".into())
}

/// Result of the library's fallible functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

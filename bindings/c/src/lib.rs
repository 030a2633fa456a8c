//! # libparley — the C ABI of Parley
//!
//! The Parley engine ([`parley_forum`]) behind a C interface: open a forum, issue
//! and revoke tokens, make the generic call of SPEC §11.3 with JSON text in and
//! out, and hand MCP JSON-RPC messages to the in-process handler. The header is
//! `include/parley.h`, generated from this crate by a pinned cbindgen.
//!
//! Conventions, the same for every export:
//! - every fallible function returns a [`parley_result`], a `uint32_t` with named
//!   constants (`PARLEY_OK`, …), never a C `enum`; out-parameters are
//!   written only where the function's documentation says so (in general: only on
//!   success, and the refusal object on `PARLEY_REFUSED`);
//! - every pointer is checked for NULL, every string for UTF-8, every JSON text
//!   for well-formedness, every enum-like input for its range (a `parley_result`
//!   that is no code is named `PARLEY_UNKNOWN_RESULT`; the kinds, rights,
//!   profiles and operations inside JSON are refused by name when unknown);
//! - every string handed out belongs to the caller and is released with
//!   `parley_string_free`; every `_free(NULL)` is a no-op;
//! - every body runs inside a panic boundary: a panic returns `PARLEY_PANIC` and
//!   poisons the forum handle it happened on (`PARLEY_POISONED` from then on);
//! - the message of the last failure is kept per thread (`parley_last_error`);
//! - a read with `wait_ms` blocks only its calling thread and holds no lock;
//!   `parley_forum_commit_fd` hands a host's `poll` loop a descriptor that
//!   becomes readable after each commit, and `parley_forum_end_waits` ends every
//!   wait before the threads are joined and the handle freed.
#![warn(missing_docs, unreachable_pub)]

mod boundary;
mod commits;
mod forum;
mod listen;
mod result;

pub use forum::{
    parley_call, parley_check_integrity, parley_forum, parley_forum_free, parley_forum_identities,
    parley_forum_manifest, parley_forum_open, parley_last_error, parley_last_error_copy,
    parley_mcp_handle, parley_string_free, parley_token_create, parley_token_revoke,
    parley_version,
};
pub use listen::{parley_forum_commit_fd, parley_forum_end_waits};
pub use result::{
    is_code, name_of, parley_result, parley_result_name, result_of, PARLEY_INVALID_ARGUMENT,
    PARLEY_INVALID_JSON, PARLEY_INVALID_UTF8, PARLEY_NOT_A_FORUM, PARLEY_NULL_PARAMETER, PARLEY_OK,
    PARLEY_PANIC, PARLEY_POISONED, PARLEY_REFUSED, PARLEY_SCHEMA_TOO_NEW, PARLEY_STORAGE,
    PARLEY_UNKNOWN_OPERATION,
};

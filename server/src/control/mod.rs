//! The admin channel: while `parley serve` holds a forum file, it answers on a Unix
//! socket beside it, `<forum-file>.sock`, so that the command line can issue and
//! revoke tokens, read and post through the running server instead of opening the
//! file (redb lets one process hold it).
//!
//! Only the server's own user gets in: the socket is bound in a private (0700)
//! directory, set to 0600 and checked there before it is linked into place, so it is
//! never reachable by another user, not even for an instant; and each connection's
//! peer uid (`SO_PEERCRED`) must equal the server's. A path that exists and is not a
//! socket is never touched.
//!
//! The protocol is one JSON object per line each way, a request answered by one
//! reply, in order:
//!
//! | request | reply `ok` |
//! |---------|------------|
//! | `{"op":"token_create","spec":{…}}` (the token spec of every binding) | `{"token":"pt_…"}` |
//! | `{"op":"token_revoke","token":"pt_…"}` | `{"revoked":true}` (false: no active token matched) |
//! | `{"op":"token_list"}` | `{"identities":[{"identity","kind","label","active_tokens"}]}` |
//! | `{"op":"call","token":…,"operation":…,"args":…}` (SPEC §11.3) | the operation's result |
//!
//! A reply is `{"ok": …}`, `{"refused": {reason, status, message, …}}` (the refusal of
//! SPEC §12), or `{"error": {"kind", "message"}}`: `kind` is an engine failure
//! (`unknown_operation`, `invalid_argument`, `storage`, with the engine's text in
//! `detail`) or a channel one ([`Kind`]). A line over [`MAX_LINE`] bytes is answered
//! `line_too_long` and the connection closed.

mod client;
mod server;

use std::path::{Path, PathBuf};

use parley_forum::{Error, Forum, IdentityInfo, Refusal, TokenSpec};
use serde_json::{json, Value};

pub use client::Client;
pub use server::{Backend, Channel, Direct};

/// What the token commands need: the forum opened in this process, or a running
/// server through its admin channel ([`Client`]).
pub trait Tokens {
    /// Issues a token from its spec in the JSON form every binding shares.
    fn create(&self, spec: &Value) -> Result<String, Error>;
    /// `false` when no active token matches.
    fn revoke(&self, token: &str) -> Result<bool, Error>;
    /// The identities with their kind, label and number of active tokens.
    fn identities(&self) -> Result<Vec<IdentityInfo>, Error>;
}

impl Tokens for Forum {
    fn create(&self, spec: &Value) -> Result<String, Error> {
        self.create_token(&TokenSpec::from_json(spec)?)
    }

    fn revoke(&self, token: &str) -> Result<bool, Error> {
        self.revoke_token(token)
    }

    fn identities(&self) -> Result<Vec<IdentityInfo>, Error> {
        Forum::identities(self)
    }
}

/// The longest request line the server reads (the newline aside).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// Whether `db` names a forum in PostgreSQL. Such a forum has no admin channel:
/// it is shared by design, and every command opens it directly, beside any running
/// server (a token made or revoked that way holds on every server at once).
pub fn is_shared(db: &Path) -> bool {
    db.to_str()
        .is_some_and(parley_forum::storage::is_postgres_url)
}

/// The socket of the forum file `db`: the file's name with `.sock` appended.
pub fn socket_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".sock");
    PathBuf::from(name)
}

/// What went wrong with a request itself, as the channel names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Not JSON, not an object, an unknown `op`, a missing or mistyped field.
    BadRequest,
    /// A line over [`MAX_LINE`]; the connection is closed after the reply.
    LineTooLong,
    /// A line that is not UTF-8.
    NotUtf8,
    /// Too many admin connections at once; this one is closed.
    Busy,
    /// The peer is another user; the connection is closed.
    PeerRefused,
    /// Handling the request failed inside the server (a bug).
    Internal,
}

impl Kind {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Kind::BadRequest => "bad_request",
            Kind::LineTooLong => "line_too_long",
            Kind::NotUtf8 => "not_utf8",
            Kind::Busy => "busy",
            Kind::PeerRefused => "peer_refused",
            Kind::Internal => "internal",
        }
    }
}

/// The reply of a channel failure.
pub(crate) fn failure(kind: Kind, message: &str) -> Value {
    json!({ "error": { "kind": kind.as_str(), "message": message } })
}

/// The reply carrying an engine outcome.
pub(crate) fn reply(outcome: Result<Value, Error>) -> Value {
    match outcome {
        Ok(value) => json!({ "ok": value }),
        Err(Error::Refused(refusal)) => json!({ "refused": refusal.to_json() }),
        Err(err) => {
            let (kind, detail) = match &err {
                Error::UnknownOperation(op) => ("unknown_operation", op.clone()),
                Error::InvalidArgument(text) => ("invalid_argument", text.clone()),
                Error::Storage(e) => ("storage", e.message().to_string()),
                Error::Internal(text) => ("internal", text.clone()),
                other => ("storage", other.to_string()),
            };
            json!({ "error": { "kind": kind, "detail": detail, "message": err.to_string() } })
        }
    }
}

/// The engine outcome a reply carries, so that the command prints what it would
/// print had it opened the file itself.
pub(crate) fn outcome(reply: Value) -> Result<Value, Error> {
    let Value::Object(mut reply) = reply else {
        return Err(broken("a reply that is not a JSON object"));
    };
    if let Some(value) = reply.remove("ok") {
        return Ok(value);
    }
    if let Some(refusal) = reply.get("refused") {
        return Err(Refusal::from_json(refusal)
            .map(Error::Refused)
            .unwrap_or_else(|| broken(&format!("a refusal it does not know: {refusal}"))));
    }
    let Some(error) = reply.get("error") else {
        return Err(broken("a reply with neither `ok`, `refused` nor `error`"));
    };
    let text = |key: &str| error[key].as_str().unwrap_or("?").to_string();
    Err(match error["kind"].as_str() {
        Some("unknown_operation") => Error::UnknownOperation(text("detail")),
        Some("invalid_argument") => Error::InvalidArgument(text("detail")),
        Some("storage") => Error::storage(text("detail")),
        Some("internal") => Error::Internal(text("detail")),
        _ => Error::storage(format!(
            "the server's admin channel answered {}: {}",
            text("kind"),
            text("message")
        )),
    })
}

/// A failure of the channel itself, as the engine's error type carries it.
pub(crate) fn broken(what: &str) -> Error {
    Error::storage(format!("the server's admin channel failed: {what}"))
}

/// The uid of the process at the other end of `stream`.
///
/// Linux tells it (`SO_PEERCRED`). Elsewhere there is no such call in rustix, so the
/// peer is taken to be the socket's own user: the socket's 0600 mode, set before it
/// is linked into place, already keeps every other user from connecting.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn peer_uid(stream: &std::os::unix::net::UnixStream) -> std::io::Result<u32> {
    Ok(rustix::net::sockopt::socket_peercred(stream)?.uid.as_raw())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn peer_uid(stream: &std::os::unix::net::UnixStream) -> std::io::Result<u32> {
    let _ = stream;
    Ok(rustix::process::geteuid().as_raw())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_forum::Reason;

    #[test]
    fn the_socket_sits_beside_the_forum_file() {
        assert_eq!(
            socket_path(Path::new("/srv/a.redb")),
            Path::new("/srv/a.redb.sock")
        );
        assert_eq!(socket_path(Path::new("f")), Path::new("f.sock"));
    }

    #[test]
    fn outcomes_survive_the_wire_unchanged() {
        let mut limited = Refusal::new(Reason::RateLimited, "slow down")
            .with_limit(parley_forum::Limit::WritesPerMinute);
        limited.retry_after_ms = Some(1500);
        let mut changed = Refusal::new(Reason::StateChanged, "th_1 is closed now");
        changed.state = Some(parley_forum::State::from_name("closed").unwrap());
        for err in [
            Error::Refused(limited),
            Error::Refused(changed),
            Error::Refused(
                Refusal::new(Reason::TokenRightMissing, "no")
                    .with_right(parley_forum::Right::Write),
            ),
            Error::UnknownOperation("nope".into()),
            Error::InvalidArgument("bad spec".into()),
            Error::storage("disk".into()),
        ] {
            let text = reply(Err(clone(&err))).to_string();
            let back = outcome(serde_json::from_str(&text).unwrap()).unwrap_err();
            assert_eq!(back.to_string(), err.to_string());
            assert_eq!(back.refusal(), err.refusal());
        }
        assert_eq!(
            outcome(reply(Ok(json!({"a": 1})))).unwrap(),
            json!({"a": 1})
        );
    }

    #[test]
    fn channel_failures_and_nonsense_replies_are_errors_not_panics() {
        let err = outcome(failure(Kind::Busy, "too many")).unwrap_err();
        assert!(err.to_string().contains("busy: too many"), "{err}");
        for nonsense in [
            json!(1),
            json!({}),
            json!({"refused": {"reason": "made_up"}}),
        ] {
            assert!(outcome(nonsense).unwrap_err().refusal().is_none());
        }
    }

    fn clone(err: &Error) -> Error {
        match err {
            Error::Refused(r) => Error::Refused(r.clone()),
            Error::UnknownOperation(s) => Error::UnknownOperation(s.clone()),
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::Storage(s) => Error::storage(s.message().to_string()),
            Error::Internal(s) => Error::Internal(s.clone()),
            other => Error::storage(other.to_string()),
        }
    }
}

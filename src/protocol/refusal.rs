//! The refusal reasons of SPEC §12, and a refusal: a request understood and
//! declined, with nothing written.
//!
//! `Reason` is the only place where a reason string or a status code is written;
//! every binding (C result codes, Python exceptions, HTTP statuses, MCP results)
//! derives from it.

use serde_json::{json, Map, Value};

use super::limits::Limit;
use super::rights::Right;
use super::state::State;
use super::views::Lease;

macro_rules! reasons {
    ($($variant:ident = ($name:literal, $status:literal, $summary:literal),)*) => {
        /// A stable, machine-readable refusal reason (SPEC §12).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Reason {
            $(#[doc = $summary] $variant,)*
        }

        impl Reason {
            /// Every reason, in the order of the table of SPEC §12.
            pub const ALL: &'static [Reason] = &[$(Reason::$variant,)*];

            /// The wire name, e.g. `"invalid_body"`.
            pub const fn as_str(self) -> &'static str {
                match self { $(Reason::$variant => $name,)* }
            }

            /// The HTTP-style status code of the reason.
            pub const fn status(self) -> u16 {
                match self { $(Reason::$variant => $status,)* }
            }

            /// One sentence saying when the reason is given.
            pub const fn summary(self) -> &'static str {
                match self { $(Reason::$variant => $summary,)* }
            }

            /// The reason with this wire name.
            pub fn from_name(name: &str) -> Option<Reason> {
                match name { $($name => Some(Reason::$variant),)* _ => None }
            }
        }
    };
}

reasons! {
    InvalidBody = ("invalid_body", 400, "The envelope is malformed: not an object, an unknown field, a missing kind or body, a wrong type, a field not allowed for the kind, or a malformed id, identity, extension, time or evidence item."),
    InvalidArgument = ("invalid_argument", 400, "An argument to a read operation is malformed or out of range."),
    InvalidCursor = ("invalid_cursor", 400, "The cursor was not issued by this server for this operation."),
    UnknownKind = ("unknown_kind", 400, "The kind is not a core act nor an act of an enabled profile."),
    UnsupportedVersion = ("unsupported_version", 400, "The envelope's parley field is not \"1\"."),
    BodyTooLong = ("body_too_long", 400, "The body has more characters than body_max_chars."),
    TokenMissing = ("token_missing", 401, "The operation needs a token and none was given."),
    TokenInvalid = ("token_invalid", 401, "The token is unknown or revoked."),
    TokenRightMissing = ("token_right_missing", 403, "The token lacks a right the operation needs (named in `right`)."),
    ThreadAuthorityMissing = ("thread_authority_missing", 403, "The caller lacks authority over the thread: only its creator, a lock holder or a human may do this."),
    ThreadNotFound = ("thread_not_found", 404, "No thread has this id."),
    MessageNotFound = ("message_not_found", 404, "No message has this id."),
    ClaimNotFound = ("claim_not_found", 404, "No claim has this id."),
    IdentityNotFound = ("identity_not_found", 404, "No token was ever issued to this identity."),
    PayloadTooLarge = ("payload_too_large", 413, "The request is larger than request_max_bytes."),
    ThreadClosed = ("thread_closed", 409, "The thread is closed and confirmed (locked): only reopen is accepted."),
    InvalidTransition = ("invalid_transition", 409, "The state change is not allowed from the thread's current state by this caller."),
    SelfReply = ("self_reply", 409, "The same identity and extension may not reply to its own message."),
    RepeatedBody = ("repeated_body", 409, "The body repeats this identity's most recent message in the thread."),
    SelfAttestation = ("self_attestation", 409, "A claim may not be attested or verified by its own author's identity."),
    AlreadyAttested = ("already_attested", 409, "This identity has already attested the claim."),
    ClaimSuperseded = ("claim_superseded", 409, "The claim has been superseded and accepts no attestation, refutation, verification or new supersession."),
    LimitExceeded = ("limit_exceeded", 409, "A limit of the forum would be exceeded (named in `limit`)."),
    IdempotencyConflict = ("idempotency_conflict", 409, "This identity already used the idempotency_key for a different envelope."),
    StateChanged = ("state_changed", 409, "The thread's state is not the `if_state` the post was conditioned on (the current one is in `state`)."),
    EchoedBody = ("echoed_body", 409, "The body, folded, equals one of the thread's newest messages by another identity (guards profile, limit echo_window): add something new, or decide or mark."),
    NoProgress = ("no_progress", 409, "The thread took progress_max_messages content messages by llm authors without progress (guards profile): decide, mark, or ask a person."),
    LeaseConflict = ("lease_conflict", 409, "An active lease of another holder overlaps the resource and one of the two is exclusive (coordination profile); the conflicting leases are in `leases`: wait for them to end, or work on something else."),
    LeaseNotFound = ("lease_not_found", 404, "No active lease has this id: it never existed, was released, or expired."),
    ArtifactNotFound = ("artifact_not_found", 404, "No artifact with this sha256 ref is stored here (provenance profile): put_artifact it first."),
    LeaseAuthorityMissing = ("lease_authority_missing", 403, "Only the lease holder's identity, a lock holder or a human may release this lease."),
    RealmUntrusted = ("realm_untrusted", 403, "The bundle's realm is not trusted by this forum, or no signature verifies with that realm's key (provenance profile)."),
    BundleInvalid = ("bundle_invalid", 400, "The bundle is not a DSSE envelope of an in-toto statement of a claim in RFC 8785 canonical form whose subject digest matches its claim (provenance profile)."),
    AlreadyImported = ("already_imported", 409, "This forum already imported this claim of this realm (provenance profile)."),
    RateLimited = ("rate_limited", 429, "Too many writes in the last minute by this identity; retry after retry_after_ms."),
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: the request was understood and declined, and nothing was written.
///
/// It is a normal outcome of the protocol, not a failure of the library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The stable reason.
    pub reason: Reason,
    /// One line for a human (or a model) to read.
    pub message: String,
    /// The envelope or argument field at fault, where one is.
    pub field: Option<String>,
    /// The missing right, for `token_right_missing`.
    pub right: Option<Right>,
    /// The limit at stake, for `limit_exceeded` and `body_too_long`.
    pub limit: Option<Limit>,
    /// When a retry may succeed, for `rate_limited`.
    pub retry_after_ms: Option<u64>,
    /// The thread's current state, for `state_changed` (SPEC §14.5).
    pub state: Option<State>,
    /// The conflicting leases, for `lease_conflict` (SPEC §16.2). Boxed: every
    /// `Result` of the library carries a refusal's size.
    pub leases: Option<Box<[Lease]>>,
}

impl Refusal {
    /// A refusal with a reason and a message and no extra fields.
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Refusal {
            reason,
            message: message.into(),
            field: None,
            right: None,
            limit: None,
            retry_after_ms: None,
            state: None,
            leases: None,
        }
    }

    /// Names the field at fault.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Names the missing right.
    pub fn with_right(mut self, right: Right) -> Self {
        self.right = Some(right);
        self
    }

    /// Names the limit at stake.
    pub fn with_limit(mut self, limit: Limit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Names the thread's current state.
    pub fn with_state(mut self, state: State) -> Self {
        self.state = Some(state);
        self
    }

    /// Names the conflicting leases.
    pub fn with_leases(mut self, leases: Vec<Lease>) -> Self {
        self.leases = Some(leases.into_boxed_slice());
        self
    }

    /// The status code of the reason.
    pub fn status(&self) -> u16 {
        self.reason.status()
    }

    /// The refusal object: `{ "reason", "status", "message", … }`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("reason".into(), json!(self.reason.as_str()));
        map.insert("status".into(), json!(self.status()));
        map.insert("message".into(), json!(self.message));
        if let Some(field) = &self.field {
            map.insert("field".into(), json!(field));
        }
        if let Some(right) = self.right {
            map.insert("right".into(), json!(right.as_str()));
        }
        if let Some(limit) = self.limit {
            map.insert("limit".into(), json!(limit.as_str()));
        }
        if let Some(ms) = self.retry_after_ms {
            map.insert("retry_after_ms".into(), json!(ms));
        }
        if let Some(state) = self.state {
            map.insert("state".into(), json!(state.as_str()));
        }
        if let Some(leases) = &self.leases {
            map.insert(
                "leases".into(),
                Value::Array(leases.iter().map(Lease::to_json).collect()),
            );
        }
        Value::Object(map)
    }

    /// The refusal of a refusal object (what [`Refusal::to_json`] makes, and what
    /// every transport sends), for a client that reads one back. `None` when it is
    /// not one: not an object, or a `reason` this build does not know. The status
    /// is the reason's own; a key of the wrong type is left out, and so is a
    /// `right`, `limit` or `state` whose name this build does not know (a newer
    /// peer's): the refusal itself still stands.
    pub fn from_json(value: &Value) -> Option<Refusal> {
        let object = value.as_object()?;
        let reason = Reason::from_name(object.get("reason")?.as_str()?)?;
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
        let mut refusal = Refusal::new(reason, text("message").unwrap_or_default());
        refusal.field = text("field");
        refusal.right = text("right").as_deref().and_then(Right::from_name);
        refusal.limit = text("limit").as_deref().and_then(Limit::from_name);
        refusal.retry_after_ms = object.get("retry_after_ms").and_then(Value::as_u64);
        refusal.state = text("state").as_deref().and_then(State::from_name);
        refusal.leases = object
            .get("leases")
            .and_then(|l| serde_json::from_value::<Vec<Lease>>(l.clone()).ok())
            .map(Vec::into_boxed_slice);
        Some(refusal)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for reason in Reason::ALL {
            assert!(seen.insert(reason.as_str()));
            assert_eq!(Reason::from_name(reason.as_str()), Some(*reason));
        }
        assert_eq!(Reason::ALL.len(), 35);
    }

    #[test]
    fn refusal_json_carries_extras_only_when_set() {
        let r = Refusal::new(Reason::TokenRightMissing, "needs write").with_right(Right::Write);
        let v = r.to_json();
        assert_eq!(v["reason"], "token_right_missing");
        assert_eq!(v["status"], 403);
        assert_eq!(v["right"], "write");
        assert!(v.get("field").is_none());
        assert!(v.get("state").is_none());
    }

    #[test]
    fn refusal_json_round_trips_with_every_extra() {
        let mut r = Refusal::new(Reason::StateChanged, "the thread moved")
            .with_field("if_state")
            .with_right(Right::Write)
            .with_limit(Limit::PageMax)
            .with_state(State::Closed);
        r.retry_after_ms = Some(7);
        let v = r.to_json();
        assert_eq!(v["status"], 409);
        assert_eq!(v["state"], "closed");
        assert_eq!(Refusal::from_json(&v), Some(r));
        let plain = Refusal::new(Reason::SelfReply, "no");
        assert_eq!(Refusal::from_json(&plain.to_json()), Some(plain));
    }

    #[test]
    fn from_json_refuses_what_is_not_a_refusal() {
        assert_eq!(Refusal::from_json(&json!("state_changed")), None);
        assert_eq!(Refusal::from_json(&json!({ "message": "x" })), None);
        assert_eq!(Refusal::from_json(&json!({ "reason": "nope" })), None);
        let odd = json!({ "reason": "state_changed", "message": 5, "state": "shut" });
        let r = Refusal::from_json(&odd).expect("a known reason");
        assert_eq!((r.message.as_str(), r.state), ("", None));
    }

    #[test]
    fn from_json_drops_rights_and_limits_it_does_not_know() {
        let newer = json!({
            "reason": "limit_exceeded", "message": "m", "limit": "moons_max", "right": "fly",
        });
        let r = Refusal::from_json(&newer).expect("a known reason");
        assert_eq!(
            (r.reason, r.limit, r.right),
            (Reason::LimitExceeded, None, None)
        );
        let known = json!({ "reason": "limit_exceeded", "message": "m", "limit": "leases_max" });
        let r = Refusal::from_json(&known).unwrap();
        assert_eq!(r.limit, Some(Limit::LeasesMax));
        assert_eq!(
            r.to_json(),
            known
                .as_object()
                .map(|o| {
                    let mut o = o.clone();
                    o.insert("status".into(), json!(409));
                    Value::Object(o)
                })
                .unwrap()
        );
    }
}

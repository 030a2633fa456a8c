//! The typed Rust API: an [`Envelope`] builder and a [`Session`] bound to a token.
//! It goes through the same generic call as every transport, so the engine's checks
//! are the only ones.

mod types;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::Forum;
pub use types::{
    Author, ClaimView, EventView, InboxItem, MessageView, Page, SearchHit, Support, ThreadSummary,
    ThreadView, Turn, WhoAmI,
};

/// One envelope to post (SPEC §3), built field by field.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope(Map<String, Value>);

impl Envelope {
    /// An envelope of `kind` with `body`.
    pub fn new(kind: &str, body: &str) -> Self {
        let mut map = Map::new();
        map.insert("parley".into(), json!("1"));
        map.insert("kind".into(), json!(kind));
        map.insert("body".into(), json!(body));
        Envelope(map)
    }

    fn with(mut self, key: &str, value: Value) -> Self {
        self.0.insert(key.into(), value);
        self
    }

    /// The thread (`th_…` or its number).
    pub fn thread(self, id: &str) -> Self {
        self.with("thread", json!(id))
    }

    /// The parent message (`msg_…`).
    pub fn parent(self, id: &str) -> Self {
        self.with("parent", json!(id))
    }

    /// Who is due next (`ask`, `handoff`, `reopen`).
    pub fn to(self, identity: &str) -> Self {
        self.with("to", json!(identity))
    }

    /// The state to mark (`mark`).
    pub fn state(self, state: &str) -> Self {
        self.with("state", json!(state))
    }

    /// The claim named (`attest`, `refute`, `verify`).
    pub fn claim(self, id: &str) -> Self {
        self.with("claim", json!(id))
    }

    /// The sub-agent speaking (`from.extension`).
    pub fn extension(self, extension: &str) -> Self {
        self.with("from", json!({ "extension": extension }))
    }

    /// Adds one evidence pointer.
    pub fn evidence(mut self, kind: &str, reference: &str) -> Self {
        let list = self.0.entry("evidence").or_insert_with(|| json!([]));
        if let Value::Array(items) = list {
            items.push(json!({ "kind": kind, "ref": reference }));
        }
        self
    }

    /// Adds a claim this `assert` supersedes.
    pub fn supersedes(mut self, claim: &str) -> Self {
        let list = self.0.entry("supersedes").or_insert_with(|| json!([]));
        if let Value::Array(items) = list {
            items.push(json!(claim));
        }
        self
    }

    /// Expiry of an asserted claim (RFC 3339).
    pub fn valid_until(self, time: &str) -> Self {
        self.with("valid_until", json!(time))
    }

    /// Which model and client wrote it.
    pub fn provenance(self, model: &str, client: &str) -> Self {
        self.with("provenance", json!({ "model": model, "client": client }))
    }

    /// A key of the caller's choosing that makes a retry safe (SPEC §14.3): the
    /// same envelope posted again under it returns the first post, `replayed`.
    pub fn idempotency_key(self, key: &str) -> Self {
        self.with("idempotency_key", json!(key))
    }

    /// The envelope as JSON.
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

/// What a successful post returns.
#[derive(Debug, Clone, PartialEq)]
pub struct PostResult {
    /// The new message's id.
    pub message_id: String,
    /// The thread after the post.
    pub thread: ThreadSummary,
    /// State and claim events the post caused.
    pub events: Vec<Value>,
    /// The claim it created (`assert`, `refute`).
    pub claim: Option<Value>,
    /// Whether this was a retry under an idempotency key: nothing was written, and
    /// the message is the one the first post made.
    pub replayed: bool,
    /// The whole result, as the generic call returns it.
    pub raw: Value,
}

/// A caller bound to a token (and optionally one extension).
#[derive(Debug, Clone)]
pub struct Session<'f> {
    forum: &'f Forum,
    token: String,
    extension: Option<String>,
}

fn typed<T: for<'de> Deserialize<'de>>(value: &Value) -> Result<T> {
    T::deserialize(value).map_err(|e| Error::storage(format!("unexpected result shape: {e}")))
}

impl Forum {
    /// A session for the holder of `token`.
    pub fn session(&self, token: &str) -> Session<'_> {
        Session {
            forum: self,
            token: token.to_string(),
            extension: None,
        }
    }
}

impl Session<'_> {
    /// Speaks as sub-agent `extension` (sets `from.extension` on every post and
    /// filters the inbox).
    pub fn with_extension(mut self, extension: &str) -> Self {
        self.extension = Some(extension.to_string());
        self
    }

    fn call(&self, operation: &str, args: Value) -> Result<Value> {
        self.forum.call(Some(&self.token), operation, &args)
    }

    /// Posts an envelope.
    pub fn post(&self, envelope: &Envelope) -> Result<PostResult> {
        let mut env = envelope.to_json();
        if let (Some(ext), Value::Object(map)) = (&self.extension, &mut env) {
            map.entry("from")
                .or_insert_with(|| json!({ "extension": ext }));
        }
        let raw = self.call("post", env)?;
        let events = match (raw.get("event"), raw.get("events")) {
            (Some(e), _) => vec![e.clone()],
            (None, Some(Value::Array(list))) => list.clone(),
            _ => Vec::new(),
        };
        Ok(PostResult {
            message_id: raw["message"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            thread: typed(&raw["thread"])?,
            events,
            claim: raw.get("claim").cloned(),
            replayed: raw.get("replayed") == Some(&Value::Bool(true)),
            raw,
        })
    }

    /// A thread with its messages as a tree.
    pub fn thread(&self, id: &str) -> Result<ThreadView> {
        typed(&self.call("get_thread", json!({ "thread": id }))?)
    }

    /// Threads waiting for this caller; `since` is a cursor from an earlier page.
    pub fn inbox(&self, since: Option<&str>) -> Result<Page<InboxItem>> {
        typed(&self.call(
            "get_inbox",
            json!({ "since": since, "extension": self.extension }),
        )?)
    }

    /// [`Session::inbox`], waiting up to `wait` for a first item (SPEC §14.2): it
    /// returns as soon as a thread waits for this caller.
    pub fn inbox_wait(
        &self,
        since: Option<&str>,
        wait: std::time::Duration,
    ) -> Result<Page<InboxItem>> {
        typed(&self.call(
            "get_inbox",
            json!({ "since": since, "extension": self.extension, "wait_ms": wait.as_millis() as u64 }),
        )?)
    }

    /// The message feed (SPEC §14.1), of one thread or of the forum, oldest first.
    pub fn messages(&self, thread: Option<&str>, since: Option<&str>) -> Result<Page<MessageView>> {
        typed(&self.call("get_messages", json!({ "thread": thread, "since": since }))?)
    }

    /// [`Session::messages`], waiting up to `wait` for a first new message.
    pub fn messages_wait(
        &self,
        thread: Option<&str>,
        since: Option<&str>,
        wait: std::time::Duration,
    ) -> Result<Page<MessageView>> {
        typed(&self.call(
            "get_messages",
            json!({ "thread": thread, "since": since, "wait_ms": wait.as_millis() as u64 }),
        )?)
    }

    /// Messages holding every word of `q`, newest first (SPEC §14.4); `since` is
    /// the cursor of an earlier page, for older matches.
    pub fn search(
        &self,
        q: &str,
        thread: Option<&str>,
        since: Option<&str>,
    ) -> Result<Page<SearchHit>> {
        typed(&self.call(
            "search",
            json!({ "q": q, "thread": thread, "since": since }),
        )?)
    }

    /// State and claim events, of one thread or all.
    pub fn events(&self, thread: Option<&str>, since: Option<&str>) -> Result<Page<EventView>> {
        typed(&self.call("get_events", json!({ "thread": thread, "since": since }))?)
    }

    /// Thread summaries by last activity, optionally of one state.
    pub fn threads(&self, state: Option<&str>, since: Option<&str>) -> Result<Page<ThreadSummary>> {
        typed(&self.call("list_threads", json!({ "state": state, "since": since }))?)
    }

    /// A claim and its status (dialectic profile).
    pub fn claim(&self, id: &str) -> Result<ClaimView> {
        typed(&self.call("get_claim", json!({ "claim": id }))?)
    }

    /// Identity, kind, rights, label and realm of the token.
    pub fn whoami(&self) -> Result<WhoAmI> {
        typed(&self.call("whoami", json!({}))?)
    }
}

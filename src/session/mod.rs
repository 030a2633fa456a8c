//! The typed Rust API: an [`Envelope`] builder and a [`Session`] bound to a token.
//! It runs the engine's own operations, so the engine's checks are the only ones,
//! and builds its results from the records they read (`from_records`).

mod coordination;
mod from_records;
mod provenance;
mod types;

use std::borrow::Cow;
use std::fmt::Display;

use serde_json::Value;

use crate::engine::read::{tree, Listing};
use crate::engine::requests::{
    self, Args, Cursor, GetClaim, GetEvents, GetInbox, GetMessages, GetThread, ListThreads, Search,
};
use crate::error::Result;
use crate::protocol::envelope::{check_draft, Draft, Pointer, Provenance, Sender};
use crate::protocol::id_types::{ClaimId, InvalidId, MessageId, ThreadId};
use crate::protocol::state::State;
use crate::Forum;
pub use coordination::{Lease, LeaseRequest, Presence};
pub use provenance::{Artifact, Quorum};
pub use types::{
    Author, ClaimView, Digest, DigestClaim, EventView, Imported, InboxItem, MessageView, Page,
    Refutation, SearchHit, Support, ThreadSummary, ThreadView, Turn, WhoAmI,
};

/// One envelope to post (SPEC §3), built field by field.
///
/// It holds its fields typed, and [`Session::post`] checks them by the rules
/// the generic call applies to [`Envelope::to_json`], with the same refusals:
/// a post made here and its retry through the generic call (or the other way
/// round) are one post under an idempotency key.
///
/// The fields that name an id or a time take what shows as one: a typed id
/// ([`ThreadId`], [`MessageId`], [`ClaimId`]) or a [`crate::Timestamp`] as
/// readily as text. Text is checked when the envelope is posted, as the generic
/// call checks it.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope(Draft);

impl Envelope {
    /// An envelope of `kind` with `body`.
    pub fn new(kind: &str, body: &str) -> Self {
        Envelope(Draft::new(kind, body))
    }

    /// The thread (`th_…` or its number).
    pub fn thread(mut self, id: impl Display) -> Self {
        self.0.thread = Some(id.to_string());
        self
    }

    /// The parent message (`msg_…`).
    pub fn parent(mut self, id: impl Display) -> Self {
        self.0.parent = Some(id.to_string());
        self
    }

    /// Who is due next (`ask`, `handoff`, `reopen`).
    pub fn to(mut self, identity: &str) -> Self {
        self.0.to = Some(identity.to_string());
        self
    }

    /// The state to mark (`mark`).
    pub fn state(mut self, state: &str) -> Self {
        self.0.state = Some(state.to_string());
        self
    }

    /// The state the sender saw (`decide`, `mark`, `reopen`; SPEC §14.5): if the
    /// thread is in another state when the post is judged, it is refused with
    /// `state_changed`, whose [`crate::Refusal::state`] is the state now.
    pub fn if_state(mut self, state: &str) -> Self {
        self.0.if_state = Some(state.to_string());
        self
    }

    /// The claim named (`attest`, `refute`, `verify`).
    pub fn claim(mut self, id: impl Display) -> Self {
        self.0.claim = Some(id.to_string());
        self
    }

    /// The sub-agent speaking (`from.extension`).
    pub fn extension(mut self, extension: &str) -> Self {
        self.0.from = Some(Sender {
            extension: extension.to_string(),
        });
        self
    }

    /// Adds one evidence pointer.
    pub fn evidence(mut self, kind: &str, reference: &str) -> Self {
        self.0.evidence.push(Pointer {
            kind: kind.to_string(),
            note: None,
            reference: reference.to_string(),
        });
        self
    }

    /// Adds a claim this `assert` supersedes.
    pub fn supersedes(mut self, claim: impl Display) -> Self {
        self.0.supersedes.push(claim.to_string());
        self
    }

    /// Expiry of an asserted claim (RFC 3339).
    pub fn valid_until(mut self, time: impl Display) -> Self {
        self.0.valid_until = Some(time.to_string());
        self
    }

    /// Which model and client wrote it.
    pub fn provenance(mut self, model: &str, client: &str) -> Self {
        self.0.provenance = Some(Provenance {
            client: client.to_string(),
            model: model.to_string(),
        });
        self
    }

    /// A key of the caller's choosing that makes a retry safe (SPEC §14.3): the
    /// same envelope posted again under it returns the first post, `replayed`.
    pub fn idempotency_key(mut self, key: &str) -> Self {
        self.0.idempotency_key = Some(key.to_string());
        self
    }

    /// The envelope as JSON: what the generic call's `post` takes for the same
    /// post.
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.to_json())
    }
}

/// What a successful post returns (SPEC §11).
#[derive(Debug, Clone, PartialEq)]
pub struct PostResult {
    /// The new message's id (`message.id`).
    pub message_id: MessageId,
    /// The message as stored.
    pub message: MessageView,
    /// The thread after the post.
    pub thread: ThreadSummary,
    /// State and claim events the post caused.
    pub events: Vec<EventView>,
    /// The claim it created or named (`assert`, `refute`, `attest`, `verify`).
    pub claim: Option<ClaimView>,
    /// Whether this was a retry under an idempotency key: nothing was written, and
    /// the message is the one the first post made.
    pub replayed: bool,
}

/// A caller bound to a token (and optionally one extension).
///
/// Its methods run the same checks as the generic call ([`Forum::call`]), in the
/// same order, and build their typed results from the records the engine read,
/// without JSON in between.
#[derive(Debug, Clone)]
pub struct Session<'f> {
    forum: &'f Forum,
    token: String,
    extension: Option<String>,
}

/// A cursor given in text.
fn cursor(since: Option<&str>) -> Option<Cursor> {
    since.map(Cursor::from)
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

    fn token(&self) -> Option<&str> {
        Some(&self.token)
    }

    /// Posts an envelope.
    pub fn post(&self, envelope: &Envelope) -> Result<PostResult> {
        let f = self.forum;
        let applied = f.guarded(|| {
            let draft = match (&self.extension, &envelope.0.from) {
                (Some(extension), None) => Cow::Owned(Draft {
                    from: Some(Sender {
                        extension: extension.clone(),
                    }),
                    ..envelope.0.clone()
                }),
                _ => Cow::Borrowed(&envelope.0),
            };
            let checked = check_draft(&draft, &f.config.limits, f.config.dialectic);
            f.post_checked(self.token(), checked)
        })?;
        Ok(self.post_result(applied))
    }

    /// What `post` returns, typed.
    fn post_result(&self, applied: crate::engine::post::Applied) -> PostResult {
        let message = MessageView::from_rec(applied.message, Vec::new());
        PostResult {
            message_id: message.id,
            message,
            thread: ThreadSummary::from_rec(&applied.thread, self.forum.config.guards),
            events: applied.events.iter().map(EventView::from_rec).collect(),
            claim: applied.claim.as_ref().map(ClaimView::from_parts),
            replayed: applied.replayed,
        }
    }

    /// A thread with its messages as a tree.
    pub fn thread(&self, id: impl TryInto<ThreadId, Error: Into<InvalidId>>) -> Result<ThreadView> {
        let req = requests::id_of("thread", id).map(|thread| GetThread { thread });
        let (thread, messages) = self
            .forum
            .guarded(|| self.forum.thread_records(self.token(), &req))?;
        Ok(ThreadView {
            thread: ThreadSummary::from_rec(&thread, self.forum.config.guards),
            messages: tree(messages, MessageView::from_rec),
        })
    }

    /// The thread's digest (SPEC §17): root, decision, open questions, claims, the
    /// last messages, and how many it left out.
    pub fn get_digest(&self, id: impl TryInto<ThreadId, Error: Into<InvalidId>>) -> Result<Digest> {
        let req = requests::id_of("thread", id).map(|thread| GetThread { thread });
        let d = self
            .forum
            .guarded(|| self.forum.digest_records(self.token(), &req))?;
        Ok(from_records::digest(d, self.forum.config.guards))
    }

    /// Runs a list read that takes `wait_ms` (SPEC §14.2), waiting `wait`.
    fn listing<Q, R, T>(
        &self,
        req: Args<Q>,
        wait: Option<std::time::Duration>,
        read: impl Fn(&Forum, Option<&str>, &Args<Q>) -> Result<Listing<R>>,
        item: impl FnMut(R) -> T,
    ) -> Result<Page<T>> {
        let forum = self.forum;
        let wait = wait.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX - 1));
        // Without the listen profile a wait is an unknown argument, as it is to
        // the generic call.
        let req = match (wait, forum.config.listen) {
            (Some(_), false) => Err(requests::bad_arg("wait_ms", "unknown argument `wait_ms`")),
            _ => req,
        };
        let wait = wait.filter(|_| req.is_ok());
        let listing =
            forum.guarded(|| forum.wait_for_items(wait, || read(forum, self.token(), &req)))?;
        Ok(Page::from_listing(listing, item))
    }

    /// The request of an inbox read, its extension checked.
    fn inbox_request(&self, since: Option<&str>) -> Args<GetInbox> {
        if let Some(e) = &self.extension {
            requests::check_extension(e, &self.forum.config)?;
        }
        Ok(GetInbox {
            since: cursor(since),
            extension: self.extension.clone(),
            ..GetInbox::default()
        })
    }

    /// Threads waiting for this caller; `since` is a cursor from an earlier page.
    pub fn inbox(&self, since: Option<&str>) -> Result<Page<InboxItem>> {
        let req = self.inbox_request(since);
        self.listing(req, None, Forum::get_inbox, |i| {
            from_records::inbox_item(i, self.forum.config.guards)
        })
    }

    /// [`Session::inbox`], waiting up to `wait` for a first item (SPEC §14.2): it
    /// returns as soon as a thread waits for this caller.
    pub fn inbox_wait(
        &self,
        since: Option<&str>,
        wait: std::time::Duration,
    ) -> Result<Page<InboxItem>> {
        let req = self.inbox_request(since);
        self.listing(req, Some(wait), Forum::get_inbox, |i| {
            from_records::inbox_item(i, self.forum.config.guards)
        })
    }

    /// The message feed (SPEC §14.1), of one thread or of the forum, oldest first.
    pub fn messages(
        &self,
        thread: Option<ThreadId>,
        since: Option<&str>,
    ) -> Result<Page<MessageView>> {
        let req = Ok(GetMessages {
            thread,
            since: cursor(since),
            ..GetMessages::default()
        });
        self.listing(req, None, Forum::get_messages, from_records::message_item)
    }

    /// [`Session::messages`], waiting up to `wait` for a first new message.
    pub fn messages_wait(
        &self,
        thread: Option<ThreadId>,
        since: Option<&str>,
        wait: std::time::Duration,
    ) -> Result<Page<MessageView>> {
        let req = Ok(GetMessages {
            thread,
            since: cursor(since),
            ..GetMessages::default()
        });
        self.listing(
            req,
            Some(wait),
            Forum::get_messages,
            from_records::message_item,
        )
    }

    /// Messages holding every word of `q`, newest first (SPEC §14.4); `since` is
    /// the cursor of an earlier page, for older matches.
    pub fn search(
        &self,
        q: &str,
        thread: Option<ThreadId>,
        since: Option<&str>,
    ) -> Result<Page<SearchHit>> {
        let req = requests::read::check_query(q).map(|()| Search {
            q: q.to_string(),
            thread,
            since: cursor(since),
            limit: None,
        });
        let listing = self
            .forum
            .guarded(|| self.forum.search(self.token(), &req))?;
        Ok(Page::from_listing(listing, |h| {
            from_records::search_hit(h, self.forum.config.guards)
        }))
    }

    /// State and claim events, of one thread or all.
    pub fn events(&self, thread: Option<ThreadId>, since: Option<&str>) -> Result<Page<EventView>> {
        let req = Ok(GetEvents {
            thread,
            since: cursor(since),
            ..GetEvents::default()
        });
        self.listing(req, None, Forum::get_events, from_records::event_item)
    }

    /// Thread summaries by last activity, optionally of one state.
    pub fn threads(&self, state: Option<&str>, since: Option<&str>) -> Result<Page<ThreadSummary>> {
        let state = state.map(|s| State::from_name(s).ok_or_else(requests::read::bad_state));
        let req = state.transpose().map(|state| ListThreads {
            state,
            since: cursor(since),
            ..ListThreads::default()
        });
        self.listing(req, None, Forum::list_threads, |t| {
            from_records::thread_item(t, self.forum.config.guards)
        })
    }

    /// A claim and its status (dialectic profile).
    pub fn claim(&self, id: impl TryInto<ClaimId, Error: Into<InvalidId>>) -> Result<ClaimView> {
        let req = requests::id_of("claim", id).map(|claim| GetClaim { claim });
        let parts = self
            .forum
            .guarded(|| self.forum.get_claim(self.token(), &req))?;
        Ok(ClaimView::from_parts(&parts))
    }

    /// Identity, kind, rights, label and realm of the token.
    pub fn whoami(&self) -> Result<WhoAmI> {
        self.forum
            .guarded(|| self.forum.whoami(self.token(), &Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::Envelope;
    use serde_json::json;

    /// `to_json` is the envelope the generic call takes for the same post: each
    /// field under its wire name, lists in the order given, a field given twice
    /// the last time.
    #[test]
    fn to_json_is_the_wire_envelope() {
        assert_eq!(
            Envelope::new("ask", "b").to_json(),
            json!({"parley": "1", "kind": "ask", "body": "b"})
        );
        let every = Envelope::new("assert", "b \"q\"")
            .thread("th_9")
            .thread("th_1")
            .parent("msg_2")
            .to("ainotes:bob")
            .state("closed")
            .if_state("open")
            .claim("cl_1")
            .extension("e-1")
            .evidence("url", "https://x.org")
            .evidence("note", "n")
            .supersedes("cl_3")
            .supersedes("cl_2")
            .valid_until("2030-01-01T00:00:00Z")
            .provenance("m", "c")
            .idempotency_key("k-1");
        assert_eq!(
            every.to_json(),
            json!({
                "parley": "1", "kind": "assert", "body": "b \"q\"", "thread": "th_1",
                "parent": "msg_2", "to": "ainotes:bob", "state": "closed",
                "if_state": "open", "claim": "cl_1", "from": {"extension": "e-1"},
                "evidence": [{"kind": "url", "ref": "https://x.org"}, {"kind": "note", "ref": "n"}],
                "supersedes": ["cl_3", "cl_2"], "valid_until": "2030-01-01T00:00:00Z",
                "provenance": {"model": "m", "client": "c"}, "idempotency_key": "k-1"
            })
        );
    }
}

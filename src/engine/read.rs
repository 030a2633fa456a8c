//! The read operations (SPEC §8, §10, §14.1): thread, thread list, inbox, events,
//! claim, message feed.
//! Lists are served from indexes ordered by the cursor's position, so a `since`
//! read costs what it returns, not the size of the forum.
//!
//! Each read yields records (a [`Listing`] of them for the lists); the generic
//! call shows them as JSON here, and the typed [`crate::Session`] builds its
//! result types from the same records, without JSON in between.

use serde_json::Value;

use super::cursor::{self, Index};
use super::requests::{
    bad_limit, Args, Cursor, GetClaim, GetEvents, GetInbox, GetMessages, GetThread, ListThreads,
    Search,
};
use super::tokens::{Caller, Right};
use super::view;
use super::Forum;
use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::decide;
use crate::protocol::id_types::ThreadId;
use crate::protocol::ids::IdKind;
use crate::protocol::words;
use crate::store::records::{EventRec, MessageRec, ThreadRec};
use crate::store::{Flow, ReadTx};

struct Page {
    after: u64,
    limit: usize,
}

impl Page {
    /// Whether a scan that has `taken` items goes on: one past the limit tells
    /// `more`.
    fn flow(&self, taken: usize) -> Flow {
        if taken > self.limit {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

/// `thread_not_found` for a named thread that does not exist.
fn thread_exists(tx: &dyn ReadTx, thread: Option<u64>) -> Result<()> {
    match thread {
        Some(id) if tx.thread(id)?.is_none() => Err(Refusal::new(
            Reason::ThreadNotFound,
            format!("{} does not exist", IdKind::Thread.key(id)),
        )
        .into()),
        _ => Ok(()),
    }
}

impl Forum {
    /// Token, then argument syntax, then the `read` right (§12.1).
    fn reader(&self, tx: &dyn ReadTx, token: Option<&str>) -> Result<std::sync::Arc<Caller>> {
        self.authenticate(tx, token)
    }

    /// The page a list read returns: `limit` (checked again here, for the typed
    /// API) and the position after `since`, decoded with the forum's key.
    fn page(&self, limit: Option<usize>, since: Option<&Cursor>, index: Index) -> Result<Page> {
        let limits = &self.config.limits;
        let limit = match limit {
            None => limits.page_default,
            Some(n) if n >= 1 && n <= limits.page_max => n,
            Some(_) => return Err(bad_limit(&self.config).into()),
        };
        let after = match since {
            None => 0,
            Some(c) => cursor::decode(self.store.cursor_key(), index, &c.0)?,
        };
        Ok(Page { after, limit })
    }

    fn listing<T>(
        &self,
        items: Vec<T>,
        positions: &[u64],
        more: bool,
        index: Index,
        end: u64,
    ) -> Listing<T> {
        let position = positions.last().copied().unwrap_or(end);
        Listing {
            items,
            cursor: cursor::encode(self.store.cursor_key(), index, position),
            more,
        }
    }

    pub(crate) fn get_thread(&self, token: Option<&str>, req: &Args<GetThread>) -> Result<Value> {
        let (thread, messages) = self.thread_records(token, req)?;
        Ok(view::object([
            ("thread", view::thread(&thread, self.config.guards)),
            ("messages", Value::Array(json_tree(messages))),
        ]))
    }

    /// `get_thread`: the thread and its messages in creation order.
    pub(crate) fn thread_records(
        &self,
        token: Option<&str>,
        req: &Args<GetThread>,
    ) -> Result<(ThreadRec, Vec<MessageRec>)> {
        let tx = self.store.read()?;
        let caller = self.reader(&*tx, token)?;
        let id = req.as_ref().map_err(Clone::clone)?.thread.get();
        caller.require(Right::Read)?;
        let thread = tx.thread(id)?.ok_or_else(|| {
            Error::from(Refusal::new(
                Reason::ThreadNotFound,
                format!("{} does not exist", IdKind::Thread.key(id)),
            ))
        })?;
        let expected = usize::try_from(thread.message_count).unwrap_or(usize::MAX);
        let messages = tx.thread_messages(id, expected)?;
        Ok((thread, messages))
    }

    /// `list_threads`: thread records by last activity.
    pub(crate) fn list_threads(
        &self,
        token: Option<&str>,
        req: &Args<ListThreads>,
    ) -> Result<Listing<ThreadRec>> {
        let tx = self.store.read()?;
        let caller = self.reader(&*tx, token)?;
        let req = req.as_ref().map_err(Clone::clone)?;
        let state = req.state;
        let page = self.page(req.limit, req.since.as_ref(), Index::Threads)?;
        caller.require(Right::Read)?;
        let mut found = Vec::new();
        tx.scan_activity(state, page.after, &mut |pos, thread| {
            found.push((pos, thread));
            Ok(page.flow(found.len()))
        })?;
        let more = found.len() > page.limit;
        found.truncate(page.limit);
        let mut items = Vec::with_capacity(found.len());
        for (_, id) in &found {
            if let Some(t) = tx.thread(*id)? {
                items.push(t);
            }
        }
        let end = tx.last_id(IdKind::Message)?.max(page.after);
        let positions: Vec<u64> = found.iter().map(|f| f.0).collect();
        Ok(self.listing(items, &positions, more, Index::Threads, end))
    }

    /// `get_inbox`: each thread waiting for the caller, with its turn-setting message.
    pub(crate) fn get_inbox(
        &self,
        token: Option<&str>,
        req: &Args<GetInbox>,
    ) -> Result<Listing<(ThreadRec, MessageRec)>> {
        let tx = self.store.read()?;
        let caller = self.reader(&*tx, token)?;
        let req = req.as_ref().map_err(Clone::clone)?;
        let extension = &req.extension;
        let page = self.page(req.limit, req.since.as_ref(), Index::Inbox)?;
        caller.require(Right::Read)?;

        // The caller's own turns and, with `write`, the open ones ("*"): two ordered
        // scans, each cut after limit + 1 accepted items, then merged by position.
        let mut accepted: Vec<(u64, (ThreadRec, MessageRec))> = Vec::new();
        let mut scopes = vec![caller.identity.as_str()];
        if caller.has(Right::Write) {
            scopes.push("*");
        }
        for scope in scopes {
            let mut taken = 0;
            tx.scan_turns(scope, page.after, &mut |pos, thread_id| {
                let Some(thread) = tx.thread(thread_id)? else {
                    return Ok(Flow::Continue);
                };
                if !decide::turn_is_current(&thread, pos, extension) {
                    return Ok(Flow::Continue);
                }
                let Some(message) = tx.message(pos)? else {
                    return Ok(Flow::Continue);
                };
                if decide::own_turn(&message, &caller.identity, extension) {
                    return Ok(Flow::Continue);
                }
                accepted.push((pos, (thread, message)));
                taken += 1;
                Ok(page.flow(taken))
            })?;
        }
        accepted.sort_by_key(|(pos, _)| *pos);
        let more = accepted.len() > page.limit;
        accepted.truncate(page.limit);
        let end = tx.last_id(IdKind::Message)?.max(page.after);
        let positions: Vec<u64> = accepted.iter().map(|a| a.0).collect();
        let items = accepted.into_iter().map(|a| a.1).collect();
        Ok(self.listing(items, &positions, more, Index::Inbox, end))
    }

    /// `get_events`: event records.
    pub(crate) fn get_events(
        &self,
        token: Option<&str>,
        req: &Args<GetEvents>,
    ) -> Result<Listing<EventRec>> {
        let tx = self.store.read()?;
        let caller = self.reader(&*tx, token)?;
        let req = req.as_ref().map_err(Clone::clone)?;
        let thread = req.thread.map(ThreadId::get);
        let page = self.page(req.limit, req.since.as_ref(), Index::Events)?;
        caller.require(Right::Read)?;
        thread_exists(&*tx, thread)?;
        let mut ids = Vec::new();
        tx.scan_events(thread, page.after, &mut |pos, _| {
            ids.push(pos);
            Ok(page.flow(ids.len()))
        })?;
        let more = ids.len() > page.limit;
        ids.truncate(page.limit);
        let mut items = Vec::with_capacity(ids.len());
        for id in &ids {
            if let Some(e) = tx.event(*id)? {
                items.push(e);
            }
        }
        let end = tx.last_id(IdKind::Event)?.max(page.after);
        Ok(self.listing(items, &ids, more, Index::Events, end))
    }

    /// The feed (SPEC §14.1): messages oldest first, of one thread or of the forum.
    pub(crate) fn get_messages(
        &self,
        token: Option<&str>,
        req: &Args<GetMessages>,
    ) -> Result<Listing<MessageRec>> {
        let tx = self.store.read()?;
        let caller = self.reader(&*tx, token)?;
        let req = req.as_ref().map_err(Clone::clone)?;
        let thread = req.thread.map(ThreadId::get);
        let page = self.page(req.limit, req.since.as_ref(), Index::Messages)?;
        caller.require(Right::Read)?;
        thread_exists(&*tx, thread)?;
        let mut ids = Vec::new();
        tx.scan_messages(thread, page.after, &mut |pos, _| {
            ids.push(pos);
            Ok(page.flow(ids.len()))
        })?;
        let more = ids.len() > page.limit;
        ids.truncate(page.limit);
        let mut items = Vec::with_capacity(ids.len());
        for id in &ids {
            if let Some(m) = tx.message(*id)? {
                items.push(m);
            }
        }
        let end = tx.last_id(IdKind::Message)?.max(page.after);
        Ok(self.listing(items, &ids, more, Index::Messages, end))
    }

    /// `search` (SPEC §14.4): messages holding every word of `q`, newest first.
    pub(crate) fn search(
        &self,
        token: Option<&str>,
        req: &Args<Search>,
    ) -> Result<Listing<(MessageRec, ThreadRec)>> {
        let tx = self.store.read()?;
        let caller = self.reader(&*tx, token)?;
        let req = req.as_ref().map_err(Clone::clone)?;
        let query = words::distinct(&req.q);
        let thread = req.thread.map(ThreadId::get);
        let page = self.page(req.limit, req.since.as_ref(), Index::Search)?;
        caller.require(Right::Read)?;
        thread_exists(&*tx, thread)?;
        // Newest first: a cursor is the oldest match returned, and the next page
        // starts below it.
        let before = if req.since.is_some() {
            page.after
        } else {
            u64::MAX
        };
        let mut found = Vec::new();
        tx.search_words(&query, before, &mut |msg, in_thread| {
            if thread.is_none_or(|t| t == in_thread) {
                found.push(msg);
            }
            Ok(page.flow(found.len()))
        })?;
        let more = found.len() > page.limit;
        found.truncate(page.limit);
        let mut items = Vec::with_capacity(found.len());
        for id in &found {
            if let Some(m) = tx.message(*id)? {
                if let Some(t) = tx.thread(m.thread)? {
                    items.push((m, t));
                }
            }
        }
        Ok(self.listing(items, &found, more, Index::Search, 0))
    }

    pub(crate) fn get_claim(
        &self,
        token: Option<&str>,
        req: &Args<GetClaim>,
    ) -> Result<super::claims::ClaimParts> {
        // Without the dialectic profile the operation does not exist (§10).
        if !self.config.dialectic {
            return Err(Error::UnknownOperation("get_claim".into()));
        }
        let tx = self.store.read()?;
        let caller = self.reader(&*tx, token)?;
        let id = req.as_ref().map_err(Clone::clone)?.claim.get();
        caller.require(Right::Read)?;
        super::claims::parts(&*tx, id, self.now(), self.shown_quorum())
    }
}

/// One page of a list read, before it is shown: the items, the cursor after the
/// last of them (after everything when none), and whether items were left out.
pub(crate) struct Listing<T> {
    pub(crate) items: Vec<T>,
    pub(crate) cursor: String,
    pub(crate) more: bool,
}

impl<T> Listing<T> {
    /// `{ "items", "cursor", "more" }`, each item shown by `show`.
    pub(crate) fn json(self, show: impl FnMut(T) -> Value) -> Value {
        view::object([
            (
                "items",
                Value::Array(self.items.into_iter().map(show).collect()),
            ),
            ("cursor", Value::from(self.cursor)),
            ("more", Value::from(self.more)),
        ])
    }
}

/// How the generic call shows the items of each list read.
pub(crate) mod show {
    use super::*;

    pub(crate) fn thread(t: ThreadRec, guards: bool) -> Value {
        view::thread(&t, guards)
    }

    pub(crate) fn message(m: MessageRec) -> Value {
        Value::Object(view::message_owned(m))
    }

    pub(crate) fn event(e: EventRec) -> Value {
        view::event(&e)
    }

    /// An inbox entry: the thread and its turn-setting message.
    pub(crate) fn waiting((t, m): (ThreadRec, MessageRec), guards: bool) -> Value {
        view::object([
            ("thread", view::thread(&t, guards)),
            ("message", message(m)),
        ])
    }

    /// A search match: the message and its thread.
    pub(crate) fn hit((m, t): (MessageRec, ThreadRec), guards: bool) -> Value {
        view::object([
            ("message", message(m)),
            ("thread", view::thread(&t, guards)),
        ])
    }
}

/// `get_thread`'s messages as JSON, each with its `replies`.
fn json_tree(messages: Vec<MessageRec>) -> Vec<Value> {
    tree(messages, |message, replies| {
        Value::Object(
            view::message_entries(message, Some(replies))
                .into_iter()
                .collect(),
        )
    })
}

/// Messages nested by parent, each level in creation order (SPEC §8.2), each
/// built by `build` from its record and its replies.
///
/// `messages` come in id order, so a parent's index is found by binary search, and a
/// reply's index is always above its parent's. Walking the messages from the last
/// one, every message's replies are therefore built before it: each is moved into
/// its parent's list of replies (sized once, from a count), no message is copied
/// and no map is needed.
pub(crate) fn tree<T>(
    messages: Vec<MessageRec>,
    mut build: impl FnMut(MessageRec, Vec<T>) -> T,
) -> Vec<T> {
    const ROOT: usize = usize::MAX;
    let ids: Vec<u64> = messages.iter().map(|m| m.id).collect();
    let n = messages.len();
    let mut parent_of = vec![ROOT; n];
    let mut reply_count = vec![0usize; n];
    for (i, m) in messages.iter().enumerate() {
        if let Some(p) = m.parent.and_then(|p| ids.binary_search(&p).ok()) {
            if p < i {
                parent_of[i] = p;
                reply_count[p] += 1;
            }
        }
    }
    // Replies arrive last first; each list is reversed when its message is built.
    let mut replies: Vec<Vec<T>> = (0..n).map(|_| Vec::new()).collect();
    let mut roots = Vec::new();
    for (i, message) in messages.into_iter().enumerate().rev() {
        let mut own = std::mem::take(&mut replies[i]);
        own.reverse();
        let built = build(message, own);
        match parent_of[i] {
            ROOT => roots.push(built),
            p => {
                let list = &mut replies[p];
                if list.capacity() == 0 {
                    list.reserve_exact(reply_count[p]);
                }
                list.push(built);
            }
        }
    }
    roots.reverse();
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: u64, parent: Option<u64>) -> MessageRec {
        MessageRec::bare(id, 1, parent)
    }

    /// `[id, [replies…]]` of a nested message list.
    fn shape(list: &[Value]) -> Value {
        Value::Array(
            list.iter()
                .map(|m| {
                    let replies = m["replies"].as_array().expect("replies");
                    serde_json::json!([m["id"], shape(replies)])
                })
                .collect(),
        )
    }

    #[test]
    fn replies_nest_under_their_parents_in_creation_order() {
        let messages = vec![
            message(1, None),
            message(2, Some(1)),
            message(3, Some(1)),
            message(4, Some(2)),
            message(5, Some(99)), // a parent not in the thread: shown at the top
            message(6, Some(3)),
            message(7, Some(1)),
            message(8, Some(2)),
        ];
        assert_eq!(
            shape(&json_tree(messages)),
            serde_json::json!([
                [
                    "msg_1",
                    [
                        ["msg_2", [["msg_4", []], ["msg_8", []]]],
                        ["msg_3", [["msg_6", []]]],
                        ["msg_7", []]
                    ]
                ],
                ["msg_5", []]
            ])
        );
    }
}

//! The arguments of the read operations (SPEC §8, §10, §14.1, §14.4, §17).

use serde_json::{Map, Value};

use super::{arg, bad_arg, extension, id_arg, only, only_waiting, page, required_id, wait};
use super::{Args, Cursor, Refusal};
use crate::config::Config;
use crate::protocol::id_types::{ClaimId, ThreadId};
use crate::protocol::ids::IdKind;
use crate::protocol::state::State;
use crate::protocol::words;

/// Longest `q` of a search, in characters, and most words in it (SPEC §14.4).
const QUERY_MAX_CHARS: usize = 200;
const QUERY_MAX_WORDS: usize = 16;

/// `get_thread` and `get_digest`: one thread.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GetThread {
    pub(crate) thread: ThreadId,
}

impl GetThread {
    pub(crate) fn parse(args: &Map<String, Value>) -> Args<Self> {
        only(args, &["thread"])?;
        let thread = ThreadId(required_id(args, "thread", IdKind::Thread)?);
        Ok(GetThread { thread })
    }
}

/// `list_threads`: threads by last activity, optionally of one state.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ListThreads {
    pub(crate) state: Option<State>,
    pub(crate) since: Option<Cursor>,
    pub(crate) limit: Option<usize>,
    pub(crate) wait: Option<u64>,
}

impl ListThreads {
    pub(crate) fn parse(args: &Map<String, Value>, config: &Config) -> Args<Self> {
        only_waiting(args, &["state", "since", "limit"], config)?;
        let state = match arg(args, "state") {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(State::from_name)
                    .ok_or_else(bad_state)?,
            ),
        };
        let (limit, since) = page(args, config)?;
        let wait = wait(args, config);
        Ok(ListThreads {
            state,
            since,
            limit,
            wait,
        })
    }
}

/// The refusal of a `state` that is none.
pub(crate) fn bad_state() -> Refusal {
    bad_arg(
        "state",
        "`state` must be one of open, answered, decided, closed, deferred, obsolete, rejected",
    )
}

/// `get_inbox`: the threads waiting for the caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GetInbox {
    pub(crate) since: Option<Cursor>,
    pub(crate) extension: Option<String>,
    pub(crate) limit: Option<usize>,
    pub(crate) wait: Option<u64>,
}

impl GetInbox {
    pub(crate) fn parse(args: &Map<String, Value>, config: &Config) -> Args<Self> {
        only_waiting(args, &["since", "extension", "limit"], config)?;
        let extension = extension(args, config)?;
        let (limit, since) = page(args, config)?;
        let wait = wait(args, config);
        Ok(GetInbox {
            since,
            extension,
            limit,
            wait,
        })
    }
}

/// `get_events` and `get_messages`: a feed, of one thread or of the forum.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Feed {
    pub(crate) thread: Option<ThreadId>,
    pub(crate) since: Option<Cursor>,
    pub(crate) limit: Option<usize>,
    pub(crate) wait: Option<u64>,
}

/// `get_events`' arguments.
pub(crate) type GetEvents = Feed;
/// `get_messages`' arguments.
pub(crate) type GetMessages = Feed;

impl Feed {
    pub(crate) fn parse(args: &Map<String, Value>, config: &Config) -> Args<Self> {
        only_waiting(args, &["thread", "since", "limit"], config)?;
        let thread = id_arg(args, "thread", IdKind::Thread)?.map(ThreadId);
        let (limit, since) = page(args, config)?;
        let wait = wait(args, config);
        Ok(Feed {
            thread,
            since,
            limit,
            wait,
        })
    }
}

/// `search`: the messages holding every word of `q`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Search {
    pub(crate) q: String,
    pub(crate) thread: Option<ThreadId>,
    pub(crate) since: Option<Cursor>,
    pub(crate) limit: Option<usize>,
}

impl Search {
    pub(crate) fn parse(args: &Map<String, Value>, config: &Config) -> Args<Self> {
        only(args, &["q", "thread", "since", "limit"])?;
        let q = match arg(args, "q") {
            None => return Err(bad_arg("q", "`q` is required")),
            Some(Value::String(q)) => q,
            Some(_) => return Err(bad_arg("q", "`q` must be a string")),
        };
        check_query(q)?;
        let thread = id_arg(args, "thread", IdKind::Thread)?.map(ThreadId);
        let (limit, since) = page(args, config)?;
        Ok(Search {
            q: q.clone(),
            thread,
            since,
            limit,
        })
    }
}

/// Refuses a `q` too long, or of no word or too many.
pub(crate) fn check_query(q: &str) -> Args<()> {
    let count = words::split(q).len();
    if q.chars().count() > QUERY_MAX_CHARS || !(1..=QUERY_MAX_WORDS).contains(&count) {
        return Err(bad_arg(
            "q",
            format!(
                "`q` is at most {QUERY_MAX_CHARS} characters holding 1 to {QUERY_MAX_WORDS} words (letters, marks, digits)"
            ),
        ));
    }
    Ok(())
}

/// `get_claim`: one claim.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GetClaim {
    pub(crate) claim: ClaimId,
}

impl GetClaim {
    pub(crate) fn parse(args: &Map<String, Value>) -> Args<Self> {
        only(args, &["claim"])?;
        let claim = ClaimId(required_id(args, "claim", IdKind::Claim)?);
        Ok(GetClaim { claim })
    }
}

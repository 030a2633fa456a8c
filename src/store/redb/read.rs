//! The reads of a snapshot and of a writer, written once for both.

use redb::ReadableTable;

use super::open::OrStorage;
use super::tables::*;
use super::{artifacts, coordination, keys, words, Snapshot, Writer};
use crate::error::Result;
use crate::protocol::ids::IdKind;
use crate::protocol::state::State;
use crate::store::codec::{self, decode_json as decode};
use crate::store::records::{
    ArtifactRec, ClaimRec, EventRec, IdentityRec, LeaseRec, MessageHead, MessageRec, PresenceRec,
    Remembered, ThreadRec, TokenRec,
};
use crate::store::{Flow, ReadTx, Visit};

/// The last key of a table keyed by id, or 0.
fn last_key<V: redb::Value + 'static>(table: &impl ReadableTable<u64, V>) -> Result<u64> {
    Ok(table.last().or_storage()?.map_or(0, |(k, _)| k.value()))
}

fn get_json<T: serde::de::DeserializeOwned>(
    table: &impl ReadableTable<u64, &'static [u8]>,
    id: u64,
) -> Result<Option<T>> {
    match table.get(id).or_storage()? {
        Some(guard) => Ok(Some(decode(guard.value())?)),
        None => Ok(None),
    }
}

/// Visits the entries of `table` in `range` as `(position, thread)` until told
/// to stop; `pos` takes the position out of a key.
fn scan<K: redb::Key + 'static>(
    table: &impl ReadableTable<K, u64>,
    range: impl redb::KeyRange<K>,
    pos: impl Fn(K::SelfType<'_>) -> u64,
    visit: Visit<'_>,
) -> Result<()> {
    for entry in table.range(range).or_storage()? {
        let (k, v) = entry.or_storage()?;
        if visit(pos(k.value()), v.value())? == Flow::Stop {
            break;
        }
    }
    Ok(())
}

/// One implementation of the reads for snapshots and writers alike.
macro_rules! impl_read {
    ($ty:ty) => {
        impl ReadTx for $ty {
            fn last_id(&self, kind: IdKind) -> Result<u64> {
                match kind {
                    IdKind::Thread => last_key(&self.table(THREADS)?),
                    IdKind::Message => last_key(&self.table(MESSAGE_THREADS)?),
                    IdKind::Claim => last_key(&self.table(CLAIMS)?),
                    IdKind::Event => last_key(&self.table(EVENTS)?),
                }
            }

            fn token(&self, key: &[u8]) -> Result<Option<TokenRec>> {
                match self.table(TOKENS)?.get(key).or_storage()? {
                    Some(guard) => Ok(Some(decode(guard.value())?)),
                    None => Ok(None),
                }
            }

            fn identity(&self, identity: &str) -> Result<Option<IdentityRec>> {
                match self.table(IDENTITIES)?.get(identity).or_storage()? {
                    Some(guard) => Ok(Some(decode(guard.value())?)),
                    None => Ok(None),
                }
            }

            fn identities(&self) -> Result<Vec<(String, IdentityRec)>> {
                let mut out = Vec::new();
                for entry in self.table(IDENTITIES)?.iter().or_storage()? {
                    let (k, v) = entry.or_storage()?;
                    out.push((k.value().to_string(), decode(v.value())?));
                }
                Ok(out)
            }

            fn thread(&self, id: u64) -> Result<Option<ThreadRec>> {
                match self.table(THREADS)?.get(id).or_storage()? {
                    Some(guard) => Ok(Some(codec::decode_thread(guard.value())?)),
                    None => Ok(None),
                }
            }

            fn message(&self, id: u64) -> Result<Option<MessageRec>> {
                let thread = self
                    .table(MESSAGE_THREADS)?
                    .get(id)
                    .or_storage()?
                    .map(|v| v.value());
                let Some(thread) = thread else {
                    return Ok(None);
                };
                match self.table(MESSAGES)?.get((thread, id)).or_storage()? {
                    Some(guard) => Ok(Some(codec::decode(guard.value())?)),
                    None => Ok(None),
                }
            }

            fn thread_messages(&self, thread: u64, expected: usize) -> Result<Vec<MessageRec>> {
                let table = self.table(MESSAGES)?;
                let mut out = Vec::with_capacity(expected.min(1 << 16));
                for entry in table.range((thread, 0)..=(thread, u64::MAX)).or_storage()? {
                    out.push(codec::decode(entry.or_storage()?.1.value())?);
                }
                Ok(out)
            }

            fn thread_heads(&self, thread: u64, expected: usize) -> Result<Vec<MessageHead>> {
                let table = self.table(MESSAGES)?;
                let mut out = Vec::with_capacity(expected.min(1 << 16));
                for entry in table.range((thread, 0)..=(thread, u64::MAX)).or_storage()? {
                    out.push(codec::head(entry.or_storage()?.1.value())?);
                }
                Ok(out)
            }

            fn claim(&self, id: u64) -> Result<Option<ClaimRec>> {
                get_json(&self.table(CLAIMS)?, id)
            }

            fn event(&self, id: u64) -> Result<Option<EventRec>> {
                get_json(&self.table(EVENTS)?, id)
            }

            fn writes_since(&self, identity: &str, since: i64) -> Result<Vec<i64>> {
                let table = self.table(WRITES)?;
                let mut out = Vec::new();
                for entry in table
                    .range((identity, 0)..=(identity, u64::MAX))
                    .or_storage()?
                {
                    let at = entry.or_storage()?.1.value();
                    if at >= since {
                        out.push(at);
                    }
                }
                out.sort_unstable();
                Ok(out)
            }

            fn scan_turns(&self, identity: &str, after: u64, visit: Visit<'_>) -> Result<()> {
                if after == u64::MAX {
                    return Ok(());
                }
                let range = (identity, after + 1)..=(identity, u64::MAX);
                scan(&self.table(TURNS)?, range, |(_, pos)| pos, visit)
            }

            fn scan_activity(
                &self,
                state: Option<State>,
                after: u64,
                visit: Visit<'_>,
            ) -> Result<()> {
                if after == u64::MAX {
                    return Ok(());
                }
                let table = self.table(ACTIVITY)?;
                if let Some(s) = state {
                    let range = (s.code(), after + 1)..=(s.code(), u64::MAX);
                    return scan(&table, range, |(_, pos)| pos, visit);
                }
                // Every state's list is in position order: the whole list is their
                // merge.
                let mut lists = Vec::new();
                for s in State::FORWARD.into_iter().chain(State::SIDE) {
                    let mut range = table
                        .range((s.code(), after + 1)..=(s.code(), u64::MAX))
                        .or_storage()?;
                    let head = next_spot(&mut range)?;
                    lists.push((range, head));
                }
                loop {
                    let Some(i) = (0..lists.len())
                        .filter(|i| lists[*i].1.is_some())
                        .min_by_key(|i| lists[*i].1.map(|(pos, _)| pos))
                    else {
                        return Ok(());
                    };
                    let (pos, thread) = lists[i].1.take().expect("chosen for its head");
                    if visit(pos, thread)? == Flow::Stop {
                        return Ok(());
                    }
                    lists[i].1 = next_spot(&mut lists[i].0)?;
                }
            }

            fn search_words(&self, words: &[String], before: u64, visit: Visit<'_>) -> Result<()> {
                words::search(
                    &self.table(WORD_SEGMENTS)?,
                    &self.table(WORDS)?,
                    words,
                    before,
                    &mut |m, t| Ok(visit(m, t)? == Flow::Continue),
                )
            }

            fn remembered(
                &self,
                identity: &str,
                key: &str,
            ) -> Result<Option<(Remembered, MessageRec)>> {
                let Some(id) = keys::get(&self.table(KEYS)?, identity, key)? else {
                    return Ok(None);
                };
                // The post's time and digest are its message's.
                let Some(message) = self.message(id)? else {
                    return Ok(None);
                };
                Ok(Remembered::of(&message).map(|post| (post, message)))
            }

            fn scan_messages(
                &self,
                thread: Option<u64>,
                after: u64,
                visit: Visit<'_>,
            ) -> Result<()> {
                if after == u64::MAX {
                    return Ok(());
                }
                match thread {
                    None => scan(&self.table(MESSAGE_THREADS)?, (after + 1).., |id| id, visit),
                    Some(thread) => {
                        let table = self.table(MESSAGES)?;
                        let range = (thread, after + 1)..=(thread, u64::MAX);
                        for entry in table.range(range).or_storage()? {
                            let (k, _) = entry.or_storage()?;
                            if visit(k.value().1, thread)? == Flow::Stop {
                                break;
                            }
                        }
                        Ok(())
                    }
                }
            }

            fn scan_events(&self, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()> {
                if after == u64::MAX {
                    return Ok(());
                }
                match thread {
                    None => {
                        let table = self.table(EVENTS)?;
                        for entry in table.range((after + 1)..).or_storage()? {
                            let (k, v) = entry.or_storage()?;
                            let event: EventRec = decode(v.value())?;
                            if visit(k.value(), event.thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                    Some(thread) => {
                        let table = self.table(THREAD_EVENTS)?;
                        let range = (thread, after + 1)..=(thread, u64::MAX);
                        for entry in table.range(range).or_storage()? {
                            let (k, _) = entry.or_storage()?;
                            if visit(k.value().1, thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                }
                Ok(())
            }

            fn presences(&self, identity: Option<&str>) -> Result<Vec<PresenceRec>> {
                coordination::presences(&self.table(PRESENCE)?, identity)
            }

            fn leases(&self) -> Result<Vec<LeaseRec>> {
                coordination::leases(&self.table(LEASES)?)
            }

            fn lease(&self, id: u64) -> Result<Option<LeaseRec>> {
                coordination::lease(&self.table(LEASES)?, id)
            }

            fn artifact(&self, digest: &[u8; 32]) -> Result<Option<ArtifactRec>> {
                artifacts::artifact(&self.table(ARTIFACTS)?, digest)
            }

            fn has_artifact(&self, digest: &[u8; 32]) -> Result<bool> {
                artifacts::has_artifact(&self.table(ARTIFACTS)?, digest)
            }

            fn imported_claim(&self, realm: &str, claim: &str) -> Result<Option<u64>> {
                Ok(self
                    .table(IMPORTS)?
                    .get((realm, claim))
                    .or_storage()?
                    .map(|v| v.value()))
            }
        }
    };
}

/// The next `(position, thread)` of one state's thread list.
fn next_spot(range: &mut redb::Range<'_, (u8, u64), u64>) -> Result<Option<(u64, u64)>> {
    match range.next() {
        Some(entry) => {
            let (k, v) = entry.or_storage()?;
            Ok(Some((k.value().1, v.value())))
        }
        None => Ok(None),
    }
}

impl_read!(Snapshot);
impl_read!(Writer<'_>);

//! The reads of a snapshot and of a writer, written once for both.

use super::*;
use crate::store::redb_error::OrStorage;

/// One implementation of the reads for snapshots and writers alike.
macro_rules! impl_read {
    ($ty:ty) => {
        impl ReadTx for $ty {
            fn last_id(&self, kind: IdKind) -> Result<u64> {
                let last = match kind {
                    // Each thread's record is the last key of its range.
                    IdKind::Thread => self
                        .table(MESSAGES)?
                        .last()
                        .or_storage()?
                        .map(|(k, _)| k.value().0),
                    IdKind::Message => Some(blocks::last(&self.table(PLACES)?)?),
                    IdKind::Claim => self
                        .table(CLAIMS)?
                        .last()
                        .or_storage()?
                        .map(|(k, _)| k.value()),
                    IdKind::Event => self
                        .table(EVENTS)?
                        .last()
                        .or_storage()?
                        .map(|(k, _)| k.value()),
                };
                Ok(last.unwrap_or(0))
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
                let table = self.table(IDENTITIES)?;
                let mut out = Vec::new();
                for entry in table.iter().or_storage()? {
                    let (k, v) = entry.or_storage()?;
                    out.push((k.value().to_string(), decode(v.value())?));
                }
                Ok(out)
            }

            fn thread(&self, id: u64) -> Result<Option<ThreadRec>> {
                self.thread_record(id)
            }

            fn message(&self, id: u64) -> Result<Option<MessageRec>> {
                let Some(place) = blocks::place(&self.table(PLACES)?, id)? else {
                    return Ok(None);
                };
                let table = self.table(MESSAGES)?;
                let found = match table.get((place.thread, id)).or_storage()? {
                    Some(guard) => Some(codec::decode(guard.value())?),
                    None => None,
                };
                Ok(found)
            }

            fn thread_messages(&self, thread: u64, expected: usize) -> Result<Vec<MessageRec>> {
                let table = self.table(MESSAGES)?;
                // Sized once: grown by doubling, a long thread's list is copied and
                // freed several times over, and glibc sweeps its small free chunks
                // at each large free.
                let mut out = Vec::with_capacity(expected.min(1 << 16));
                for entry in table
                    .range((thread, 0)..(thread, THREAD_RECORD))
                    .or_storage()?
                {
                    out.push(codec::decode(entry.or_storage()?.1.value())?);
                }
                Ok(out)
            }

            fn thread_heads(&self, thread: u64, expected: usize) -> Result<Vec<MessageHead>> {
                let table = self.table(MESSAGES)?;
                let mut out = Vec::with_capacity(expected.min(1 << 16));
                for entry in table
                    .range((thread, 0)..(thread, THREAD_RECORD))
                    .or_storage()?
                {
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
                let table = self.table(INDEX)?;
                let (lo, hi) = (key::write(identity, 0), key::write(identity, u64::MAX));
                let mut out = Vec::new();
                for entry in table.range(lo.as_slice()..=hi.as_slice()).or_storage()? {
                    let at = entry.or_storage()?.1.value() as i64;
                    if at >= since {
                        out.push(at);
                    }
                }
                out.sort_unstable();
                Ok(out)
            }

            fn scan_turns(&self, identity: &str, after: u64, visit: Visit<'_>) -> Result<()> {
                let table = self.table(INDEX)?;
                let (lo, hi) = (
                    key::turn(identity, after.saturating_add(1)),
                    key::turn(identity, u64::MAX),
                );
                for entry in table.range(lo.as_slice()..=hi.as_slice()).or_storage()? {
                    let (k, v) = entry.or_storage()?;
                    if visit(key::tail(k.value()), v.value())? == Flow::Stop {
                        break;
                    }
                }
                Ok(())
            }

            fn scan_activity(
                &self,
                state: Option<State>,
                after: u64,
                visit: Visit<'_>,
            ) -> Result<()> {
                // Each thread sits once, under its state. The whole list is the
                // merge of the per-state lists, each already in position order,
                // then the threads of the word index's tail, all after them (see
                // `activity`).
                let table = self.table(PLACES)?;
                let merged = self.merged_mark()?;
                let states: Vec<State> = match state {
                    Some(s) => vec![s],
                    None => State::FORWARD.into_iter().chain(State::SIDE).collect(),
                };
                let mut lists = Vec::with_capacity(states.len());
                for s in states {
                    let mut cursor = activity::Cursor::new(&table, s.code(), after)?;
                    let head = cursor.next()?;
                    lists.push((cursor, head));
                }
                loop {
                    let Some(i) = (0..lists.len())
                        .filter(|i| lists[*i].1.is_some())
                        .min_by_key(|i| lists[*i].1.map(|(pos, _)| pos))
                    else {
                        break;
                    };
                    let (pos, thread) = lists[i].1.take().expect("chosen for its head");
                    if visit(pos, thread)? == Flow::Stop {
                        return Ok(());
                    }
                    lists[i].1 = lists[i].0.next()?;
                }
                // A thread's record changes only with a post to it, so its latest
                // message here is its position; its state is read only to filter.
                for (pos, thread) in activity::tail_threads(&table, after.max(merged))? {
                    if let Some(s) = state {
                        if self.thread(thread)?.is_none_or(|rec| rec.state != s) {
                            continue;
                        }
                    }
                    if visit(pos, thread)? == Flow::Stop {
                        break;
                    }
                }
                Ok(())
            }

            fn search_words(&self, words: &[String], before: u64, visit: Visit<'_>) -> Result<()> {
                let merged = crate::store::words::merged_through(&self.table(META)?)?;
                let last = self.last_id(IdKind::Message)?;
                let tables = crate::store::words::Tables {
                    blocks: &self.table(WORD_BLOCKS)?,
                    places: &self.table(PLACES)?,
                    messages: &self.table(MESSAGES)?,
                    merged,
                    last,
                    tail: self.tail_messages(merged, last),
                };
                crate::store::words::search(tables, words, before, &mut |m, t| {
                    Ok(visit(m, t)? == Flow::Continue)
                })
            }

            fn remembered(
                &self,
                identity: &str,
                key: &str,
            ) -> Result<Option<(Remembered, MessageRec)>> {
                let record = key::idempotency(identity, key);
                // The tail's posts first: they are the newest (see `super::tail`).
                if let Some(id) = self.tail_key(&record) {
                    if let Some(message) = self.message(id)? {
                        let holds = message.identity == identity
                            && message.key.as_ref().is_some_and(|k| k.key == key);
                        if holds {
                            return Ok(Remembered::of(&message).map(|post| (post, message)));
                        }
                    }
                }
                if !self.index_may_hold(&record) {
                    return Ok(None);
                }
                let found = self
                    .table(INDEX)?
                    .get(record.as_slice())
                    .or_storage()?
                    .map(|v| v.value());
                let Some(id) = found else {
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
                let from = after.saturating_add(1);
                match thread {
                    None => blocks::scan(&self.table(PLACES)?, after, |id, place| {
                        Ok(visit(id, place.thread)? == Flow::Continue)
                    })?,
                    Some(thread) => {
                        let table = self.table(MESSAGES)?;
                        for entry in table
                            .range((thread, from)..(thread, THREAD_RECORD))
                            .or_storage()?
                        {
                            let (k, _) = entry.or_storage()?;
                            if visit(k.value().1, thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                }
                Ok(())
            }

            fn scan_events(&self, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()> {
                let from = after.saturating_add(1);
                match thread {
                    None => {
                        let table = self.table(EVENTS)?;
                        for entry in table.range(from..).or_storage()? {
                            let (k, v) = entry.or_storage()?;
                            let event: EventRec = decode(v.value())?;
                            if visit(k.value(), event.thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                    Some(thread) => {
                        let table = self.table(INDEX)?;
                        let (lo, hi) = (
                            key::thread_event(thread, from),
                            key::thread_event(thread, u64::MAX),
                        );
                        for entry in table.range(lo.as_slice()..=hi.as_slice()).or_storage()? {
                            let (k, _) = entry.or_storage()?;
                            if visit(key::tail(k.value()), thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                }
                Ok(())
            }

            fn presences(
                &self,
                identity: Option<&str>,
            ) -> Result<Vec<crate::store::records::PresenceRec>> {
                super::coordination::presences(&self.table(PRESENCE)?, identity)
            }

            fn leases(&self) -> Result<Vec<crate::store::records::LeaseRec>> {
                super::coordination::leases(&self.table(LEASES)?)
            }

            fn lease(&self, id: u64) -> Result<Option<crate::store::records::LeaseRec>> {
                super::coordination::lease(&self.table(LEASES)?, id)
            }

            fn artifact(
                &self,
                digest: &[u8; 32],
            ) -> Result<Option<crate::store::records::ArtifactRec>> {
                super::artifacts::artifact(&self.table(ARTIFACTS)?, digest)
            }

            fn has_artifact(&self, digest: &[u8; 32]) -> Result<bool> {
                super::artifacts::has_artifact(&self.table(ARTIFACTS)?, digest)
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

impl_read!(Snapshot<'_>);
impl_read!(Writer<'_>);

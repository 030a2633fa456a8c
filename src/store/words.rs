//! The word index of `search` (SPEC §14.4), kept cheap to write.
//!
//! Per word, blocks of (message, thread) pairs in message order ([`WORD_BLOCKS`]).
//! Posts do not write them one by one: the messages after
//! `words_merged_through` (in [`META`]) are the index's tail, and the post whose
//! message makes that tail [`MERGE_AT`] long merges it, in its own transaction,
//! rewriting one block per distinct word of the batch instead of one entry per
//! word of every post. A search reads the blocks and scans the tail (at most
//! [`MERGE_AT`] messages), so it sees every committed message. The tail's bodies
//! come from the store's memory when it holds them for the search's view, and
//! from the tables otherwise (`super::word_tail`); so do the merge's.
//!
//! A search walks its words' postings newest first and meets them in the middle
//! ("zig-zag"): each step asks every word for its newest message at or before a
//! candidate, and the candidate drops to the lowest answer, so the steps are
//! bounded by the postings of the rarest word.

use crate::store::redb_error::OrStorage;
use std::collections::HashMap;
use std::sync::Arc;

use redb::ReadableTable;

use super::blocks;
use super::codec;
use super::tables::{MESSAGES, META, PLACES, WORD_BLOCKS};
use super::word_tail::TailMessage;
use crate::error::{Error, Result};
use crate::protocol::words;

/// The longest tail: the post that makes it this long merges it.
pub(super) const MERGE_AT: u64 = 1024;
/// The [`META`] key of the merged part's end.
pub(super) const MERGED: &str = "words_merged_through";
/// Pairs a block holds before a new one starts.
const BLOCK_PAIRS: usize = 128;

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        n |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

fn damaged() -> Error {
    Error::storage("a block of the word index is unreadable".into())
}

/// A block: its pairs as varints, message ids delta-coded from the block's key.
pub(super) fn decode_block(first: u64, bytes: &[u8]) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let (mut at, mut msg) = (0, first);
    while at < bytes.len() {
        let delta = read_varint(bytes, &mut at).ok_or_else(damaged)?;
        let thread = read_varint(bytes, &mut at).ok_or_else(damaged)?;
        msg = msg.checked_add(delta).ok_or_else(damaged)?;
        out.push((msg, thread));
    }
    Ok(out)
}

fn encode_block(first: u64, pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs.len() * 4);
    let mut prev = first;
    for &(msg, thread) in pairs {
        varint(&mut out, msg - prev);
        varint(&mut out, thread);
        prev = msg;
    }
    out
}

/// Where the merged part of the index ends, as committed.
pub(super) fn merged_through(meta: &impl ReadableTable<&'static str, u64>) -> Result<u64> {
    Ok(meta.get(MERGED).or_storage()?.map_or(0, |v| v.value()))
}

/// Visits the tail's messages `(message, thread, body)` with ids in `(after, upto]`,
/// in id order; each body is read in place.
fn tail(
    places: &impl ReadableTable<(u8, u64), &'static [u8]>,
    messages: &impl ReadableTable<(u64, u64), &'static [u8]>,
    after: u64,
    upto: u64,
    mut visit: impl FnMut(u64, u64, &str),
) -> Result<()> {
    if upto <= after {
        return Ok(());
    }
    blocks::scan(places, after, |id, place| {
        if id > upto {
            return Ok(false);
        }
        if let Some(rec) = messages.get((place.thread, id)).or_storage()? {
            visit(id, place.thread, codec::body(rec.value())?);
        }
        Ok(true)
    })
}

/// The messages `(after, upto]` with their bodies, in id order, for the store's
/// memory (`super::word_tail`).
pub(super) fn tail_messages(
    txn: &redb::WriteTransaction,
    after: u64,
    upto: u64,
) -> Result<Vec<TailMessage>> {
    let places = txn.open_table(PLACES).or_storage()?;
    let messages = txn.open_table(MESSAGES).or_storage()?;
    let mut out = Vec::new();
    tail(&places, &messages, after, upto, |id, thread, body| {
        out.push((id, thread, Arc::from(body)));
    })?;
    Ok(out)
}

/// Whether the post of message `message` merges the tail after `merged`: the
/// post whose message makes the tail [`MERGE_AT`] long.
pub(super) fn due(merged: u64, message: u64) -> bool {
    message.saturating_sub(merged) >= MERGE_AT
}

/// Each word's postings `(message, thread)`, ascending.
pub(super) type ByWord = HashMap<String, Vec<(u64, u64)>, foldhash::fast::RandomState>;

/// Moves the messages `(after, upto]` into the blocks, and records `upto` as merged.
pub(super) fn merge(txn: &redb::WriteTransaction, after: u64, upto: u64) -> Result<()> {
    let by_word = collect(txn, after, upto)?;
    write(txn, by_word, upto)
}

/// The postings of the messages `(after, upto]`, read from their bodies.
pub(super) fn collect(txn: &redb::WriteTransaction, after: u64, upto: u64) -> Result<ByWord> {
    let mut by_word = ByWord::default();
    let places = txn.open_table(PLACES).or_storage()?;
    let messages = txn.open_table(MESSAGES).or_storage()?;
    let mut lower = String::new();
    tail(&places, &messages, after, upto, |id, thread, body| {
        add_postings(&mut by_word, id, thread, body, &mut lower);
    })?;
    Ok(by_word)
}

/// Adds message `id` of `thread` to the postings of each word of `body`, after
/// every message before it; `lower` takes the lowercased body.
pub(super) fn add_postings(
    by_word: &mut ByWord,
    id: u64,
    thread: u64,
    body: &str,
    lower: &mut String,
) {
    // A body's words in order, repeats included: a word's list ends with the
    // message already when it repeats there, which keeps each list distinct
    // without sorting every body's words.
    // foldhash (hashbrown's default hasher), not SipHash: hashing the words was a
    // third of the merge. Its seed is random per process, and the map's order
    // never leaves the store (`write` sorts the words), so a writer cannot read
    // the seed back to craft colliding words.
    words::for_each_word(body, lower, |w| match by_word.get_mut(w) {
        Some(pairs) => {
            if pairs.last().map(|p| p.0) != Some(id) {
                pairs.push((id, thread));
            }
        }
        None => {
            by_word.insert(w.to_string(), vec![(id, thread)]);
        }
    });
}

/// Writes `by_word`, the postings of the messages through `upto` after the merged
/// mark, into the blocks, and records `upto` as merged.
pub(super) fn write(txn: &redb::WriteTransaction, by_word: ByWord, upto: u64) -> Result<()> {
    // In word order: neighbouring blocks then share the tree's pages.
    let mut by_word: Vec<(String, Vec<(u64, u64)>)> = by_word.into_iter().collect();
    by_word.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut blocks = txn.open_table(WORD_BLOCKS).or_storage()?;
    for (word, pairs) in by_word {
        let last = blocks
            .range((word.as_str(), 0)..=(word.as_str(), u64::MAX))
            .or_storage()?
            .next_back()
            .transpose()
            .or_storage()?
            .map(|(k, v)| (k.value().1, v.value().to_vec()));
        let mut rest = pairs.as_slice();
        if let Some((first, bytes)) = last {
            let mut held = decode_block(first, &bytes)?;
            if held.len() < BLOCK_PAIRS {
                let take = (BLOCK_PAIRS - held.len()).min(rest.len());
                held.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                blocks
                    .insert(
                        (word.as_str(), first),
                        encode_block(first, &held).as_slice(),
                    )
                    .or_storage()?;
            }
        }
        for chunk in rest.chunks(BLOCK_PAIRS) {
            let first = chunk[0].0;
            blocks
                .insert(
                    (word.as_str(), first),
                    encode_block(first, chunk).as_slice(),
                )
                .or_storage()?;
        }
    }
    drop(blocks);
    txn.open_table(META)
        .or_storage()?
        .insert(MERGED, upto)
        .or_storage()?;
    Ok(())
}

/// One word's postings as a search walks them.
struct Postings<'w> {
    word: &'w str,
    /// Tail messages holding the word, ascending.
    tail: Vec<(u64, u64)>,
}

/// The tables a search reads.
pub(super) struct Tables<'t, B, P, M> {
    pub(super) blocks: &'t B,
    pub(super) places: &'t P,
    pub(super) messages: &'t M,
    /// The end of the merged part, and the last message.
    pub(super) merged: u64,
    pub(super) last: u64,
    /// The tail's messages, when the store's memory holds them for this view
    /// (`super::word_tail`); otherwise they are read from the tables.
    pub(super) tail: Option<Vec<TailMessage>>,
}

/// Fills each word's postings of the tail: from memory when the tables came with
/// its messages, else read from the tables (at most [`MERGE_AT`] messages).
fn tail_postings<B, P, M>(t: &mut Tables<'_, B, P, M>, lists: &mut [Postings<'_>]) -> Result<()>
where
    P: ReadableTable<(u8, u64), &'static [u8]>,
    M: ReadableTable<(u64, u64), &'static [u8]>,
{
    let mut lower = String::new();
    if let Some(held) = t.tail.take() {
        for (id, thread, body) in &held {
            match_tail(lists, *id, *thread, body, &mut lower);
        }
        return Ok(());
    }
    tail(
        t.places,
        t.messages,
        t.merged,
        t.last,
        |id, thread, body| match_tail(lists, id, thread, body, &mut lower),
    )
}

/// Adds tail message `id` of `thread` to every word's list when its body holds
/// every word: a message that lacks one is no answer, so no list needs it.
/// `lower` takes the lowercased body.
fn match_tail(lists: &mut [Postings<'_>], id: u64, thread: u64, body: &str, lower: &mut String) {
    words::lowercase_into(body, lower);
    // A substring test rules most messages out before the body is split.
    if !lists.iter().all(|l| lower.contains(l.word)) {
        return;
    }
    let held = words::distinct(body);
    if lists
        .iter()
        .all(|l| held.binary_search_by(|w| w.as_str().cmp(l.word)).is_ok())
    {
        for list in lists.iter_mut() {
            list.tail.push((id, thread));
        }
    }
}

/// Messages holding every one of `words` (distinct), newest first, below
/// `before`: `visit` gets `(message, thread)` and says whether to go on.
pub(super) fn search<B, P, M>(
    mut t: Tables<'_, B, P, M>,
    query: &[String],
    before: u64,
    visit: &mut dyn FnMut(u64, u64) -> Result<bool>,
) -> Result<()>
where
    B: ReadableTable<(&'static str, u64), &'static [u8]>,
    P: ReadableTable<(u8, u64), &'static [u8]>,
    M: ReadableTable<(u64, u64), &'static [u8]>,
{
    if query.is_empty() || before == 0 {
        return Ok(());
    }
    let mut lists: Vec<Postings<'_>> = query
        .iter()
        .map(|w| Postings {
            word: w.as_str(),
            tail: Vec::new(),
        })
        .collect();
    tail_postings(&mut t, &mut lists)?;
    let newest = |list: &Postings<'_>, upto: u64| -> Result<Option<(u64, u64)>> {
        let from_tail = match list.tail.partition_point(|&(m, _)| m <= upto) {
            0 => None,
            i => Some(list.tail[i - 1]),
        };
        if from_tail.is_some() {
            // The tail is newer than every block.
            return Ok(from_tail);
        }
        let word = list.word;
        match t
            .blocks
            .range((word, 0)..=(word, upto))
            .or_storage()?
            .next_back()
        {
            None => Ok(None),
            Some(entry) => {
                let (k, v) = entry.or_storage()?;
                let pairs = decode_block(k.value().1, v.value())?;
                let i = pairs.partition_point(|&(m, _)| m <= upto);
                Ok((i > 0).then(|| pairs[i - 1]))
            }
        }
    };
    let mut upto = before - 1;
    'next: loop {
        let mut candidate = upto;
        let mut thread = 0;
        let mut agreed = 0;
        // Ask each word in turn until all agree on one message.
        let mut i = 0;
        while agreed < lists.len() {
            let Some((msg, th)) = newest(&lists[i], candidate)? else {
                break 'next;
            };
            if msg == candidate {
                agreed += 1;
            } else {
                candidate = msg;
                agreed = 1;
            }
            thread = th;
            i = (i + 1) % lists.len();
        }
        if !visit(candidate, thread)? || candidate == 0 {
            return Ok(());
        }
        upto = candidate - 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_and_a_cut_one_is_damage() {
        let pairs = [(5, 1), (6, 1), (300, 2), (1 << 40, 9)];
        assert_eq!(
            decode_block(5, &encode_block(5, &pairs)).unwrap(),
            pairs.to_vec()
        );
        assert!(decode_block(0, &[0x80]).is_err(), "a cut varint is damage");
    }
}

//! The word index of `search` (SPEC §14.4), as segments merged later, the way
//! SQLite's FTS5 and tantivy keep theirs.
//!
//! Each indexed post appends one segment to [`WORD_SEGMENTS`], keyed by its
//! message: the thread and the message's distinct words, sorted. That is one
//! insert at the right-most leaf per post. When [`MERGE_AT`] segments are
//! waiting, the post that adds the last one merges them, in its own
//! transaction: one block per distinct word goes to [`WORDS`], keyed (word, the
//! block's last message), and the segments are removed. Every segment is newer
//! than every block.
//!
//! A search walks its words' postings newest first and meets them in the middle
//! ("zig-zag"): each step asks every word for its newest message at or before a
//! candidate, and the candidate drops to the lowest answer, so the steps are
//! bounded by the postings of the rarest word.

use redb::{ReadableTable, ReadableTableMetadata};

use super::open::OrStorage;
use super::tables::{WORDS, WORD_SEGMENTS};
use crate::error::{Error, Result};
use crate::protocol::words;

/// Segments waiting before a merge: a search reads at most this many.
pub(super) const MERGE_AT: u64 = 256;

fn damaged() -> Error {
    Error::storage("an entry of the word index is unreadable".into())
}

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

/// A segment: the thread (`u64`), the number of words (`u32`), the end of each
/// word (`u32` offsets into what follows), then the words, sorted, back to back.
fn encode_segment(thread: u64, sorted: &[&str]) -> Vec<u8> {
    let len: usize = sorted.iter().map(|w| w.len()).sum();
    let mut out = Vec::with_capacity(12 + 4 * sorted.len() + len);
    out.extend_from_slice(&thread.to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    let mut end = 0u32;
    for w in sorted {
        end += w.len() as u32;
        out.extend_from_slice(&end.to_le_bytes());
    }
    for w in sorted {
        out.extend_from_slice(w.as_bytes());
    }
    out
}

/// A segment read in place: its thread and its sorted words.
struct Segment<'a> {
    thread: u64,
    ends: &'a [u8],
    words: &'a [u8],
}

impl<'a> Segment<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Self> {
        let thread = u64::from_le_bytes(bytes.get(..8).ok_or_else(damaged)?.try_into().unwrap());
        let n = u32::from_le_bytes(bytes.get(8..12).ok_or_else(damaged)?.try_into().unwrap());
        let table_end = 12 + 4 * n as usize;
        let ends = bytes.get(12..table_end).ok_or_else(damaged)?;
        let words = &bytes[table_end..];
        let segment = Segment {
            thread,
            ends,
            words,
        };
        if segment.end(n as usize) != Some(words.len()) {
            return Err(damaged());
        }
        Ok(segment)
    }

    fn len(&self) -> usize {
        self.ends.len() / 4
    }

    /// Where word `i` ends; word 0 starts at 0 (`end(0)` is 0).
    fn end(&self, i: usize) -> Option<usize> {
        if i == 0 {
            return Some(0);
        }
        let at = 4 * (i - 1);
        Some(u32::from_le_bytes(self.ends.get(at..at + 4)?.try_into().ok()?) as usize)
    }

    fn word(&self, i: usize) -> Result<&'a [u8]> {
        let (start, end) = (self.end(i), self.end(i + 1));
        match (start, end) {
            (Some(s), Some(e)) if s <= e => self.words.get(s..e).ok_or_else(damaged),
            _ => Err(damaged()),
        }
    }

    fn holds(&self, word: &str) -> Result<bool> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.word(mid)?.cmp(word.as_bytes()) {
                std::cmp::Ordering::Equal => return Ok(true),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok(false)
    }
}

/// A block of postings: (message, thread) pairs, ascending, each message as its
/// distance from the one before (from 0), as varints.
fn encode_block(pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs.len() * 4);
    let mut prev = 0;
    for &(msg, thread) in pairs {
        varint(&mut out, msg - prev);
        varint(&mut out, thread);
        prev = msg;
    }
    out
}

fn decode_block(bytes: &[u8]) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let (mut at, mut msg) = (0, 0u64);
    while at < bytes.len() {
        let delta = read_varint(bytes, &mut at).ok_or_else(damaged)?;
        let thread = read_varint(bytes, &mut at).ok_or_else(damaged)?;
        msg = msg.checked_add(delta).ok_or_else(damaged)?;
        out.push((msg, thread));
    }
    Ok(out)
}

/// A sample segment and block, for the format's fingerprint.
#[cfg(test)]
pub(super) fn segment_sample() -> Vec<u8> {
    let mut out = encode_segment(7, &["port", "which"]);
    out.extend(encode_block(&[(3, 1), (200, 7)]));
    out
}

/// Whether `bytes` decode as a segment (for `check`).
pub(super) fn check_segment(bytes: &[u8]) -> Result<()> {
    let s = Segment::parse(bytes)?;
    for i in 0..s.len() {
        std::str::from_utf8(s.word(i)?).map_err(|_| damaged())?;
    }
    Ok(())
}

/// Whether `bytes` decode as a block (for `check`).
pub(super) fn check_block(bytes: &[u8]) -> Result<()> {
    decode_block(bytes).map(|_| ())
}

/// Indexes message `id` of `thread` with `body`, in `txn`, and merges the
/// segments when [`MERGE_AT`] are waiting.
pub(super) fn index(txn: &redb::WriteTransaction, id: u64, thread: u64, body: &str) -> Result<()> {
    let mut owned = Vec::new();
    words::for_each_distinct(body, |w| owned.push(w.to_owned()));
    let sorted: Vec<&str> = owned.iter().map(String::as_str).collect();
    let mut segments = txn.open_table(WORD_SEGMENTS).or_storage()?;
    segments
        .insert(id, encode_segment(thread, &sorted).as_slice())
        .or_storage()?;
    if segments.len().or_storage()? >= MERGE_AT {
        drop(segments);
        merge(txn)?;
    }
    Ok(())
}

/// Moves every segment into the blocks: one new block per distinct word.
fn merge(txn: &redb::WriteTransaction) -> Result<()> {
    let mut by_word: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    let mut segments = txn.open_table(WORD_SEGMENTS).or_storage()?;
    for entry in segments.iter().or_storage()? {
        let (k, v) = entry.or_storage()?;
        let s = Segment::parse(v.value())?;
        for i in 0..s.len() {
            let word = std::str::from_utf8(s.word(i)?).map_err(|_| damaged())?;
            match by_word.get_mut(word) {
                Some(pairs) => pairs.push((k.value(), s.thread)),
                None => {
                    by_word.insert(word.to_owned(), vec![(k.value(), s.thread)]);
                }
            }
        }
    }
    segments.retain(|_, _| false).or_storage()?;
    let mut blocks = txn.open_table(WORDS).or_storage()?;
    for (word, pairs) in by_word {
        let last = pairs.last().map_or(0, |p| p.0);
        blocks
            .insert((word.as_str(), last), encode_block(&pairs).as_slice())
            .or_storage()?;
    }
    Ok(())
}

/// Visits the messages below `before` whose bodies hold every one of `words`
/// (distinct), newest first, as `(message, thread)`, until `visit` says stop.
pub(super) fn search(
    segments: &impl ReadableTable<u64, &'static [u8]>,
    blocks: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    words: &[String],
    before: u64,
    visit: &mut dyn FnMut(u64, u64) -> Result<bool>,
) -> Result<()> {
    if words.is_empty() || before == 0 {
        return Ok(());
    }
    // The segments' postings of each word, oldest first.
    let mut fresh: Vec<Vec<(u64, u64)>> = vec![Vec::new(); words.len()];
    for entry in segments.range(..before).or_storage()? {
        let (k, v) = entry.or_storage()?;
        let s = Segment::parse(v.value())?;
        for (i, word) in words.iter().enumerate() {
            if s.holds(word)? {
                fresh[i].push((k.value(), s.thread));
            }
        }
    }
    let mut lists = Vec::with_capacity(words.len());
    for (word, pending) in words.iter().zip(fresh) {
        let range = blocks
            .range((word.as_str(), 0)..=(word.as_str(), u64::MAX))
            .or_storage()?;
        lists.push(PostingsOf {
            pending,
            blocks: range,
        });
    }
    let mut at = before - 1;
    loop {
        let mut heads = Vec::with_capacity(lists.len());
        for list in &mut lists {
            match list.seek(at)? {
                Some(head) => heads.push(head),
                None => return Ok(()),
            }
        }
        let low = heads.iter().map(|h| h.0).min().expect("one word at least");
        if heads.iter().all(|h| h.0 == low) {
            if !visit(low, heads[0].1)? || low == 0 {
                return Ok(());
            }
            at = low - 1;
        } else {
            at = low;
        }
    }
}

/// One word's postings, newest first: the segments', then the blocks'.
struct PostingsOf<'t> {
    /// Postings read and not passed yet, oldest first (the next is the last).
    pending: Vec<(u64, u64)>,
    blocks: redb::Range<'t, (&'static str, u64), &'static [u8]>,
}

impl PostingsOf<'_> {
    /// The newest posting at or before message `at`.
    fn seek(&mut self, at: u64) -> Result<Option<(u64, u64)>> {
        loop {
            while let Some(&(msg, thread)) = self.pending.last() {
                if msg <= at {
                    return Ok(Some((msg, thread)));
                }
                self.pending.pop();
            }
            match self.blocks.next_back() {
                None => return Ok(None),
                Some(entry) => self.pending = decode_block(entry.or_storage()?.1.value())?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_and_blocks_round_trip_and_refuse_damage() {
        let bytes = encode_segment(9, &["a", "port", "which"]);
        let s = Segment::parse(&bytes).unwrap();
        assert_eq!(s.thread, 9);
        for w in ["a", "port", "which"] {
            assert!(s.holds(w).unwrap(), "{w}");
        }
        assert!(!s.holds("b").unwrap());
        for cut in 0..bytes.len() {
            assert!(check_segment(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let pairs = [(1, 1), (5, 2), (300, 1)];
        assert_eq!(decode_block(&encode_block(&pairs)).unwrap(), pairs);
        assert!(decode_block(&[0x80]).is_err());
    }
}

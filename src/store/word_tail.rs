//! The word index's tail in memory, which a redb store holds with the tail's key
//! records (`super::tail`): the bodies of the messages after the merged mark
//! (`words_merged_through`, see `super::words`).
//!
//! Without it, every search read each body of the tail from the file, and so did
//! the merge, once more. The reads made a longer tail cost every search, while a
//! longer tail makes posts cheaper, since a merge's costs are shared by more posts
//! (measured in `docs/decisions/0003-word-index.md`).
//!
//! What holds, and what the code keeps:
//! - A loaded [`WordTail`] whose `after` is the committed merged mark holds the
//!   body of every committed message after that mark, in id order. A post's body
//!   joins the writer's [`WordDelta`] when its message is stored. The store takes
//!   the delta only when the transaction commits, under the tail's lock, as it
//!   takes the key records. A failed commit or a reopen leaves the tail to be
//!   loaded again from the file.
//! - A snapshot trusts the tail only when it gets the lock without waiting, no
//!   reopen has made the tail stale, and the tail follows the snapshot's own
//!   merged mark. Ids grow in commit order, so the tail's messages up to the
//!   snapshot's last one are then exactly the snapshot's tail. It takes them (the
//!   bodies are shared, not copied) and lets go of the lock before it reads them.
//!   In any other case it reads the tail from its own tables.

use std::sync::Arc;

use super::words::{add_postings, ByWord};

/// One message of the tail: `(id, thread, body)`.
pub(super) type TailMessage = (u64, u64, Arc<str>);

/// The messages after `after`, as of the last commit.
#[derive(Debug, Default)]
pub(super) struct WordTail {
    after: u64,
    messages: Vec<TailMessage>,
}

impl WordTail {
    /// The tail after the merged mark `after`: `messages`, in id order.
    pub(super) fn new(after: u64, messages: Vec<TailMessage>) -> WordTail {
        WordTail { after, messages }
    }

    /// The tail's messages through `last`, for a view whose merged mark is
    /// `merged`; `None` when this tail follows another mark.
    pub(super) fn through(&self, merged: u64, last: u64) -> Option<Vec<TailMessage>> {
        if self.after != merged {
            return None;
        }
        let end = self.messages.partition_point(|m| m.0 <= last);
        Some(self.messages[..end].to_vec())
    }
}

/// One write transaction's changes to the tail.
#[derive(Debug, Default)]
pub(super) struct WordDelta {
    /// The messages stored, in id order.
    added: Vec<TailMessage>,
    /// The mark this transaction merged through, if it merged.
    merged: Option<u64>,
}

impl WordDelta {
    /// Message `id` of `thread`, with body `body`, was stored.
    pub(super) fn add(&mut self, id: u64, thread: u64, body: &str) {
        self.added.push((id, thread, Arc::from(body)));
    }

    /// The postings of the tail through `upto` as this transaction sees it (the
    /// committed tail's and its own), for the merge to write; `None` when `tail`
    /// follows another mark than `merged`, and the merge must read the bodies.
    pub(super) fn merge(&mut self, tail: &WordTail, merged: u64, upto: u64) -> Option<ByWord> {
        if tail.after != merged {
            return None;
        }
        let mut by_word = ByWord::default();
        let mut lower = String::new();
        let mine = self.added.iter().filter(|m| m.0 <= upto);
        for (id, thread, body) in tail.messages.iter().chain(mine) {
            add_postings(&mut by_word, *id, *thread, body, &mut lower);
        }
        self.merged = Some(upto);
        Some(by_word)
    }

    /// Applies a committed transaction's changes.
    pub(super) fn apply(self, tail: &mut WordTail) {
        if let Some(merged) = self.merged {
            tail.after = merged;
            tail.messages.retain(|m| m.0 > merged);
        }
        let after = tail.after;
        tail.messages
            .extend(self.added.into_iter().filter(|m| m.0 > after));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(messages: Option<Vec<TailMessage>>) -> Option<Vec<u64>> {
        messages.map(|m| m.iter().map(|m| m.0).collect())
    }

    #[test]
    fn a_delta_reaches_the_tail_only_when_applied() {
        let mut tail = WordTail::default();
        let mut d = WordDelta::default();
        d.add(1, 7, "Port 8080, the port");
        d.add(2, 8, "another port");
        assert_eq!(ids(tail.through(0, 9)), Some(vec![]));
        d.apply(&mut tail);
        assert_eq!(ids(tail.through(0, 9)), Some(vec![1, 2]));
        assert_eq!(
            ids(tail.through(0, 1)),
            Some(vec![1]),
            "a view that ends at message 1 sees no later message"
        );
        assert_eq!(ids(tail.through(5, 9)), None, "another mark");
    }

    #[test]
    fn a_merge_hands_out_the_tail_through_its_mark_and_keeps_what_follows() {
        let mut tail = WordTail::default();
        let mut d = WordDelta::default();
        d.add(1, 1, "alpha beta");
        d.apply(&mut tail);
        let mut d = WordDelta::default();
        d.add(2, 1, "Beta beta");
        d.add(3, 2, "alpha gamma");
        assert!(d.merge(&tail, 1, 2).is_none(), "the tail follows mark 0");
        let merged = d.merge(&tail, 0, 2).unwrap();
        assert_eq!(merged.get("beta"), Some(&vec![(1, 1), (2, 1)]));
        assert_eq!(merged.get("alpha"), Some(&vec![(1, 1)]));
        assert!(!merged.contains_key("gamma"), "message 3 follows the mark");
        assert_eq!(
            ids(tail.through(0, 9)),
            Some(vec![1]),
            "the committed tail is untouched until apply"
        );
        d.apply(&mut tail);
        assert_eq!(ids(tail.through(0, 9)), None);
        assert_eq!(ids(tail.through(2, 9)), Some(vec![3]));
    }
}

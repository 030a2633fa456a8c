//! The guards profile (SPEC §15): loops across agents. Each thread keeps a small
//! state, stored with its record and rewritten by every post in the post's own
//! transaction, so that judging a post reads nothing but the thread:
//!
//! - `since_progress`, the content messages by `llm` authors since the thread's
//!   last progress (its creation, a transition or confirmation, a change of a
//!   claim's status, a message by a person), for `no_progress`;
//! - `recent`, the folded-body hashes of the thread's newest messages with their
//!   authors, for `echoed_body`: exactly the entries the echo rule can still
//!   need, whoever asks (see [`GuardState::remember`] for the bound).

use crate::protocol::acts::Act;
use crate::protocol::records::{GuardState, Recent};
use crate::protocol::words;

/// Whether the guards judge `act` (§15): §4's content acts, `assert`, `attest`
/// and `refute`. The marking acts and `verify` are never refused by them.
pub(crate) fn guarded(act: Act) -> bool {
    act.is_content() || matches!(act, Act::Attest | Act::Refute)
}

/// FNV-1a of an identity: how the echo window keeps its authors. Two identities
/// of one thread hashing alike (odds of 2^-64 a pair) would be taken for one, and
/// each would not be judged against the other's messages.
pub(crate) fn author_hash(identity: &str) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    identity
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash: u64, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(PRIME)
        })
}

/// FNV-1a of the folded body: lowercased (Unicode), every run of characters that
/// are not letters, marks or digits made one space, trimmed. "OK, thanks!" and
/// "ok thanks" fold alike. A stable hash: stored values keep their meaning.
pub(crate) fn folded_hash(body: &str) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |byte: u8| hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
    if body.is_ascii() {
        // The bytes of the general case below in one pass, with no buffer: most
        // bodies are ASCII, and every guarded post folds its body.
        let (mut started, mut gap) = (false, false);
        for &byte in body.as_bytes() {
            if byte.is_ascii_alphanumeric() {
                if gap {
                    mix(b' ');
                    gap = false;
                }
                mix(byte.to_ascii_lowercase());
                started = true;
            } else {
                gap = started;
            }
        }
        return hash;
    }
    let mut first = true;
    let mut buf = String::new();
    words::for_each_word(body, &mut buf, |w| {
        if !first {
            mix(b' ');
        }
        first = false;
        w.bytes().for_each(&mut mix);
    });
    hash
}

impl GuardState {
    /// The newest of the last `window` messages by identities other than
    /// `identity` whose folded body hashes to `hash`, if any.
    pub(crate) fn echoes(&self, identity: &str, hash: u64, window: usize) -> Option<&Recent> {
        let author = author_hash(identity);
        self.recent
            .iter()
            .filter(|r| r.author != author)
            .take(window)
            .find(|r| r.hash == hash)
    }

    /// Counts a message that made no progress, or restarts the count after one
    /// that did (§15). Only content messages by `llm` authors are counted.
    pub(crate) fn count(&mut self, act: Act, human: bool, progress: bool) {
        if human || progress {
            self.since_progress = 0;
        } else if guarded(act) {
            self.since_progress = self.since_progress.saturating_add(1);
        }
    }

    /// Puts a new message at the front of the window and drops what no identity's
    /// echo check can reach any more with a window of `window`.
    ///
    /// The check of identity X reads the first `window` entries not by X. An entry
    /// by Y is kept while, for some X other than Y, fewer than `window` entries
    /// before it are not by X: that is, while `before - max(count of another
    /// identity before it) < window` (an identity absent before it counts 0, so
    /// the first `window` entries always stay). Dropping an entry that no check
    /// reads leaves every check's entries as they were, so the window stays exact
    /// for every identity. Entries kept: at most `2 * window` (the entries before
    /// a kept one are, but for fewer than `window`, by one identity, and of that
    /// identity's own entries only the first `window` can be kept).
    pub(crate) fn remember(&mut self, message: u64, identity: &str, hash: u64, window: usize) {
        self.recent.insert(
            0,
            Recent {
                message,
                author: author_hash(identity),
                hash,
            },
        );
        let mut counts: Vec<(u64, usize)> = Vec::new();
        let mut keep = Vec::with_capacity(self.recent.len());
        for (before, entry) in self.recent.iter().enumerate() {
            let most_other = counts
                .iter()
                .filter(|(id, _)| *id != entry.author)
                .map(|(_, n)| *n)
                .max()
                .unwrap_or(0);
            keep.push(before - most_other < window);
            match counts.iter_mut().find(|(id, _)| *id == entry.author) {
                Some((_, n)) => *n += 1,
                None => counts.push((entry.author, 1)),
            }
        }
        let mut flags = keep.into_iter();
        self.recent.retain(|_| flags.next().unwrap_or(false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bodies_fold_alike_by_case_punctuation_and_spacing() {
        assert_eq!(folded_hash("OK, thanks!"), folded_hash("ok thanks"));
        assert_eq!(
            folded_hash("  Great -- thanks!! "),
            folded_hash("great thanks")
        );
        assert_eq!(folded_hash("Grüße, ÉCOLE"), folded_hash("grüße école"));
        assert_eq!(
            folded_hash("e\u{301}t\u{e9}"),
            folded_hash("E\u{301}T\u{c9}")
        );
        assert_ne!(folded_hash("thanks"), folded_hash("thank you"));
        assert_ne!(folded_hash("ab"), folded_hash("a b"));
        assert_eq!(folded_hash("!!!"), folded_hash(""));
    }

    #[test]
    fn guarded_acts_are_content_acts_and_attest_and_refute() {
        for act in [Act::Ask, Act::Answer, Act::Note, Act::Propose, Act::Object]
            .into_iter()
            .chain([Act::Handoff, Act::Assert, Act::Attest, Act::Refute])
        {
            assert!(guarded(act), "{act:?}");
        }
        for act in [Act::Decide, Act::Mark, Act::Reopen, Act::Verify] {
            assert!(!guarded(act), "{act:?}");
        }
    }

    #[test]
    fn the_count_restarts_on_progress_and_skips_people_and_marks() {
        let mut g = GuardState::default();
        g.count(Act::Note, false, false);
        g.count(Act::Attest, false, false);
        assert_eq!(g.since_progress, 2);
        g.count(Act::Mark, false, false);
        assert_eq!(
            g.since_progress, 2,
            "a mark that changed nothing is not counted"
        );
        g.count(Act::Note, true, false);
        assert_eq!(g.since_progress, 0, "a person's message is progress");
        g.count(Act::Note, false, false);
        g.count(Act::Answer, false, true);
        assert_eq!(g.since_progress, 0, "a transition is progress");
    }

    /// The first `window` messages not by `identity`, newest first, of the whole
    /// history: what the echo rule means.
    fn by_others(history: &[(u64, String)], identity: &str, window: usize) -> Vec<u64> {
        history
            .iter()
            .rev()
            .filter(|(_, id)| id != identity)
            .take(window)
            .map(|(m, _)| *m)
            .collect()
    }

    /// The general case of [`folded_hash`], for any text.
    fn folded_slowly(body: &str) -> u64 {
        let mut words = Vec::new();
        words::for_each_word(body, &mut String::new(), |w| words.push(w.to_string()));
        // A non-ASCII character of no word (a space of another script) forces the
        // general path without changing the words.
        folded_hash(&format!("{}\u{3000}", words.join(" ")))
    }

    proptest! {
        #[test]
        fn ascii_bodies_fold_as_the_general_case_does(body in "[ -~\t\n]{0,60}") {
            prop_assert_eq!(folded_hash(&body), folded_slowly(&body));
        }

        #[test]
        fn the_kept_window_is_exact_for_every_identity_and_bounded(
            authors in proptest::collection::vec(0u8..4, 0..120),
            window in 0usize..10,
        ) {
            let mut g = GuardState::default();
            let mut history = Vec::new();
            for (i, a) in authors.iter().enumerate() {
                let identity = format!("r:{a}");
                g.remember(i as u64, &identity, i as u64, window);
                history.push((i as u64, identity));
                prop_assert!(g.recent.len() <= 2 * window, "{} kept", g.recent.len());
                for x in 0..5u8 {
                    let x = format!("r:{x}");
                    let kept: Vec<u64> = g
                        .recent
                        .iter()
                        .filter(|r| r.author != author_hash(&x))
                        .take(window)
                        .map(|r| r.message)
                        .collect();
                    prop_assert_eq!(kept, by_others(&history, &x, window));
                }
            }
        }
    }

    #[test]
    fn an_echo_is_found_past_the_posters_own_messages() {
        let mut g = GuardState::default();
        g.remember(1, "r:bob", 7, 2);
        for m in 2..40 {
            g.remember(m, "r:alice", 100 + m, 2);
        }
        // Alice's own run does not push bob's message out of her window.
        assert_eq!(g.echoes("r:alice", 7, 2).map(|r| r.message), Some(1));
        assert_eq!(
            g.echoes("r:carol", 7, 2),
            None,
            "carol's window is alice's last two"
        );
        assert_eq!(g.echoes("r:alice", 7, 0), None, "a window of 0 is off");
        assert!(g.recent.len() <= 4);
    }
}

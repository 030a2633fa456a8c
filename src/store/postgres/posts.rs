//! A transaction's posts, written as one statement per table.
//!
//! The server parses, plans and starts every statement it is sent, and for the
//! small statements of a post that cost more than their rows (`docs/performance.md`,
//! "PostgreSQL"). A batch of posts therefore queues its rows here and sends each
//! table's rows together: one `INSERT` of all the messages, one of their words,
//! one upsert of the threads' final records. The inbox and the thread list keep
//! one entry per thread, so a thread posted to several times in one batch needs
//! only the entries it had before the batch removed and the ones it has after it
//! added: the ones in between were never sent.
//!
//! No other statement of a writer touches these tables, and every read of the
//! transaction sends the queue first (`Tx::with`), so no read and no other
//! statement can tell the difference.

use std::collections::BTreeMap;

use super::sql::Stmt;

/// A thread's `(identity, pos)` in `turns` or `(state, pos)` in `activity`: before
/// the batch (what to remove) and after it (what to add).
#[derive(Debug)]
struct Entry<K> {
    before: Option<K>,
    after: Option<K>,
}

/// A thread's turn in `turns`: the awaited identity and the turn-setting message.
type Turn = (String, i64);
/// A thread's place in `activity`: its state's code and its latest message.
type Place = (i64, i64);

/// The rows of the posts queued since the last send.
#[derive(Debug, Default)]
pub(super) struct Posts {
    /// `(id, thread, record)`.
    messages: Vec<(i64, i64, Vec<u8>)>,
    /// `(message, thread, distinct words)`.
    words: Vec<(i64, i64, Vec<String>)>,
    /// Each thread's last record.
    threads: BTreeMap<i64, Vec<u8>>,
    turns: BTreeMap<i64, Entry<Turn>>,
    activity: BTreeMap<i64, Entry<Place>>,
}

/// A thread's entry moves from `before` to `after`; the first post of the batch to
/// the thread says what it was before the batch.
fn note<K>(map: &mut BTreeMap<i64, Entry<K>>, thread: i64, before: Option<K>, after: Option<K>) {
    let entry = map.entry(thread).or_insert(Entry {
        before,
        after: None,
    });
    entry.after = after;
}

impl Posts {
    /// A post: its message, its thread's new record, and the thread's turn and
    /// place in the list before and after it.
    pub(super) fn post(
        &mut self,
        message: (i64, i64, Vec<u8>),
        thread: (i64, Vec<u8>),
        turn: (Option<Turn>, Option<Turn>),
        place: (Option<Place>, Place),
    ) {
        let id = thread.0;
        self.messages.push(message);
        self.threads.insert(id, thread.1);
        note(&mut self.turns, id, turn.0, turn.1);
        note(&mut self.activity, id, place.0, Some(place.1));
    }

    /// A message's distinct words, for the word index.
    pub(super) fn words(&mut self, message: i64, thread: i64, words: Vec<String>) {
        self.words.push((message, thread, words));
    }

    /// Appends the queued rows to `sql` as statements, and forgets them.
    pub(super) fn drain_into(&mut self, sql: &mut String) {
        let posts = std::mem::take(self);
        removals(sql, "turns", "identity", &posts.turns, |s, (who, pos)| {
            s.text(who).sql(", ").int(*pos)
        });
        additions(
            sql,
            "turns",
            "identity, pos, thread",
            &posts.turns,
            |s, t, (who, pos)| s.text(who).sql(", ").int(*pos).sql(", ").int(t),
        );
        removals(
            sql,
            "activity",
            "state",
            &posts.activity,
            |s, (state, pos)| s.int(*state).sql(", ").int(*pos),
        );
        additions(
            sql,
            "activity",
            "state, pos, thread",
            &posts.activity,
            |s, t, (state, pos)| s.int(*state).sql(", ").int(*pos).sql(", ").int(t),
        );
        rows(
            sql,
            "INSERT INTO messages (id, thread, rec) VALUES ",
            &posts.messages,
            "",
            |s, (id, thread, rec)| s.int(*id).sql(", ").int(*thread).sql(", ").bytes(rec),
        );
        rows(
            sql,
            "INSERT INTO threads (id, rec) VALUES ",
            &posts.threads.into_iter().collect::<Vec<_>>(),
            " ON CONFLICT (id) DO UPDATE SET rec = excluded.rec",
            |s, (id, rec)| s.int(*id).sql(", ").bytes(rec),
        );
        rows(
            sql,
            "INSERT INTO message_words (message, thread, words) VALUES ",
            &posts.words,
            "",
            |s, (message, thread, words)| {
                s.int(*message)
                    .sql(", ")
                    .int(*thread)
                    .sql(", ")
                    .texts(words)
            },
        );
    }
}

/// `INSERT … VALUES (…), (…)…` of `items`, each written by `row`; nothing when
/// there are none.
fn rows<T>(
    sql: &mut String,
    head: &str,
    items: &[T],
    tail: &str,
    mut row: impl for<'a> FnMut(Stmt<'a>, &T) -> Stmt<'a>,
) {
    if items.is_empty() {
        return;
    }
    let mut stmt = Stmt::new(sql, head);
    for (i, item) in items.iter().enumerate() {
        stmt = row(stmt.sql(if i == 0 { "(" } else { ", (" }), item).sql(")");
    }
    stmt.sql(tail).end();
}

/// Removes each thread's entry from before the batch, when it changed.
fn removals<K: PartialEq>(
    sql: &mut String,
    table: &str,
    first: &str,
    entries: &BTreeMap<i64, Entry<K>>,
    mut key: impl for<'a> FnMut(Stmt<'a>, &K) -> Stmt<'a>,
) {
    let gone: Vec<&K> = entries
        .values()
        .filter(|e| e.before != e.after)
        .filter_map(|e| e.before.as_ref())
        .collect();
    let head = format!("DELETE FROM {table} WHERE ({first}, pos) IN (");
    rows(sql, &head, &gone, ")", |s, k| key(s, k));
}

/// Adds each thread's entry after the batch, when it changed.
fn additions<K: PartialEq>(
    sql: &mut String,
    table: &str,
    columns: &str,
    entries: &BTreeMap<i64, Entry<K>>,
    mut row: impl for<'a> FnMut(Stmt<'a>, i64, &K) -> Stmt<'a>,
) {
    let added: Vec<(i64, &K)> = entries
        .iter()
        .filter(|(_, e)| e.before != e.after)
        .filter_map(|(t, e)| e.after.as_ref().map(|k| (*t, k)))
        .collect();
    let head = format!("INSERT INTO {table} ({columns}) VALUES ");
    rows(sql, &head, &added, "", |s, (t, k)| row(s, *t, k));
}

#[cfg(test)]
mod tests {
    use super::*;

    type Named<'a> = Option<(&'a str, i64)>;

    fn post(
        p: &mut Posts,
        id: i64,
        thread: i64,
        turn: (Named<'_>, Named<'_>),
        place: (Option<Place>, Place),
    ) {
        let owned = |t: Named<'_>| t.map(|(w, p)| (w.to_string(), p));
        p.post(
            (id, thread, vec![id as u8]),
            (thread, vec![thread as u8]),
            (owned(turn.0), owned(turn.1)),
            place,
        );
    }

    #[test]
    fn a_batch_sends_each_tables_rows_once_and_a_threads_net_change() {
        let mut p = Posts::default();
        // Thread 1 existed (turn of bob at 3, open at 3); two posts move it on.
        post(
            &mut p,
            10,
            1,
            (Some(("bob", 3)), Some(("ann", 10))),
            (Some((1, 3)), (1, 10)),
        );
        post(
            &mut p,
            11,
            1,
            (Some(("ann", 10)), Some(("bob", 11))),
            (Some((1, 10)), (2, 11)),
        );
        // Thread 2 is new, with no turn.
        post(&mut p, 12, 2, (None, None), (None, (1, 12)));
        p.words(10, 1, vec!["port".into(), "it's".into()]);
        let mut sql = String::new();
        p.drain_into(&mut sql);
        assert_eq!(
            sql,
            "DELETE FROM turns WHERE (identity, pos) IN (('bob', 3));\n\
             INSERT INTO turns (identity, pos, thread) VALUES ('bob', 11, 1);\n\
             DELETE FROM activity WHERE (state, pos) IN ((1, 3));\n\
             INSERT INTO activity (state, pos, thread) VALUES (2, 11, 1), (1, 12, 2);\n\
             INSERT INTO messages (id, thread, rec) VALUES (10, 1, '\\x0a'::bytea), (11, 1, '\\x0b'::bytea), (12, 2, '\\x0c'::bytea);\n\
             INSERT INTO threads (id, rec) VALUES (1, '\\x01'::bytea), (2, '\\x02'::bytea) ON CONFLICT (id) DO UPDATE SET rec = excluded.rec;\n\
             INSERT INTO message_words (message, thread, words) VALUES (10, 1, ARRAY['port','it''s']::text[]);\n"
        );
        let mut again = String::new();
        p.drain_into(&mut again);
        assert!(again.is_empty(), "drained: {again}");
    }

    #[test]
    fn a_turn_that_comes_back_in_the_batch_is_neither_removed_nor_added() {
        let mut p = Posts::default();
        post(
            &mut p,
            5,
            1,
            (Some(("bob", 3)), Some(("ann", 5))),
            (Some((1, 3)), (1, 5)),
        );
        post(
            &mut p,
            6,
            1,
            (Some(("ann", 5)), Some(("bob", 3))),
            (Some((1, 5)), (1, 6)),
        );
        let mut sql = String::new();
        p.drain_into(&mut sql);
        assert!(!sql.contains("turns"), "{sql}");
        assert!(
            sql.contains("DELETE FROM activity WHERE (state, pos) IN ((1, 3));"),
            "{sql}"
        );
    }
}

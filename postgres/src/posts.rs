//! A transaction's posts, written as one statement per table.
//!
//! The server parses, plans and starts every statement it is sent, and for the
//! small statements of a post that cost more than their rows
//! (`docs/decisions/0005-postgres-batch-statements.md`). A batch of posts therefore
//! queues its rows here and sends each table's rows together, as arrays to a
//! statement the connection prepared once
//! ([`PREPARE`]): one `INSERT` of all the messages, one of their words, one upsert
//! of the threads' final records. The inbox and the thread list keep
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

    /// A thread's new record without a post of its own (its places unchanged).
    pub(super) fn thread(&mut self, id: i64, record: Vec<u8>) {
        self.threads.insert(id, record);
    }

    /// A message's distinct words, for the word index.
    pub(super) fn words(&mut self, message: i64, thread: i64, words: Vec<String>) {
        self.words.push((message, thread, words));
    }

    /// Appends the queued rows to `sql` as statements, and forgets them.
    pub(super) fn drain_into(&mut self, sql: &mut String) {
        let posts = std::mem::take(self);
        let (gone, added) = changed(&posts.turns);
        execute(sql, "parley_turns_out", gone.len(), |s| {
            s.text_array(gone.iter().map(|(who, _)| who))
                .sql(", ")
                .ints(gone.iter().map(|(_, pos)| *pos))
        });
        execute(sql, "parley_turns_in", added.len(), |s| {
            s.text_array(added.iter().map(|(_, (who, _))| who))
                .sql(", ")
                .ints(added.iter().map(|(_, (_, pos))| *pos))
                .sql(", ")
                .ints(added.iter().map(|(thread, _)| *thread))
        });
        let (gone, added) = changed(&posts.activity);
        execute(sql, "parley_activity_out", gone.len(), |s| {
            s.ints(gone.iter().map(|(state, _)| *state))
                .sql(", ")
                .ints(gone.iter().map(|(_, pos)| *pos))
        });
        execute(sql, "parley_activity_in", added.len(), |s| {
            s.ints(added.iter().map(|(_, (state, _))| *state))
                .sql(", ")
                .ints(added.iter().map(|(_, (_, pos))| *pos))
                .sql(", ")
                .ints(added.iter().map(|(thread, _)| *thread))
        });
        let messages = &posts.messages;
        execute(sql, "parley_messages", messages.len(), |s| {
            s.ints(messages.iter().map(|m| m.0))
                .sql(", ")
                .ints(messages.iter().map(|m| m.1))
                .sql(", ")
                .bytes_array(messages.iter().map(|m| m.2.as_slice()))
        });
        let threads = &posts.threads;
        execute(sql, "parley_threads", threads.len(), |s| {
            s.ints(threads.keys().copied())
                .sql(", ")
                .bytes_array(threads.values().map(Vec::as_slice))
        });
        let words = &posts.words;
        execute(sql, "parley_words", words.len(), |s| {
            let mut s = s
                .ints(words.iter().map(|w| w.0))
                .sql(", ")
                .ints(words.iter().map(|w| w.1))
                .sql(", ARRAY[");
            // One array literal per message: `w::text[]` turns each back.
            for (i, (_, _, held)) in words.iter().enumerate() {
                s = s.sql(if i == 0 { "" } else { "," }).text_array(held);
            }
            s.sql("]")
        });
    }
}

/// `EXECUTE name(…)`, its arguments written by `args`; nothing when there are no
/// rows.
fn execute(sql: &mut String, name: &str, rows: usize, args: impl FnOnce(Stmt<'_>) -> Stmt<'_>) {
    if rows > 0 {
        let head = Stmt::new(sql, "EXECUTE ").sql(name).sql("(");
        args(head).sql(")").end();
    }
}

/// The statements [`Posts::drain_into`] executes, prepared once per connection
/// (`begin.rs`). Each takes a table's rows as arrays, one per column: the server
/// then parses, analyses and plans each statement once per connection instead of
/// once per batch, which had cost more than executing it
/// (`docs/decisions/0005-postgres-batch-statements.md`).
pub(super) const PREPARE: &str = "\
    PREPARE parley_turns_out(text[], bigint[]) AS \
        DELETE FROM turns WHERE (identity, pos) IN (SELECT * FROM unnest($1, $2)); \
    PREPARE parley_turns_in(text[], bigint[], bigint[]) AS \
        INSERT INTO turns (identity, pos, thread) SELECT * FROM unnest($1, $2, $3); \
    PREPARE parley_activity_out(smallint[], bigint[]) AS \
        DELETE FROM activity WHERE (state, pos) IN (SELECT * FROM unnest($1, $2)); \
    PREPARE parley_activity_in(smallint[], bigint[], bigint[]) AS \
        INSERT INTO activity (state, pos, thread) SELECT * FROM unnest($1, $2, $3); \
    PREPARE parley_messages(bigint[], bigint[], bytea[]) AS \
        INSERT INTO messages (id, thread, rec) SELECT * FROM unnest($1, $2, $3); \
    PREPARE parley_threads(bigint[], bytea[]) AS \
        INSERT INTO threads (id, rec) SELECT * FROM unnest($1, $2) \
        ON CONFLICT (id) DO UPDATE SET rec = excluded.rec; \
    PREPARE parley_words(bigint[], bigint[], text[]) AS \
        INSERT INTO message_words (message, thread, words) \
        SELECT m, t, w::text[] FROM unnest($1, $2, $3) AS u(m, t, w)";

/// Each thread's entry from before the batch that went (when it changed), and its
/// entry after the batch that came, with its thread.
fn changed<K: PartialEq>(entries: &BTreeMap<i64, Entry<K>>) -> (Vec<&K>, Vec<(i64, &K)>) {
    let moved = entries.iter().filter(|(_, e)| e.before != e.after);
    let gone = moved
        .clone()
        .filter_map(|(_, e)| e.before.as_ref())
        .collect();
    let added = moved
        .filter_map(|(t, e)| e.after.as_ref().map(|k| (*t, k)))
        .collect();
    (gone, added)
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
            "EXECUTE parley_turns_out('{\"bob\"}', '{3}');\n\
             EXECUTE parley_turns_in('{\"bob\"}', '{11}', '{1}');\n\
             EXECUTE parley_activity_out('{1}', '{3}');\n\
             EXECUTE parley_activity_in('{2,1}', '{11,12}', '{1,2}');\n\
             EXECUTE parley_messages('{10,11,12}', '{1,1,2}', ARRAY['\\x0a'::bytea,'\\x0b'::bytea,'\\x0c'::bytea]);\n\
             EXECUTE parley_threads('{1,2}', ARRAY['\\x01'::bytea,'\\x02'::bytea]);\n\
             EXECUTE parley_words('{10}', '{1}', ARRAY['{\"port\",\"it''s\"}']);\n"
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
            sql.contains("EXECUTE parley_activity_out('{1}', '{3}');"),
            "{sql}"
        );
    }
}

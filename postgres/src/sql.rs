//! SQL literals, for the writes a transaction sends in one round trip.
//!
//! A writer's statements are queued and sent together as one simple-protocol
//! batch (before its next read, or with its commit): a post's half-dozen writes
//! then cost one round trip instead of six, and each statement sees the effects of
//! the ones before it. Simple-protocol statements carry their values as literals,
//! made here. Every connection runs with `standard_conforming_strings = on`
//! (`conn.rs`), under which a doubled quote is the only escape inside `'…'`; bytes
//! are written as hex digits, numbers as digits.

use std::fmt::Write;

/// One statement being appended to a batch: SQL text and literals in turn, ended
/// by [`Stmt::end`].
pub(super) struct Stmt<'a>(&'a mut String);

impl<'a> Stmt<'a> {
    pub(super) fn new(batch: &'a mut String, sql: &str) -> Stmt<'a> {
        batch.push_str(sql);
        Stmt(batch)
    }

    /// SQL text, as it is.
    pub(super) fn sql(self, sql: &str) -> Self {
        self.0.push_str(sql);
        self
    }

    /// A `bigint` literal.
    pub(super) fn int(self, value: i64) -> Self {
        let _ = write!(self.0, "{value}");
        self
    }

    /// A text literal. PostgreSQL's text holds no NUL: such a value is refused by
    /// the server, as it would be as a parameter.
    pub(super) fn text(self, value: &str) -> Self {
        self.0.push('\'');
        for c in value.chars() {
            if c == '\'' {
                self.0.push('\'');
            }
            self.0.push(c);
        }
        self.0.push('\'');
        self
    }

    /// A `bytea` literal. Its hex digits are written from a table: a record is
    /// hundreds of bytes, and `write!` per byte was a visible share of a writer's
    /// time inside the forum's lock.
    pub(super) fn bytes(self, value: &[u8]) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.0.push_str("'\\x");
        self.0.reserve(value.len() * 2 + 8);
        for &b in value {
            self.0.push(HEX[usize::from(b >> 4)] as char);
            self.0.push(HEX[usize::from(b & 0x0f)] as char);
        }
        self.0.push_str("'::bytea");
        self
    }

    /// A `bigint[]` literal, `'{1,2}'`.
    pub(super) fn ints(self, values: impl IntoIterator<Item = i64>) -> Self {
        self.0.push_str("'{");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            let _ = write!(self.0, "{v}");
        }
        self.0.push_str("}'");
        self
    }

    /// A `text[]` literal in the array syntax, `'{"a","b"}'`: an argument of a
    /// prepared statement, or (inside `ARRAY[…]`) one array of many.
    pub(super) fn text_array<S: AsRef<str>>(self, values: impl IntoIterator<Item = S>) -> Self {
        let mut literal = String::from("{");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                literal.push(',');
            }
            // Inside the array syntax a quoted element escapes `"` and `\` with a
            // backslash; the text literal around it then doubles the quotes.
            literal.push('"');
            for c in v.as_ref().chars() {
                if c == '"' || c == '\\' {
                    literal.push('\\');
                }
                literal.push(c);
            }
            literal.push('"');
        }
        literal.push('}');
        self.text(&literal)
    }

    /// `ARRAY[…]` of `bytea` literals.
    pub(super) fn bytes_array<'v>(mut self, values: impl IntoIterator<Item = &'v [u8]>) -> Self {
        self.0.push_str("ARRAY[");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            self = self.bytes(v);
        }
        self.0.push(']');
        self
    }

    /// Ends the statement.
    pub(super) fn end(self) {
        self.0.push_str(";\n");
    }
}

/// The error of a stored value that does not read back.
pub(super) fn damaged(what: &str) -> parley_forum::Error {
    parley_forum::Error::storage(format!("a stored {what} is unreadable"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_what_they_must() {
        let mut batch = String::new();
        Stmt::new(&mut batch, "INSERT INTO t VALUES (")
            .int(-3)
            .sql(", ")
            .text("it's \\ fine")
            .sql(", ")
            .bytes(&[0, 0xab, 0x10])
            .sql(", ")
            .ints([4, -5])
            .sql(", ")
            .text_array(["a'b", "q\"\\", ""])
            .sql(", ")
            .bytes_array([&[1u8][..], &[]])
            .sql(")")
            .end();
        assert_eq!(
            batch,
            "INSERT INTO t VALUES (-3, 'it''s \\ fine', '\\x00ab10'::bytea, \
             '{4,-5}', '{\"a''b\",\"q\\\"\\\\\",\"\"}', \
             ARRAY['\\x01'::bytea,'\\x'::bytea]);\n"
        );
    }
}

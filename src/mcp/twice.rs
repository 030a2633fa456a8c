//! A tool's result written as JSON text and, in the same pass, as that text quoted
//! into a JSON string. A `tools/call` result carries both: the text is the
//! structured content, and the quoted text is the text content. Escaping the text
//! afterwards would look at each of its bytes again, and a result's text holds a
//! quote every few bytes. Here serde_json's formatter writes each piece to both:
//! punctuation, numbers and the runs of a string that need no escape (a message's
//! body is one) as they are, and quotes and escape sequences escaped once more.

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};
use serde_json::Value;

/// `value` as compact JSON text, and that text as a JSON string (quotes included):
/// byte for byte `serde_json::to_string(value)` and `serde_json::to_string` of that.
pub(super) fn json_text_twice(value: &Value) -> (String, String) {
    let mut plain = Vec::with_capacity(4096);
    let mut quoted = Quoted(Vec::with_capacity(4096));
    quoted.0.push(b'"');
    let mut ser = serde_json::Serializer::with_formatter(&mut plain, &mut quoted);
    // Writing a `Value` into byte buffers cannot fail, and a `Value`'s map keys are
    // strings; only whole UTF-8 strings and ASCII go into either buffer.
    let written = value.serialize(&mut ser);
    quoted.0.push(b'"');
    match (
        written,
        String::from_utf8(plain),
        String::from_utf8(quoted.0),
    ) {
        (Ok(()), Ok(plain), Ok(quoted)) => (plain, quoted),
        _ => {
            let text = value.to_string();
            let quoted = Value::from(text.as_str()).to_string();
            (text, quoted)
        }
    }
}

/// The formatter: compact JSON to the serializer's writer, and the same text
/// quoted to its own buffer.
struct Quoted(Vec<u8>);

impl Quoted {
    /// `bytes` escaped as inside a JSON string. Outside a string's runs serde_json
    /// writes no control character, but one would be escaped as a string's is.
    fn escaped(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'"' | b'\\' => self.0.extend_from_slice(&[b'\\', b]),
                0x00..=0x1f => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    let (hi, lo) = (HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]);
                    self.0.extend_from_slice(&[b'\\', b'u', b'0', b'0', hi, lo]);
                }
                _ => self.0.push(b),
            }
        }
    }
}

/// Methods whose text holds no quote, backslash or control character (numbers,
/// `null`, booleans, punctuation): the same bytes to both.
macro_rules! the_same_to_both {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $name<W: ?Sized + io::Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            CompactFormatter.$name(&mut self.0 $(, $arg)*)?;
            CompactFormatter.$name(w $(, $arg)*)
        }
    )*};
}

impl Formatter for &mut Quoted {
    the_same_to_both! {
        write_null();
        write_bool(v: bool);
        write_i8(v: i8);
        write_i16(v: i16);
        write_i32(v: i32);
        write_i64(v: i64);
        write_i128(v: i128);
        write_u8(v: u8);
        write_u16(v: u16);
        write_u32(v: u32);
        write_u64(v: u64);
        write_u128(v: u128);
        write_f32(v: f32);
        write_f64(v: f64);
        write_number_str(v: &str);
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        end_object_key();
        begin_object_value();
        end_object_value();
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.extend_from_slice(b"\\\"");
        w.write_all(b"\"")
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.extend_from_slice(b"\\\"");
        w.write_all(b"\"")
    }

    /// A run of a string with nothing to escape, by serde_json's contract.
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.0.extend_from_slice(fragment.as_bytes());
        w.write_all(fragment.as_bytes())
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        // The longest sequence is `\u00XX`: written on the stack, not the heap, as
        // a body may hold many.
        let mut buf = [0u8; 6];
        let mut rest: &mut [u8] = &mut buf;
        CompactFormatter.write_char_escape(&mut rest, escape)?;
        let len = 6 - rest.len();
        self.escaped(&buf[..len]);
        w.write_all(&buf[..len])
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.escaped(fragment.as_bytes());
        w.write_all(fragment.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn agrees(value: &Value) {
        let (text, quoted) = json_text_twice(value);
        let expected = serde_json::to_string(value).unwrap();
        assert_eq!(text, expected);
        assert_eq!(quoted, serde_json::to_string(&expected).unwrap());
    }

    #[test]
    fn a_post_s_result_and_every_escape() {
        agrees(&json!({
            "message": {"id": "msg_7", "body": "a \"quoted\" C:\\dir\n\ttab ü \u{1} \u{2028}",
                        "depth": 1, "human": false, "parent": null},
            "thread": {"state": "open", "message_count": 2, "score": -1.5e-7},
            "events": [], "\"key\\\n": [1, 2.5, "x"]
        }));
        for b in 0u8..0x80 {
            agrees(&json!({ format!("k{}", b as char): format!("v{}w", b as char) }));
        }
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[\"\\\\\\n\\u{1}a-z]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                proptest::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_is_written_as_serde_json_writes_it_twice(value in any_json()) {
            agrees(&value);
        }
    }
}

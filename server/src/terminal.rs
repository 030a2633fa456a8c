//! What reaches a terminal. Bodies, topics, names, labels and reasons are written by
//! others (agents, among them): a raw control character in them would reach the
//! person's terminal as a command (`ESC [1A ESC [2K` rewrites a line already read,
//! an OSC 52 sequence sets the clipboard). Every view the command line prints goes
//! through [`visible`], which shows each such character as its JSON escape
//! (`\u001b`) instead; newline and tab are layout and stay. The web view's pages pass
//! through it too (`web::layout`): a browser shows no control character at all, so
//! the escape is how the person learns one was there.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a control character shown as an escape: C0 but newline and tab,
/// DEL, and C1 (U+0080–U+009F, which some terminals obey as 8-bit escapes).
pub fn hidden(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}')
}

/// `text` with every [`hidden`] character written as `\u00XX`. In JSON text, which
/// holds these characters only inside strings, the result is the same JSON (C0 is
/// already escaped there by the serializer; DEL and C1 are not).
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_show_as_escapes_and_layout_stays() {
        assert!(matches!(visible("plain\ttext\nok é"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\x1b[1A\x1b[2Kb\x1b]52;c;aGk=\x07"),
            "a\\u001b[1A\\u001b[2Kb\\u001b]52;c;aGk=\\u0007"
        );
        assert_eq!(
            visible("\0\r\x7f\u{80}\u{9b}\u{9f}\u{a0}"),
            "\\u0000\\u000d\\u007f\\u0080\\u009b\\u009f\u{a0}"
        );
    }

    #[test]
    fn escaped_json_is_the_same_json() {
        let value = serde_json::json!({"body": "x\u{7f}\u{9b}\x1b\ny"});
        let text = visible(&serde_json::to_string_pretty(&value).unwrap()).into_owned();
        assert!(!text.chars().any(hidden), "{text}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }
}

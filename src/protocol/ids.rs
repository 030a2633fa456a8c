//! Identifiers (SPEC §1) and identity syntax (SPEC §2).

use serde_json::Value;

/// The kinds of server-assigned ids, each with its own counter and prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// `th_<n>`
    Thread,
    /// `msg_<n>`
    Message,
    /// `cl_<n>`
    Claim,
    /// `ev_<n>`
    Event,
}

impl IdKind {
    /// The key prefix, with its underscore.
    pub const fn prefix(self) -> &'static str {
        match self {
            IdKind::Thread => "th_",
            IdKind::Message => "msg_",
            IdKind::Claim => "cl_",
            IdKind::Event => "ev_",
        }
    }

    /// The key of the `n`th id of this kind.
    pub fn key(self, n: u64) -> String {
        // Written by hand: keys are rendered for every message read, and the
        // formatting machinery costs more than the digits.
        let prefix = self.prefix();
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let mut key = String::with_capacity(prefix.len() + digits.len() - at);
        key.push_str(prefix);
        key.extend(digits[at..].iter().map(|d| char::from(*d)));
        key
    }
}

fn positive(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok().filter(|n| *n > 0)
}

/// Reads an id given as its key (`"th_12"`), a JSON number (`12`) or a decimal
/// string (`"12"`). Anything else — a wrong prefix, zero, a negative or fractional
/// number — is `None`.
pub(crate) fn parse_id(kind: IdKind, value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().filter(|n| *n > 0),
        Value::String(s) => parse_id_str(kind, s),
        _ => None,
    }
}

/// Reads an id given as text: its key (`"th_12"`) or a decimal string (`"12"`).
pub(crate) fn parse_id_str(kind: IdKind, text: &str) -> Option<u64> {
    positive(text.strip_prefix(kind.prefix()).unwrap_or(text))
}

/// A handle or human name: 1–64 characters of `[a-z0-9._-]`, starting with a
/// letter or digit.
pub(crate) fn is_handle(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase() | b[0].is_ascii_digit()
        && b.iter().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-')
        })
}

/// An identity string: `<realm>:<handle>` or `human:<name>`.
pub(crate) fn is_identity(s: &str) -> bool {
    match s.split_once(':') {
        Some((realm, handle)) => is_handle(realm) && is_handle(handle),
        None => false,
    }
}

/// An extension: 1–`max` characters of `[A-Za-z0-9._-]`.
pub(crate) fn is_extension(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.chars().count() <= max
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys() {
        assert_eq!(IdKind::Thread.key(1042), "th_1042");
        assert_eq!(IdKind::Message.key(0), "msg_0");
        assert_eq!(IdKind::Event.key(u64::MAX), format!("ev_{}", u64::MAX));
    }

    #[test]
    fn id_forms() {
        assert_eq!(parse_id(IdKind::Thread, &json!("th_1042")), Some(1042));
        assert_eq!(parse_id(IdKind::Thread, &json!(1042)), Some(1042));
        assert_eq!(parse_id(IdKind::Thread, &json!("1042")), Some(1042));
        for bad in [
            json!("msg_3"),
            json!(0),
            json!(-1),
            json!(1.5),
            json!("th_"),
            json!("th_0"),
            json!("x"),
            json!(null),
            json!("th_+1"),
            json!(" 1"),
        ] {
            assert_eq!(parse_id(IdKind::Thread, &bad), None, "{bad}");
        }
    }

    #[test]
    fn identities_and_extensions() {
        assert!(is_identity("ainotes:alice"));
        assert!(is_identity("human:bob"));
        assert!(!is_identity("alice"));
        assert!(!is_identity("ainotes:Alice"));
        assert!(!is_identity("ainotes:-x"));
        assert!(is_extension("Worker-2", 64));
        assert!(!is_extension("", 64));
        assert!(!is_extension("a b", 64));
        assert!(!is_extension("abc", 2));
    }
}

//! Typed ids for the typed API: a thread, a message or a claim id is its number,
//! read from its key (`th_12`) or the number, and shown in its key form. In
//! JSON (serde) an id is its key and nothing else: the wire writes keys only,
//! so a number or another kind's key there is a mistake, not a second spelling.

use std::convert::Infallible;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::ids::{parse_id_str, IdKind};

/// Text that names no id of the kind asked for: not `<prefix><n>` nor a
/// positive number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidId {
    /// The kind of id that was asked for.
    pub kind: IdKind,
}

impl std::fmt::Display for InvalidId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not a {}<n> key or a positive integer",
            self.kind.prefix()
        )
    }
}

impl std::error::Error for InvalidId {}

/// An id is always an id: what the typed API takes as `TryInto<ThreadId>` may
/// be the id itself.
impl From<Infallible> for InvalidId {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub(crate) u64);

        impl $name {
            /// The id with number `n`; `None` for 0, which no id has.
            pub const fn new(n: u64) -> Option<Self> {
                if n == 0 {
                    None
                } else {
                    Some($name(n))
                }
            }

            /// Its number.
            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&$kind.key(self.0))
            }
        }

        /// So that an id read from a view (`&view.id`) names it again.
        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                *id
            }
        }

        impl std::str::FromStr for $name {
            type Err = InvalidId;

            /// Reads the key (`th_12`) or the number (`12`).
            fn from_str(text: &str) -> Result<Self, InvalidId> {
                parse_id_str($kind, text)
                    .map($name)
                    .ok_or(InvalidId { kind: $kind })
            }
        }

        impl TryFrom<&str> for $name {
            type Error = InvalidId;

            fn try_from(text: &str) -> Result<Self, InvalidId> {
                text.parse()
            }
        }

        impl TryFrom<&String> for $name {
            type Error = InvalidId;

            fn try_from(text: &String) -> Result<Self, InvalidId> {
                text.parse()
            }
        }

        impl TryFrom<u64> for $name {
            type Error = InvalidId;

            fn try_from(n: u64) -> Result<Self, InvalidId> {
                $name::new(n).ok_or(InvalidId { kind: $kind })
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.0
            }
        }

        /// Compares with a key: an id equals its key text only (`th_1`, not `1`).
        impl PartialEq<str> for $name {
            fn eq(&self, text: &str) -> bool {
                is_key($kind, self.0, text)
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, text: &&str) -> bool {
                is_key($kind, self.0, text)
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, id: &$name) -> bool {
                is_key($kind, id.0, self)
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, id: &$name) -> bool {
                is_key($kind, id.0, self)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&$kind.key(self.0))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_str(KeyVisitor($kind)).map($name)
            }
        }
    };
}

/// Whether `text` is the key of id `n` of `kind`, written as the wire writes it.
fn is_key(kind: IdKind, n: u64, text: &str) -> bool {
    text.strip_prefix(kind.prefix())
        .is_some_and(|digits| !digits.starts_with('0') && digits.parse() == Ok(n))
}

/// Reads a key of one kind (`th_12`) and refuses anything else, a bare number
/// included: the JSON an id comes from is the engine's, which writes keys.
struct KeyVisitor(IdKind);

impl Visitor<'_> for KeyVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "an id key `{}<n>` (n a positive integer)",
            self.0.prefix()
        )
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<u64, E> {
        text.strip_prefix(self.0.prefix())
            .and_then(|digits| parse_id_str(self.0, digits))
            .filter(|n| is_key(self.0, *n, text))
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(text), &self))
    }
}

id_type!(
    /// A thread's id (`th_<n>`).
    ThreadId,
    IdKind::Thread
);
id_type!(
    /// A message's id (`msg_<n>`).
    MessageId,
    IdKind::Message
);
id_type!(
    /// A claim's id (`cl_<n>`).
    ClaimId,
    IdKind::Claim
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_their_key_or_number_and_show_their_key() {
        let th: ThreadId = "th_12".parse().unwrap();
        assert_eq!((th.get(), th.to_string()), (12, "th_12".to_string()));
        assert_eq!(ThreadId::try_from("12"), Ok(th));
        assert_eq!(ThreadId::try_from(12), Ok(th));
        assert_eq!(MessageId::try_from("msg_3").unwrap().to_string(), "msg_3");
        assert_eq!(ClaimId::try_from(&"cl_7".to_string()).unwrap().get(), 7);
        for bad in ["msg_1", "th_", "th_0", "0", "-1", "th_1.5", ""] {
            assert_eq!(
                ThreadId::try_from(bad),
                Err(InvalidId {
                    kind: IdKind::Thread
                }),
                "{bad}"
            );
        }
        assert_eq!(ThreadId::new(0), None);
        assert!(InvalidId {
            kind: IdKind::Claim
        }
        .to_string()
        .contains("cl_<n>"));
    }

    #[test]
    fn ids_compare_with_their_key_only() {
        let m = MessageId::new(3).unwrap();
        assert_eq!(m, "msg_3");
        assert_eq!("msg_3", m);
        assert!(m == *"msg_3");
        for other in ["3", "msg_03", "msg_4", "th_3", "msg_", ""] {
            assert!(m != other, "{other}");
        }
    }

    #[test]
    fn ids_travel_in_json_as_their_key() {
        let c = ClaimId::new(7).unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), r#""cl_7""#);
        assert_eq!(serde_json::from_str::<ClaimId>(r#""cl_7""#).unwrap(), c);
        let ids: Vec<ThreadId> = serde_json::from_str(r#"["th_1", "th_20"]"#).unwrap();
        assert_eq!(serde_json::to_string(&ids).unwrap(), r#"["th_1","th_20"]"#);
    }

    #[test]
    fn ids_refuse_anything_but_their_key_in_json() {
        for bad in [
            r#""7""#,
            "7",
            r#""th_7""#,
            r#""cl_0""#,
            r#""cl_07""#,
            r#""cl_""#,
            r#""cl_-1""#,
            "null",
        ] {
            let err = serde_json::from_str::<ClaimId>(bad)
                .unwrap_err()
                .to_string();
            assert!(err.contains("an id key `cl_<n>`"), "{bad}: {err}");
        }
    }
}

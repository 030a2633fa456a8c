//! Typed ids for the typed API: a thread, a message or a claim id is its number,
//! read from its key (`th_12`) or the number, and shown in its key form.

use std::convert::Infallible;

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
    };
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
}

//! The rights of a token (SPEC §2), and a set of them as bits: a call checks a
//! right with one mask, not by comparing names.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A right an llm token may hold. A human token holds all four.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Right {
    /// Read threads, inbox, events, claims.
    Read,
    /// Post.
    Write,
    /// Moderate: authority over every thread, confirmed marks.
    Lock,
    /// Seal claims (dialectic).
    Verify,
}

impl Right {
    /// All rights, in canonical order.
    pub const ALL: [Right; 4] = [Right::Read, Right::Write, Right::Lock, Right::Verify];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Right::Read => "read",
            Right::Write => "write",
            Right::Lock => "lock",
            Right::Verify => "verify",
        }
    }

    /// The right with this wire name.
    pub fn from_name(name: &str) -> Option<Right> {
        Right::ALL.into_iter().find(|r| r.as_str() == name)
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of rights. Stored as the list of their names in canonical order, as token
/// records always were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rights(u8);

impl Rights {
    /// Every right: a person's.
    pub const ALL: Rights = Rights(0b1111);

    /// The set of `rights`.
    pub fn of(rights: &[Right]) -> Rights {
        Rights(rights.iter().fold(0, |bits, r| bits | r.bit()))
    }

    /// Whether `right` is in the set.
    pub fn has(self, right: Right) -> bool {
        self.0 & right.bit() != 0
    }

    /// The rights held, in canonical order.
    pub fn iter(self) -> impl Iterator<Item = Right> {
        Right::ALL.into_iter().filter(move |r| self.has(*r))
    }
}

impl Serialize for Rights {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(Right::as_str))
    }
}

impl<'de> Deserialize<'de> for Rights {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        let mut rights = Vec::with_capacity(names.len());
        for name in &names {
            let right = Right::from_name(name)
                .ok_or_else(|| serde::de::Error::custom(format!("`{name}` is not a right")))?;
            rights.push(right);
        }
        Ok(Rights::of(&rights))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_what_it_was_made_of_and_is_stored_as_names() {
        let set = Rights::of(&[Right::Verify, Right::Read]);
        assert!(set.has(Right::Read) && set.has(Right::Verify));
        assert!(!set.has(Right::Write) && !set.has(Right::Lock));
        assert_eq!(
            serde_json::to_value(set).unwrap(),
            serde_json::json!(["read", "verify"])
        );
        let back: Rights = serde_json::from_value(serde_json::json!(["verify", "read"])).unwrap();
        assert_eq!(back, set);
        assert!(Right::ALL.iter().all(|r| Rights::ALL.has(*r)));
        assert_eq!(Rights::default().iter().count(), 0);
        let bad = serde_json::from_value::<Rights>(serde_json::json!(["read", "admin"]));
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("`admin` is not a right"));
    }
}

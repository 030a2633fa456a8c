//! Opaque cursors (SPEC §1): a position in one index, signed with the forum's key
//! so that a cursor the server did not issue is recognised and refused.

use sha2::{Digest, Sha256};

use crate::error::{Reason, Refusal};

/// Which index a cursor points into; a cursor of one is invalid for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Index {
    Inbox,
    Events,
    Threads,
    Messages,
    Search,
}

impl Index {
    fn tag(self) -> &'static str {
        match self {
            Index::Inbox => "i",
            Index::Events => "e",
            Index::Threads => "t",
            Index::Messages => "m",
            Index::Search => "s",
        }
    }
}

fn mac(key: u64, index: Index, pos: u64) -> u64 {
    let mut h = Sha256::new();
    h.update(key.to_le_bytes());
    h.update(index.tag().as_bytes());
    h.update(pos.to_le_bytes());
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// The cursor for position `pos` of `index`.
pub(crate) fn encode(key: u64, index: Index, pos: u64) -> String {
    format!("{}{pos:x}.{:016x}", index.tag(), mac(key, index, pos))
}

/// The position of a cursor this forum issued for `index`; `invalid_cursor` otherwise.
pub(crate) fn decode(key: u64, index: Index, cursor: &str) -> Result<u64, Refusal> {
    let invalid = || {
        Refusal::new(
            Reason::InvalidCursor,
            "this cursor was not issued by this forum for this read",
        )
        .with_field("since")
    };
    let rest = cursor.strip_prefix(index.tag()).ok_or_else(invalid)?;
    let (pos, sig) = rest.split_once('.').ok_or_else(invalid)?;
    let valid_hex = |s: &str, max: usize| {
        !s.is_empty()
            && s.len() <= max
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    if !valid_hex(pos, 16) || sig.len() != 16 || !valid_hex(sig, 16) {
        return Err(invalid());
    }
    let pos = u64::from_str_radix(pos, 16).map_err(|_| invalid())?;
    let sig = u64::from_str_radix(sig, 16).map_err(|_| invalid())?;
    if sig == mac(key, index, pos) {
        Ok(pos)
    } else {
        Err(invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_forgery() {
        let c = encode(42, Index::Inbox, 1234);
        assert_eq!(decode(42, Index::Inbox, &c), Ok(1234));
        assert!(decode(43, Index::Inbox, &c).is_err());
        assert!(decode(42, Index::Events, &c).is_err());
        assert!(decode(42, Index::Inbox, "i4d2.0000000000000000").is_err());
        assert!(decode(42, Index::Inbox, "garbage").is_err());
        assert!(decode(42, Index::Inbox, "").is_err());
    }
}

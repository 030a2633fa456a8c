//! A compact binary form for the records every post reads and writes: messages
//! (the bulk of a forum; reading a thread decodes a thousand of them) and threads
//! (decoded and encoded again by every post). A length-prefixed layout decodes
//! several times faster than JSON.
//!
//! Both backends store these bytes (redb in its tables, PostgreSQL in `bytea`
//! columns). Layout (little-endian): a format byte, then the fields in
//! declaration order; a string is a `u32` length and its UTF-8 bytes; an optional
//! value is a `0`/`1` byte and the value; a list is a `u32` count and its items.
//! The format bytes (2 for a message, 4 for a thread) are the ones every stored
//! record carries; no older layout is read. A change here changes the redb file
//! format (`store/redb/format.rs` fingerprints these bytes).

use serde_json::{Map, Value};

use super::records::{Awaiting, GuardState, MessageHead, MessageRec, PostKey, Recent, ThreadRec};
use crate::error::{Error, Result};
use crate::protocol::acts::Act;
use crate::protocol::evidence::{Evidence, EvidenceKind};
use crate::protocol::state::State;

/// The format byte of a thread record.
const THREAD_FORMAT: u8 = 4;
/// The format byte of a message record.
const FORMAT: u8 = 2;

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt<T>(&mut self, v: &Option<T>, put: impl FnOnce(&mut Self, &T)) {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                put(self, x);
            }
        }
    }
}

struct In<'a> {
    buf: &'a [u8],
    at: usize,
}

/// A record stored as JSON (tokens, identities, claims, events).
pub fn encode_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::storage(format!("encoding a record: {e}")))
}

/// A record stored as JSON, read back.
pub fn decode_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::storage(format!("a stored record is unreadable: {e}")))
}

fn corrupt() -> Error {
    Error::storage("a stored record is truncated or malformed".into())
}

impl In<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(corrupt)?;
        let bytes = &self.buf[self.at..end];
        self.at = end;
        Ok(bytes)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(corrupt()),
        }
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().map_err(|_| corrupt())?,
        ))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| corrupt())?,
        ))
    }
    fn string(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| corrupt())
    }
    /// A string, borrowed from the buffer.
    fn str(&mut self) -> Result<&str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| corrupt())
    }
    fn opt<T>(&mut self, get: impl FnOnce(&mut Self) -> Result<T>) -> Result<Option<T>> {
        match self.u8()? {
            0 => Ok(None),
            1 => get(self).map(Some),
            _ => Err(corrupt()),
        }
    }
}

/// The stored bytes of a thread.
pub fn encode_thread(t: &ThreadRec) -> Vec<u8> {
    let mut out = Out(Vec::with_capacity(256));
    out.u8(THREAD_FORMAT);
    out.u64(t.id);
    out.u64(t.root);
    out.str(&t.topic);
    out.str(&t.creator);
    out.opt(&t.creator_extension, |o, e| o.str(e));
    out.u8(t.state.code());
    out.u8(u8::from(t.state_by_user));
    out.opt(&t.state_confirmed_at, |o, at| o.u64(*at as u64));
    out.opt(&t.state_label, |o, l| o.str(l));
    out.opt(&t.awaiting, |o, a| {
        o.str(&a.identity);
        o.opt(&a.extension, |o, e| o.str(e));
        o.u64(a.message);
    });
    out.u64(t.message_count);
    out.u64(t.created_at as u64);
    out.u64(t.updated_at as u64);
    out.u64(t.last_message);
    out.str(t.root_kind.kind());
    out.u32(t.last_body.len() as u32);
    for (identity, hash) in &t.last_body {
        out.str(identity);
        out.u64(*hash);
    }
    out.u32(t.guards.since_progress);
    out.u32(t.guards.recent.len() as u32);
    for r in &t.guards.recent {
        out.u64(r.message);
        out.u64(r.author);
        out.u64(r.hash);
    }
    out.0
}

/// A thread back from its stored bytes.
pub fn decode_thread(bytes: &[u8]) -> Result<ThreadRec> {
    let mut r = In { buf: bytes, at: 0 };
    let format = r.u8()?;
    if format != THREAD_FORMAT {
        return Err(Error::storage(
            "a stored thread has an unknown format".into(),
        ));
    }
    let thread = ThreadRec {
        id: r.u64()?,
        root: r.u64()?,
        topic: r.string()?,
        creator: r.string()?,
        creator_extension: r.opt(In::string)?,
        state: State::from_code(r.u8()?).ok_or_else(corrupt)?,
        state_by_user: r.bool()?,
        state_confirmed_at: r.opt(|r| r.u64().map(|t| t as i64))?,
        state_label: r.opt(In::string)?,
        awaiting: r.opt(|r| {
            Ok(Awaiting {
                identity: r.string()?,
                extension: r.opt(In::string)?,
                message: r.u64()?,
            })
        })?,
        message_count: r.u64()?,
        created_at: r.u64()? as i64,
        updated_at: r.u64()? as i64,
        last_message: r.u64()?,
        root_kind: act(r.str()?)?,
        last_body: (0..r.u32()?)
            .map(|_| Ok((r.string()?, r.u64()?)))
            .collect::<Result<_>>()?,
        guards: GuardState {
            since_progress: r.u32()?,
            recent: (0..r.u32()?)
                .map(|_| {
                    Ok(Recent {
                        message: r.u64()?,
                        author: r.u64()?,
                        hash: r.u64()?,
                    })
                })
                .collect::<Result<_>>()?,
        },
    };
    if r.at != bytes.len() {
        return Err(corrupt());
    }
    Ok(thread)
}

/// The stored bytes of a message.
pub fn encode(m: &MessageRec) -> Vec<u8> {
    let mut out = Out(Vec::with_capacity(64 + m.body.len()));
    out.u8(FORMAT);
    out.u64(m.id);
    out.str(m.kind.kind());
    out.u64(m.thread);
    out.opt(&m.parent, |o, p| o.u64(*p));
    out.u32(m.depth);
    out.str(&m.identity);
    out.opt(&m.extension, |o, e| o.str(e));
    out.u8(u8::from(m.human));
    out.str(&m.body);
    out.u64(m.created_at as u64);
    out.opt(&m.to, |o, t| o.str(t));
    out.opt(&m.state, |o, s| o.u8(s.code()));
    out.opt(&m.provenance, |o, p| {
        o.str(&Value::Object(p.clone()).to_string())
    });
    out.opt(&m.claim, |o, c| o.u64(*c));
    out.opt(&m.counter_claim, |o, c| o.u64(*c));
    out.u32(m.evidence.len() as u32);
    for e in &m.evidence {
        out.str(e.kind.as_str());
        out.str(&e.reference);
        out.opt(&e.note, |o, n| o.str(n));
    }
    out.u32(m.supersedes.len() as u32);
    for c in &m.supersedes {
        out.u64(*c);
    }
    out.opt(&m.valid_until, |o, t| o.u64(*t as u64));
    out.opt(&m.key, |o, k| {
        o.str(&k.key);
        o.u64(k.digest);
    });
    out.0
}

/// How many bytes from the front of a stored message hold its head (id, act,
/// parent): the format byte, the id, the act's name (at most 7 bytes and its
/// length), the thread and the optional parent. A backend may read only these
/// (PostgreSQL does: `substring` of the stored bytes).
pub const HEAD_BYTES: usize = 1 + 8 + (4 + 7) + 8 + (1 + 8);

/// The head of a stored message (SPEC §17's digest), read in place from its
/// first [`HEAD_BYTES`] bytes or more; the body is never looked at.
pub fn head(bytes: &[u8]) -> Result<MessageHead> {
    let mut r = In { buf: bytes, at: 0 };
    message_format(&mut r)?;
    let id = r.u64()?;
    let kind = act(r.str()?)?;
    r.u64()?; // thread
    let parent = r.opt(In::u64)?;
    Ok(MessageHead { id, kind, parent })
}

/// The body of a stored message, read in place (the word index reads nothing else).
pub(crate) fn body(bytes: &[u8]) -> Result<&str> {
    let mut r = In { buf: bytes, at: 0 };
    message_format(&mut r)?;
    r.u64()?; // id
    r.str()?; // kind
    r.u64()?; // thread
    r.opt(In::u64)?; // parent
    r.u32()?; // depth
    r.str()?; // identity
    r.opt(|r| r.str().map(|_| ()))?; // extension
    r.u8()?; // human
    let body_len = r.u32()? as usize;
    let start = r.at;
    r.take(body_len)?;
    std::str::from_utf8(&bytes[start..start + body_len]).map_err(|_| corrupt())
}

/// A message back from its stored bytes.
pub fn decode(bytes: &[u8]) -> Result<MessageRec> {
    let mut r = In { buf: bytes, at: 0 };
    message_format(&mut r)?;
    let id = r.u64()?;
    let kind = act(r.str()?)?;
    let thread = r.u64()?;
    let parent = r.opt(In::u64)?;
    let depth = r.u32()?;
    let identity = r.string()?;
    let extension = r.opt(In::string)?;
    let human = r.bool()?;
    let body = r.string()?;
    let created_at = r.u64()? as i64;
    let to = r.opt(In::string)?;
    let state = r.opt(|r| State::from_code(r.u8()?).ok_or_else(corrupt))?;
    let provenance =
        r.opt(|r| serde_json::from_str::<Map<String, Value>>(&r.string()?).map_err(|_| corrupt()))?;
    let claim = r.opt(In::u64)?;
    let counter_claim = r.opt(In::u64)?;
    let evidence = (0..r.u32()?)
        .map(|_| {
            Ok(Evidence {
                kind: EvidenceKind::from_name(r.str()?).ok_or_else(corrupt)?,
                reference: r.string()?,
                note: r.opt(In::string)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let supersedes = (0..r.u32()?).map(|_| r.u64()).collect::<Result<Vec<_>>>()?;
    let valid_until = r.opt(|r| r.u64().map(|t| t as i64))?;
    let key = r.opt(|r| {
        Ok(PostKey {
            key: r.string()?,
            digest: r.u64()?,
        })
    })?;
    if r.at != bytes.len() {
        return Err(corrupt());
    }
    Ok(MessageRec {
        id,
        kind,
        thread,
        parent,
        depth,
        identity,
        extension,
        human,
        body,
        created_at,
        to,
        state,
        provenance,
        claim,
        counter_claim,
        evidence,
        supersedes,
        valid_until,
        key,
    })
}

/// An act stored by its wire name.
fn act(kind: &str) -> Result<Act> {
    Act::from_kind(kind, true).ok_or_else(corrupt)
}

/// Reads a message's format byte.
fn message_format(r: &mut In<'_>) -> Result<()> {
    match r.u8()? {
        FORMAT => Ok(()),
        _ => Err(Error::storage(
            "a stored message has an unknown format".into(),
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A message with every field set (also the format's fingerprint's sample).
    pub(crate) fn full() -> MessageRec {
        MessageRec {
            id: 9,
            kind: Act::Assert,
            thread: 2,
            parent: Some(4),
            depth: 3,
            identity: "ainotes:bob".into(),
            extension: Some("w1".into()),
            human: true,
            body: "b \"quoted\" ünï".into(),
            created_at: 1_796_040_000_123,
            to: Some("ainotes:a".into()),
            state: Some(State::Rejected),
            provenance: Some(Map::from_iter([("model".to_string(), Value::from("m"))])),
            claim: Some(5),
            counter_claim: Some(6),
            evidence: vec![Evidence {
                kind: EvidenceKind::Log,
                reference: "r".into(),
                note: Some("n".into()),
            }],
            supersedes: vec![1, 2],
            valid_until: Some(1_796_040_000_000),
            key: Some(PostKey {
                key: "k-1".into(),
                digest: 0xfeed_beef,
            }),
        }
    }

    #[test]
    fn round_trips_every_field() {
        let m = full();
        assert_eq!(
            format!("{:?}", decode(&encode(&m)).unwrap()),
            format!("{m:?}")
        );
        let bare = MessageRec::bare(9, 2, None);
        assert_eq!(
            format!("{:?}", decode(&encode(&bare)).unwrap()),
            format!("{bare:?}")
        );
        assert_eq!(body(&encode(&m)).unwrap(), m.body);
        assert_eq!(body(&encode(&bare)).unwrap(), bare.body);
        assert!(body(&encode(&m)[..20]).is_err(), "a cut record is damage");
    }

    #[test]
    fn a_head_is_read_from_the_front_of_a_record_alone() {
        for kind in crate::protocol::acts::ACTS.iter().map(|s| s.act) {
            let mut m = full();
            m.kind = kind;
            let bytes = encode(&m);
            let want = MessageHead {
                id: 9,
                kind,
                parent: Some(4),
            };
            assert!(kind.kind().len() <= 7, "{kind:?} outgrows HEAD_BYTES");
            assert_eq!(head(&bytes[..HEAD_BYTES]).unwrap(), want);
            assert_eq!(head(&bytes).unwrap(), want);
        }
        let root = encode(&MessageRec::bare(3, 1, None));
        assert_eq!(head(&root).unwrap().parent, None);
        assert!(head(&root[..10]).is_err(), "a cut head is damage");
    }

    #[test]
    fn a_record_naming_no_act_or_evidence_kind_is_damage() {
        let bytes = encode(&full());
        // The kind follows the format byte and the id: a u32 length, then "assert".
        let mut shout = bytes.clone();
        shout[13..19].copy_from_slice(b"shout!");
        assert!(decode(&shout).is_err());
        let at = bytes.windows(3).position(|w| w == b"log").unwrap();
        let mut opinion = bytes.clone();
        opinion[at..at + 3].copy_from_slice(b"lag");
        assert!(decode(&opinion).is_err());
        assert!(decode(&bytes).is_ok());
    }

    /// A thread with every field set (also the format's fingerprint's sample).
    pub(crate) fn full_thread() -> ThreadRec {
        ThreadRec {
            id: 3,
            root: 7,
            topic: "Which port?".into(),
            creator: "ainotes:alice".into(),
            creator_extension: Some("w".into()),
            state: State::Decided,
            state_by_user: true,
            state_confirmed_at: Some(5),
            state_label: Some("Mod".into()),
            awaiting: Some(Awaiting {
                identity: "*".into(),
                extension: None,
                message: 9,
            }),
            message_count: 4,
            created_at: 1,
            updated_at: 2,
            last_message: 9,
            root_kind: Act::Ask,
            last_body: [
                ("ainotes:alice".to_string(), 42u64),
                ("human:ann".to_string(), 7),
            ]
            .into_iter()
            .collect(),
            guards: GuardState {
                since_progress: 3,
                recent: vec![Recent {
                    message: 9,
                    author: crate::protocol::guards::author_hash("ainotes:bob"),
                    hash: 11,
                }],
            },
        }
    }

    #[test]
    fn threads_round_trip() {
        let t = full_thread();
        let bytes = encode_thread(&t);
        assert_eq!(
            format!("{:?}", decode_thread(&bytes).unwrap()),
            format!("{t:?}")
        );
        let mut unknown = bytes.clone();
        unknown[0] = 5;
        assert!(decode_thread(&unknown).is_err());
        for cut in 0..bytes.len() {
            assert!(decode_thread(&bytes[..cut]).is_err());
        }
        let bare = ThreadRec {
            creator_extension: None,
            state_confirmed_at: None,
            state_label: None,
            awaiting: None,
            last_body: Default::default(),
            guards: GuardState::default(),
            ..t
        };
        assert_eq!(
            format!("{:?}", decode_thread(&encode_thread(&bare)).unwrap()),
            format!("{bare:?}")
        );
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let bytes = encode(&full());
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err());
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode(&extra).is_err());
        let mut wrong = bytes;
        wrong[0] = 9;
        assert!(decode(&wrong).is_err());
    }

    proptest::proptest! {
        /// The codec's fuzz target: any bytes are a record or an error, never a
        /// panic, whatever a damaged file holds.
        #[test]
        fn any_bytes_are_a_record_or_an_error(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        ) {
            let _ = decode(&bytes);
            let _ = decode_thread(&bytes);
            let _ = head(&bytes);
            let _ = body(&bytes);
        }

        /// A record with one byte changed decodes to a record that encodes back
        /// to those bytes, or is an error.
        #[test]
        fn a_record_with_a_byte_changed_is_a_record_or_an_error(
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::prelude::any::<u8>(),
            thread in proptest::prelude::any::<bool>(),
        ) {
            let mut m = full();
            m.provenance = None;
            let mut bytes = if thread {
                encode_thread(&ThreadRec::bare(3, 7))
            } else {
                encode(&m)
            };
            let i = at.index(bytes.len());
            bytes[i] = byte;
            if thread {
                if let Ok(t) = decode_thread(&bytes) {
                    proptest::prop_assert_eq!(encode_thread(&t), bytes);
                }
            } else if let Ok(m) = decode(&bytes) {
                proptest::prop_assert_eq!(encode(&m), bytes);
            }
        }
    }
}

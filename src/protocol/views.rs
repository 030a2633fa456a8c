//! The typed views of records that the engine hands out as they are (SPEC §8,
//! §16): an author, a presence, a lease, `whoami`. A typed
//! [`Session`](crate::Session) returns them, a refusal carries leases, and each
//! writes the JSON every transport shows.

use serde::Deserialize;
use serde_json::{json, Value};

use super::coordination::{LeaseMode, LeaseRec, PresenceRec, PresenceStatus};
use super::id_types::ThreadId;
use crate::time::Timestamp;

/// Who wrote a message: an identity and its extension.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Author {
    /// `<realm>:<handle>` or `human:<name>`.
    pub identity: String,
    /// The sub-agent, or `None`.
    pub extension: Option<String>,
}

/// The presence of one (identity, extension) (SPEC §16.1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Presence {
    /// Whose.
    pub identity: String,
    /// The sub-agent, or `None`.
    pub extension: Option<String>,
    /// The status set last (kept when stale).
    pub status: PresenceStatus,
    /// The note set with it.
    pub note: Option<String>,
    /// When the status last changed.
    pub since: Timestamp,
    /// When it goes stale.
    pub expires_at: Timestamp,
    /// Past `expires_at`.
    pub stale: bool,
}

impl Presence {
    pub(crate) fn from_rec(p: &PresenceRec, now: i64) -> Presence {
        Presence {
            identity: p.identity.clone(),
            extension: p.extension.clone(),
            status: p.status,
            note: p.note.clone(),
            since: Timestamp::from_millis(p.since),
            expires_at: Timestamp::from_millis(p.expires_at),
            stale: p.stale(now),
        }
    }

    /// The item as every transport shows it.
    pub fn to_json(&self) -> Value {
        json!({
            "identity": self.identity, "extension": self.extension,
            "status": self.status.as_str(), "note": self.note,
            "since": self.since, "expires_at": self.expires_at, "stale": self.stale,
        })
    }
}

/// A lease (SPEC §16.2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Lease {
    /// `ls_…`.
    pub id: String,
    /// What it covers: a path-like string; a trailing `/` covers everything under it.
    pub resource: String,
    /// Exclusive or shared.
    pub mode: LeaseMode,
    /// Who holds it.
    pub holder: Author,
    /// The thread it is about (`th_…`), if any.
    pub thread: Option<ThreadId>,
    /// What the holder said it is for.
    pub note: Option<String>,
    /// When it was first granted (a renewal keeps it).
    pub granted_at: Timestamp,
    /// When it ends unless renewed.
    pub expires_at: Timestamp,
    /// When it was released: only in what `release` returns.
    #[serde(default)]
    pub released_at: Option<Timestamp>,
}

impl Lease {
    pub(crate) fn from_rec(l: &LeaseRec) -> Lease {
        Lease {
            id: super::coordination::lease_key(l.id),
            resource: l.resource.clone(),
            mode: l.mode,
            holder: Author {
                identity: l.identity.clone(),
                extension: l.extension.clone(),
            },
            thread: l.thread.map(ThreadId),
            note: l.note.clone(),
            granted_at: Timestamp::from_millis(l.granted_at),
            expires_at: Timestamp::from_millis(l.expires_at),
            released_at: None,
        }
    }

    /// What `release` returns: the lease as it was, and when it ended.
    pub(crate) fn released(l: &LeaseRec, at: i64) -> Lease {
        Lease {
            released_at: Some(Timestamp::from_millis(at)),
            ..Lease::from_rec(l)
        }
    }

    /// The lease as every transport shows it; `released_at` only when set.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "id": self.id, "resource": self.resource, "mode": self.mode.as_str(),
            "holder": { "identity": self.holder.identity, "extension": self.holder.extension },
            "thread": self.thread, "note": self.note,
            "granted_at": self.granted_at, "expires_at": self.expires_at,
        });
        if let (Some(at), Value::Object(map)) = (&self.released_at, &mut v) {
            map.insert("released_at".into(), json!(at));
        }
        v
    }
}

/// `whoami`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WhoAmI {
    /// The token's identity.
    pub identity: String,
    /// `llm` or `human`.
    pub kind: String,
    /// Its rights.
    pub rights: Vec<String>,
    /// Its label.
    pub label: String,
    /// The forum's realm.
    pub realm: String,
}

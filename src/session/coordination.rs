//! The typed results of the coordination profile (SPEC §16) and the
//! [`Session`](super::Session) methods that return them.

use serde::Deserialize;
use serde_json::{json, Value};

use super::types::Author;
use super::Session;
use crate::engine::requests::coordination::{
    GetLeases, GetPresence, Lease as LeaseArgs, Release, SetPresence,
};
use crate::engine::requests::id_of;
use crate::error::Result;
use crate::protocol::coordination::{LeaseMode, LeaseRec, PresenceRec, PresenceStatus};
use crate::protocol::ids::IdKind;
use crate::time;

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
    pub since: String,
    /// When it goes stale.
    pub expires_at: String,
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
            since: time::format(p.since),
            expires_at: time::format(p.expires_at),
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
    pub thread: Option<String>,
    /// What the holder said it is for.
    pub note: Option<String>,
    /// When it was first granted (a renewal keeps it).
    pub granted_at: String,
    /// When it ends unless renewed.
    pub expires_at: String,
    /// When it was released: only in what `release` returns.
    #[serde(default)]
    pub released_at: Option<String>,
}

impl Lease {
    pub(crate) fn from_rec(l: &LeaseRec) -> Lease {
        Lease {
            id: crate::protocol::coordination::lease_key(l.id),
            resource: l.resource.clone(),
            mode: l.mode,
            holder: Author {
                identity: l.identity.clone(),
                extension: l.extension.clone(),
            },
            thread: l.thread.map(|t| IdKind::Thread.key(t)),
            note: l.note.clone(),
            granted_at: time::format(l.granted_at),
            expires_at: time::format(l.expires_at),
            released_at: None,
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

/// What [`Session::lease`] asks for, beyond the resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseRequest {
    /// Exclusive (the default) or shared.
    pub mode: Option<LeaseMode>,
    /// Seconds it lasts: 1 to `lease_ttl_max_s`; default the smaller of 600 and it.
    pub ttl_s: Option<u64>,
    /// The thread it is about.
    pub thread: Option<String>,
    /// What it is for, at most 200 characters.
    pub note: Option<String>,
}

impl Session<'_> {
    /// Says what this caller (with its extension) is doing, for `ttl_s` seconds
    /// (default 900) (SPEC §16.1).
    pub fn set_presence(
        &self,
        status: PresenceStatus,
        note: Option<&str>,
        ttl_s: Option<u64>,
    ) -> Result<Presence> {
        let f = self.forum;
        let req = SetPresence {
            status,
            note: note.map(str::to_string),
            ttl_s,
            extension: self.extension.clone(),
        };
        let req = req.check(&f.config).map(|()| req);
        f.guarded(|| f.set_presence(self.token(), &req))
            .map(|p| Presence::from_rec(&p, f.now()))
    }

    /// The presence of every (identity, extension) that ever set one, or of one
    /// identity's.
    pub fn presence(&self, identity: Option<&str>) -> Result<Vec<Presence>> {
        let req = GetPresence {
            identity: identity.map(str::to_string),
        };
        let req = req.check().map(|()| req);
        let f = self.forum;
        let (items, now) = f.guarded(|| f.get_presence(self.token(), &req))?;
        Ok(items.iter().map(|p| Presence::from_rec(p, now)).collect())
    }

    /// Takes (or renews) a lease on `resource` for this caller (with its
    /// extension). Another holder's overlapping lease is refused as
    /// `lease_conflict`, whose [`crate::Refusal::leases`] names it.
    pub fn lease(&self, resource: &str, request: &LeaseRequest) -> Result<Lease> {
        let f = self.forum;
        let req = LeaseArgs {
            resource: resource.to_string(),
            mode: request.mode,
            ttl_s: request.ttl_s,
            thread: None,
            note: request.note.clone(),
            extension: self.extension.clone(),
        };
        let req = req.check(&f.config).and_then(|()| {
            // The thread's syntax is checked where the generic call checks it.
            let thread = request.thread.as_deref();
            let thread = thread.map(|t| id_of("thread", t)).transpose()?;
            Ok(LeaseArgs { thread, ..req })
        });
        f.guarded(|| f.lease(self.token(), &req))
            .map(|l| Lease::from_rec(&l))
    }

    /// Ends an active lease (`ls_…` or its number).
    pub fn release(&self, lease: &str) -> Result<Lease> {
        let req = Release::from_text(lease);
        let f = self.forum;
        let (rec, at) = f.guarded(|| f.release(self.token(), &req))?;
        let mut lease = Lease::from_rec(&rec);
        lease.released_at = Some(time::format(at));
        Ok(lease)
    }

    /// The active leases, by id: those overlapping `resource` and/or held by
    /// `identity` when given.
    pub fn leases(&self, resource: Option<&str>, identity: Option<&str>) -> Result<Vec<Lease>> {
        let req = GetLeases {
            resource: resource.map(str::to_string),
            identity: identity.map(str::to_string),
        };
        let req = req.check().map(|()| req);
        let f = self.forum;
        let items = f.guarded(|| f.get_leases(self.token(), &req))?;
        Ok(items.iter().map(Lease::from_rec).collect())
    }
}

//! The typed results of the coordination profile (SPEC §16) and the
//! [`Session`](super::Session) methods that return them.

use super::Session;
use crate::engine::requests::coordination::{
    GetLeases, GetPresence, Lease as LeaseArgs, Release, SetPresence,
};
use crate::engine::requests::id_of;
use crate::error::Result;
use crate::protocol::coordination::{LeaseMode, PresenceStatus};
pub use crate::protocol::views::{Lease, Presence};

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
        Ok(Lease::released(&rec, at))
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

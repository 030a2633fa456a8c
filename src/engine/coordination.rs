//! The coordination profile (SPEC §16): presence and leases.
//!
//! Checks run in the order of §12.1: the profile (an operation of a profile that
//! is off does not exist), the token, the arguments, the right, the references,
//! then the rules (`lease_conflict`, `lease_authority_missing`), then the limits.
//! A lease is judged inside the forum's one write transaction, so two callers
//! racing for one resource are judged one after the other, on every backend (on
//! PostgreSQL the writer holds the forum's lock, shared by every engine).
//! Expiry is a comparison with the clock: nothing needs to sweep for a lease
//! past its time to stop counting. Expired leases found by a lease write are
//! removed with it, which only keeps the table small.

use serde_json::{Map, Value};

use super::requests::coordination::{
    GetLeases, GetPresence, Lease as LeaseArgs, Release, SetPresence,
};
use super::requests::Args;
use super::tokens::Right;
use super::Forum;
use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::coordination::{
    self as rules, LeaseMode, LeaseRec, PresenceRec, PRESENCE_TTL_DEFAULT_S,
};
use crate::protocol::ids::IdKind;
use crate::protocol::views::Lease;

/// The profile's operations, in the order of SPEC §18.4.
pub(crate) const OPERATIONS: [&str; 5] = [
    "set_presence",
    "get_presence",
    "lease",
    "release",
    "get_leases",
];

fn ms(seconds: u64) -> i64 {
    i64::try_from(seconds.saturating_mul(1000)).unwrap_or(i64::MAX)
}

impl Forum {
    /// Refuses an operation of the coordination profile while it is off: to the
    /// generic call it does not exist (SPEC §16).
    fn coordination_on(&self, operation: &str) -> Result<()> {
        if self.config.coordination {
            Ok(())
        } else {
            Err(Refusal::new(
                Reason::InvalidArgument,
                format!("unknown operation `{operation}`: the coordination profile is off"),
            )
            .into())
        }
    }

    /// `set_presence` (SPEC §16.1): the caller's status, note and time to live.
    pub(crate) fn set_presence(
        &self,
        token: Option<&str>,
        req: &Args<SetPresence>,
    ) -> Result<PresenceRec> {
        self.coordination_on("set_presence")?;
        let mut tx = self.store.write()?;
        let caller = self.authenticate(&*tx, token)?;
        let req = req.as_ref().map_err(Clone::clone)?;
        let (status, note, extension) = (req.status, req.note.clone(), req.extension.clone());
        let ttl = req.ttl_s.unwrap_or(PRESENCE_TTL_DEFAULT_S);
        caller.require(Right::Read)?;
        let now = self.now();
        let before = tx
            .presences(Some(&caller.identity))?
            .into_iter()
            .find(|p| p.extension == extension);
        // The same status again extends it; after it went stale, it starts anew.
        let since = match before {
            Some(p) if p.status == status && !p.stale(now) => p.since,
            _ => now,
        };
        let rec = PresenceRec {
            identity: caller.identity.clone(),
            extension,
            status,
            note,
            since,
            expires_at: now.saturating_add(ms(ttl)),
        };
        tx.put_presence(&rec)?;
        tx.commit()?;
        Ok(rec)
    }

    /// `get_presence`: every presence, or one identity's, and the time they were
    /// read at (for `stale`).
    pub(crate) fn get_presence(
        &self,
        token: Option<&str>,
        req: &Args<GetPresence>,
    ) -> Result<(Vec<PresenceRec>, i64)> {
        self.coordination_on("get_presence")?;
        let tx = self.store.read()?;
        let caller = self.authenticate(&*tx, token)?;
        let identity = &req.as_ref().map_err(Clone::clone)?.identity;
        caller.require(Right::Read)?;
        Ok((tx.presences(identity.as_deref())?, self.now()))
    }

    /// `lease` (SPEC §16.2): grants or renews a lease for the caller.
    pub(crate) fn lease(&self, token: Option<&str>, req: &Args<LeaseArgs>) -> Result<LeaseRec> {
        self.coordination_on("lease")?;
        let mut tx = self.store.write()?;
        let caller = self.authenticate(&*tx, token)?;
        let req = req.as_ref().map_err(Clone::clone)?;
        let resource = req.resource.clone();
        let mode = req.mode.unwrap_or(LeaseMode::Exclusive);
        let max = self.config.limits.lease_ttl_max_s as u64;
        let ttl = req.ttl_s.unwrap_or(rules::LEASE_TTL_DEFAULT_S.min(max));
        let thread = req.thread.map(|t| t.get());
        let (note, extension) = (req.note.clone(), req.extension.clone());
        caller.require(Right::Write)?;
        if let Some(id) = thread {
            if tx.thread(id)?.is_none() {
                return Err(Refusal::new(
                    Reason::ThreadNotFound,
                    format!("{} does not exist", IdKind::Thread.key(id)),
                )
                .with_field("thread")
                .into());
            }
        }
        let now = self.now();
        let stored = tx.leases()?;
        let who = (caller.identity.as_str(), extension.as_deref());
        let conflicting = rules::conflicts(&stored, &resource, mode, who.0, who.1, now);
        if !conflicting.is_empty() {
            let holders: Vec<String> = conflicting
                .iter()
                .map(|l| {
                    let ext = l
                        .extension
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default();
                    format!("{} {}{ext}", rules::lease_key(l.id), l.identity)
                })
                .collect();
            return Err(Refusal::new(
                Reason::LeaseConflict,
                format!(
                    "`{resource}` overlaps a lease held by another: {}",
                    holders.join(", ")
                ),
            )
            .with_field("resource")
            .with_leases(conflicting.into_iter().map(Lease::from_rec).collect())
            .into());
        }
        let mine = |l: &&LeaseRec| l.active(now) && l.held_by(who.0, who.1);
        let renewed = stored
            .iter()
            .filter(mine)
            .find(|l| l.resource == resource && l.mode == mode)
            .cloned();
        let expires_at = now.saturating_add(ms(ttl));
        let rec = match renewed {
            Some(mut l) => {
                l.expires_at = expires_at;
                if thread.is_some() {
                    l.thread = thread;
                }
                if note.is_some() {
                    l.note = note;
                }
                l
            }
            None => {
                let held = stored.iter().filter(mine).count();
                if held >= self.config.limits.leases_max {
                    return Err(Refusal::new(
                        Reason::LimitExceeded,
                        format!(
                            "this holder already holds {held} active leases (leases_max); release one first"
                        ),
                    )
                    .with_limit(crate::Limit::LeasesMax)
                    .into());
                }
                LeaseRec {
                    id: tx.next_lease_id()?,
                    resource,
                    mode,
                    identity: caller.identity.clone(),
                    extension,
                    thread,
                    note,
                    granted_at: now,
                    expires_at,
                }
            }
        };
        for old in stored.iter().filter(|l| !l.active(now)) {
            tx.remove_lease(old.id)?;
        }
        tx.put_lease(&rec)?;
        tx.commit()?;
        Ok(rec)
    }

    /// `release`: ends an active lease; returns it and the time it ended.
    pub(crate) fn release(
        &self,
        token: Option<&str>,
        req: &Args<Release>,
    ) -> Result<(LeaseRec, i64)> {
        self.coordination_on("release")?;
        let mut tx = self.store.write()?;
        let caller = self.authenticate(&*tx, token)?;
        let id = req.as_ref().map_err(Clone::clone)?.lease;
        caller.require(Right::Write)?;
        let now = self.now();
        let rec = tx.lease(id)?.filter(|l| l.active(now)).ok_or_else(|| {
            Error::from(
                Refusal::new(
                    Reason::LeaseNotFound,
                    format!("{} is not an active lease", rules::lease_key(id)),
                )
                .with_field("lease"),
            )
        })?;
        // The holder's identity (any of its extensions), a lock holder, a person.
        if rec.identity != caller.identity && !caller.has(Right::Lock) {
            return Err(Refusal::new(
                Reason::LeaseAuthorityMissing,
                format!(
                    "{} is held by {}; only its holder, a lock holder or a human may release it",
                    rules::lease_key(id),
                    rec.identity
                ),
            )
            .into());
        }
        tx.remove_lease(id)?;
        tx.commit()?;
        Ok((rec, now))
    }

    /// `get_leases`: the active leases, by id, overlapping `resource` and/or held
    /// by `identity` when given.
    pub(crate) fn get_leases(
        &self,
        token: Option<&str>,
        req: &Args<GetLeases>,
    ) -> Result<Vec<LeaseRec>> {
        self.coordination_on("get_leases")?;
        let tx = self.store.read()?;
        let caller = self.authenticate(&*tx, token)?;
        let GetLeases { resource, identity } = req.as_ref().map_err(Clone::clone)?;
        caller.require(Right::Read)?;
        let now = self.now();
        let mut leases = tx.leases()?;
        leases.retain(|l| {
            l.active(now)
                && resource
                    .as_deref()
                    .is_none_or(|r| rules::overlap(&l.resource, r))
                && identity.as_deref().is_none_or(|i| l.identity == i)
        });
        Ok(leases)
    }

    /// The generic call's JSON of the profile's operations.
    pub(crate) fn coordination_call(
        &self,
        token: Option<&str>,
        operation: &str,
        args: &Map<String, Value>,
    ) -> Result<Value> {
        use crate::protocol::views::Presence;
        let items = |list: Vec<Value>| {
            let mut map = Map::new();
            map.insert("items".into(), Value::Array(list));
            Value::Object(map)
        };
        let one = |key: &str, value: Value| {
            let mut map = Map::new();
            map.insert(key.into(), value);
            Value::Object(map)
        };
        match operation {
            "set_presence" => {
                let rec = self.set_presence(token, &SetPresence::parse(args, &self.config))?;
                Ok(one(
                    "presence",
                    Presence::from_rec(&rec, self.now()).to_json(),
                ))
            }
            "get_presence" => {
                let (list, now) = self.get_presence(token, &GetPresence::parse(args))?;
                Ok(items(
                    list.iter()
                        .map(|p| Presence::from_rec(p, now).to_json())
                        .collect(),
                ))
            }
            "lease" => {
                let rec = self.lease(token, &LeaseArgs::parse(args, &self.config))?;
                Ok(one("lease", Lease::from_rec(&rec).to_json()))
            }
            "release" => {
                let (rec, at) = self.release(token, &Release::parse(args))?;
                Ok(one("lease", Lease::released(&rec, at).to_json()))
            }
            "get_leases" => {
                let list = self.get_leases(token, &GetLeases::parse(args))?;
                Ok(items(
                    list.iter().map(|l| Lease::from_rec(l).to_json()).collect(),
                ))
            }
            other => Err(Error::UnknownOperation(other.to_string())),
        }
    }
}

//! The arguments of the coordination profile's operations (SPEC §16).

use serde_json::{Map, Value};

use super::{arg, bad_arg, check_extension, extension, id_arg, only, Args};
use crate::config::Config;
use crate::protocol::coordination::{
    self as rules, LeaseMode, PresenceStatus, NOTE_MAX_CHARS, PRESENCE_TTL_MAX_S,
    RESOURCE_MAX_CHARS,
};
use crate::protocol::id_types::ThreadId;
use crate::protocol::ids::{self, IdKind};

fn bad_ttl(max: u64) -> super::Refusal {
    bad_arg(
        "ttl_s",
        format!("`ttl_s` must be an integer from 1 to {max}"),
    )
}

/// `ttl_s`: an integer from 1 to `max`.
fn ttl_arg(args: &Map<String, Value>, max: u64) -> Args<Option<u64>> {
    match arg(args, "ttl_s") {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=max).contains(n))
            .map(Some)
            .ok_or_else(|| bad_ttl(max)),
    }
}

fn check_ttl(ttl: Option<u64>, max: u64) -> Args<()> {
    match ttl {
        Some(n) if !(1..=max).contains(&n) => Err(bad_ttl(max)),
        _ => Ok(()),
    }
}

fn bad_note() -> super::Refusal {
    bad_arg(
        "note",
        format!("`note` must be a string of at most {NOTE_MAX_CHARS} characters"),
    )
}

fn note_fits(note: &str) -> bool {
    note.chars().count() <= NOTE_MAX_CHARS
}

/// `note`: a string of at most 200 characters.
fn note_arg(args: &Map<String, Value>) -> Args<Option<String>> {
    match arg(args, "note") {
        None => Ok(None),
        Some(Value::String(n)) if note_fits(n) => Ok(Some(n.clone())),
        Some(_) => Err(bad_note()),
    }
}

fn check_note(note: Option<&str>) -> Args<()> {
    match note {
        Some(n) if !note_fits(n) => Err(bad_note()),
        _ => Ok(()),
    }
}

fn bad_resource() -> super::Refusal {
    bad_arg(
        "resource",
        format!(
            "`resource` must be 1-{RESOURCE_MAX_CHARS} characters of segments separated by `/`, \
             none empty; a trailing `/` covers everything under it"
        ),
    )
}

/// A resource (SPEC §16.2), required or not.
fn resource_arg(args: &Map<String, Value>, required: bool) -> Args<Option<String>> {
    match arg(args, "resource") {
        None if required => Err(bad_arg("resource", "`resource` is required")),
        None => Ok(None),
        Some(Value::String(r)) if rules::is_resource(r) => Ok(Some(r.clone())),
        Some(_) => Err(bad_resource()),
    }
}

fn check_resource(resource: Option<&str>) -> Args<()> {
    match resource {
        Some(r) if !rules::is_resource(r) => Err(bad_resource()),
        _ => Ok(()),
    }
}

fn bad_identity() -> super::Refusal {
    bad_arg(
        "identity",
        "`identity` must be `<realm>:<handle>` or `human:<name>`",
    )
}

/// `identity`: an identity's syntax (one the forum does not know lists nothing).
fn identity_arg(args: &Map<String, Value>) -> Args<Option<String>> {
    match arg(args, "identity") {
        None => Ok(None),
        Some(Value::String(i)) if ids::is_identity(i) => Ok(Some(i.clone())),
        Some(_) => Err(bad_identity()),
    }
}

fn check_identity(identity: Option<&str>) -> Args<()> {
    match identity {
        Some(i) if !ids::is_identity(i) => Err(bad_identity()),
        _ => Ok(()),
    }
}

fn check_extension_opt(extension: Option<&str>, config: &Config) -> Args<()> {
    extension.map_or(Ok(()), |e| check_extension(e, config))
}

/// `set_presence`: the caller's status, note and time to live.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetPresence {
    pub(crate) status: PresenceStatus,
    pub(crate) note: Option<String>,
    pub(crate) ttl_s: Option<u64>,
    pub(crate) extension: Option<String>,
}

impl SetPresence {
    pub(crate) fn parse(args: &Map<String, Value>, config: &Config) -> Args<Self> {
        only(args, &["status", "note", "ttl_s", "extension"])?;
        let status = match arg(args, "status") {
            None => return Err(bad_arg("status", "`status` is required")),
            Some(v) => v
                .as_str()
                .and_then(PresenceStatus::from_name)
                .ok_or_else(|| bad_arg("status", "`status` must be working, idle or away"))?,
        };
        let note = note_arg(args)?;
        let ttl_s = ttl_arg(args, PRESENCE_TTL_MAX_S)?;
        let extension = extension(args, config)?;
        Ok(SetPresence {
            status,
            note,
            ttl_s,
            extension,
        })
    }

    /// The checks of [`SetPresence::parse`] on a request built in Rust.
    pub(crate) fn check(&self, config: &Config) -> Args<()> {
        check_note(self.note.as_deref())?;
        check_ttl(self.ttl_s, PRESENCE_TTL_MAX_S)?;
        check_extension_opt(self.extension.as_deref(), config)
    }
}

/// `get_presence`: every presence, or one identity's.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GetPresence {
    pub(crate) identity: Option<String>,
}

impl GetPresence {
    pub(crate) fn parse(args: &Map<String, Value>) -> Args<Self> {
        only(args, &["identity"])?;
        let identity = identity_arg(args)?;
        Ok(GetPresence { identity })
    }

    /// The checks of [`GetPresence::parse`] on a request built in Rust.
    pub(crate) fn check(&self) -> Args<()> {
        check_identity(self.identity.as_deref())
    }
}

/// `lease`: a lease to grant or renew.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lease {
    pub(crate) resource: String,
    pub(crate) mode: Option<LeaseMode>,
    pub(crate) ttl_s: Option<u64>,
    pub(crate) thread: Option<ThreadId>,
    pub(crate) note: Option<String>,
    pub(crate) extension: Option<String>,
}

impl Lease {
    pub(crate) fn parse(args: &Map<String, Value>, config: &Config) -> Args<Self> {
        only(
            args,
            &["resource", "mode", "ttl_s", "thread", "note", "extension"],
        )?;
        let resource = resource_arg(args, true)?.unwrap_or_default();
        let mode = match arg(args, "mode") {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(LeaseMode::from_name)
                    .ok_or_else(|| bad_arg("mode", "`mode` must be exclusive or shared"))?,
            ),
        };
        let ttl_s = ttl_arg(args, config.limits.lease_ttl_max_s as u64)?;
        let thread = id_arg(args, "thread", IdKind::Thread)?.map(ThreadId);
        let note = note_arg(args)?;
        let extension = extension(args, config)?;
        Ok(Lease {
            resource,
            mode,
            ttl_s,
            thread,
            note,
            extension,
        })
    }

    /// The checks of [`Lease::parse`] on a request built in Rust.
    pub(crate) fn check(&self, config: &Config) -> Args<()> {
        check_resource(Some(&self.resource))?;
        check_ttl(self.ttl_s, config.limits.lease_ttl_max_s as u64)?;
        check_note(self.note.as_deref())?;
        check_extension_opt(self.extension.as_deref(), config)
    }
}

/// `release`: one lease.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Release {
    pub(crate) lease: u64,
}

fn bad_lease() -> super::Refusal {
    bad_arg(
        "lease",
        "`lease` must be a ls_<n> key or a positive integer",
    )
}

impl Release {
    pub(crate) fn parse(args: &Map<String, Value>) -> Args<Self> {
        only(args, &["lease"])?;
        let lease = match arg(args, "lease") {
            None => return Err(bad_arg("lease", "`lease` is required")),
            Some(v) => rules::parse_lease_id(v).ok_or_else(bad_lease)?,
        };
        Ok(Release { lease })
    }

    /// A lease named in text (`ls_3` or `3`), refused as the generic call
    /// refuses it.
    pub(crate) fn from_text(lease: &str) -> Args<Self> {
        let lease =
            rules::parse_lease_id(&Value::String(lease.to_string())).ok_or_else(bad_lease)?;
        Ok(Release { lease })
    }
}

/// `get_leases`: the active leases overlapping a resource and/or of a holder.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GetLeases {
    pub(crate) resource: Option<String>,
    pub(crate) identity: Option<String>,
}

impl GetLeases {
    pub(crate) fn parse(args: &Map<String, Value>) -> Args<Self> {
        only(args, &["resource", "identity"])?;
        let resource = resource_arg(args, false)?;
        let identity = identity_arg(args)?;
        Ok(GetLeases { resource, identity })
    }

    /// The checks of [`GetLeases::parse`] on a request built in Rust.
    pub(crate) fn check(&self) -> Args<()> {
        check_resource(self.resource.as_deref())?;
        check_identity(self.identity.as_deref())
    }
}

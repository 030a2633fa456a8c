//! The arguments of each operation, typed: one struct per operation, each with
//! one parse from the generic call's JSON argument object.
//!
//! A parse refuses exactly what the operation refused when it read JSON itself
//! (an unknown argument, a wrong type, a bad id), in the same order. Its refusal
//! is not raised at once: the operation raises it after the token is checked,
//! since a refusal of the token comes before one of the arguments (SPEC §12.1).
//! That is what [`Args`] carries. The typed [`crate::Session`] builds these
//! structs directly, with no JSON in between.

pub(crate) mod coordination;
pub(crate) mod provenance;
pub(crate) mod read;

use serde_json::{Map, Value};

use crate::config::Config;
use crate::error::{Reason, Refusal};
use crate::protocol::id_types::InvalidId;
use crate::protocol::ids::{self, parse_id, IdKind};

pub(crate) use read::{GetClaim, GetEvents, GetInbox, GetMessages, GetThread, ListThreads, Search};

/// A parsed request, or the refusal of its arguments, raised by the operation
/// once the token is checked.
pub(crate) type Args<T> = Result<T, Refusal>;

/// A cursor as the caller gave it (`since`); the operation decodes it with the
/// forum's key and the index it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor(pub(crate) String);

impl From<&str> for Cursor {
    fn from(text: &str) -> Self {
        Cursor(text.to_string())
    }
}

pub(crate) fn bad_arg(field: &str, message: impl Into<String>) -> Refusal {
    Refusal::new(Reason::InvalidArgument, message).with_field(field)
}

/// Refuses any argument not in `allowed`.
pub(crate) fn only(args: &Map<String, Value>, allowed: &[&str]) -> Args<()> {
    for key in args.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(bad_arg(key, format!("unknown argument `{key}`")));
        }
    }
    Ok(())
}

/// Refuses any argument not in `allowed`, save `wait_ms` where the listen
/// profile is on (SPEC §14.2): without it, `wait_ms` is an unknown argument.
pub(crate) fn only_waiting(
    args: &Map<String, Value>,
    allowed: &[&str],
    config: &Config,
) -> Args<()> {
    for key in args.keys() {
        if !(allowed.contains(&key.as_str()) || config.listen && key == "wait_ms") {
            return Err(bad_arg(key, format!("unknown argument `{key}`")));
        }
    }
    Ok(())
}

/// An argument, `null` taken for absent.
pub(crate) fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

fn bad_id(key: &str, kind: IdKind) -> Refusal {
    bad_arg(
        key,
        format!(
            "`{key}` must be a {}<n> key or a positive integer",
            kind.prefix()
        ),
    )
}

/// An id argument: its key (`th_1`) or its number.
pub(crate) fn id_arg(args: &Map<String, Value>, key: &str, kind: IdKind) -> Args<Option<u64>> {
    match arg(args, key) {
        None => Ok(None),
        Some(v) => parse_id(kind, v).map(Some).ok_or_else(|| bad_id(key, kind)),
    }
}

/// A required id argument.
pub(crate) fn required_id(args: &Map<String, Value>, key: &str, kind: IdKind) -> Args<u64> {
    id_arg(args, key, kind)?.ok_or_else(|| bad_arg(key, format!("`{key}` is required")))
}

/// An id the typed API was given (its key, its number or the id itself),
/// refused as the generic call refuses a bad `key`.
pub(crate) fn id_of<T>(key: &str, id: impl TryInto<T, Error: Into<InvalidId>>) -> Args<T> {
    id.try_into().map_err(|e| bad_id(key, e.into().kind))
}

/// The refusal of a `limit` out of `1..=page_max`.
pub(crate) fn bad_limit(config: &Config) -> Refusal {
    Refusal::new(
        Reason::InvalidArgument,
        format!(
            "`limit` must be an integer from 1 to {}",
            config.limits.page_max
        ),
    )
    .with_field("limit")
    .with_limit(crate::Limit::PageMax)
}

/// `limit` and `since` of a list read, in that order.
pub(crate) fn page(
    args: &Map<String, Value>,
    config: &Config,
) -> Args<(Option<usize>, Option<Cursor>)> {
    let limit = match arg(args, "limit") {
        None => None,
        Some(v) => {
            let n = v
                .as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()));
            match n {
                Some(n) if n >= 1 && n as usize <= config.limits.page_max => Some(n as usize),
                _ => return Err(bad_limit(config)),
            }
        }
    };
    let since = match arg(args, "since") {
        None => None,
        Some(Value::String(c)) => Some(Cursor(c.clone())),
        Some(_) => {
            return Err(Refusal::new(
                Reason::InvalidCursor,
                "`since` must be a cursor string this forum issued",
            )
            .with_field("since"))
        }
    };
    Ok((limit, since))
}

/// `wait_ms` of a waiting read, where the listen profile is on. A value that is
/// not a whole number of milliseconds is kept as one no forum accepts: it is
/// refused, like one past `wait_max_ms`, after the read's own checks.
pub(crate) fn wait(args: &Map<String, Value>, config: &Config) -> Option<u64> {
    match args.get("wait_ms").filter(|_| config.listen)? {
        Value::Null => Some(0),
        v => Some(v.as_u64().unwrap_or(u64::MAX)),
    }
}

/// `extension` of a read: the caller's sub-agent.
pub(crate) fn extension(args: &Map<String, Value>, config: &Config) -> Args<Option<String>> {
    match arg(args, "extension") {
        None => Ok(None),
        Some(Value::String(e)) => check_extension(e, config).map(|()| Some(e.clone())),
        Some(_) => Err(bad_extension()),
    }
}

fn bad_extension() -> Refusal {
    bad_arg(
        "extension",
        "`extension` is 1-64 characters of [A-Za-z0-9._-]",
    )
}

/// Refuses an extension that is not one (the typed API checks its own).
pub(crate) fn check_extension(extension: &str, config: &Config) -> Args<()> {
    if ids::is_extension(extension, config.limits.extension_max_chars) {
        Ok(())
    } else {
        Err(bad_extension())
    }
}

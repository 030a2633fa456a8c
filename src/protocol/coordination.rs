//! The coordination profile's pure rules (SPEC §16): presence statuses, lease
//! resources and their overlap, lease modes, and which active leases a request
//! conflicts with. The records are stored as JSON; times are ms since the epoch.

use serde::{Deserialize, Serialize};

/// Longest resource, in characters.
pub(crate) const RESOURCE_MAX_CHARS: usize = 200;
/// Longest note of a presence or a lease, in characters.
pub(crate) const NOTE_MAX_CHARS: usize = 200;
/// Longest presence, in seconds, and the default one.
pub(crate) const PRESENCE_TTL_MAX_S: u64 = 86_400;
pub(crate) const PRESENCE_TTL_DEFAULT_S: u64 = 900;
/// A lease's default time to live, before `lease_ttl_max_s` caps it.
pub(crate) const LEASE_TTL_DEFAULT_S: u64 = 600;
/// The key prefix of a lease id.
pub(crate) const LEASE_PREFIX: &str = "ls_";

/// The key of lease `n`: `ls_<n>`.
pub(crate) fn lease_key(n: u64) -> String {
    format!("{LEASE_PREFIX}{n}")
}

/// A lease id given as `"ls_12"`, `12` or `"12"` (SPEC §1's forms); `None` for
/// anything else.
pub(crate) fn parse_lease_id(value: &serde_json::Value) -> Option<u64> {
    let positive = |digits: &str| {
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
            .filter(|n| *n > 0)
    };
    match value {
        serde_json::Value::Number(n) => n.as_u64().filter(|n| *n > 0),
        serde_json::Value::String(s) => positive(s.strip_prefix(LEASE_PREFIX).unwrap_or(s)),
        _ => None,
    }
}

/// What an agent says it is doing (SPEC §16.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PresenceStatus {
    /// At work.
    Working,
    /// Waiting for something to do.
    Idle,
    /// Not reachable for a while.
    Away,
}

impl PresenceStatus {
    /// Every status, in the manifest's order.
    pub const ALL: [PresenceStatus; 3] = [
        PresenceStatus::Working,
        PresenceStatus::Idle,
        PresenceStatus::Away,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            PresenceStatus::Working => "working",
            PresenceStatus::Idle => "idle",
            PresenceStatus::Away => "away",
        }
    }

    /// The status of a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// Whether a lease excludes every other holder or only exclusive ones (SPEC §16.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaseMode {
    /// Conflicts with every overlapping lease of another holder.
    Exclusive,
    /// Conflicts only with an overlapping exclusive lease of another holder.
    Shared,
}

impl LeaseMode {
    /// Both modes, the default first.
    pub const ALL: [LeaseMode; 2] = [LeaseMode::Exclusive, LeaseMode::Shared];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            LeaseMode::Exclusive => "exclusive",
            LeaseMode::Shared => "shared",
        }
    }

    /// The mode of a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

/// The presence of one (identity, extension).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresenceRec {
    /// Whose.
    pub identity: String,
    /// The sub-agent, or `None`.
    pub extension: Option<String>,
    /// The status set last.
    pub status: PresenceStatus,
    /// The note set last.
    pub note: Option<String>,
    /// When the status last changed.
    pub since: i64,
    /// When it goes stale.
    pub expires_at: i64,
}

impl PresenceRec {
    /// Past its time to live: shown with `"stale": true`.
    pub fn stale(&self, now: i64) -> bool {
        now >= self.expires_at
    }
}

/// A lease, stored while it may be active (a release removes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRec {
    /// `ls_<id>`.
    pub id: u64,
    /// What it covers.
    pub resource: String,
    /// Exclusive or shared.
    pub mode: LeaseMode,
    /// The holder's identity.
    pub identity: String,
    /// The holder's extension.
    pub extension: Option<String>,
    /// The thread it is about, if any.
    pub thread: Option<u64>,
    /// What the holder said it is for.
    pub note: Option<String>,
    /// When it was first granted (a renewal keeps it).
    pub granted_at: i64,
    /// When it ends unless renewed.
    pub expires_at: i64,
}

impl LeaseRec {
    /// Before its expiry: it conflicts and is listed. Expiry is a comparison of
    /// times, so no sweeper is needed for it to hold.
    pub fn active(&self, now: i64) -> bool {
        now < self.expires_at
    }

    /// Whether `identity` and `extension` hold it.
    pub fn held_by(&self, identity: &str, extension: Option<&str>) -> bool {
        self.identity == identity && self.extension.as_deref() == extension
    }
}

/// Whether `resource` is a resource: 1–200 characters, segments separated by `/`,
/// none empty except after a trailing `/` (a prefix).
pub(crate) fn is_resource(resource: &str) -> bool {
    let chars = resource.chars().count();
    if chars == 0 || chars > RESOURCE_MAX_CHARS {
        return false;
    }
    let body = resource.strip_suffix('/').unwrap_or(resource);
    !body.is_empty() && body.split('/').all(|segment| !segment.is_empty())
}

/// Whether two resources overlap: equal, or one is a prefix (ends in `/`) that
/// the other, with a `/` appended when it has none, starts with. So `src/` covers
/// `src`, `src/main.rs` and `src/a/`, and not `srcx`.
pub(crate) fn overlap(a: &str, b: &str) -> bool {
    // `other` with a `/` appended when it has none starts with `prefix`.
    fn covers(prefix: &str, other: &str) -> bool {
        prefix.ends_with('/') && (other.starts_with(prefix) || other == &prefix[..prefix.len() - 1])
    }
    a == b || covers(a, b) || covers(b, a)
}

/// The active leases of other holders that a lease of `resource` in `mode` by
/// (`identity`, `extension`) conflicts with: overlapping, and one of the two
/// exclusive.
pub(crate) fn conflicts<'a>(
    leases: &'a [LeaseRec],
    resource: &str,
    mode: LeaseMode,
    identity: &str,
    extension: Option<&str>,
    now: i64,
) -> Vec<&'a LeaseRec> {
    leases
        .iter()
        .filter(|l| l.active(now) && !l.held_by(identity, extension))
        .filter(|l| mode == LeaseMode::Exclusive || l.mode == LeaseMode::Exclusive)
        .filter(|l| overlap(&l.resource, resource))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_follow_the_grammar() {
        for good in ["a", "src/", "src/main.rs", "a/b/c/", "x y", "é/ü"] {
            assert!(is_resource(good), "{good}");
        }
        let long = "a".repeat(201);
        for bad in ["", "/", "/a", "a//b", "a//", "//", long.as_str()] {
            assert!(!is_resource(bad), "{bad}");
        }
        assert!(is_resource(&"é".repeat(200)), "characters, not bytes");
    }

    #[test]
    fn lease_ids_take_the_three_forms() {
        use serde_json::json;
        assert_eq!(lease_key(7), "ls_7");
        for good in [json!("ls_7"), json!(7), json!("7")] {
            assert_eq!(parse_lease_id(&good), Some(7), "{good}");
        }
        for bad in [
            json!("th_7"),
            json!(0),
            json!(-1),
            json!(1.5),
            json!("ls_"),
            json!(null),
        ] {
            assert_eq!(parse_lease_id(&bad), None, "{bad}");
        }
    }

    #[test]
    fn the_overlap_table() {
        let table = [
            ("src/", "src/main.rs", true),
            ("src/", "src/a/b", true),
            ("src/", "src", true),
            ("src/", "src/", true),
            ("src/", "src/a/", true),
            ("src/a/", "src/", true),
            ("src/", "srcx", false),
            ("src/", "srcx/", false),
            ("src/", "sr", false),
            ("src/a", "src/b", false),
            ("src", "src", true),
            ("src", "src/main.rs", false),
            ("src/main.rs", "src/main.rs/", true),
            ("a/", "b/", false),
            ("é/", "é/x", true),
            ("é/", "éx", false),
        ];
        for (a, b, expected) in table {
            assert_eq!(overlap(a, b), expected, "{a} ~ {b}");
            assert_eq!(overlap(b, a), expected, "{b} ~ {a}");
        }
    }

    fn lease(id: u64, resource: &str, mode: LeaseMode, who: &str) -> LeaseRec {
        LeaseRec {
            id,
            resource: resource.into(),
            mode,
            identity: who.into(),
            extension: None,
            thread: None,
            note: None,
            granted_at: 0,
            expires_at: 1000,
        }
    }

    #[test]
    fn shared_leases_conflict_only_with_exclusive_ones() {
        use LeaseMode::*;
        let held = [
            lease(1, "src/", Shared, "a:a"),
            lease(2, "doc", Exclusive, "a:a"),
        ];
        assert!(conflicts(&held, "src/x", Shared, "a:b", None, 0).is_empty());
        assert_eq!(
            conflicts(&held, "src/x", Exclusive, "a:b", None, 0).len(),
            1
        );
        assert_eq!(conflicts(&held, "doc", Shared, "a:b", None, 0).len(), 1);
        assert!(
            conflicts(&held, "doc", Exclusive, "a:a", None, 0).is_empty(),
            "a holder never conflicts with itself"
        );
        assert_eq!(
            conflicts(&held, "doc", Exclusive, "a:a", Some("w1"), 0).len(),
            1,
            "another extension is another holder"
        );
        assert!(
            conflicts(&held, "doc", Exclusive, "a:b", None, 1000).is_empty(),
            "an expired lease conflicts with nothing"
        );
    }
}

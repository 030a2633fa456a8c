//! Forum settings: realm, limits (SPEC §9), profiles, durability and the clock.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

pub use crate::protocol::limits::Limits;

/// The checks of the limits that a [`Config`] makes (the type is the protocol's).
impl Limits {
    fn validate(&self) -> Result<()> {
        // These three are switched off by 0.
        let may_be_off = ["writes_per_minute", "progress_max_messages", "echo_window"];
        for (name, value) in self.entries() {
            if value == 0 && !may_be_off.contains(&name) {
                return Err(Error::InvalidArgument(format!(
                    "limit {name} must be at least 1"
                )));
            }
        }
        if self.page_default > self.page_max {
            return Err(Error::InvalidArgument(
                "page_default exceeds page_max".into(),
            ));
        }
        Ok(())
    }
}

/// When a successful write reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every successful post is on disk (fsync) before the call returns. The default.
    #[default]
    Durable,
    /// Posts are committed but not flushed; a crash may lose the latest ones,
    /// never corrupt the file. For tests and throwaway forums.
    Volatile,
}

/// The clock: milliseconds since the Unix epoch. Injectable for tests.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Told how a long task of opening goes (a migration of an older forum file):
/// `(what, done, total)`.
pub type Progress = Arc<dyn Fn(&str, u64, u64) + Send + Sync>;

/// Everything a host sets when it opens a forum.
#[derive(Clone)]
pub struct Config {
    /// The realm of agent identities (`<realm>:<handle>`); default `ainotes`.
    pub realm: String,
    /// The limits of SPEC §9.
    pub limits: Limits,
    /// Whether the dialectic profile (SPEC §10) is on; default on.
    pub dialectic: bool,
    /// Whether the listen profile (SPEC §14.2: `wait_ms` on reads) is on; default on.
    pub listen: bool,
    /// Whether the guards profile (SPEC §15: `echoed_body`, `no_progress`) is on;
    /// default on. Its limits are `progress_max_messages` and `echo_window`.
    pub guards: bool,
    /// Whether the coordination profile (SPEC §16: presence and leases) is on;
    /// default on. Its limits are `lease_ttl_max_s` and `leases_max`.
    pub coordination: bool,
    /// Whether the provenance profile (SPEC §18: artifacts, quorum, signed claims)
    /// is on; default on. Its limits are `artifact_max_bytes` and `verify_quorum`.
    pub provenance: bool,
    /// Durable (the default) or volatile commits.
    pub durability: Durability,
    /// The clock.
    pub clock: Clock,
    /// Told how a migration on open goes; `None` (the default) says nothing.
    pub progress: Option<Progress>,
    /// The other realms whose signed claims this forum imports (SPEC §18.3), each
    /// with its key's text `ed25519:<base64url>`; checked when the forum opens. A
    /// forum also trusts its own realm, with its own key (which wins over an
    /// entry here for that realm).
    pub trusted_realms: BTreeMap<String, String>,
    /// What the MCP tool list says of each tool's result (`outputSchema`): compact
    /// (the default), exact, or none.
    pub mcp_output_schemas: crate::mcp::OutputSchemas,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            realm: "ainotes".into(),
            limits: Limits::default(),
            dialectic: true,
            listen: true,
            guards: true,
            coordination: true,
            provenance: true,
            durability: Durability::Durable,
            clock: Arc::new(crate::time::system_now),
            progress: None,
            trusted_realms: BTreeMap::new(),
            mcp_output_schemas: crate::mcp::OutputSchemas::default(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("realm", &self.realm)
            .field("limits", &self.limits)
            .field("dialectic", &self.dialectic)
            .field("listen", &self.listen)
            .field("guards", &self.guards)
            .field("coordination", &self.coordination)
            .field("provenance", &self.provenance)
            .field("durability", &self.durability)
            .field("trusted_realms", &self.trusted_realms)
            .field("mcp_output_schemas", &self.mcp_output_schemas)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// A clock fixed at one instant, for deterministic tests.
    pub fn fixed_clock(ms: i64) -> Clock {
        Arc::new(move || ms)
    }

    /// Reads settings from JSON, as the C ABI, Python and transcripts pass them:
    ///
    /// ```json
    /// { "realm": "ainotes", "limits": { "body_max_chars": 500, "progress_max_messages": 24 },
    ///   "profiles": ["dialectic", "listen", "guards", "coordination", "provenance"],
    ///   "durable": true,
    ///   "clock": "2026-11-30T12:00:00.000Z", "trusted_realms": { "north": "ed25519:…" } }
    /// ```
    ///
    /// Every key is optional; absent ones keep their defaults. `"guards": false`
    /// (or `true`) switches the guards profile alone, after `profiles`, and
    /// `"coordination"` and `"provenance"` their profiles likewise. `clock` fixes the clock
    /// at that instant. `"mcp_output_schemas"` is `"compact"` (the default), `"exact"` or
    /// `"none"` (see [`crate::mcp::OutputSchemas`]). An unknown key or a wrong type is an
    /// [`Error::InvalidArgument`].
    pub fn from_json(settings: &Value) -> Result<Config> {
        let bad = |msg: String| Error::InvalidArgument(msg);
        let obj = settings
            .as_object()
            .ok_or_else(|| bad("settings must be a JSON object".into()))?;
        let mut config = Config::default();
        for (key, value) in obj {
            match key.as_str() {
                "realm" => {
                    let realm = value
                        .as_str()
                        .ok_or_else(|| bad("realm must be a string".into()))?;
                    config.realm = realm.to_string();
                }
                "limits" => config.limits = parse_limits(value)?,
                "profiles" => {
                    let list = value.as_array().ok_or_else(|| {
                        Error::InvalidArgument("profiles must be a list of names".into())
                    })?;
                    let names = list
                        .iter()
                        .map(|n| {
                            n.as_str().ok_or_else(|| {
                                Error::InvalidArgument(format!("unknown profile {n}"))
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    config.set_profiles(&names)?;
                }
                "guards" | "coordination" | "provenance" => {}
                "trusted_realms" => {
                    let map = value.as_object().ok_or_else(|| {
                        bad("trusted_realms must map realms to `ed25519:…` keys".into())
                    })?;
                    for (realm, key) in map {
                        let key = key.as_str().ok_or_else(|| {
                            bad(format!(
                                "trusted_realms: the key of `{realm}` must be a string"
                            ))
                        })?;
                        config.trusted_realms.insert(realm.clone(), key.to_owned());
                    }
                }
                "durable" => {
                    config.durability = match value {
                        Value::Bool(true) => Durability::Durable,
                        Value::Bool(false) => Durability::Volatile,
                        _ => return Err(bad("durable must be true or false".into())),
                    };
                }
                "clock" => {
                    let at = value
                        .as_str()
                        .and_then(crate::time::parse)
                        .ok_or_else(|| bad("clock must be an RFC 3339 time".into()))?;
                    config.clock = Config::fixed_clock(at);
                }
                "mcp_output_schemas" => {
                    config.mcp_output_schemas = value
                        .as_str()
                        .ok_or_else(|| bad("mcp_output_schemas must be a string".into()))?
                        .parse()
                        .map_err(bad)?;
                }
                other => return Err(bad(format!("unknown setting `{other}`"))),
            }
        }
        // After `profiles`, whatever the order of the keys.
        if let Some(guards) = obj.get("guards") {
            config.guards = guards
                .as_bool()
                .ok_or_else(|| bad("guards must be true or false".into()))?;
        }
        if let Some(coordination) = obj.get("coordination") {
            config.coordination = coordination
                .as_bool()
                .ok_or_else(|| bad("coordination must be true or false".into()))?;
        }
        if let Some(provenance) = obj.get("provenance") {
            config.provenance = provenance
                .as_bool()
                .ok_or_else(|| bad("provenance must be true or false".into()))?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Switches on the profiles named (`dialectic`, `listen`, `guards`,
    /// `coordination`, `provenance`) and off the others.
    pub fn set_profiles<S: AsRef<str>>(&mut self, names: &[S]) -> Result<()> {
        let (mut dialectic, mut listen, mut guards, mut coordination, mut provenance) =
            (false, false, false, false, false);
        for name in names {
            match name.as_ref() {
                "dialectic" => dialectic = true,
                "listen" => listen = true,
                "guards" => guards = true,
                "coordination" => coordination = true,
                "provenance" => provenance = true,
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "unknown profile {}",
                        Value::from(other)
                    )))
                }
            }
        }
        (
            self.dialectic,
            self.listen,
            self.guards,
            self.coordination,
            self.provenance,
        ) = (dialectic, listen, guards, coordination, provenance);
        Ok(())
    }

    /// Checks the realm and the limits.
    pub fn validate(&self) -> Result<()> {
        if !crate::protocol::ids::is_handle(&self.realm) || self.realm == "human" {
            return Err(Error::InvalidArgument(format!(
                "realm `{}` must be 1-64 characters of [a-z0-9._-], starting with a letter or digit, and not `human`",
                self.realm
            )));
        }
        self.trusted()?;
        self.limits.validate()
    }

    /// The realms of `trusted_realms`, their names and keys checked (without this
    /// forum's own realm, which the forum adds with its own key).
    pub(crate) fn trusted(&self) -> Result<crate::provenance::TrustedRealms> {
        for realm in self.trusted_realms.keys() {
            if !crate::protocol::ids::is_handle(realm) {
                return Err(Error::InvalidArgument(format!(
                    "trusted_realms: realm `{realm}` must be 1-64 characters of [a-z0-9._-], starting with a letter or digit"
                )));
            }
        }
        crate::provenance::TrustedRealms::parse(
            self.trusted_realms
                .iter()
                .map(|(r, k)| (r.as_str(), k.as_str())),
        )
        .map_err(|(realm, e)| Error::InvalidArgument(format!("trusted_realms: `{realm}`: {e}")))
    }
}

fn parse_limits(value: &Value) -> Result<Limits> {
    let obj: &Map<String, Value> = value
        .as_object()
        .ok_or_else(|| Error::InvalidArgument("limits must be a JSON object".into()))?;
    let mut limits = Limits::default();
    for (name, v) in obj {
        let n = v.as_u64().ok_or_else(|| {
            Error::InvalidArgument(format!("limit {name} must be a non-negative integer"))
        })?;
        if !limits.set(name, n as usize) {
            return Err(Error::InvalidArgument(format!("unknown limit `{name}`")));
        }
    }
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_override_defaults() {
        let c = Config::from_json(&json!({
            "realm": "lab", "limits": {"body_max_chars": 10}, "profiles": [], "durable": false,
            "clock": "2026-11-30T12:00:00.000Z"
        }))
        .unwrap();
        assert_eq!(c.realm, "lab");
        assert_eq!(c.limits.body_max_chars, 10);
        assert!(!c.dialectic);
        assert!(!c.guards, "profiles lists what is on");
        assert_eq!(c.durability, Durability::Volatile);
        assert_eq!((c.clock)(), 1_796_040_000_000);
    }

    #[test]
    fn the_guards_are_on_by_default_and_switched_by_profiles_or_alone() {
        let c = Config::from_json(&json!({})).unwrap();
        assert!(c.guards);
        assert_eq!(
            (c.limits.progress_max_messages, c.limits.echo_window),
            (24, 8)
        );
        let off = Config::from_json(&json!({"guards": false, "profiles": ["guards"]})).unwrap();
        assert!(
            !off.guards,
            "the key wins over the list, whatever the order"
        );
        let on = Config::from_json(&json!({"profiles": ["dialectic", "guards"]})).unwrap();
        assert!(on.guards && !on.listen);
        let zero =
            Config::from_json(&json!({"limits": {"progress_max_messages": 0, "echo_window": 0}}))
                .unwrap();
        assert_eq!(
            (zero.limits.progress_max_messages, zero.limits.echo_window),
            (0, 0)
        );
    }

    #[test]
    fn coordination_is_on_by_default_and_switched_by_profiles_or_alone() {
        let c = Config::from_json(&json!({})).unwrap();
        assert!(c.coordination);
        assert_eq!(
            (c.limits.lease_ttl_max_s, c.limits.leases_max),
            (86_400, 64)
        );
        let listed = Config::from_json(&json!({"profiles": ["coordination"]})).unwrap();
        assert!(listed.coordination && !listed.guards);
        assert!(
            !Config::from_json(&json!({"profiles": []}))
                .unwrap()
                .coordination
        );
        let off = Config::from_json(&json!({"coordination": false})).unwrap();
        assert!(!off.coordination && off.guards);
    }

    #[test]
    fn trusted_realms_are_read_and_checked() {
        // RFC 8032's first test key.
        let key = "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
        let c = Config::from_json(&json!({"trusted_realms": {"north": key}})).unwrap();
        assert_eq!(c.trusted_realms["north"], key);
        assert_eq!(c.trusted().unwrap().get("north").unwrap().to_string(), key);
        let Err(Error::InvalidArgument(m)) =
            Config::from_json(&json!({"trusted_realms": {"north": "ed25519:AAAA"}}))
        else {
            panic!("a bad key is refused")
        };
        assert!(m.contains("north") && m.contains("32 bytes"), "{m}");
    }

    #[test]
    fn provenance_is_on_by_default_and_switched_by_profiles_or_alone() {
        let c = Config::from_json(&json!({})).unwrap();
        assert!(c.provenance);
        assert_eq!(
            (c.limits.artifact_max_bytes, c.limits.verify_quorum),
            (49_152, 1)
        );
        let listed = Config::from_json(&json!({"profiles": ["provenance"]})).unwrap();
        assert!(listed.provenance && !listed.coordination);
        assert!(
            !Config::from_json(&json!({"profiles": []}))
                .unwrap()
                .provenance
        );
        let off = Config::from_json(&json!({"provenance": false})).unwrap();
        assert!(!off.provenance && off.coordination);
        let set =
            Config::from_json(&json!({"limits": {"verify_quorum": 3, "artifact_max_bytes": 10}}))
                .unwrap();
        assert_eq!(
            (set.limits.verify_quorum, set.limits.artifact_max_bytes),
            (3, 10)
        );
    }

    #[test]
    fn settings_reject_unknown_and_mistyped() {
        for bad in [
            json!([]),
            json!({"x": 1}),
            json!({"limits": {"nope": 1}}),
            json!({"limits": {"page_max": -1}}),
            json!({"profiles": ["x"]}),
            json!({"realm": "Bad Realm"}),
            json!({"durable": "yes"}),
            json!({"limits": {"page_default": 300}}),
            json!({"guards": "no"}),
            json!({"coordination": 1}),
            json!({"trusted_realms": ["north"]}),
            json!({"trusted_realms": {"north": 7}}),
            json!({"trusted_realms": {"north": "ed25519:AAAA"}}),
            json!({"trusted_realms": {"North Realm": "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}),
            json!({"limits": {"leases_max": 0}}),
            json!({"limits": {"lease_ttl_max_s": 0}}),
            json!({"limits": {"thread_max_depth": 0}}),
            json!({"provenance": "on"}),
            json!({"limits": {"verify_quorum": 0}}),
            json!({"limits": {"artifact_max_bytes": 0}}),
        ] {
            assert!(
                matches!(Config::from_json(&bad), Err(Error::InvalidArgument(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn mcp_output_schemas_are_compact_by_default_and_named_in_the_settings() {
        use crate::mcp::OutputSchemas;
        let c = Config::from_json(&json!({})).unwrap();
        assert_eq!(c.mcp_output_schemas, OutputSchemas::Compact);
        for name in OutputSchemas::NAMES {
            let c = Config::from_json(&json!({ "mcp_output_schemas": name })).unwrap();
            assert_eq!(c.mcp_output_schemas.as_str(), name);
        }
        for bad in [json!("full"), json!(""), json!(true), json!("Exact")] {
            let err = Config::from_json(&json!({ "mcp_output_schemas": bad })).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument(m) if m.contains("mcp_output_schemas") || m.contains("none, compact or exact")),
                "{bad}: {err:?}"
            );
        }
    }
}

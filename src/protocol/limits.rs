//! The limits of SPEC §9: their values ([`Limits`], set by a forum's settings) and
//! their names ([`Limit`]), as a refusal names the one at stake (`limit_exceeded`,
//! `body_too_long`, an out-of-range argument).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! limits {
    ($($variant:ident = $name:literal, $doc:literal;)*) => {
        /// A limit of SPEC §9, by its wire name (a key of the manifest's `limits`
        /// and of [`Limits`](crate::Limits)).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Limit {
            $(#[doc = $doc] $variant,)*
        }

        impl Limit {
            /// Every limit, in manifest order.
            pub const ALL: &'static [Limit] = &[$(Limit::$variant,)*];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Limit::$variant => $name,)*
                }
            }
        }
    };
}

limits! {
    BodyMaxChars = "body_max_chars", "Most characters in a body.";
    ProvenanceMaxChars = "provenance_max_chars", "Most characters in `provenance.model` and `.client`.";
    ExtensionMaxChars = "extension_max_chars", "Most characters in `from.extension`.";
    ThreadMaxMessages = "thread_max_messages", "Most messages in one thread.";
    ThreadMaxDepth = "thread_max_depth", "Deepest nesting of a message.";
    EvidenceMax = "evidence_max", "Most evidence items on one message.";
    EvidenceRefMaxChars = "evidence_ref_max_chars", "Most characters in an evidence `ref`.";
    SupersedesMax = "supersedes_max", "Most claims one `assert` may supersede.";
    PageDefault = "page_default", "Page size when a read gives no `limit`.";
    PageMax = "page_max", "Largest `limit` a read accepts.";
    WritesPerMinute = "writes_per_minute", "Writes per minute per llm identity.";
    RequestMaxBytes = "request_max_bytes", "Largest request the transports accept.";
    WaitMaxMs = "wait_max_ms", "Longest `wait_ms` a read accepts.";
    IdempotencyTtlS = "idempotency_ttl_s", "How long an `idempotency_key` is remembered.";
    ProgressMaxMessages = "progress_max_messages", "Content messages without progress a thread takes.";
    EchoWindow = "echo_window", "How many newest messages a post may not echo.";
    LeaseTtlMaxS = "lease_ttl_max_s", "Longest `ttl_s` of a lease.";
    LeasesMax = "leases_max", "Most active leases one holder may hold.";
    ArtifactMaxBytes = "artifact_max_bytes", "Most bytes in one artifact.";
    VerifyQuorum = "verify_quorum", "Distinct verifying identities a claim needs.";
}

impl Limit {
    /// The limit with this wire name.
    pub fn from_name(name: &str) -> Option<Limit> {
        Limit::ALL.iter().copied().find(|l| l.as_str() == name)
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Limit::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("`{name}` is not a limit")))
    }
}

/// The limits of SPEC §9. Authoritative values are reported by the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Most Unicode scalar values in a body.
    pub body_max_chars: usize,
    /// Most characters in `provenance.model` and `provenance.client`.
    pub provenance_max_chars: usize,
    /// Most characters in `from.extension`.
    pub extension_max_chars: usize,
    /// Most messages in one thread, its root included.
    pub thread_max_messages: usize,
    /// Deepest nesting of a message (the root is depth 0).
    pub thread_max_depth: usize,
    /// Most evidence items on one message.
    pub evidence_max: usize,
    /// Most characters in an evidence `ref` (and `note`).
    pub evidence_ref_max_chars: usize,
    /// Most claims one `assert` may supersede.
    pub supersedes_max: usize,
    /// Page size when a read gives no `limit`.
    pub page_default: usize,
    /// Largest `limit` a read accepts.
    pub page_max: usize,
    /// Writes per minute per llm identity; 0 switches the limit off.
    pub writes_per_minute: usize,
    /// Largest request accepted by the HTTP and MCP transports, in bytes.
    pub request_max_bytes: usize,
    /// Longest `wait_ms` a read accepts (the listen profile, SPEC §14.2).
    pub wait_max_ms: usize,
    /// How long an `idempotency_key` is remembered, in seconds (SPEC §14.3).
    pub idempotency_ttl_s: usize,
    /// Content messages by `llm` authors a thread takes without progress before
    /// the next is refused as `no_progress` (the guards profile, SPEC §15); 0
    /// switches the rule off.
    pub progress_max_messages: usize,
    /// How many of the newest messages by other identities a post may not echo
    /// (`echoed_body`, SPEC §15); 0 switches the rule off.
    pub echo_window: usize,
    /// Longest `ttl_s` of a lease, in seconds (the coordination profile, SPEC §16.2).
    pub lease_ttl_max_s: usize,
    /// Most active leases one holder may hold (SPEC §16.2).
    pub leases_max: usize,
    /// Most bytes in one artifact (the provenance profile, SPEC §18.1).
    pub artifact_max_bytes: usize,
    /// Distinct verifying identities a claim needs to be `verified` (SPEC §18.2).
    pub verify_quorum: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_max_chars: 500,
            provenance_max_chars: 200,
            extension_max_chars: 64,
            thread_max_messages: 1000,
            thread_max_depth: 32,
            evidence_max: 8,
            evidence_ref_max_chars: 500,
            supersedes_max: 8,
            page_default: 50,
            page_max: 200,
            writes_per_minute: 120,
            request_max_bytes: 65536,
            wait_max_ms: 30_000,
            idempotency_ttl_s: 86_400,
            progress_max_messages: 24,
            echo_window: 8,
            lease_ttl_max_s: 86_400,
            leases_max: 64,
            artifact_max_bytes: 49_152,
            verify_quorum: 1,
        }
    }
}

impl Limits {
    /// The limits as `(name, value)` pairs, in manifest order.
    pub fn entries(&self) -> [(&'static str, usize); 20] {
        [
            ("body_max_chars", self.body_max_chars),
            ("provenance_max_chars", self.provenance_max_chars),
            ("extension_max_chars", self.extension_max_chars),
            ("thread_max_messages", self.thread_max_messages),
            ("thread_max_depth", self.thread_max_depth),
            ("evidence_max", self.evidence_max),
            ("evidence_ref_max_chars", self.evidence_ref_max_chars),
            ("supersedes_max", self.supersedes_max),
            ("page_default", self.page_default),
            ("page_max", self.page_max),
            ("writes_per_minute", self.writes_per_minute),
            ("request_max_bytes", self.request_max_bytes),
            ("wait_max_ms", self.wait_max_ms),
            ("idempotency_ttl_s", self.idempotency_ttl_s),
            ("progress_max_messages", self.progress_max_messages),
            ("echo_window", self.echo_window),
            ("lease_ttl_max_s", self.lease_ttl_max_s),
            ("leases_max", self.leases_max),
            ("artifact_max_bytes", self.artifact_max_bytes),
            ("verify_quorum", self.verify_quorum),
        ]
    }

    /// Sets the limit `name` (a key of SPEC §9's table); `false` for a name that is
    /// none. Checked with the rest when a [`Config`](crate::Config) is made.
    pub fn set(&mut self, name: &str, value: usize) -> bool {
        let slot = match name {
            "body_max_chars" => &mut self.body_max_chars,
            "provenance_max_chars" => &mut self.provenance_max_chars,
            "extension_max_chars" => &mut self.extension_max_chars,
            "thread_max_messages" => &mut self.thread_max_messages,
            "thread_max_depth" => &mut self.thread_max_depth,
            "evidence_max" => &mut self.evidence_max,
            "evidence_ref_max_chars" => &mut self.evidence_ref_max_chars,
            "supersedes_max" => &mut self.supersedes_max,
            "page_default" => &mut self.page_default,
            "page_max" => &mut self.page_max,
            "writes_per_minute" => &mut self.writes_per_minute,
            "request_max_bytes" => &mut self.request_max_bytes,
            "wait_max_ms" => &mut self.wait_max_ms,
            "idempotency_ttl_s" => &mut self.idempotency_ttl_s,
            "progress_max_messages" => &mut self.progress_max_messages,
            "echo_window" => &mut self.echo_window,
            "lease_ttl_max_s" => &mut self.lease_ttl_max_s,
            "leases_max" => &mut self.leases_max,
            "artifact_max_bytes" => &mut self.artifact_max_bytes,
            "verify_quorum" => &mut self.verify_quorum,
            _ => return false,
        };
        *slot = value;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_the_limits_table() {
        let names: Vec<&str> = crate::Limits::default()
            .entries()
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let ours: Vec<&str> = Limit::ALL.iter().map(|l| l.as_str()).collect();
        assert_eq!(ours, names);
        for limit in Limit::ALL {
            assert_eq!(Limit::from_name(limit.as_str()), Some(*limit));
            assert_eq!(
                serde_json::to_value(limit).unwrap(),
                serde_json::json!(limit.as_str())
            );
        }
        assert_eq!(Limit::from_name("writes"), None);
        assert!(serde_json::from_value::<Limit>(serde_json::json!("nope")).is_err());
    }
}

//! The names of the limits of SPEC §9, as a refusal names the one at stake
//! (`limit_exceeded`, `body_too_long`, an out-of-range argument).

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

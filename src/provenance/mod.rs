//! Signed claims that travel across realms (SPEC §18.3), without the engine: the
//! realm key, RFC 8785 canonical JSON, the DSSE envelope over an in-toto
//! statement, and [`verify_bundle`], the whole check of a bundle that
//! `import_claim`, `parley verify-bundle` and the fuzz target share.

mod bundle;
mod canonical;
mod key;
mod verify;

pub use bundle::{
    export_bundle, pae, sign_statement, statement, Envelope, EnvelopeSignature, PAYLOAD_TYPE,
    PREDICATE_TYPE, STATEMENT_TYPE,
};
pub use canonical::{canonical_json, claim_digest, sha256_hex};
pub use key::{KeyError, RealmKey, RealmSecret, KEY_PREFIX};
pub(crate) use verify::{read_bundle, verify_envelope};
pub use verify::{verify_bundle, BundleError, BundleInput, TrustedRealms, VerifiedClaim};

#[cfg(test)]
mod tests;

//! The fuzz targets' bodies, shared by the libFuzzer binaries (fuzz_targets/) and
//! the stable runner (tests/fuzz_provenance.rs, which includes this file). Each
//! takes arbitrary bytes and panics only on a broken contract: the decoders must
//! return a result or a stable refusal for every input, and never panic.

use std::sync::OnceLock;

use parley_forum::provenance::{verify_bundle, BundleError, RealmSecret, TrustedRealms};
use parley_forum::{Config, Error, Forum, Right, TokenSpec};
use serde_json::{json, Value};

/// The realm that signs the seed bundles: a fixed seed, so seeds stay valid.
pub const SEED_REALM: &str = "acme";

/// The key pair of [`SEED_REALM`] (from a fixed seed: test data, not a secret).
pub fn seed_secret() -> RealmSecret {
    RealmSecret::from_seed(&[7u8; 32])
}

fn trusted() -> &'static TrustedRealms {
    static TRUSTED: OnceLock<TrustedRealms> = OnceLock::new();
    TRUSTED.get_or_init(|| {
        let mut t = TrustedRealms::new();
        t.insert(SEED_REALM, seed_secret().public());
        t
    })
}

/// The bundle verifier on any bytes: a verified claim or `bundle_invalid` /
/// `realm_untrusted`, and a verified claim only for what the realm signed.
pub fn bundle(data: &[u8]) {
    match verify_bundle(data, trusted()) {
        Ok(claim) => {
            assert_eq!(claim.realm, SEED_REALM, "verified a claim of another realm");
            // What verified once verifies again, and as a parsed value too.
            let value: Value = serde_json::from_slice(data).expect("a verified bundle is JSON");
            assert!(verify_bundle(&value, trusted()).is_ok());
        }
        Err(e) => check_refusal(&e),
    }
}

fn check_refusal(e: &BundleError) {
    assert!(
        matches!(e.reason(), "bundle_invalid" | "realm_untrusted"),
        "unstable reason {}",
        e.reason()
    );
}

/// The artifact operations on any bytes taken as their JSON arguments, on one
/// in-memory forum: an artifact whose ref is the SHA-256 of what was stored, or a
/// stable refusal; never a panic or another error.
pub fn artifact(data: &[u8]) {
    let Ok(args) = serde_json::from_slice::<Value>(data) else {
        // Not JSON: the bytes as the content, as a host would pass them.
        return artifact_value(&json!({ "content_base64": String::from_utf8_lossy(data) }));
    };
    artifact_value(&args);
}

fn forum() -> &'static (Forum, String) {
    static FORUM: OnceLock<(Forum, String)> = OnceLock::new();
    FORUM.get_or_init(|| {
        let mut config = Config::default();
        config.limits.set("writes_per_minute", 0);
        let forum = Forum::in_memory(config).expect("an in-memory forum");
        let token = forum
            .create_token(&TokenSpec::llm("fuzz", &[Right::Read, Right::Write]))
            .expect("a token");
        (forum, token)
    })
}

fn artifact_value(args: &Value) {
    let (forum, token) = forum();
    match forum.call(Some(token), "put_artifact", args) {
        Ok(put) => {
            let reference = put["artifact"]["ref"].as_str().expect("a ref").to_string();
            assert!(
                reference.starts_with("sha256:") && reference.len() == 71,
                "{put}"
            );
            let got = forum
                .call(Some(token), "get_artifact", &json!({ "ref": reference }))
                .expect("a stored artifact reads back");
            assert_eq!(got["artifact"], put["artifact"]);
        }
        Err(Error::Refused(r)) => assert!(r.to_json()["status"].as_u64().is_some()),
        Err(other) => panic!("put_artifact failed: {other}"),
    }
    match forum.call(Some(token), "get_artifact", args) {
        Ok(got) => assert!(got["content_base64"].is_string(), "{got}"),
        Err(Error::Refused(_)) => {}
        Err(other) => panic!("get_artifact failed: {other}"),
    }
}

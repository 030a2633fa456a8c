//! Known answers and tampering of the whole bundle path.

use super::*;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};

fn claim() -> Value {
    json!({ "id": "cl_7", "message": "msg_90", "thread": "th_3",
            "author": { "identity": "north:bob", "extension": null },
            "text": "The build is reproducible: két bytes égal.", "status": "verified",
            "evidence": [ { "kind": "url", "ref": "https://example.org/log" } ],
            "attestations": [], "verifications": [], "refutations": [],
            "refutes": null, "supersedes": [], "superseded_by": null,
            "valid_until": null, "expired": false, "created_at": "2026-01-02T03:04:05Z" })
}

fn north() -> (RealmSecret, TrustedRealms) {
    let secret = RealmSecret::from_seed(&[3u8; 32]);
    let mut trusted = TrustedRealms::new();
    trusted.insert("north", secret.public());
    (secret, trusted)
}

fn signed(secret: &RealmSecret, payload: &[u8]) -> Value {
    let sig = secret.sign(&pae(PAYLOAD_TYPE, payload));
    json!({ "payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(payload),
            "signatures": [ { "keyid": secret.public().to_string(), "sig": STANDARD.encode(sig) } ] })
}

#[test]
fn pae_is_dssev1_with_byte_lengths() {
    assert_eq!(
        pae("a/b", "héllo".as_bytes()),
        b"DSSEv1 3 a/b 6 h\xc3\xa9llo".to_vec()
    );
    assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
}

#[test]
fn an_exported_bundle_verifies_and_says_what_it_holds() {
    let (secret, trusted) = north();
    let bundle = export_bundle(&secret, "north", &claim(), "2026-02-03T04:05:06Z");
    let got = verify_bundle(&bundle, &trusted).unwrap();
    assert_eq!(got.realm, "north");
    assert_eq!(got.claim_id, "cl_7");
    assert_eq!(got.status, "verified");
    assert_eq!(got.exported_at, "2026-02-03T04:05:06Z");
    assert_eq!(got.key, secret.public().to_string());
    assert_eq!(got.digest, claim_digest(&claim()));
    assert_eq!(got.claim, claim());
    // The same from bytes, as a file holds it.
    let bytes = serde_json::to_vec(&bundle).unwrap();
    assert_eq!(verify_bundle(&bytes, &trusted).unwrap(), got);
    // The payload is the canonical statement of SPEC §18.3.
    let payload = STANDARD
        .decode(bundle["payload"].as_str().unwrap())
        .unwrap();
    let st: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(st["_type"], STATEMENT_TYPE);
    assert_eq!(st["predicateType"], PREDICATE_TYPE);
    assert_eq!(st["subject"][0]["name"], "north/cl_7");
    assert_eq!(st["predicate"]["realm"], "north");
    assert_eq!(payload, canonical_json(&st));
}

#[test]
fn a_flipped_byte_anywhere_in_the_envelope_is_refused() {
    let (secret, trusted) = north();
    let bundle = export_bundle(&secret, "north", &claim(), "2026-02-03T04:05:06Z");
    let bytes = serde_json::to_vec(&bundle).unwrap();
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x20, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            assert!(
                verify_bundle(&b, &trusted).is_err(),
                "byte {i} ^ {bit:#x} passed"
            );
        }
    }
}

#[test]
fn a_flipped_byte_anywhere_in_the_payload_is_refused() {
    let (secret, trusted) = north();
    let bundle = export_bundle(&secret, "north", &claim(), "2026-02-03T04:05:06Z");
    let payload = STANDARD
        .decode(bundle["payload"].as_str().unwrap())
        .unwrap();
    for i in 0..payload.len() {
        let mut p = payload.clone();
        p[i] ^= 0x01;
        let mut b = bundle.clone();
        b["payload"] = Value::from(STANDARD.encode(&p));
        assert!(
            verify_bundle(&b, &trusted).is_err(),
            "payload byte {i} passed"
        );
    }
}

#[test]
fn another_key_is_realm_untrusted() {
    let (_, trusted) = north();
    let other = RealmSecret::from_seed(&[4u8; 32]);
    let bundle = export_bundle(&other, "north", &claim(), "2026-02-03T04:05:06Z");
    let err = verify_bundle(&bundle, &trusted).unwrap_err();
    assert_eq!(err.reason(), "realm_untrusted");
    // Another key's signature under the right key id does not verify either.
    let (secret, _) = north();
    let mut forged = bundle.clone();
    forged["signatures"][0]["keyid"] = Value::from(secret.public().to_string());
    assert_eq!(
        verify_bundle(&forged, &trusted).unwrap_err().reason(),
        "realm_untrusted"
    );
}

#[test]
fn an_untrusted_realm_is_refused_after_the_form() {
    let (secret, _) = north();
    let bundle = export_bundle(&secret, "north", &claim(), "t");
    let err = verify_bundle(&bundle, &TrustedRealms::new()).unwrap_err();
    assert_eq!(err.reason(), "realm_untrusted");
    // A malformed bundle of an untrusted realm is bundle_invalid: form first.
    let mut bad = bundle.clone();
    bad["payloadType"] = Value::from("text/plain");
    let err = verify_bundle(&bad, &TrustedRealms::new()).unwrap_err();
    assert_eq!(err.reason(), "bundle_invalid");
}

#[test]
fn a_non_canonical_statement_is_bundle_invalid_even_when_signed() {
    let (secret, trusted) = north();
    let st = statement("north", &claim(), "2026-02-03T04:05:06Z");
    let pretty = serde_json::to_vec_pretty(&st).unwrap();
    let err = verify_bundle(&signed(&secret, &pretty), &trusted).unwrap_err();
    assert_eq!(err.reason(), "bundle_invalid");
    assert!(err.message().contains("canonical"), "{err}");
    // The canonical bytes of the same statement, signed the same way, pass.
    assert!(verify_bundle(&signed(&secret, &canonical_json(&st)), &trusted).is_ok());
}

#[test]
fn a_wrong_subject_digest_is_bundle_invalid_even_when_signed() {
    let (secret, trusted) = north();
    let mut st = statement("north", &claim(), "t");
    st["subject"][0]["digest"]["sha256"] = Value::from(sha256_hex(b"something else"));
    let err = verify_bundle(&signed(&secret, &canonical_json(&st)), &trusted).unwrap_err();
    assert_eq!(err.reason(), "bundle_invalid");
    assert!(err.message().contains("digest"), "{err}");
    // A claim changed after the digest was taken: same refusal.
    let mut st = statement("north", &claim(), "t");
    st["predicate"]["claim"]["status"] = Value::from("unverified");
    let err = verify_bundle(&signed(&secret, &canonical_json(&st)), &trusted).unwrap_err();
    assert_eq!(err.reason(), "bundle_invalid");
}

#[test]
fn shapes_that_are_not_a_claim_statement_are_bundle_invalid() {
    let (secret, trusted) = north();
    let base = statement("north", &claim(), "t");
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<Edit> = vec![
        Box::new(|s| s["_type"] = json!("https://in-toto.io/Statement/v0.1")),
        Box::new(|s| s["predicateType"] = json!("https://slsa.dev/provenance/v1")),
        Box::new(|s| s["subject"][0]["name"] = json!("south/cl_7")),
        Box::new(|s| s["subject"] = json!([])),
        Box::new(|s| s["predicate"]["realm"] = json!(7)),
        Box::new(|s| s["predicate"]["claim"] = json!("cl_7")),
        Box::new(|s| s["extra"] = json!(1)),
        Box::new(|s| *s = json!([1, 2])),
    ];
    for (i, edit) in edits.iter().enumerate() {
        let mut st = base.clone();
        edit(&mut st);
        let err = verify_bundle(&signed(&secret, &canonical_json(&st)), &trusted).unwrap_err();
        assert_eq!(err.reason(), "bundle_invalid", "edit {i}: {err}");
    }
    for bad in [
        json!(null),
        json!({}),
        json!({ "payloadType": PAYLOAD_TYPE, "payload": "e30=", "signatures": [] }),
        json!({ "payloadType": PAYLOAD_TYPE, "payload": "%%%", "signatures": [ { "keyid": "", "sig": STANDARD.encode([0u8; 64]) } ] }),
        json!({ "payloadType": PAYLOAD_TYPE, "payload": "e30=", "signatures": [ { "keyid": "", "sig": "AAAA" } ] }),
    ] {
        assert_eq!(
            verify_bundle(&bad, &trusted).unwrap_err().reason(),
            "bundle_invalid",
            "{bad}"
        );
    }
}

#[test]
fn trusted_realms_parse_names_the_bad_realm() {
    let key = RealmSecret::from_seed(&[5u8; 32]).public().to_string();
    let t = TrustedRealms::parse([("a", key.as_str())]).unwrap();
    assert_eq!(t.get("a").unwrap().to_string(), key);
    let (realm, _) = TrustedRealms::parse([("a", key.as_str()), ("b", "rsa:xyz")]).unwrap_err();
    assert_eq!(realm, "b");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
        let (_, trusted) = north();
        proptest::prop_assert!(verify_bundle(&bytes, &trusted).is_err());
    }
}

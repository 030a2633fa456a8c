//! The two hashes of an envelope: the digest that tells a retry from another post
//! under one idempotency key (SPEC §14.3), and the body hash of the repeat guard
//! (§4). Both are stable across builds: stored values keep their meaning.

use serde_json::{Map, Value};
use sha2::Digest;

/// A SHA-256 that JSON is written into, without the text being kept.
struct Hashing(sha2::Sha256);

impl std::io::Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// SHA-256 of the envelope as canonical JSON without `idempotency_key`: serde_json's
/// map keeps its keys sorted, so equal envelopes give equal text. Written straight
/// into the hasher, without a copy of the envelope.
pub(crate) fn digest_without_key(obj: &Map<String, Value>) -> sha2::digest::Output<sha2::Sha256> {
    let mut h = Hashing(sha2::Sha256::new());
    let mut first = true;
    h.0.update(b"{");
    for (k, v) in obj.iter().filter(|(k, _)| k.as_str() != "idempotency_key") {
        if !first {
            h.0.update(b",");
        }
        first = false;
        // Writing JSON into a hasher cannot fail.
        let _ = serde_json::to_writer(&mut h, k);
        h.0.update(b":");
        let _ = serde_json::to_writer(&mut h, v);
    }
    h.0.update(b"}");
    h.0.finalize()
}

/// SHA-256 of `value` as serde_json writes it, compact. Of a typed envelope
/// whose fields serialize in sorted order, skipping the absent ones and
/// `idempotency_key`, these are the bytes [`digest_without_key`] hashes for
/// the same envelope as a map.
pub(crate) fn digest_of(value: &impl serde::Serialize) -> sha2::digest::Output<sha2::Sha256> {
    let mut h = Hashing(sha2::Sha256::new());
    // Writing JSON into a hasher cannot fail, and the typed envelopes have
    // only strings and string-keyed structs, which always serialize.
    let _ = serde_json::to_writer(&mut h, value);
    h.0.finalize()
}

/// FNV-1a of the body with runs of whitespace collapsed and ends trimmed: the
/// repeat guard's notion of "the same body". A stable hash, so stored values keep
/// their meaning across builds; a collision could only refuse its own author.
pub(crate) fn body_hash(body: &str) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |byte: u8| hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
    if body.is_ascii() {
        // The same bytes as below, without decoding characters: most bodies are
        // ASCII, and this runs for every post.
        let (mut started, mut gap) = (false, false);
        for &byte in body.as_bytes() {
            // `char::is_whitespace` on ASCII: tab, LF, VT, FF, CR and space.
            if matches!(byte, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ') {
                gap = started;
            } else {
                if gap {
                    mix(b' ');
                    gap = false;
                }
                mix(byte);
                started = true;
            }
        }
    } else {
        for (i, word) in body.split_whitespace().enumerate() {
            if i > 0 {
                mix(b' ');
            }
            word.bytes().for_each(&mut mix);
        }
    }
    hash
}

#[cfg(test)]
mod digest_tests {
    use super::*;

    #[test]
    fn the_digest_is_that_of_the_canonical_envelope_without_its_key() {
        let with_key = serde_json::json!({
            "kind": "ask", "body": "b \"q\" ü", "idempotency_key": "k", "from": {"extension": "e"}
        });
        let mut without = with_key.as_object().unwrap().clone();
        without.remove("idempotency_key");
        let expected: [u8; 32] = sha2::Sha256::digest(serde_json::to_vec(&without).unwrap()).into();
        let got: [u8; 32] = digest_without_key(with_key.as_object().unwrap()).into();
        assert_eq!(got, expected);
        let reordered =
            serde_json::json!({"from": {"extension": "e"}, "body": "b \"q\" ü", "kind": "ask"});
        let got2: [u8; 32] = digest_without_key(reordered.as_object().unwrap()).into();
        assert_eq!(got2, expected, "key order does not matter");
    }
}

//! RFC 8785 canonical JSON and the SHA-256 digests of SPEC §18.3.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The RFC 8785 (JCS) canonical bytes of a JSON value: keys sorted by UTF-16
/// code units, no whitespace, numbers in ECMAScript form, strings minimally
/// escaped. A `serde_json::Value` always serialises, so this cannot fail.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    // serde_jcs fails only on values that are not JSON (map keys that are not
    // strings, non-finite floats); a Value is JSON by construction.
    serde_jcs::to_vec(value).unwrap_or_default()
}

/// The lowercase hex of the SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 0x0f)]));
    }
    out
}

/// The statement's subject digest: the hex SHA-256 of the canonical JSON of
/// `predicate.claim`.
pub fn claim_digest(claim: &Value) -> String {
    sha256_hex(&canonical_json(claim))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc8785_sorts_keys_by_utf16_and_drops_whitespace() {
        // RFC 8785 §3.2.3: sorting by UTF-16 code units.
        let v: Value = serde_json::from_str(
            r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
                "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}"#,
        )
        .unwrap();
        let got = String::from_utf8(canonical_json(&v)).unwrap();
        let order: Vec<&str> = vec![
            "Carriage Return",
            "One",
            "Control",
            "Latin Small Letter O With Diaeresis",
            "Euro Sign",
            "Emoji: Grinning Face",
            "Hebrew Letter Dalet With Dagesh",
        ];
        let mut at = 0;
        for name in order {
            let i = got[at..].find(name).expect(name) + at;
            at = i;
        }
    }

    #[test]
    fn rfc8785_example_of_section_3_2_2() {
        // RFC 8785 §3.2.2's input and its canonical output.
        let v: Value = serde_json::from_str(
            r#"{ "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                 "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
                 "literals": [null, true, false] }"#,
        )
        .unwrap();
        let want = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
        assert_eq!(String::from_utf8(canonical_json(&v)).unwrap(), want);
    }

    #[test]
    fn digest_is_sha256_of_canonical_form() {
        // SHA-256("{}") is well known; key order does not change the digest.
        assert_eq!(
            claim_digest(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        let a: Value = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{ "a" : 2, "b" : 1 }"#).unwrap();
        assert_eq!(claim_digest(&a), claim_digest(&b));
        assert_eq!(canonical_json(&a), br#"{"a":2,"b":1}"#.to_vec());
    }
}

//! RFC 8785 canonical JSON and the SHA-256 digests of SPEC §18.3.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The RFC 8785 (JCS) canonical bytes of a JSON value: keys sorted by UTF-16
/// code units, no whitespace, numbers in ECMAScript form, strings minimally
/// escaped. A `serde_json::Value` always serialises, so this cannot fail.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    // Claims hold no floats, and without floats RFC 8785 is serde_json's own
    // output with keys sorted: its strings escape exactly what RFC 8785 escapes
    // (`"`, `\`, controls as `\b \t \n \f \r` or lowercase `\u00xx`), and
    // integers print alike. Written here in one pass (export's cost, figure 25);
    // a value with a float goes to serde_jcs for ECMAScript's number form.
    let mut out = Vec::with_capacity(1024);
    if write_integral(value, &mut out) {
        return out;
    }
    // serde_jcs fails only on values that are not JSON (map keys that are not
    // strings, non-finite floats); a Value is JSON by construction.
    serde_jcs::to_vec(value).unwrap_or_default()
}

/// Writes `value` canonically unless it holds a float (then returns false, the
/// buffer left partly written for the caller to drop).
fn write_integral(value: &Value, out: &mut Vec<u8>) -> bool {
    match value {
        // ECMAScript prints numbers as doubles: beyond 2^53 an integer is rounded.
        Value::Number(n) if n.is_f64() || n.as_i64().is_none_or(|i| i.unsigned_abs() > 1 << 53) => {
            return false
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_integral(item, out) {
                    return false;
                }
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // RFC 8785 §3.2.3: keys ordered by their UTF-16 code units.
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // Writing to a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, key);
                out.push(b':');
                if !write_integral(item, out) {
                    return false;
                }
            }
            out.push(b'}');
        }
        other => scalar(other, out),
    }
    true
}

/// A null, boolean, string or integer as serde_json writes it.
fn scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
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

    proptest::proptest! {
        #[test]
        fn the_direct_writer_agrees_with_serde_jcs(v in integral_json()) {
            let mut direct = Vec::new();
            // Values it declines (integers past 2^53) go to serde_jcs.
            if write_integral(&v, &mut direct) {
                proptest::prop_assert_eq!(direct, serde_jcs::to_vec(&v).unwrap());
            }
        }
    }

    /// JSON values without floats (most integers within 2^53), with keys and strings from all of Unicode
    /// (controls, quotes, backslashes, astral characters).
    fn integral_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-(1i64 << 53)..=(1i64 << 53)).prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f\"\\\\]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
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

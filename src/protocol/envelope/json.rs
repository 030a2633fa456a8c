//! The envelope as the generic call receives it: a JSON object, whose fields
//! may be of any type until read.

use serde_json::{Map, Value};

use super::{checked, id_value, invalid, provenance_entry, string, Checked, Source, SPECIFIC};
use crate::protocol::evidence::{self, Evidence};
use crate::protocol::hashes;
use crate::protocol::ids::IdKind;
use crate::protocol::limits::Limits;
use crate::protocol::refusal::{Reason, Refusal};

/// Fields a client may send on any act.
const COMMON: [&str; 8] = [
    "parley",
    "kind",
    "body",
    "thread",
    "parent",
    "from",
    "provenance",
    "idempotency_key",
];

/// Server-set fields: ignored when a client sends them.
const SERVER_SET: [&str; 3] = ["id", "author_kind", "created_at"];

/// Checks an envelope sent as JSON (see [`checked`] for the order).
pub(crate) fn check(value: &Value, limits: &Limits, dialectic: bool) -> Result<Checked, Refusal> {
    let obj = value
        .as_object()
        .ok_or_else(|| Refusal::new(Reason::InvalidBody, "the envelope must be a JSON object"))?;
    checked(&Json(obj), limits, dialectic)
}

struct Json<'a>(&'a Map<String, Value>);

impl Json<'_> {
    /// `null` counts as absent for optional fields.
    fn present(&self, key: &str) -> Option<&Value> {
        present(self.0, key)
    }

    fn array(&self, field: &str, not_one: &str) -> Result<Option<&Vec<Value>>, Refusal> {
        self.present(field)
            .map(|v| v.as_array().ok_or_else(|| invalid(field, not_one)))
            .transpose()
    }
}

fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

impl Source for Json<'_> {
    /// `null` is absent here as for every field (strict tool schemas send it).
    fn version(&self) -> Result<(), Refusal> {
        if let Some(version) = self.present("parley") {
            if version.as_str() != Some("1") {
                return Err(Refusal::new(
                    Reason::UnsupportedVersion,
                    format!("parley version {version} is not supported; send \"1\""),
                )
                .with_field("parley"));
            }
        }
        Ok(())
    }

    fn kind(&self) -> Result<&str, Refusal> {
        match self.present("kind") {
            None => Err(invalid("kind", "the envelope needs a `kind`")),
            Some(v) => string(v, "kind"),
        }
    }

    fn known_fields(&self) -> Result<(), Refusal> {
        for key in self.0.keys() {
            let k = key.as_str();
            if !(COMMON.contains(&k) || SPECIFIC.contains(&k) || SERVER_SET.contains(&k)) {
                return Err(invalid(k, format!("unknown field `{k}`")));
            }
        }
        Ok(())
    }

    fn has(&self, field: &str) -> bool {
        self.present(field).is_some()
    }

    fn text(&self, field: &str) -> Result<Option<&str>, Refusal> {
        self.present(field).map(|v| string(v, field)).transpose()
    }

    fn id(&self, kind: IdKind, field: &str) -> Result<Option<u64>, Refusal> {
        self.present(field)
            .map(|v| id_value(kind, v, field))
            .transpose()
    }

    fn extension(&self) -> Result<Option<&str>, Refusal> {
        let Some(from) = self.present("from") else {
            return Ok(None);
        };
        let from = from
            .as_object()
            .ok_or_else(|| invalid("from", "`from` must be an object"))?;
        for key in from.keys() {
            if key != "extension" && key != "identity" {
                return Err(invalid(
                    &format!("from.{key}"),
                    format!("unknown field `from.{key}`"),
                ));
            }
        }
        present(from, "extension")
            .map(|v| string(v, "from.extension"))
            .transpose()
    }

    fn provenance(&self, limits: &Limits) -> Result<Option<Map<String, Value>>, Refusal> {
        let Some(prov) = self.present("provenance") else {
            return Ok(None);
        };
        let prov = prov
            .as_object()
            .ok_or_else(|| invalid("provenance", "`provenance` must be an object"))?;
        let mut kept = Map::new();
        for (key, value) in prov {
            let field = format!("provenance.{key}");
            if key != "model" && key != "client" {
                return Err(invalid(&field, format!("unknown field `{field}`")));
            }
            if value.is_null() {
                continue;
            }
            provenance_entry(&field, string(value, &field)?, limits)?;
            kept.insert(key.clone(), value.clone());
        }
        Ok(Some(kept))
    }

    fn evidence_len(&self) -> Result<Option<usize>, Refusal> {
        Ok(self
            .array("evidence", "`evidence` must be an array")?
            .map(Vec::len))
    }

    fn evidence_item(&self, i: usize, ref_max: usize) -> Result<Evidence, String> {
        evidence::parse(&self.0["evidence"][i], ref_max)
    }

    fn supersedes_len(&self) -> Result<Option<usize>, Refusal> {
        Ok(self
            .array("supersedes", "`supersedes` must be an array of claim ids")?
            .map(Vec::len))
    }

    fn supersedes_item(&self, i: usize) -> Result<u64, Refusal> {
        id_value(IdKind::Claim, &self.0["supersedes"][i], "supersedes")
    }

    fn body(&self) -> Result<&str, Refusal> {
        string(self.0.get("body").unwrap_or(&Value::Null), "body")
    }

    fn digest(&self) -> [u8; 32] {
        hashes::digest_without_key(self.0).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::hashes::body_hash;
    use crate::protocol::state::State;
    use serde_json::json;

    fn reason(v: Value) -> Reason {
        check(&v, &Limits::default(), true).unwrap_err().reason
    }

    #[test]
    fn accepts_the_seed_example() {
        let c = check(
            &json!({"parley": "1", "kind": "answer", "thread": "th_1042", "parent": "msg_88",
                    "from": {"extension": "worker-2", "identity": "ignored"}, "body": "Answer",
                    "provenance": {"model": "m", "client": "c"}, "id": "msg_1", "created_at": "x"}),
            &Limits::default(),
            true,
        )
        .unwrap();
        assert_eq!(
            (c.thread, c.parent, c.extension.as_deref()),
            (Some(1042), Some(88), Some("worker-2"))
        );
    }

    #[test]
    fn refusals_in_order() {
        assert_eq!(reason(json!([])), Reason::InvalidBody);
        assert_eq!(
            reason(json!({"parley": "2", "kind": "nope"})),
            Reason::UnsupportedVersion
        );
        assert_eq!(reason(json!({"body": "x"})), Reason::InvalidBody);
        assert_eq!(
            reason(json!({"kind": "vote", "body": "x"})),
            Reason::UnknownKind
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x", "color": 1})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "note", "body": "x", "to": "ainotes:a"})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "handoff", "body": "x", "thread": 1})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "   "})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x".repeat(501)})),
            Reason::BodyTooLong
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x", "thread": "msg_3"})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x", "from": {"extension": "a b"}})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "attest", "body": "x", "claim": "cl_1", "evidence": []})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "mark", "body": "x", "thread": 1, "state": "done"})),
            Reason::InvalidBody
        );
    }

    #[test]
    fn if_state_is_a_state_on_the_marking_acts_only() {
        let field = |v: Value| {
            let r = check(&v, &Limits::default(), true).unwrap_err();
            (r.reason, r.field)
        };
        let refused = (Reason::InvalidBody, Some("if_state".to_string()));
        for kind in ["decide", "mark", "reopen"] {
            let ok = json!({"kind": kind, "body": "x", "thread": 1, "state": "closed", "if_state": "answered"});
            let ok = if kind == "mark" {
                ok
            } else {
                let mut ok = ok;
                ok.as_object_mut().unwrap().remove("state");
                ok
            };
            let c = check(&ok, &Limits::default(), true).unwrap();
            assert_eq!(c.if_state, Some(State::Answered), "{kind}");
            for bad in [json!("done"), json!(3), json!(["open"]), json!("Open")] {
                let mut env = ok.clone();
                env["if_state"] = bad;
                assert_eq!(field(env), refused, "{kind}");
            }
        }
        for kind in ["ask", "answer", "note", "propose", "object"] {
            let env = json!({"kind": kind, "body": "x", "thread": 1, "if_state": "open"});
            assert_eq!(field(env), refused, "{kind}");
        }
        let null = json!({"kind": "decide", "body": "x", "thread": 1, "if_state": null});
        assert_eq!(
            check(&null, &Limits::default(), true).unwrap().if_state,
            None
        );
    }

    /// The hash as first written: words joined by one space. Stored hashes keep
    /// their meaning only while `body_hash` agrees with it.
    fn body_hash_by_words(body: &str) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for (i, word) in body.split_whitespace().enumerate() {
            let sep: &[u8] = if i > 0 { b" " } else { b"" };
            for byte in sep.iter().chain(word.as_bytes()) {
                hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        hash
    }

    #[test]
    fn body_hash_agrees_with_its_definition_on_ascii_and_unicode() {
        let pieces = [
            "a", "bc", " ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "é", "\u{a0}",
            "\u{3000}", "x y", "",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..5000 {
            let mut body = String::new();
            for _ in 0..(seed % 12) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                body.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            assert_eq!(body_hash(&body), body_hash_by_words(&body), "{body:?}");
        }
    }

    #[test]
    fn body_hash_ignores_whitespace_runs_only() {
        assert_eq!(body_hash("a  b\n c "), body_hash(" a b c"));
        assert_ne!(body_hash("a b c"), body_hash("a bc"));
        assert_ne!(body_hash("a b c"), body_hash("A b c"));
    }

    #[test]
    fn body_counts_scalar_values() {
        let limits = Limits {
            body_max_chars: 3,
            ..Limits::default()
        };
        assert!(check(&json!({"kind": "ask", "body": "äöü"}), &limits, true).is_ok());
    }
}

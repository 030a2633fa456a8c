//! JSON shapes of SPEC §8 and §10, rendered from stored records.

use serde_json::{json, Map, Value};

use crate::protocol::claim::ClaimStatus;
use crate::protocol::ids::IdKind;
use crate::protocol::kinds::{AuthorKind, EventKind, Origin};
use crate::store::records::{Awaiting, Change, ClaimRec, EventRec, MessageRec, Support, ThreadRec};
use crate::time;

/// An object from owned values. `json!` would deep-copy every `Value` placed in it.
pub(crate) fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    if N <= 3 {
        // A few inserts into an empty map cost less than collecting, which first
        // gathers the pairs in a vector of their own and sorts it.
        let mut map = Map::new();
        for (k, v) in pairs {
            map.insert(k.to_string(), v);
        }
        return Value::Object(map);
    }
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn key(kind: IdKind, n: u64) -> Value {
    Value::String(kind.key(n))
}

fn opt_string(s: &Option<String>) -> Value {
    s.as_deref().map_or(Value::Null, Value::from)
}

fn opt_time(ms: Option<i64>) -> Value {
    ms.map_or(Value::Null, |t| Value::String(time::format(t)))
}

/// `{ "identity", "extension", "message" }`.
pub(crate) fn awaiting(a: &Option<Awaiting>) -> Value {
    match a {
        None => Value::Null,
        Some(a) => object([
            ("extension", opt_string(&a.extension)),
            ("identity", Value::from(a.identity.as_str())),
            ("message", key(IdKind::Message, a.message)),
        ]),
    }
}

/// A message (SPEC §8.1), without `replies`, moving its strings instead of copying
/// them (reading a thread renders a thousand of these).
pub(crate) fn message_owned(m: MessageRec) -> Map<String, Value> {
    message_entries(m, None).into_iter().collect()
}

/// The fields of a message (and `replies`, when given) in key order. A map built
/// from sorted entries at once costs a fraction of inserting them one by one, and
/// reading a thread builds a thousand of them.
pub(crate) fn message_entries(m: MessageRec, replies: Option<Vec<Value>>) -> Vec<(String, Value)> {
    // 16 entries fit most messages and stay under 1 KiB: glibc serves larger
    // requests from its large bins, and each one first consolidates every small
    // free chunk — once per message here, the dominant cost of reading a thread.
    let mut out: Vec<(String, Value)> = Vec::with_capacity(16);
    let mut put = |k: &str, v: Value| out.push((k.to_string(), v));
    put("author_kind", Value::from(AuthorKind::of(m.human).as_str()));
    put("body", Value::String(m.body));
    if let Some(c) = m.claim {
        put("claim", key(IdKind::Claim, c));
    }
    if let Some(c) = m.counter_claim {
        put("counter_claim", key(IdKind::Claim, c));
    }
    put("created_at", Value::String(time::format(m.created_at)));
    if !m.evidence.is_empty() {
        put("evidence", json!(m.evidence));
    }
    let extension = m.extension.map_or(Value::Null, Value::String);
    put(
        "from",
        object([
            ("extension", extension),
            ("identity", Value::String(m.identity)),
        ]),
    );
    put("id", key(IdKind::Message, m.id));
    put("kind", Value::from(m.kind.kind()));
    put(
        "parent",
        m.parent.map_or(Value::Null, |p| key(IdKind::Message, p)),
    );
    put("parley", Value::from("1"));
    if let Some(p) = m.provenance {
        put("provenance", Value::Object(p));
    }
    if let Some(replies) = replies {
        put("replies", Value::Array(replies));
    }
    if let Some(state) = m.state {
        put("state", Value::from(state.as_str()));
    }
    if !m.supersedes.is_empty() {
        put(
            "supersedes",
            Value::Array(
                m.supersedes
                    .iter()
                    .map(|c| key(IdKind::Claim, *c))
                    .collect(),
            ),
        );
    }
    put("thread", key(IdKind::Thread, m.thread));
    if let Some(to) = m.to {
        put("to", Value::String(to));
    }
    if let Some(t) = m.valid_until {
        put("valid_until", Value::String(time::format(t)));
    }
    out
}

/// A thread summary (SPEC §8.2), with `since_progress` when the guards profile
/// is on (§15).
pub(crate) fn thread(t: &ThreadRec, guards: bool) -> Value {
    let mut summary = summary(t);
    if guards {
        if let Value::Object(map) = &mut summary {
            map.insert(
                "since_progress".into(),
                Value::from(t.guards.since_progress),
            );
        }
    }
    summary
}

fn summary(t: &ThreadRec) -> Value {
    // In key order: the map sorts its pairs first, which then costs no moves.
    object([
        ("awaiting", awaiting(&t.awaiting)),
        ("created_at", Value::from(time::format(t.created_at))),
        (
            "creator",
            object([
                ("extension", opt_string(&t.creator_extension)),
                ("identity", Value::from(t.creator.as_str())),
            ]),
        ),
        ("id", key(IdKind::Thread, t.id)),
        ("locked", Value::from(t.locked())),
        ("message_count", Value::from(t.message_count)),
        ("state", Value::from(t.state.as_str())),
        ("state_confirmed_at", opt_time(t.state_confirmed_at)),
        ("state_label", json!(lock_label(&t.state_label))),
        (
            "state_origin",
            Value::from(Origin::of(t.state_by_user).as_str()),
        ),
        ("topic", Value::from(t.topic.as_str())),
        ("updated_at", Value::from(time::format(t.updated_at))),
    ])
}

/// An event (SPEC §8.4).
pub(crate) fn event(e: &EventRec) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), key(IdKind::Event, e.id));
    match &e.change {
        Change::State {
            from,
            to,
            confirmation,
        } => {
            out.insert(
                "type".into(),
                json!(if *confirmation {
                    EventKind::Confirmation
                } else {
                    EventKind::Transition
                }
                .as_str()),
            );
            out.insert("thread".into(), key(IdKind::Thread, e.thread));
            out.insert("message".into(), key(IdKind::Message, e.message));
            out.insert("from_state".into(), json!(from.as_str()));
            out.insert("to_state".into(), json!(to.as_str()));
        }
        Change::Claim { claim, from, to } => {
            out.insert("type".into(), json!(EventKind::Claim.as_str()));
            out.insert("thread".into(), key(IdKind::Thread, e.thread));
            out.insert("message".into(), key(IdKind::Message, e.message));
            out.insert("claim".into(), key(IdKind::Claim, *claim));
            out.insert("from_status".into(), json!(from));
            out.insert("to_status".into(), json!(to));
        }
    }
    out.insert("origin".into(), json!(Origin::of(e.by_user).as_str()));
    out.insert("identity".into(), json!(e.identity));
    out.insert("extension".into(), json!(e.extension));
    out.insert(
        "label".into(),
        json!(lock_label(&e.label).or_else(|| e.shown_label.clone())),
    );
    out.insert("confirmed".into(), json!(e.confirmed));
    out.insert("at".into(), json!(time::format(e.at)));
    Value::Object(out)
}

fn support(s: &Support, with_evidence: bool) -> Value {
    let mut v = json!({ "message": key(IdKind::Message, s.message), "identity": s.identity, "at": time::format(s.at) });
    if with_evidence {
        v["evidence"] = json!(s.evidence);
    }
    v
}

/// A claim (SPEC §10). `refutations` pairs each counter-claim id with its message
/// and current status, which the caller looks up; `quorum`, with the provenance
/// profile on, adds `"quorum": { "needed", "have" }` (SPEC §18.2).
pub(crate) fn claim(
    c: &ClaimRec,
    refutations: &[(u64, u64, ClaimStatus)],
    now: i64,
    quorum: Option<usize>,
) -> Value {
    let mut out = json!({
        "id": key(IdKind::Claim, c.id),
        "message": key(IdKind::Message, c.message),
        "thread": key(IdKind::Thread, c.thread),
        "author": { "identity": c.identity, "extension": c.extension },
        "text": c.text,
        "status": c.status,
        "evidence": c.evidence,
        "attestations": c.attestations.iter().map(|s| support(s, true)).collect::<Vec<_>>(),
        "verifications": c.verifications.iter().map(|s| support(s, false)).collect::<Vec<_>>(),
        "refutations": refutations.iter().map(|(cl, msg, status)| json!({
            "claim": key(IdKind::Claim, *cl), "message": key(IdKind::Message, *msg), "status": status
        })).collect::<Vec<_>>(),
        "refutes": c.refutes.map_or(Value::Null, |r| key(IdKind::Claim, r)),
        "supersedes": c.supersedes.iter().map(|s| key(IdKind::Claim, *s)).collect::<Vec<_>>(),
        "superseded_by": c.superseded_by.map_or(Value::Null, |s| key(IdKind::Claim, s)),
        "valid_until": opt_time(c.valid_until),
        "expired": c.valid_until.is_some_and(|t| now > t),
        "created_at": time::format(c.created_at),
        "imported": c.imported,
    });
    if let Some(needed) = quorum {
        out["quorum"] = json!({ "needed": needed, "have": crate::protocol::claim::verifiers(c) });
    }
    out
}

/// A claim as the digest lists it (SPEC §17): `{ "id", "status", "text" }`.
pub(crate) fn digest_claim(c: &ClaimRec) -> Value {
    object([
        ("id", key(IdKind::Claim, c.id)),
        ("status", json!(c.status)),
        ("text", Value::from(c.text.as_str())),
    ])
}

/// How a change made through the lock right is labelled (SPEC §4): `KI · ` and the
/// label of the holder's token. Records keep the label alone.
pub(crate) fn lock_label(label: &Option<String>) -> Option<String> {
    label.as_ref().map(|l| format!("KI · {l}"))
}

/// A new thread's topic: the first line of its root's body, trimmed, at most 80
/// characters.
pub(crate) fn topic(body: &str) -> String {
    body.lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(80)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_labels_are_rendered_from_the_stored_label_and_old_events_keep_theirs() {
        let new = EventRec {
            id: 1,
            thread: 1,
            message: 1,
            change: crate::store::records::Change::State {
                from: crate::protocol::state::State::Open,
                to: crate::protocol::state::State::Closed,
                confirmation: false,
            },
            by_user: false,
            identity: "r:mod".into(),
            extension: None,
            label: Some("Mod".into()),
            shown_label: None,
            confirmed: true,
            at: 0,
        };
        assert_eq!(serde_json::to_value(&new).unwrap()["lock_by"], "Mod");
        assert_eq!(event(&new)["label"], "KI · Mod");
        // An event written before `lock_by` stored the label as shown.
        let mut old = serde_json::to_value(&new).unwrap();
        let map = old.as_object_mut().unwrap();
        map.remove("lock_by");
        map.insert("label".into(), json!("KI · Old"));
        let old: EventRec = serde_json::from_value(old).unwrap();
        assert_eq!(event(&old)["label"], "KI · Old");
        assert!(
            serde_json::to_value(&old).unwrap().get("label").is_none(),
            "never written again"
        );
        let none = EventRec { label: None, ..new };
        assert_eq!(event(&none)["label"], Value::Null);
    }
}

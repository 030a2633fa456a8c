//! The manifest (SPEC §13), generated from the same tables the engine enforces.

use serde_json::{json, Value};

use crate::error::Reason;
use crate::protocol::acts::{ActSpec, ACTS};
use crate::protocol::claim::CLAIM_STATES;
use crate::protocol::evidence::EVIDENCE_KINDS;
use crate::protocol::state::State;
use crate::{Forum, OPERATIONS, VERSION};

fn act(spec: &ActSpec) -> Value {
    json!({
        "kind": spec.kind,
        "summary": spec.summary,
        "needs": spec.needs.as_str(),
        "expects_reply": spec.expects_reply,
        "turn": spec.turn,
        "fields": { "required": spec.required, "optional": spec.optional },
    })
}

impl Forum {
    /// Everything an agent needs to speak without documentation (SPEC §13).
    pub fn manifest(&self) -> Value {
        let config = &self.config;
        let core: Vec<Value> = ACTS
            .iter()
            .filter(|s| s.profile.is_none())
            .map(act)
            .collect();
        let mut limits = serde_json::Map::new();
        for (name, value) in config.limits.entries() {
            limits.insert(name.into(), json!(value));
        }
        let mut profiles = serde_json::Map::new();
        if config.dialectic {
            let acts: Vec<Value> = ACTS
                .iter()
                .filter(|s| s.profile == Some("dialectic"))
                .map(act)
                .collect();
            profiles.insert(
                "dialectic".into(),
                json!({ "acts": acts, "claim_states": CLAIM_STATES, "evidence_kinds": EVIDENCE_KINDS }),
            );
        }
        if config.listen {
            profiles.insert(
                "listen".into(),
                json!({ "operations": crate::engine::listen::WAITING_READS }),
            );
        }
        if config.guards {
            profiles.insert(
                "guards".into(),
                json!({ "limits": ["progress_max_messages", "echo_window"] }),
            );
        }
        if config.coordination {
            profiles.insert(
                "coordination".into(),
                json!({
                    "operations": crate::engine::coordination::OPERATIONS,
                    "limits": ["lease_ttl_max_s", "leases_max"],
                }),
            );
        }
        if config.provenance {
            profiles.insert(
                "provenance".into(),
                json!({
                    "operations": crate::engine::provenance::OPERATIONS,
                    "limits": ["artifact_max_bytes", "verify_quorum"],
                }),
            );
        }
        let operations: Vec<&str> = OPERATIONS
            .iter()
            .copied()
            .filter(|op| self.offers(op))
            .collect();
        json!({
            "parley": "1",
            "server": { "name": "parley", "version": VERSION },
            "realm": config.realm,
            "acts": core,
            "states": {
                "forward": State::FORWARD.map(State::as_str),
                "side": State::SIDE.map(State::as_str),
            },
            "limits": limits,
            "profiles": profiles,
            "operations": operations,
            "reasons": Reason::ALL.iter().map(|r| json!({ "reason": r.as_str(), "status": r.status(), "summary": r.summary() })).collect::<Vec<_>>(),
        })
    }
}

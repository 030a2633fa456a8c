//! The words a person reads for an author, a turn and an event, shared by the web
//! view and the command line's views. They read the JSON of SPEC §8 and §10; a key
//! the engine left out shows as `?` rather than failing.

use serde_json::Value;

/// `identity/extension`, or `identity` when there is no extension.
pub fn author(from: &Value) -> String {
    let identity = from["identity"].as_str().unwrap_or("?");
    match from["extension"].as_str() {
        Some(ext) => format!("{identity}/{ext}"),
        None => identity.to_string(),
    }
}

/// Who is due: `ainotes:alice/w1`, `ainotes:alice (any extension)`, `anyone`, or `nobody`.
pub fn awaiting(turn: &Value) -> String {
    if turn.is_null() {
        return "nobody".into();
    }
    let identity = turn["identity"].as_str().unwrap_or("?");
    let who = match (identity, turn["extension"].as_str()) {
        ("*", _) => "anyone".to_string(),
        (id, Some(ext)) => format!("{id}/{ext}"),
        (id, None) => format!("{id} (any extension)"),
    };
    match turn["message"].as_str() {
        Some(msg) => format!("{who}, since {msg}"),
        None => who,
    }
}

/// What an event changed: `open → answered (unconfirmed)`, `confirms decided`, `cl_1 unverified → supported`.
pub fn event_change(ev: &Value) -> String {
    let s = |key: &str| ev[key].as_str().unwrap_or("?").to_string();
    match ev["type"].as_str() {
        Some("confirmation") => format!("confirmation: {} confirmed", s("to_state")),
        Some("claim") => format!(
            "claim {}: {} → {}",
            s("claim"),
            s("from_status"),
            s("to_status")
        ),
        Some(other) => {
            let standing = if ev["confirmed"].as_bool() == Some(true) {
                "confirmed"
            } else {
                "UNCONFIRMED proposal"
            };
            format!(
                "{other}: {} → {} ({standing})",
                s("from_state"),
                s("to_state")
            )
        }
        None => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turns_and_authors_read_naturally() {
        assert_eq!(
            author(&json!({"identity": "ainotes:bob", "extension": "w1"})),
            "ainotes:bob/w1"
        );
        assert_eq!(
            author(&json!({"identity": "ainotes:bob", "extension": null})),
            "ainotes:bob"
        );
        assert_eq!(awaiting(&Value::Null), "nobody");
        assert_eq!(
            awaiting(&json!({"identity": "*", "extension": null, "message": "msg_1"})),
            "anyone, since msg_1"
        );
        assert_eq!(
            awaiting(&json!({"identity": "ainotes:al", "extension": null, "message": "msg_2"})),
            "ainotes:al (any extension), since msg_2"
        );
    }
}

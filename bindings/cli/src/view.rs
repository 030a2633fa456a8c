//! Human-readable views of engine results. They read the JSON of SPEC §8 and §10 and
//! print what is there; a key the engine left out shows as `?` rather than failing.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

pub(crate) use parley_server::view::{author, awaiting, event_change};

/// The thread's state with its standing: confirmed or an unconfirmed proposal.
pub(crate) fn state(summary: &Value) -> String {
    let state = summary["state"].as_str().unwrap_or("?");
    let origin = summary["state_origin"].as_str().unwrap_or("?");
    let mut out = match summary["state_confirmed_at"].as_str() {
        Some(at) => format!("{state} (confirmed {at}, origin {origin})"),
        None => format!("{state} (UNCONFIRMED proposal, origin {origin})"),
    };
    if let Some(label) = summary["state_label"].as_str() {
        let _ = write!(out, " [{label}]");
    }
    if summary["locked"].as_bool() == Some(true) {
        out.push_str(" — locked");
    }
    out
}

/// One event as one line.
pub(crate) fn event_line(ev: &Value) -> String {
    let id = ev["id"].as_str().unwrap_or("?");
    let at = ev["at"].as_str().unwrap_or("?");
    let thread = ev["thread"].as_str().unwrap_or("?");
    let message = ev["message"].as_str().unwrap_or("?");
    let who = ev["identity"]
        .as_str()
        .map(|identity| match ev["extension"].as_str() {
            Some(ext) => format!("{identity}/{ext}"),
            None => identity.to_string(),
        });
    let mut line = format!(
        "{id:<7} {at}  {thread:<7} {message:<8} {}",
        event_change(ev)
    );
    if let Some(who) = who {
        let _ = write!(
            line,
            "  by {who} ({})",
            ev["origin"].as_str().unwrap_or("?")
        );
    }
    if let Some(label) = ev["label"].as_str() {
        let _ = write!(line, " [{label}]");
    }
    line
}

/// The thread as an indented tree, each message annotated with the events it caused.
pub(crate) fn thread(result: &Value, events: &[Value]) -> String {
    let summary = &result["thread"];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  {}",
        summary["id"].as_str().unwrap_or("?"),
        summary["topic"].as_str().unwrap_or("")
    );
    let _ = writeln!(out, "  state     {}", state(summary));
    let _ = writeln!(out, "  creator   {}", author(&summary["creator"]));
    let _ = writeln!(out, "  awaiting  {}", awaiting(&summary["awaiting"]));
    let _ = writeln!(
        out,
        "  messages  {} · created {} · updated {}",
        summary["message_count"],
        summary["created_at"].as_str().unwrap_or("?"),
        summary["updated_at"].as_str().unwrap_or("?")
    );
    let mut by_message: HashMap<&str, Vec<&Value>> = HashMap::new();
    for ev in events {
        if let Some(msg) = ev["message"].as_str() {
            by_message.entry(msg).or_default().push(ev);
        }
    }
    let turn_message = summary["awaiting"]["message"].as_str();
    for message in result["messages"].as_array().into_iter().flatten() {
        out.push('\n');
        tree(&mut out, message, 0, &by_message, turn_message);
    }
    out
}

fn tree(
    out: &mut String,
    msg: &Value,
    depth: usize,
    events: &HashMap<&str, Vec<&Value>>,
    turn: Option<&str>,
) {
    let pad = "    ".repeat(depth);
    let id = msg["id"].as_str().unwrap_or("?");
    let _ = write!(
        out,
        "{pad}{id} {} · {} ({}) · {}",
        msg["kind"].as_str().unwrap_or("?"),
        author(&msg["from"]),
        msg["author_kind"].as_str().unwrap_or("?"),
        msg["created_at"].as_str().unwrap_or("?")
    );
    for (key, label) in [
        ("to", "to"),
        ("state", "state"),
        ("claim", "claim"),
        ("counter_claim", "counter-claim"),
    ] {
        if let Some(v) = msg[key].as_str() {
            let _ = write!(out, " · {label} {v}");
        }
    }
    if turn == Some(id) {
        out.push_str(" · ⇐ sets the turn");
    }
    out.push('\n');
    for line in msg["body"].as_str().unwrap_or("").lines() {
        let _ = writeln!(out, "{pad}  │ {line}");
    }
    for item in msg["evidence"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "{pad}  │ evidence {}: {}",
            item["kind"].as_str().unwrap_or("?"),
            item["ref"].as_str().unwrap_or("?")
        );
        if let Some(note) = item["note"].as_str() {
            let _ = write!(out, " ({note})");
        }
        out.push('\n');
    }
    for ev in events.get(id).into_iter().flatten() {
        let _ = writeln!(out, "{pad}  ↳ {}", event_change(ev));
    }
    for reply in msg["replies"].as_array().into_iter().flatten() {
        tree(out, reply, depth + 1, events, turn);
    }
}

/// A thread's first line in a list: `th_3  topic  [state]`.
pub(crate) fn summary_line(out: &mut String, t: &Value) {
    let _ = writeln!(
        out,
        "{}  {}  [{}]",
        t["id"].as_str().unwrap_or("?"),
        t["topic"].as_str().unwrap_or(""),
        state(t)
    );
}

/// The inbox: each waiting thread with the message that made it due.
pub(crate) fn inbox(result: &Value) -> String {
    let mut out = String::new();
    let items = result["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if items.is_empty() {
        out.push_str("Nothing is waiting for you.\n");
    }
    for item in items {
        let m = &item["message"];
        summary_line(&mut out, &item["thread"]);
        let first = m["body"]
            .as_str()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        let _ = writeln!(
            out,
            "    due since {} {} by {}: {first}",
            m["id"].as_str().unwrap_or("?"),
            m["kind"].as_str().unwrap_or("?"),
            author(&m["from"])
        );
    }
    paging(&mut out, result);
    out
}

/// The event log, one line per event.
pub(crate) fn events(result: &Value) -> String {
    let mut out = String::new();
    let items = result["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if items.is_empty() {
        out.push_str("No events.\n");
    }
    for ev in items {
        let _ = writeln!(out, "{}", event_line(ev));
    }
    paging(&mut out, result);
    out
}

fn paging(out: &mut String, result: &Value) {
    if let Some(cursor) = result["cursor"].as_str() {
        let more = if result["more"].as_bool() == Some(true) {
            "more after"
        } else {
            "up to date at"
        };
        let _ = writeln!(out, "({more} --since {cursor})");
    }
}

/// A claim with its status, evidence, support and refutations.
pub(crate) fn claim(c: &Value) -> String {
    let mut out = String::new();
    let s = |key: &str| c[key].as_str().unwrap_or("?").to_string();
    let _ = write!(out, "{}  status {}", s("id"), s("status"));
    if c["expired"].as_bool() == Some(true) {
        out.push_str(" (expired)");
    }
    let _ = writeln!(
        out,
        "  · by {} in {} ({})",
        author(&c["author"]),
        s("thread"),
        s("message")
    );
    for line in c["text"].as_str().unwrap_or("").lines() {
        let _ = writeln!(out, "  │ {line}");
    }
    for item in c["evidence"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  evidence      {}: {}",
            item["kind"].as_str().unwrap_or("?"),
            item["ref"].as_str().unwrap_or("?")
        );
    }
    for a in c["attestations"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  attested by   {} ({})",
            a["identity"].as_str().unwrap_or("?"),
            a["message"].as_str().unwrap_or("?")
        );
    }
    for v in c["verifications"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  verified by   {} ({})",
            v["identity"].as_str().unwrap_or("?"),
            v["message"].as_str().unwrap_or("?")
        );
    }
    for r in c["refutations"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  refuted by    {} ({}), which is {}",
            r["claim"].as_str().unwrap_or("?"),
            r["message"].as_str().unwrap_or("?"),
            r["status"].as_str().unwrap_or("?")
        );
    }
    if let Some(refutes) = c["refutes"].as_str() {
        let _ = writeln!(out, "  refutes       {refutes}");
    }
    for sup in c["supersedes"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  supersedes    {}", sup.as_str().unwrap_or("?"));
    }
    if let Some(by) = c["superseded_by"].as_str() {
        let _ = writeln!(out, "  superseded by {by}");
    }
    if let Some(until) = c["valid_until"].as_str() {
        let _ = writeln!(out, "  valid until   {until}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unconfirmed_states_are_marked() {
        let proposal = json!({"state": "decided", "state_origin": "llm", "state_confirmed_at": null, "locked": false});
        assert!(state(&proposal).contains("UNCONFIRMED"));
        let locked = json!({"state": "closed", "state_origin": "user", "state_confirmed_at": "t", "locked": true});
        assert_eq!(state(&locked), "closed (confirmed t, origin user) — locked");
    }

    #[test]
    fn tree_nests_replies_and_annotates_events() {
        let result = json!({
            "thread": {"id": "th_1", "topic": "Q", "state": "answered", "state_origin": "llm",
                       "state_confirmed_at": null, "locked": false, "creator": {"identity": "a", "extension": null},
                       "awaiting": {"identity": "a", "extension": null, "message": "msg_2"}, "message_count": 2},
            "messages": [{"id": "msg_1", "kind": "ask", "from": {"identity": "a", "extension": null}, "body": "Q?",
                          "replies": [{"id": "msg_2", "kind": "answer", "from": {"identity": "b", "extension": "w"},
                                       "body": "A.", "replies": []}]}]
        });
        let ev = json!({"type": "transition", "message": "msg_2", "from_state": "open", "to_state": "answered", "confirmed": false});
        let text = thread(&result, &[ev]);
        assert!(text.contains("\n    msg_2 answer · b/w"), "{text}");
        assert!(
            text.contains("↳ transition: open → answered (UNCONFIRMED proposal)"),
            "{text}"
        );
        assert!(text.contains("⇐ sets the turn"), "{text}");
    }
}

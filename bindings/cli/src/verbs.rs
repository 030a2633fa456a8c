//! What a person does at a terminal: `parley threads`, `proposals`, and the acts
//! `confirm`, `close`, `reopen`, `mark`, `answer`. The envelopes are the ones the web
//! view posts (`human::envelope`), through the same generic call as `parley post`.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::human::{self, Act, Call};
use crate::reads::{print_json, Page};
use crate::terminal::visible;
use crate::view::{author, awaiting, summary_line};
use crate::CmdResult;

/// `parley threads`: thread summaries by last activity, oldest first.
pub(crate) fn threads(
    forum: &dyn Call,
    token: Option<&str>,
    filter: Option<String>,
    page: &Page,
    raw: bool,
) -> CmdResult {
    let mut args = page.args();
    if let Some(filter) = filter {
        args.insert("state".into(), json!(filter));
    }
    let result = forum.call(token, "list_threads", &Value::Object(args))?;
    if raw {
        print_json(&result);
    } else {
        print!("{}", visible(&describe_threads(&result)));
    }
    Ok(())
}

/// `parley proposals`: every thread whose state awaits confirmation, oldest first.
pub(crate) fn proposals(forum: &dyn Call, token: Option<&str>, raw: bool) -> CmdResult {
    let found = human::proposals(forum, token)?;
    if raw {
        let items: Vec<Value> = found
            .iter()
            .map(|p| json!({ "thread": p.thread, "event": p.event, "message": p.message }))
            .collect();
        print_json(&json!({ "items": items }));
    } else {
        print!("{}", visible(&describe_proposals(&found)));
    }
    Ok(())
}

/// Posts `act` on `thread` and says in one line where the thread stands. With
/// `if_state`, the act holds only while the thread is in that state (SPEC §14.5).
pub(crate) fn act(
    forum: &dyn Call,
    token: Option<&str>,
    thread: &str,
    act: &Act,
    body: Option<&str>,
    if_state: Option<&str>,
    raw: bool,
) -> CmdResult {
    let envelope = human::envelope(forum, token, thread, None, act, body, if_state)?;
    let result = forum.call(token, "post", &envelope)?;
    if raw {
        print_json(&result);
    } else {
        println!("{}", visible(&outcome_line(&result)));
    }
    Ok(())
}

/// `th_3 closed (confirmed, user) by msg_12`.
fn outcome_line(result: &Value) -> String {
    let t = &result["thread"];
    let standing = if t["state_confirmed_at"].is_null() {
        "proposed"
    } else {
        "confirmed"
    };
    let mut line = format!(
        "{} {} ({standing}, {})",
        t["id"].as_str().unwrap_or("?"),
        t["state"].as_str().unwrap_or("?"),
        t["state_origin"].as_str().unwrap_or("?"),
    );
    if let Some(label) = t["state_label"].as_str() {
        let _ = write!(line, " [{label}]");
    }
    if let Some(message) = result["message"]["id"].as_str() {
        let _ = write!(line, " by {message}");
    }
    line
}

fn describe_threads(result: &Value) -> String {
    let mut out = String::new();
    let items = result["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if items.is_empty() {
        out.push_str("No threads.\n");
    }
    for t in items {
        summary_line(&mut out, t);
        let count = t["message_count"].as_u64().unwrap_or(0);
        let _ = writeln!(
            out,
            "    {count} message{}, by {}, last {}, due: {}",
            if count == 1 { "" } else { "s" },
            author(&t["creator"]),
            t["updated_at"].as_str().unwrap_or("?"),
            awaiting(&t["awaiting"])
        );
    }
    if let Some(cursor) = result["cursor"].as_str() {
        if result["more"].as_bool() == Some(true) {
            let _ = writeln!(out, "(more after --since {cursor})");
        }
    }
    out
}

fn describe_proposals(found: &[human::Proposal]) -> String {
    let mut out = String::new();
    if found.is_empty() {
        out.push_str("Nothing awaits confirmation.\n");
    }
    for p in found {
        let t = &p.thread;
        let id = t["id"].as_str().unwrap_or("?");
        let _ = writeln!(out, "{id}  {}", t["topic"].as_str().unwrap_or(""));
        let proposer = match (&p.message, &p.event) {
            (Some(m), _) => author(&m["from"]),
            (None, Some(ev)) => author(ev),
            (None, None) => "?".into(),
        };
        let mut line = format!(
            "    {} proposed by {proposer}",
            t["state"].as_str().unwrap_or("?")
        );
        if let Some(ev) = &p.event {
            let _ = write!(
                line,
                " ({}, {})",
                ev["message"].as_str().unwrap_or("?"),
                ev["at"].as_str().unwrap_or("?")
            );
        }
        let why = p
            .message
            .as_ref()
            .and_then(|m| m["body"].as_str())
            .and_then(|b| b.lines().next());
        if let Some(why) = why {
            let _ = write!(line, ": {why}");
        }
        let _ = writeln!(out, "{line}");
        // The commands hold only while the thread is in the state shown here.
        let state = t["state"].as_str().unwrap_or("?");
        let _ = writeln!(
            out,
            "    parley confirm {id} --if-state {state}  |  parley mark {id} STATE --if-state {state}"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outcome_line_says_state_standing_and_origin() {
        let result = json!({
            "message": {"id": "msg_12"},
            "thread": {"id": "th_3", "state": "closed", "state_origin": "user",
                       "state_confirmed_at": "2026-01-01T00:00:00.000Z", "state_label": null}
        });
        assert_eq!(
            outcome_line(&result),
            "th_3 closed (confirmed, user) by msg_12"
        );
        let proposed = json!({
            "thread": {"id": "th_4", "state": "answered", "state_origin": "llm",
                       "state_confirmed_at": null, "state_label": "KI · Bob"}
        });
        assert_eq!(
            outcome_line(&proposed),
            "th_4 answered (proposed, llm) [KI · Bob]"
        );
    }

    #[test]
    fn a_proposal_names_who_and_why_and_what_to_type() {
        let p = human::Proposal {
            thread: json!({"id": "th_2", "topic": "Which DB?", "state": "decided"}),
            event: Some(json!({"message": "msg_5", "at": "2026-01-01T00:00:00.000Z",
                               "identity": "ainotes:bob", "extension": null})),
            message: Some(
                json!({"from": {"identity": "ainotes:bob", "extension": "w1"},
                                 "body": "we go with redb\nbecause"}),
            ),
        };
        let text = describe_proposals(&[p]);
        assert!(text.contains("th_2  Which DB?"), "{text}");
        assert!(
            text.contains("decided proposed by ainotes:bob/w1 (msg_5, 2026-01-01T00:00:00.000Z): we go with redb\n"),
            "{text}"
        );
        assert!(
            text.contains("parley confirm th_2 --if-state decided  |  "),
            "{text}"
        );
        assert_eq!(describe_proposals(&[]), "Nothing awaits confirmation.\n");
    }
}

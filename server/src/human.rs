//! What a person does at the forum, shared by the terminal verbs and the web view:
//! finding the proposals that wait for a confirmer, and building the envelopes of
//! confirm, close, reopen, mark, answer, note and ask. Every decision stays the
//! engine's; the one check made here (confirm needs an unconfirmed state) only saves
//! the person from a mark that would be refused or would mean something else.

use parley_forum::{Error, Forum, Reason, Refusal};
use serde_json::{json, Map, Value};

/// Anything that can make a generic call (SPEC §11.3): the forum in-process, or a
/// running server reached through its admin channel.
pub trait Call {
    /// Runs `operation` with `args` as the holder of `token`.
    fn call(&self, token: Option<&str>, operation: &str, args: &Value) -> Result<Value, Error>;
}

impl Call for Forum {
    fn call(&self, token: Option<&str>, operation: &str, args: &Value) -> Result<Value, Error> {
        Forum::call(self, token, operation, args)
    }
}

/// One thread whose state is an unconfirmed proposal.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The thread summary (SPEC §8.2).
    pub thread: Value,
    /// The transition event that proposed the state (§8.4), when the log has it.
    pub event: Option<Value>,
    /// The message that proposed it: its body is the "why".
    pub message: Option<Value>,
}

/// The largest page the engine serves (`page_max`); fewer round trips per scan.
const PAGE: u64 = 200;

/// Every unconfirmed proposal the token can read, oldest proposal first.
///
/// It walks the thread list once (the engine keeps no index of unconfirmed states),
/// then reads the events of each proposed thread to say who proposed it and why.
pub fn proposals(forum: &dyn Call, token: Option<&str>) -> Result<Vec<Proposal>, Error> {
    let mut found = Vec::new();
    each_page(forum, token, "list_threads", Map::new(), &mut |summary| {
        if summary["state_confirmed_at"].is_null() {
            found.push(summary.clone());
        }
    })?;
    let mut proposals = Vec::with_capacity(found.len());
    for thread in found {
        let id = thread["id"].as_str().unwrap_or_default().to_string();
        let event = proposing_event(forum, token, &id, thread["state"].as_str())?;
        let message = match event.as_ref().and_then(|e| e["message"].as_str()) {
            Some(msg) => find_message(forum, token, &id, msg)?,
            None => None,
        };
        proposals.push(Proposal {
            thread,
            event,
            message,
        });
    }
    // Oldest proposal first; a proposal whose event is missing sorts last, by thread.
    proposals.sort_by_key(|p| {
        let event = p.event.as_ref().map(|e| number(&e["id"]));
        (event.is_none(), event.unwrap_or(0), number(&p.thread["id"]))
    });
    Ok(proposals)
}

/// The last transition of `thread` into its current `state`: the one that proposed it.
fn proposing_event(
    forum: &dyn Call,
    token: Option<&str>,
    thread: &str,
    state: Option<&str>,
) -> Result<Option<Value>, Error> {
    let mut last = None;
    let mut args = Map::new();
    args.insert("thread".into(), json!(thread));
    each_page(forum, token, "get_events", args, &mut |event| {
        if event["type"] == "transition" && event["to_state"].as_str() == state {
            last = Some(event.clone());
        }
    })?;
    Ok(last)
}

/// The message `id` of `thread`, found in its tree.
fn find_message(
    forum: &dyn Call,
    token: Option<&str>,
    thread: &str,
    id: &str,
) -> Result<Option<Value>, Error> {
    fn walk(level: &Value, id: &str) -> Option<Value> {
        for message in level.as_array()? {
            if message["id"] == id {
                let mut found = message.clone();
                if let Some(obj) = found.as_object_mut() {
                    obj.remove("replies");
                }
                return Some(found);
            }
            if let Some(found) = walk(&message["replies"], id) {
                return Some(found);
            }
        }
        None
    }
    let view = forum.call(token, "get_thread", &json!({ "thread": thread }))?;
    Ok(walk(&view["messages"], id))
}

/// Calls a list operation page after page, handing each item to `each`.
fn each_page(
    forum: &dyn Call,
    token: Option<&str>,
    operation: &str,
    mut args: Map<String, Value>,
    each: &mut dyn FnMut(&Value),
) -> Result<(), Error> {
    args.insert("limit".into(), json!(PAGE));
    loop {
        let page = forum.call(token, operation, &Value::Object(args.clone()))?;
        for item in page["items"].as_array().into_iter().flatten() {
            each(item);
        }
        match (page["more"].as_bool(), page["cursor"].as_str()) {
            (Some(true), Some(cursor)) => {
                args.insert("since".into(), json!(cursor));
            }
            _ => return Ok(()),
        }
    }
}

/// The number of an id such as `ev_301` (0 when there is none), for ordering.
fn number(id: &Value) -> u64 {
    id.as_str()
        .and_then(|s| s.rsplit('_').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// What a person does to a thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Act {
    /// Mark the current, unconfirmed state: it becomes confirmed.
    Confirm,
    /// Mark `closed` (a person's mark is confirmed, so the thread locks).
    Close,
    /// Reopen a closed thread or one in a side state.
    Reopen,
    /// Set the thread's state to the one given.
    Mark(String),
    /// Answer under the root message.
    Answer,
    /// Add a note.
    Note,
    /// Ask a question.
    Ask,
}

impl Act {
    /// From a form's or command's action name and, for `mark`, its state.
    pub fn parse(action: &str, state: Option<&str>) -> Result<Act, Error> {
        let state = state.map(str::trim).filter(|s| !s.is_empty());
        Ok(match action {
            "confirm" => Act::Confirm,
            "close" => Act::Close,
            "reopen" => Act::Reopen,
            "answer" => Act::Answer,
            "note" => Act::Note,
            "ask" => Act::Ask,
            "mark" => match state {
                Some(state) => Act::Mark(state.to_string()),
                None => {
                    return Err(refusal(
                        Reason::InvalidBody,
                        "`mark` needs a state: answered, decided, closed, deferred, obsolete, rejected or open",
                        "state",
                    ))
                }
            },
            other => {
                return Err(refusal(
                    Reason::InvalidBody,
                    &format!(
                        "unknown action `{}`: one of confirm, close, reopen, mark, answer, note, ask",
                        other.chars().take(40).collect::<String>()
                    ),
                    "action",
                ))
            }
        })
    }

    /// The action's name, as `parse` reads it.
    pub fn name(&self) -> &'static str {
        match self {
            Act::Confirm => "confirm",
            Act::Close => "close",
            Act::Reopen => "reopen",
            Act::Mark(_) => "mark",
            Act::Answer => "answer",
            Act::Note => "note",
            Act::Ask => "ask",
        }
    }

    /// The body used when the person gives none, or `None` where a body is the point
    /// of the act (answer, note, ask).
    pub fn default_body(&self) -> Option<&'static str> {
        match self {
            Act::Confirm => Some("Confirmed."),
            Act::Close => Some("Closed."),
            Act::Reopen => Some("Reopened."),
            Act::Mark(_) => Some("State set."),
            Act::Answer | Act::Note | Act::Ask => None,
        }
    }
}

/// The envelope of `act` on `thread` (under `parent` when given), ready to post.
///
/// With the state the person saw, `seen`, `confirm`, `close`, `reopen` and `mark`
/// carry it as `if_state` (SPEC §14.5), and the engine refuses them with
/// `state_changed` when the thread has moved since, so that a person never confirms
/// or overrides a state they did not see. `seen` is ignored on the other acts.
///
/// `Confirm` reads the thread first: it is a `mark` of the state seen (else of the
/// current one), which a confirmer's mark confirms (SPEC §7.1), always conditioned on
/// that state, so that a proposal made between the read and the post is not
/// confirmed unseen. It is refused with `invalid_transition` when the thread is in
/// that state and it is already confirmed: there is nothing to confirm, and the mark
/// would be refused or mean a re-mark.
pub fn envelope(
    forum: &dyn Call,
    token: Option<&str>,
    thread: &str,
    parent: Option<&str>,
    act: &Act,
    body: Option<&str>,
    seen: Option<&str>,
) -> Result<Value, Error> {
    let seen = seen.map(str::trim).filter(|s| !s.is_empty());
    let body = match body.filter(|b| !b.trim().is_empty()) {
        Some(body) => body.to_string(),
        None => match act.default_body() {
            Some(default) => default.to_string(),
            None => {
                return Err(refusal(
                    Reason::InvalidBody,
                    &format!("`{}` needs a body: the text to post", act.name()),
                    "body",
                ))
            }
        },
    };
    let mut envelope = Map::new();
    envelope.insert("parley".into(), json!("1"));
    envelope.insert("thread".into(), json!(thread));
    match act {
        Act::Confirm => {
            let view = forum.call(token, "get_thread", &json!({ "thread": thread }))?;
            let summary = &view["thread"];
            let now = summary["state"].as_str().unwrap_or("?");
            let state = seen.unwrap_or(now);
            if state == now && !summary["state_confirmed_at"].is_null() {
                let id = summary["id"].as_str().unwrap_or(thread);
                return Err(Error::Refused(Refusal::new(
                    Reason::InvalidTransition,
                    format!(
                        "{id} is `{state}`, already confirmed: there is no proposal to confirm"
                    ),
                )));
            }
            envelope.insert("kind".into(), json!("mark"));
            envelope.insert("state".into(), json!(state));
            envelope.insert("if_state".into(), json!(state));
        }
        Act::Close => {
            envelope.insert("kind".into(), json!("mark"));
            envelope.insert("state".into(), json!("closed"));
        }
        Act::Mark(state) => {
            envelope.insert("kind".into(), json!("mark"));
            envelope.insert("state".into(), json!(state));
        }
        Act::Reopen => {
            envelope.insert("kind".into(), json!("reopen"));
        }
        Act::Answer | Act::Note | Act::Ask => {
            envelope.insert("kind".into(), json!(act.name()));
            if let Some(parent) = parent.filter(|p| !p.is_empty()) {
                envelope.insert("parent".into(), json!(parent));
            }
        }
    }
    if let (Some(seen), Act::Close | Act::Mark(_) | Act::Reopen) = (seen, act) {
        envelope.insert("if_state".into(), json!(seen));
    }
    envelope.insert("body".into(), json!(body));
    Ok(Value::Object(envelope))
}

fn refusal(reason: Reason, message: &str, field: &str) -> Error {
    Error::Refused(Refusal::new(reason, message).with_field(field))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_forum::{Config, TokenSpec};

    struct Setup {
        forum: Forum,
        human: String,
        agent: String,
    }

    fn setup() -> Setup {
        let forum = Forum::in_memory(Config::default()).unwrap();
        let human = forum.create_token(&TokenSpec::human("ann")).unwrap();
        let agent = forum
            .create_token(&TokenSpec::llm(
                "bob",
                &[parley_forum::Right::Read, parley_forum::Right::Write],
            ))
            .unwrap();
        Setup {
            forum,
            human,
            agent,
        }
    }

    fn post(s: &Setup, token: &str, envelope: Value) -> Value {
        s.forum.call(Some(token), "post", &envelope).unwrap()
    }

    fn reason(err: Error) -> &'static str {
        err.refusal().expect("a refusal").reason.as_str()
    }

    #[test]
    fn proposals_list_unconfirmed_states_oldest_first_with_their_why() {
        let s = setup();
        let first = post(&s, &s.agent, json!({"kind": "ask", "body": "first?"}));
        let second = post(&s, &s.agent, json!({"kind": "ask", "body": "second?"}));
        let (t1, t2) = (
            first["thread"]["id"].as_str().unwrap(),
            second["thread"]["id"].as_str().unwrap(),
        );
        // The second thread is proposed first, so it is the older proposal.
        post(
            &s,
            &s.agent,
            json!({"kind": "mark", "thread": t2, "state": "deferred", "body": "later"}),
        );
        post(
            &s,
            &s.agent,
            json!({"kind": "decide", "thread": t1, "body": "we go with A"}),
        );
        let found = proposals(&s.forum, Some(&s.human)).unwrap();
        let ids: Vec<&str> = found
            .iter()
            .map(|p| p.thread["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [t2, t1]);
        assert_eq!(found[0].message.as_ref().unwrap()["body"], "later");
        assert_eq!(found[1].message.as_ref().unwrap()["body"], "we go with A");
        assert_eq!(found[1].event.as_ref().unwrap()["identity"], "ainotes:bob");
        // A confirmed state leaves the list.
        let env = envelope(
            &s.forum,
            Some(&s.human),
            t1,
            None,
            &Act::Confirm,
            None,
            None,
        )
        .unwrap();
        assert_eq!(env["kind"], "mark");
        assert_eq!(env["state"], "decided");
        post(&s, &s.human, env);
        let left: Vec<Value> = proposals(&s.forum, Some(&s.human))
            .unwrap()
            .into_iter()
            .map(|p| p.thread["id"].clone())
            .collect();
        assert_eq!(left, [json!(t2)]);
    }

    #[test]
    fn confirm_refuses_a_state_that_is_already_confirmed() {
        let s = setup();
        let root = post(&s, &s.agent, json!({"kind": "ask", "body": "q?"}));
        let th = root["thread"]["id"].as_str().unwrap();
        let err = envelope(
            &s.forum,
            Some(&s.human),
            th,
            None,
            &Act::Confirm,
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(reason(err), "invalid_transition");
        let err = envelope(
            &s.forum,
            Some(&s.human),
            "th_999",
            None,
            &Act::Confirm,
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(reason(err), "thread_not_found");
    }

    #[test]
    fn acts_take_default_bodies_only_where_a_person_would_write_none() {
        let s = setup();
        let close = envelope(&s.forum, None, "th_1", None, &Act::Close, Some("  "), None).unwrap();
        assert_eq!(
            close,
            json!({"parley": "1", "kind": "mark", "thread": "th_1", "state": "closed", "body": "Closed."})
        );
        let reopen = envelope(&s.forum, None, "th_1", None, &Act::Reopen, None, None).unwrap();
        assert_eq!(reopen["kind"], "reopen");
        let answer = envelope(
            &s.forum,
            None,
            "th_1",
            Some("msg_2"),
            &Act::Answer,
            Some("yes"),
            None,
        )
        .unwrap();
        assert_eq!(answer["parent"], "msg_2");
        assert_eq!(answer["body"], "yes");
        for act in [Act::Answer, Act::Note, Act::Ask] {
            let err = envelope(&s.forum, None, "th_1", None, &act, Some(" \n"), None).unwrap_err();
            assert_eq!(reason(err), "invalid_body");
        }
    }

    #[test]
    fn state_acts_carry_the_state_seen_and_confirm_always_does() {
        let s = setup();
        let root = post(&s, &s.agent, json!({"kind": "ask", "body": "q?"}));
        let th = root["thread"]["id"].as_str().unwrap();
        post(
            &s,
            &s.agent,
            json!({"kind": "mark", "thread": th, "state": "deferred", "body": "later"}),
        );
        let build = |act: &Act, seen: Option<&str>| {
            envelope(&s.forum, Some(&s.human), th, None, act, Some("b"), seen).unwrap()
        };
        // Confirm conditions on the state it reads, or on the one seen.
        let read = build(&Act::Confirm, None);
        assert_eq!(
            (&read["state"], &read["if_state"]),
            (&json!("deferred"), &json!("deferred"))
        );
        let seen = build(&Act::Confirm, Some("answered"));
        assert_eq!(
            (&seen["state"], &seen["if_state"]),
            (&json!("answered"), &json!("answered"))
        );
        for act in [Act::Close, Act::Reopen, Act::Mark("decided".into())] {
            assert_eq!(build(&act, Some("deferred"))["if_state"], "deferred");
            assert!(build(&act, None).get("if_state").is_none());
            assert!(build(&act, Some(" ")).get("if_state").is_none());
        }
        assert!(build(&Act::Answer, Some("deferred"))
            .get("if_state")
            .is_none());
        // The engine judges it: the state seen is gone, so the confirm is refused.
        let err = s
            .forum
            .call(
                Some(&s.human),
                "post",
                &build(&Act::Confirm, Some("answered")),
            )
            .unwrap_err();
        assert_eq!(reason(err), "state_changed");
        assert!(post(&s, &s.human, read)["thread"]["state_confirmed_at"].is_string());
    }

    #[test]
    fn actions_parse_by_name_and_refuse_the_unknown() {
        assert_eq!(Act::parse("close", None).unwrap(), Act::Close);
        assert_eq!(
            Act::parse("mark", Some("deferred")).unwrap(),
            Act::Mark("deferred".into())
        );
        assert_eq!(
            reason(Act::parse("mark", Some(" ")).unwrap_err()),
            "invalid_body"
        );
        assert_eq!(
            reason(Act::parse("delete", None).unwrap_err()),
            "invalid_body"
        );
        for name in ["confirm", "close", "reopen", "answer", "note", "ask"] {
            assert_eq!(Act::parse(name, None).unwrap().name(), name);
        }
    }

    #[test]
    fn a_person_closes_and_reopens_through_the_engine() {
        let s = setup();
        let root = post(&s, &s.agent, json!({"kind": "ask", "body": "q?"}));
        let th = root["thread"]["id"].as_str().unwrap();
        let close = envelope(&s.forum, Some(&s.human), th, None, &Act::Close, None, None).unwrap();
        assert_eq!(post(&s, &s.human, close)["thread"]["locked"], true);
        let late = s
            .forum
            .call(
                Some(&s.agent),
                "post",
                &json!({"kind": "note", "thread": th, "body": "late"}),
            )
            .unwrap_err();
        assert_eq!(reason(late), "thread_closed");
        let reopen =
            envelope(&s.forum, Some(&s.human), th, None, &Act::Reopen, None, None).unwrap();
        assert_eq!(post(&s, &s.human, reopen)["thread"]["state"], "open");
    }
}

//! The presence section of a thread page (SPEC §16.1): for the awaited party and
//! each participant (an identity that wrote in the thread), what each of its
//! extensions last said it was doing, with a presence past its time shown as stale.

use maud::{html, Markup};
use parley_forum::{Error, Forum};
use serde_json::{json, Value};

use super::render;

/// The most identities whose presence a thread page reads: the awaited one and the
/// first participants to write.
const MAX_IDENTITIES: usize = 32;

/// One identity's line: its presence items (one per extension that set one).
pub(super) struct Seen {
    identity: String,
    awaited: bool,
    items: Vec<Value>,
}

/// The presence of the thread's awaited party and participants, read with
/// `token`. `None` when the forum does not offer presence (the coordination
/// profile is off), so the page leaves the section out.
pub(super) fn read(forum: &Forum, token: &str, view: &Value) -> Result<Option<Vec<Seen>>, Error> {
    if !forum.offers("get_presence") {
        return Ok(None);
    }
    let mut seen: Vec<Seen> = Vec::new();
    let awaited = view["thread"]["awaiting"]["identity"]
        .as_str()
        .filter(|who| *who != "*");
    if let Some(identity) = awaited {
        seen.push(Seen {
            identity: identity.to_string(),
            awaited: true,
            items: Vec::new(),
        });
    }
    participants(view["messages"].as_array().into_iter().flatten(), &mut seen);
    seen.truncate(MAX_IDENTITIES);
    for who in &mut seen {
        let args = json!({ "identity": who.identity });
        let result = forum.call(Some(token), "get_presence", &args)?;
        who.items = render::items(&result).to_vec();
    }
    Ok(Some(seen))
}

/// The authors of `messages` and their replies, in the order they first wrote.
fn participants<'a>(messages: impl Iterator<Item = &'a Value>, seen: &mut Vec<Seen>) {
    for message in messages {
        if let Some(identity) = message["from"]["identity"].as_str() {
            if !seen.iter().any(|s| s.identity == identity) {
                seen.push(Seen {
                    identity: identity.to_string(),
                    awaited: false,
                    items: Vec::new(),
                });
            }
        }
        participants(message["replies"].as_array().into_iter().flatten(), seen);
    }
}

/// The section, or nothing when the forum has no presence.
pub(super) fn section(seen: Option<&[Seen]>) -> Markup {
    let Some(seen) = seen else {
        return html! {};
    };
    html! {
        section #presence aria-labelledby="presence-title" {
            h2 #presence-title { "Who is here" }
            ul.presence {
                @for who in seen {
                    li.identity data-identity=(who.identity) data-awaited[who.awaited] {
                        span.who { (who.identity) }
                        @if who.awaited { " " span.awaited { "(due)" } }
                        @if who.items.is_empty() {
                            " " span.status data-status="unknown" { "no presence set" }
                        }
                        @for item in &who.items { (entry(item)) }
                    }
                }
            }
        }
    }
}

/// One extension's presence: `w1: working — note (since …, until …)`, stale shown.
fn entry(item: &Value) -> Markup {
    let status = render::text(item, "status");
    let stale = item["stale"].as_bool() == Some(true);
    html! {
        span.presence-item data-status=(status) data-stale=(stale) {
            " "
            @if let Some(ext) = item["extension"].as_str() { span.extension { (ext) } ": " }
            span.status { (status) }
            @if stale { " " span.stale title="past its time: the last status it set" { "stale" } }
            @if let Some(note) = item["note"].as_str().filter(|n| !n.is_empty()) {
                " — " span.note { (note) }
            }
            " (since " (render::time(&item["since"]))
            @if stale { ", expired " } @else { ", until " }
            (render::time(&item["expires_at"])) ")"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn participants_are_the_authors_in_the_order_they_wrote() {
        let messages = json!([
            {"from": {"identity": "ainotes:a"}, "replies": [
                {"from": {"identity": "ainotes:b"}, "replies": []},
                {"from": {"identity": "ainotes:a"}, "replies": [
                    {"from": {"identity": "human:ann"}, "replies": []}
                ]}
            ]}
        ]);
        let mut seen = vec![Seen {
            identity: "ainotes:b".into(),
            awaited: true,
            items: Vec::new(),
        }];
        participants(messages.as_array().unwrap().iter(), &mut seen);
        let names: Vec<&str> = seen.iter().map(|s| s.identity.as_str()).collect();
        assert_eq!(names, ["ainotes:b", "ainotes:a", "human:ann"]);
    }

    #[test]
    fn stale_presence_says_so_and_keeps_its_status() {
        let seen = [Seen {
            identity: "ainotes:a".into(),
            awaited: true,
            items: vec![json!({
                "identity": "ainotes:a", "extension": "w<1>", "status": "working",
                "note": "on <it>", "since": "2026-12-01T10:00:00.000Z",
                "expires_at": "2026-12-01T10:15:00.000Z", "stale": true
            })],
        }];
        let html = section(Some(&seen)).into_string();
        assert!(
            html.contains(r#"data-status="working" data-stale="true""#),
            "{html}"
        );
        assert!(
            html.contains("w&lt;1&gt;") && html.contains("on &lt;it&gt;"),
            "{html}"
        );
        assert!(html.contains("(due)") && html.contains("expired"), "{html}");
        assert_eq!(section(None).into_string(), "");
    }
}

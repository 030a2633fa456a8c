//! The pieces every page shows the same way: authors, states, times, events,
//! links to threads and messages, refusals and paging. They read the JSON of SPEC
//! §8 and §10 as the terminal views do (`crate::view`), and a key the engine left
//! out shows as `?` rather than failing.

use maud::{html, Markup};
use serde_json::Value;

use crate::view;

/// A string field, or `?` when it is missing.
pub(super) fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or("?")
}

/// The page of a thread: `/threads/th_N`.
pub(super) fn thread_href(thread: &str) -> String {
    format!("/threads/{thread}")
}

/// A message in its thread: `/threads/th_N#msg_M`.
pub(super) fn message_href(thread: &str, message: &str) -> String {
    format!("/threads/{thread}#{message}")
}

/// The author of a message: `identity/extension` and the author kind.
pub(super) fn author(from: &Value, kind: Option<&str>) -> Markup {
    html! {
        span.author {
            span.who { (view::author(from)) }
            @if let Some(kind) = kind {
                " " span.author-kind title=(kind_title(kind)) { "(" (kind) ")" }
            }
        }
    }
}

fn kind_title(kind: &str) -> &'static str {
    match kind {
        "human" => "written by a person",
        "llm" => "written by an agent",
        _ => "author kind",
    }
}

/// A thread's state as a badge: its name, and whether it is confirmed.
pub(super) fn state_badge(summary: &Value) -> Markup {
    let state = text(summary, "state");
    let confirmed = !summary["state_confirmed_at"].is_null();
    html! {
        span.state data-state=(state) data-confirmed=(confirmed) { (state) }
        @if !confirmed {
            " " span.unconfirmed { "unconfirmed" }
        }
        @if summary["locked"].as_bool() == Some(true) {
            " " span.locked { "locked" }
        }
    }
}

/// A time as a person reads it, with the exact timestamp kept in `datetime`.
pub(super) fn time(at: &Value) -> Markup {
    match at.as_str() {
        Some(at) => html! { time datetime=(at) title=(at) { (readable(at)) } },
        None => html! { "?" },
    }
}

/// `2026-11-30T12:00:00.123Z` as `2026-11-30 12:00 UTC`; anything else as it is.
pub(super) fn readable(at: &str) -> String {
    let shaped = at.len() >= 16
        && at.is_char_boundary(10)
        && at.is_char_boundary(16)
        && at.as_bytes().get(10) == Some(&b'T')
        && at.ends_with('Z');
    if shaped {
        format!("{} {} UTC", &at[..10], &at[11..16])
    } else {
        at.to_string()
    }
}

/// A link to a thread: its id and topic, then its state.
pub(super) fn thread_line(summary: &Value) -> Markup {
    let id = text(summary, "id");
    html! {
        a href=(thread_href(id)) {
            span.id { (id) } " " span.topic { (summary["topic"].as_str().unwrap_or("")) }
        }
        " " (state_badge(summary))
    }
}

/// One event: what it changed, by whom, when, and a link to the message that caused it.
pub(super) fn event(ev: &Value) -> Markup {
    let id = text(ev, "id");
    let thread = text(ev, "thread");
    html! {
        li.event id=(id) data-type=(text(ev, "type")) {
            span.change { (view::event_change(ev)) }
            @if let Some(identity) = ev["identity"].as_str() {
                " by " span.author {
                    span.who {
                        (identity)
                        @if let Some(ext) = ev["extension"].as_str() { "/" (ext) }
                    }
                    @if let Some(origin) = ev["origin"].as_str() {
                        " " span.origin { "(" (origin) ")" }
                    }
                }
            }
            @if let Some(label) = ev["label"].as_str() {
                " " span.label { (label) }
            }
            " · " (time(&ev["at"]))
            " · "
            @match ev["message"].as_str() {
                Some(message) => a href=(message_href(thread, message)) { (thread) " " (message) },
                None => a href=(thread_href(thread)) { (thread) },
            }
            @if let Some(claim) = ev["claim"].as_str() {
                " · " a href={ "/claims/" (claim) } { (claim) }
            }
        }
    }
}

/// The evidence of a message or a claim: each pointer with its kind; URLs link.
pub(super) fn evidence_item(item: &Value) -> Markup {
    let kind = text(item, "kind");
    let reference = text(item, "ref");
    html! {
        span.evidence-kind { (kind) } ": "
        @if kind == "url" && is_web_url(reference) {
            a.evidence-ref href=(reference) rel="noopener noreferrer nofollow" { (reference) }
        } @else if kind == "artifact" && super::artifact::is_stored_ref(reference) {
            // The forum holds these bytes (SPEC §18.1): a download, never a page.
            a.evidence-ref.artifact href={ "/artifacts/" (reference) } download { (reference) }
        } @else {
            code.evidence-ref { (reference) }
        }
        @if let Some(note) = item["note"].as_str() {
            " " span.note { "(" (note) ")" }
        }
    }
}

/// Only http(s) URLs become links: a `javascript:` or `data:` URL an agent cited
/// stays text.
fn is_web_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// `<p class="refusal" data-reason="REASON">REASON: message</p>`.
pub(super) fn refusal(reason: &str, message: &str) -> Markup {
    html! { p.refusal data-reason=(reason) role="alert" { (reason) ": " (message) } }
}

/// The link to the next page of a list (`a[rel=next]`), when the engine said `more`.
/// `params` are the list's filters; `since` becomes the returned cursor.
pub(super) fn next_page(path: &str, params: &[(&str, &str)], result: &Value) -> Markup {
    let cursor = result["cursor"].as_str();
    let more = result["more"].as_bool() == Some(true);
    match cursor {
        Some(cursor) if more => {
            let mut query: Vec<(&str, &str)> = params
                .iter()
                .filter(|(k, v)| *k != "since" && !v.is_empty())
                .copied()
                .collect();
            query.push(("since", cursor));
            let href = match serde_urlencoded::to_string(&query) {
                Ok(q) => format!("{path}?{q}"),
                Err(_) => path.to_string(),
            };
            html! { nav.paging aria-label="pages" { a rel="next" href=(href) { "Next page →" } } }
        }
        _ => html! {},
    }
}

/// The items of a list result.
pub(super) fn items(result: &Value) -> &[Value] {
    result["items"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_read_naturally_and_keep_their_exact_value() {
        assert_eq!(readable("2026-11-30T12:00:00.123Z"), "2026-11-30 12:00 UTC");
        assert_eq!(readable("soon"), "soon");
        assert_eq!(readable("2026-11-30é12:00:00Z"), "2026-11-30é12:00:00Z");
        let html = time(&json!("2026-11-30T12:00:00.123Z")).into_string();
        assert!(
            html.contains(r#"datetime="2026-11-30T12:00:00.123Z""#),
            "{html}"
        );
        assert_eq!(time(&Value::Null).into_string(), "?");
    }

    #[test]
    fn only_web_urls_become_links() {
        let link = evidence_item(&json!({"kind": "url", "ref": "https://example.org/a?b=<c>"}));
        assert!(link
            .into_string()
            .contains(r#"href="https://example.org/a?b=&lt;c&gt;""#));
        let script = evidence_item(&json!({"kind": "url", "ref": "javascript:alert(1)"}));
        let script = script.into_string();
        assert!(!script.contains("href"), "{script}");
        assert!(script.contains("<code"), "{script}");
    }

    #[test]
    fn a_stored_artifact_is_a_download_link() {
        let stored = format!("sha256:{}", "0a".repeat(32));
        let html = evidence_item(&json!({"kind": "artifact", "ref": stored})).into_string();
        assert!(
            html.contains(&format!(r#"href="/artifacts/{stored}""#)),
            "{html}"
        );
        assert!(html.contains("download"), "{html}");
        let other = evidence_item(&json!({"kind": "artifact", "ref": "git:abc"})).into_string();
        assert!(!other.contains("href"), "{other}");
    }

    #[test]
    fn a_next_link_keeps_the_filters_and_only_when_there_is_more() {
        let more = json!({"cursor": "c 1&x", "more": true});
        let html = next_page("/threads", &[("state", "open"), ("since", "old")], &more);
        let html = html.into_string();
        assert!(html.contains(r#"rel="next""#), "{html}");
        assert!(
            html.contains("/threads?state=open&amp;since=c+1%26x"),
            "{html}"
        );
        let done = json!({"cursor": "c1", "more": false});
        assert_eq!(next_page("/threads", &[], &done).into_string(), "");
    }

    #[test]
    fn unconfirmed_states_say_so() {
        let proposal = json!({"state": "decided", "state_confirmed_at": null});
        let html = state_badge(&proposal).into_string();
        assert!(
            html.contains(
                r#"<span class="state" data-state="decided" data-confirmed="false">decided</span>"#
            ),
            "{html}"
        );
        assert!(html.contains("unconfirmed"), "{html}");
        let confirmed = json!({"state": "closed", "state_confirmed_at": "t", "locked": true});
        let html = state_badge(&confirmed).into_string();
        assert!(
            !html.contains("unconfirmed") && html.contains("locked"),
            "{html}"
        );
    }
}

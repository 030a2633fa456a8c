//! `GET /claims/{id}`: a claim (SPEC §10) with its status, evidence, attestations
//! and verifications, and its refutation chain: each counter-claim with its own
//! status and the counter-claims against it, every one linking to its message.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use maud::{html, Markup};
use parley_forum::{Error, Forum};
use serde_json::{json, Value};

use super::render::{self, text};
use super::{run, Live, Refused};
use crate::http::App;
use crate::web::session::Viewer;

/// The most counter-claims one page reads: a chain longer than that is cut, and
/// says so, rather than making a page of unbounded cost.
const CHAIN_MAX: usize = 64;

/// A counter-claim as read, with the counter-claims against it.
struct Counter {
    /// The entry of the refuted claim's `refutations`.
    entry: Value,
    /// The counter-claim itself.
    claim: Value,
    below: Vec<Counter>,
}

pub(super) async fn page(
    State(app): State<App>,
    viewer: Viewer,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match id {
        Ok(Path(id)) => id,
        Err(err) => return super::refused(&viewer, "Claim", Refused::bad_path("claim", &err)),
    };
    let live = Live::forum(&app);
    let forum = Arc::clone(&app.forum);
    let token = viewer.token().to_string();
    let asked = id.clone();
    let reads = run(move || {
        let claim = forum.call(Some(&token), "get_claim", &json!({ "claim": asked }))?;
        let mut budget = CHAIN_MAX;
        let chain = counters(&forum, &token, &claim, &mut budget)?;
        Ok((claim, chain, budget == 0))
    })
    .await;
    let (claim, chain, cut) = match reads {
        Ok(reads) => reads,
        Err(refused) => return super::refused(&viewer, &format!("Claim {id}"), refused),
    };
    let claim_id = text(&claim, "id");
    let thread = text(&claim, "thread");
    let title = format!("Claim {claim_id}");
    let list = |key: &str| {
        claim[key]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .to_vec()
    };
    let (evidence, attestations, verifications) = (
        list("evidence"),
        list("attestations"),
        list("verifications"),
    );
    let content = html! {
        h1 { span.id { (claim_id) } " " q.claim-text { (claim["text"].as_str().unwrap_or("")) } }
        p #claim-status data-live-region {
            "Status: " span.claim-status data-status=(text(&claim, "status")) { (text(&claim, "status")) }
            @if claim["expired"].as_bool() == Some(true) { " " span.expired { "expired" } }
            " · by " (render::author(&claim["author"], None))
            " · " a href=(render::message_href(thread, text(&claim, "message"))) { (thread) " " (text(&claim, "message")) }
            " · " (render::time(&claim["created_at"]))
            @if !claim["valid_until"].is_null() { " · valid until " (render::time(&claim["valid_until"])) }
        }
        (provenance(&claim))
        @if let Some(refuted) = claim["refutes"].as_str() {
            p #refutes { "This claim refutes " a href={ "/claims/" (refuted) } { (refuted) } "." }
        }
        @if let Some(by) = claim["superseded_by"].as_str() {
            p #superseded-by { "Superseded by " a href={ "/claims/" (by) } { (by) } "." }
        }
        @if let Some(old) = claim["supersedes"].as_array().filter(|s| !s.is_empty()) {
            p #supersedes {
                "Supersedes "
                @for (i, s) in old.iter().enumerate() {
                    @if i > 0 { ", " }
                    a href={ "/claims/" (s.as_str().unwrap_or("?")) } { (s.as_str().unwrap_or("?")) }
                }
                "."
            }
        }
        section aria-labelledby="evidence-title" {
            h2 #evidence-title { "Evidence" }
            ul #evidence data-live-region {
                @for item in &evidence { li { (render::evidence_item(item)) } }
            }
            @if evidence.is_empty() { p.empty { "No evidence was given." } }
        }
        section aria-labelledby="attestations-title" {
            h2 #attestations-title { "Attestations" }
            ul #attestations data-live-region {
                @for a in &attestations { li { (support(thread, a)) } }
            }
            @if attestations.is_empty() { p.empty { "Nobody has attested it." } }
        }
        section aria-labelledby="verifications-title" {
            h2 #verifications-title { "Verifications" }
            ul #verifications data-live-region {
                @for v in &verifications { li { (support(thread, v)) } }
            }
            @if verifications.is_empty() { p.empty { "Nobody has verified it." } }
        }
        section aria-labelledby="refutations-title" {
            h2 #refutations-title { "Refutations" }
            ol #refutations data-live-region {
                @for counter in &chain { (counter_item(thread, counter)) }
            }
            @if chain.is_empty() { p.empty { "Nobody has refuted it." } }
            @if cut { p.cut { "The chain goes on; open a counter-claim to follow it." } }
        }
    };
    super::page(&viewer, &title, &live, content)
}

/// The provenance of a claim (SPEC §18): its quorum (`have/needed` distinct
/// verifiers) and, for a claim imported from another realm, where it comes from.
/// Nothing for a forum without the profile (the fields are absent).
fn provenance(claim: &Value) -> Markup {
    let quorum = &claim["quorum"];
    let origin = &claim["imported"];
    html! {
        @if quorum.is_object() {
            p #claim-quorum data-have=(quorum["have"]) data-needed=(quorum["needed"]) {
                "Quorum: " span.quorum { (quorum["have"]) "/" (quorum["needed"]) }
                " distinct verifiers"
            }
        }
        @if origin.is_object() {
            section #imported aria-labelledby="imported-title" {
                h2 #imported-title { "Imported from another realm" }
                dl {
                    dt { "Realm" } dd.realm { (text(origin, "realm")) }
                    dt { "Original claim" } dd.original { (text(origin, "claim")) }
                    dt { "Status at export" }
                    dd.status-at-export data-status=(text(origin, "status")) { (text(origin, "status")) }
                    dt { "Exported" } dd.exported-at { (render::time(&origin["exported_at"])) }
                    dt { "Signed by" } dd { code.key { (text(origin, "key")) } }
                }
            }
        }
    }
}

/// The counter-claims against `claim`, each with those against it, reading at most
/// `budget` claims in all.
fn counters(
    forum: &Forum,
    token: &str,
    claim: &Value,
    budget: &mut usize,
) -> Result<Vec<Counter>, Error> {
    let mut out = Vec::new();
    for entry in claim["refutations"].as_array().into_iter().flatten() {
        let Some(id) = entry["claim"].as_str() else {
            continue;
        };
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let counter = forum.call(Some(token), "get_claim", &json!({ "claim": id }))?;
        let below = counters(forum, token, &counter, budget)?;
        out.push(Counter {
            entry: entry.clone(),
            claim: counter,
            below,
        });
    }
    Ok(out)
}

/// An attestation or a verification: who, when, the message (in the claim's
/// thread, where such a message goes unless it names another), its evidence.
fn support(thread: &str, item: &Value) -> Markup {
    let message = text(item, "message");
    html! {
        span.who { (text(item, "identity")) }
        " · " (render::time(&item["at"]))
        " · " a href=(render::message_href(thread, message)) { (message) }
        @if let Some(evidence) = item["evidence"].as_array().filter(|e| !e.is_empty()) {
            ul.evidence {
                @for e in evidence { li { (render::evidence_item(e)) } }
            }
        }
    }
}

fn counter_item(thread: &str, counter: &Counter) -> Markup {
    let entry = &counter.entry;
    let id = text(entry, "claim");
    let c = &counter.claim;
    let (status, text_of, in_thread) = (
        text(c, "status"),
        c["text"].as_str().unwrap_or(""),
        c["thread"].as_str().unwrap_or(thread),
    );
    let message = text(entry, "message");
    html! {
        li.refutation data-claim=(id) {
            a href={ "/claims/" (id) } { (id) } " "
            span.claim-status data-status=(status) { (status) }
            " by " (render::author(&c["author"], None))
            " · " a href=(render::message_href(in_thread, message)) { (in_thread) " " (message) }
            @if !text_of.is_empty() { " " q.claim-text { (text_of) } }
            @if !counter.below.is_empty() {
                ol.refutations {
                    @for below in &counter.below { (counter_item(in_thread, below)) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_and_origin_show_only_when_the_claim_has_them() {
        assert_eq!(provenance(&json!({"status": "open"})).into_string(), "");
        let claim = json!({
            "quorum": {"needed": 2, "have": 1},
            "imported": {"realm": "acme<b>", "claim": "c_7", "status": "verified",
                         "exported_at": "2026-12-05T12:00:00Z", "key": "ed25519:AAAA"},
        });
        let html = provenance(&claim).into_string();
        assert!(
            html.contains(r#"<span class="quorum">1/2</span>"#),
            "{html}"
        );
        assert!(html.contains("acme&lt;b&gt;"), "{html}");
        assert!(html.contains(r#"data-status="verified""#), "{html}");
        assert!(
            html.contains("ed25519:AAAA") && html.contains("c_7"),
            "{html}"
        );
    }
}

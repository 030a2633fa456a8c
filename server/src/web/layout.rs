//! The page shell every page of the web view shares.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::session::Viewer;

/// The whole page around `content`: the header says who is signed in, the
/// navigation, the search form and the sign-out form (signed-in pages only), a
/// banner on an agent's pages saying they are read only, and the live-update script.
///
/// Control characters in what others wrote show as escapes (`crate::terminal`): a
/// browser would show nothing for them.
pub(crate) fn page(viewer: Option<&Viewer>, title: &str, content: Markup) -> Markup {
    let markup = shell(viewer, title, content).into_string();
    PreEscaped(crate::terminal::visible(&markup).into_owned())
}

fn shell(viewer: Option<&Viewer>, title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Parley" }
                link rel="stylesheet" href="/assets/style.css";
                @if viewer.is_some() {
                    script src="/assets/live.js" defer {}
                }
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.site {
                    a.brand href="/" { "Parley" }
                    @if let Some(viewer) = viewer {
                        (nav(viewer))
                        div.account {
                            p id="whoami" {
                                "Signed in as "
                                strong.identity { (viewer.identity) }
                                " "
                                span.kind {
                                    "(" (viewer.kind)
                                    @if !viewer.can_act {
                                        ": " (viewer.rights.join(", "))
                                    }
                                    ")"
                                }
                                @if let Some(label) = viewer.label.as_deref().filter(|l| !viewer.identity.ends_with(&format!(":{l}"))) {
                                    " "
                                    span.label { (label) }
                                }
                            }
                            form id="sign-out" method="post" action="/sign-out" {
                                input type="hidden" name="csrf" value=(viewer.csrf);
                                button type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                @if let Some(viewer) = viewer.filter(|v| !v.can_act) {
                    p id="read-only" role="note" {
                        "You are signed in with an agent token ("
                        (viewer.identity)
                        "): this view is read only. Agents act through MCP or the REST API."
                    }
                }
                main id="main" tabindex="-1" {
                    (content)
                }
            }
        }
    }
}

fn nav(viewer: &Viewer) -> Markup {
    html! {
        nav aria-label="Main" {
            ul {
                li { a href="/inbox" { "Waiting for you" } }
                li { a href="/proposals" { "To confirm" } }
                li { a href="/threads" { "Threads" } }
                li { a href="/events" { "Events" } }
                @if viewer.leases {
                    li { a href="/leases" { "Leases" } }
                }
                @if viewer.can_act {
                    li { a href="/tokens" { "Tokens" } }
                }
            }
            form id="search" method="get" action="/search" role="search" {
                label for="search-q" { "Search messages" }
                input id="search-q" name="q" type="search" required maxlength="200" placeholder="words…";
                button type="submit" { "Search" }
            }
        }
    }
}

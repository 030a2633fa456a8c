//! Cross-site request forgery defences of the web view.
//!
//! Three layers, each enough against a browser on a foreign page:
//! - the session cookie is `SameSite=Strict`, so such a page's form is sent without it;
//! - every `POST` carries a `csrf` field that must equal the session's CSRF token
//!   (sign-in, before any session, a `parley_csrf` cookie and the same field);
//! - a `POST` whose `Origin` is present and is not this server's own origin, or
//!   whose `Sec-Fetch-Site` says `cross-site`, is refused first thing in its
//!   handler (`cross_origin`). The global admit layer already refuses origins that are not
//!   loopback or allowed; here only the server's own origin passes, since a page of
//!   another loopback server is just as foreign.

use axum::http::{header, HeaderMap};

/// Why the request comes from another site, if it does.
pub(crate) fn foreign(headers: &HeaderMap, secure: bool) -> Option<String> {
    let site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    if site.is_some_and(|s| s.eq_ignore_ascii_case("cross-site")) {
        return Some("the form was sent from another site".into());
    }
    let origin = headers.get(header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("\u{fffd}").trim();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim();
    let scheme = if secure { "https" } else { "http" };
    let own = format!("{scheme}://{host}");
    if !host.is_empty() && origin.trim_end_matches('/').eq_ignore_ascii_case(&own) {
        return None;
    }
    Some(format!(
        "the form was sent from {origin}, not from this server ({own})"
    ))
}

/// Whether `given` is the expected CSRF token, compared in constant time.
pub(crate) fn matches(expected: &str, given: Option<&str>) -> bool {
    let Some(given) = given else { return false };
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    if a.is_empty() || a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_the_own_origin_passes() {
        let own = headers(&[
            ("host", "127.0.0.1:7878"),
            ("origin", "http://127.0.0.1:7878"),
        ]);
        assert!(foreign(&own, false).is_none());
        assert!(
            foreign(&own, true).is_some(),
            "behind TLS the origin is https"
        );
        let other_port = headers(&[
            ("host", "127.0.0.1:7878"),
            ("origin", "http://127.0.0.1:3000"),
        ]);
        assert!(foreign(&other_port, false).is_some());
        let null = headers(&[("host", "127.0.0.1:7878"), ("origin", "null")]);
        assert!(foreign(&null, false).is_some());
        assert!(
            foreign(&headers(&[("host", "h")]), false).is_none(),
            "no Origin: not a browser's cross-site form"
        );
        let cross = headers(&[("host", "h"), ("sec-fetch-site", "cross-site")]);
        assert!(foreign(&cross, false).is_some());
        let same = headers(&[("host", "h"), ("sec-fetch-site", "same-origin")]);
        assert!(foreign(&same, false).is_none());
    }

    #[test]
    fn csrf_tokens_match_exactly() {
        assert!(matches("abc", Some("abc")));
        assert!(!matches("abc", Some("abd")));
        assert!(!matches("abc", Some("ab")));
        assert!(!matches("abc", None));
        assert!(!matches("", Some("")));
    }
}

//! A minimal browser for the web view tests: a cookie jar, form posts with the
//! `Origin` a browser sends, and the few page lookups the tests need.
#![allow(dead_code)]

use std::collections::BTreeMap;

use crate::support::{http, Response, Server};

/// One browser: its cookies, sent back on every request.
pub struct Browser<'a> {
    pub server: &'a Server,
    pub cookies: BTreeMap<String, String>,
    /// Headers added to every request (e.g. `X-Forwarded-Proto`).
    pub extra: Vec<(String, String)>,
}

impl<'a> Browser<'a> {
    pub fn new(server: &'a Server) -> Browser<'a> {
        Browser {
            server,
            cookies: BTreeMap::new(),
            extra: Vec::new(),
        }
    }

    /// This server's own origin, as a browser on its pages sends it.
    pub fn origin(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    fn cookie_header(&self) -> Option<String> {
        (!self.cookies.is_empty()).then(|| {
            self.cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Stores (or, with `Max-Age=0`, deletes) every cookie the response sets.
    fn keep(&mut self, resp: &Response) {
        for (name, value) in &resp.headers {
            if !name.eq_ignore_ascii_case("set-cookie") {
                continue;
            }
            let pair = value.split(';').next().unwrap_or_default();
            let Some((k, v)) = pair.split_once('=') else {
                continue;
            };
            if value.contains("Max-Age=0") || v.is_empty() {
                self.cookies.remove(k.trim());
            } else {
                self.cookies
                    .insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }

    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        let cookie = self.cookie_header();
        let mut all: Vec<(&str, &str)> = Vec::new();
        if let Some(cookie) = cookie.as_deref() {
            all.push(("Cookie", cookie));
        }
        for (k, v) in &self.extra {
            all.push((k, v));
        }
        all.extend_from_slice(headers);
        let resp = http(self.server.addr, method, path, &all, body);
        self.keep(&resp);
        resp
    }

    pub fn get(&mut self, path: &str) -> Response {
        self.request("GET", path, &[], None)
    }

    /// A form post as a browser on this server's page sends it.
    pub fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Response {
        let origin = self.origin();
        self.post_with(path, fields, &[("Origin", &origin)])
    }

    pub fn post_with(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Response {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let mut all = vec![("Content-Type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        self.request("POST", path, &all, Some(body.as_bytes()))
    }

    /// Signs in with `token` through the sign-in form.
    pub fn sign_in(&mut self, token: &str) -> Response {
        let page = self.get("/sign-in");
        assert_eq!(page.status, 200);
        let csrf = csrf_of(&text(&page));
        self.post("/sign-in", &[("token", token), ("csrf", &csrf)])
    }

    /// Signs in and asserts it worked.
    pub fn signed_in(server: &'a Server, token: &str) -> Browser<'a> {
        let mut b = Browser::new(server);
        let resp = b.sign_in(token);
        assert_eq!(resp.status, 303, "sign-in: {}", text(&resp));
        assert_eq!(resp.header("location"), Some("/inbox"));
        b
    }

    /// The session's CSRF token, read from a signed-in page's sign-out form.
    pub fn csrf(&mut self) -> String {
        let page = self.get("/inbox");
        assert_eq!(page.status, 200, "{}", text(&page));
        csrf_of(&text(&page))
    }

    pub fn session(&self) -> Option<&str> {
        self.cookies.get("parley_session").map(String::as_str)
    }
}

pub fn text(resp: &Response) -> String {
    String::from_utf8_lossy(&resp.body).into_owned()
}

/// The value of the first hidden `csrf` field of a page.
pub fn csrf_of(page: &str) -> String {
    value_after(page, r#"name="csrf" value=""#).unwrap_or_else(|| panic!("no csrf field in {page}"))
}

/// The text from just after `marker` up to the next `"`.
pub fn value_after(page: &str, marker: &str) -> Option<String> {
    let start = page.find(marker)? + marker.len();
    let end = page[start..].find('"')? + start;
    Some(page[start..end].to_string())
}

/// The `<form …>…</form>` of a page whose opening tag holds `marker`.
pub fn form_with<'p>(page: &'p str, marker: &str) -> Option<&'p str> {
    page.split("<form").skip(1).find_map(|f| {
        let open = &f[..f.find('>')?];
        open.contains(marker)
            .then(|| &f[..f.find("</form>").unwrap_or(f.len())])
    })
}

/// The `data-reason` of the first refusal on a page.
pub fn reason_of(page: &str) -> Option<String> {
    value_after(page, r#"class="refusal" data-reason=""#)
}

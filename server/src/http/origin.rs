//! DNS-rebinding protection: a request whose `Origin` header is present and not
//! allowed is answered 403 before it reaches the engine. Requests without `Origin`
//! (curl, SDK clients, other servers) are not browsers on a foreign page and pass.

use axum::extract::Request;
use axum::http::header;

/// The allowed origins: loopback ones always, plus those given by `--allow-origin`.
#[derive(Debug)]
pub(crate) struct Origins {
    extra: Vec<String>,
}

impl Origins {
    pub(crate) fn new(extra: &[String]) -> Result<Origins, String> {
        let mut list = Vec::new();
        for origin in extra {
            let normal = normalize(origin);
            if !(normal.starts_with("http://") || normal.starts_with("https://"))
                || normal.len() <= "https://".len()
            {
                return Err(format!(
                    "--allow-origin {origin}: an origin looks like https://host[:port]"
                ));
            }
            list.push(normal);
        }
        Ok(Origins { extra: list })
    }

    pub(crate) fn allows(&self, origin: &str) -> bool {
        let origin = normalize(origin);
        is_loopback(&origin) || self.extra.contains(&origin)
    }
}

fn normalize(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// `http(s)://localhost`, `127.0.0.1` or `[::1]`, with an optional numeric port.
fn is_loopback(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    // `port` is empty or `:<digits>`.
    let (host, port) = match rest.strip_prefix("[::1]") {
        Some(port) => ("[::1]", port),
        None => rest.split_at(rest.find(':').unwrap_or(rest.len())),
    };
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|p| {
            !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
        });
    matches!(host, "localhost" | "127.0.0.1" | "[::1]") && port_ok
}

/// Why `request` comes from a page this server does not serve, if it does: its
/// `Origin` is present and not allowed.
pub(crate) fn refusal(origins: &Origins, request: &Request) -> Option<String> {
    let origin = request.headers().get(header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("\u{fffd}");
    (!origins.allows(origin)).then(|| {
        format!("origin {origin} is not allowed (start the server with --allow-origin to admit it)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_pass_and_others_do_not() {
        let origins = Origins::new(&["https://app.example.org/".into()]).unwrap();
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "http://127.0.0.1:7878",
            "http://[::1]:8080",
            "https://LOCALHOST",
            "https://app.example.org",
        ] {
            assert!(origins.allows(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "http://localhost:abc",
            "http://[::1]x",
            "null",
            "file://",
            "http://app.example.org",
        ] {
            assert!(!origins.allows(bad), "{bad}");
        }
    }

    #[test]
    fn allow_origin_must_look_like_an_origin() {
        assert!(Origins::new(&["example.org".into()]).is_err());
        assert!(Origins::new(&["https://".into()]).is_err());
    }
}

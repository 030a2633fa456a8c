//! DNS-rebinding protection by `Host`: a page on a foreign name that has been made
//! to resolve to this machine reaches the server with its own name in `Host`, so a
//! request is served only when the name it is addressed to is allowed. Loopback
//! names always are (`localhost`, `127.0.0.1`, `[::1]`, any port); `--allow-host`
//! adds more. Anything else, a request without `Host` included, is answered 421
//! (Misdirected Request) before it reaches the engine, on every route.

use axum::extract::Request;
use axum::http::header;

/// Names every server answers to, with any port.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// One name allowed by `--allow-host`: with any port, or only with one.
#[derive(Debug, PartialEq, Eq)]
struct Allowed {
    name: String,
    port: Option<u16>,
}

/// The allowed hosts: loopback ones always, plus those given by `--allow-host`.
#[derive(Debug)]
pub(crate) struct Hosts {
    extra: Vec<Allowed>,
}

impl Hosts {
    pub(crate) fn new(extra: &[String]) -> Result<Hosts, String> {
        let extra = extra
            .iter()
            .map(|host| {
                let (name, port) =
                    split(host).ok_or_else(|| format!("--allow-host {}", not_a_host(host)))?;
                Ok(Allowed {
                    name: name.to_ascii_lowercase(),
                    port,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Hosts { extra })
    }

    /// Whether a request addressed to `host` (a `Host` value: name, optional port)
    /// may be served.
    pub(crate) fn allows(&self, host: &str) -> bool {
        let Some((name, port)) = split(host) else {
            return false;
        };
        LOOPBACK.iter().any(|l| l.eq_ignore_ascii_case(name))
            || self
                .extra
                .iter()
                .any(|a| a.name.eq_ignore_ascii_case(name) && (a.port.is_none() || a.port == port))
    }
}

/// Checks a `--allow-host` value: a host name, an IPv4 address or a bracketed IPv6
/// address, optionally with `:port`; no scheme, path or user.
pub fn parse_allow_host(value: &str) -> Result<String, String> {
    match split(value) {
        Some(_) => Ok(value.to_string()),
        None => Err(not_a_host(value)),
    }
}

fn not_a_host(value: &str) -> String {
    format!(
        "`{value}` is not a host: give a name or an address, optionally with a port (forum.example, forum.example:7878, 192.0.2.7, [2001:db8::7])"
    )
}

/// A `Host` value as (name, port). `None` for anything that is not `name[:port]`
/// with a name of letters, digits, `-`, `.` and `_`, or `[v6][:port]`.
fn split(host: &str) -> Option<(&str, Option<u16>)> {
    let host = host.trim();
    let (name, port) = if host.starts_with('[') {
        let end = host.find(']')?;
        let (name, rest) = host.split_at(end + 1);
        let inner = &name[1..name.len() - 1];
        if inner.is_empty()
            || !inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        (name, rest)
    } else {
        let end = host.find(':').unwrap_or(host.len());
        let (name, rest) = host.split_at(end);
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        {
            return None;
        }
        (name, rest)
    };
    let port = match port {
        "" => None,
        rest => {
            let digits = rest.strip_prefix(':')?;
            if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    Some((name, port))
}

/// Why `request` is addressed to a host this server does not answer to, if it is.
/// An absolute request target names a host as well as `Host` does; both must pass.
pub(crate) fn refusal(hosts: &Hosts, request: &Request) -> Option<String> {
    let mut values = request.headers().get_all(header::HOST).iter();
    let host = match (values.next(), values.next()) {
        (Some(_), Some(_)) => return Some("the request has more than one Host header".into()),
        (Some(value), None) => match value.to_str() {
            Ok(text) => Some(text),
            Err(_) => return Some("the Host header is not valid text".into()),
        },
        (None, _) => None,
    };
    let authority = request.uri().authority().map(|a| a.as_str());
    if host.is_none() && authority.is_none() {
        return Some("the request has no Host header".into());
    }
    let refused = host
        .into_iter()
        .chain(authority)
        .find(|name| !hosts.allows(name))?;
    Some(format!(
        "host {refused} is not allowed (loopback names are; start the server with --allow-host to admit another)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_pass_and_others_do_not() {
        let hosts = Hosts::new(&[
            "Forum.Example".into(),
            "pinned.example:9000".into(),
            "[fd00::7]".into(),
        ])
        .unwrap();
        for ok in [
            "localhost",
            "localhost:7878",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:65535",
            "[::1]",
            "[::1]:8080",
            "forum.example",
            "forum.example:443",
            "pinned.example:9000",
            "[FD00::7]:80",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "localhost:abc",
            "localhost:",
            "localhost:99999",
            "localhost:7878:1",
            "[::1]x",
            "::1",
            "user@localhost",
            "pinned.example",
            "pinned.example:9001",
            "sub.forum.example",
            "127.0.0.2",
        ] {
            assert!(!hosts.allows(bad), "{bad}");
        }
    }

    #[test]
    fn allow_host_must_be_a_host() {
        for ok in [
            "forum.example",
            "forum.example:7878",
            "192.0.2.7",
            "[2001:db8::7]:80",
            "my_box",
        ] {
            assert!(parse_allow_host(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "http://forum.example",
            "forum.example/",
            "a b",
            "forum.example:port",
            "user@forum.example",
            "[]",
            "[::1",
        ] {
            assert!(parse_allow_host(bad).is_err(), "{bad}");
            assert!(Hosts::new(&[bad.into()]).is_err(), "{bad}");
        }
    }
}

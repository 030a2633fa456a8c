//! The web view's session store: signed-in sessions and failed sign-ins, in memory.
//!
//! A person signs in with a token once; the browser then holds only a random
//! session id in the `parley_session` cookie (`HttpOnly; SameSite=Strict; Path=/`,
//! plus `Secure` behind TLS). The store maps that id to the token, the session's
//! CSRF token and its times. A session ends after `idle` without a request, and
//! `max` after it was opened, whichever comes first; a server restart ends them
//! all. It is part of the server's shared state ([`crate::http::App`]), apart from
//! the web view's routes (`crate::web`), so that the request log can name a
//! session's caller without depending on the web view.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue};
use parley_forum::Error;

/// Sessions held at once. Expired sessions are purged at every sign-in; past the
/// bound, the one idle longest is dropped: a flood of sign-ins cannot grow the store
/// without bound.
const MAX_SESSIONS: usize = 10_000;
/// A failed sign-in is answered after a delay that doubles with each failure of
/// its peer, from [`FIRST_DELAY`] up to [`MAX_DELAY`]; a valid token is never
/// delayed or refused, so strangers sharing the person's address (behind a
/// reverse proxy, everyone does) slow only one another.
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(2);
/// A peer's count of failures starts over after this long without one.
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Failed sign-ins of one peer being delayed at once; more are answered 429 at
/// once, so that guessing in parallel gains nothing and holds no connections.
const MAX_DELAYED: u32 = 4;
/// Peers whose failures are remembered at once; past it, the failures of peers
/// not yet known are answered 429 until old ones age out.
const MAX_FAILING_PEERS: usize = 10_000;

/// A peer's recent failed sign-ins.
struct Failing {
    count: u32,
    last: Instant,
    /// Its failures being delayed now.
    delayed: u32,
}

/// The delay of a peer's `count`-th failure in a row.
fn delay_of(count: u32) -> Duration {
    FIRST_DELAY
        .saturating_mul(1 << count.saturating_sub(1).min(16))
        .min(MAX_DELAY)
}

/// A failed sign-in being delayed; its peer's place is given back when dropped
/// (the delay over, or the client gone).
pub(crate) struct Delayed<'s> {
    sessions: &'s Sessions,
    peer: IpAddr,
    /// How long to wait before answering.
    pub(crate) delay: Duration,
}

impl Drop for Delayed<'_> {
    fn drop(&mut self) {
        let mut failures = lock(&self.sessions.failures);
        if let Some(failing) = failures.get_mut(&self.peer) {
            failing.delayed = failing.delayed.saturating_sub(1);
        }
    }
}

/// The random part of a session id or a CSRF token: 256 bits.
const SECRET_BYTES: usize = 32;

/// One signed-in browser.
struct Session {
    token: String,
    csrf: String,
    opened: Instant,
    seen: Instant,
    flash: Option<Flash>,
}

/// The session store and the failed sign-in counts.
pub(crate) struct Sessions {
    /// At most this many sessions ([`MAX_SESSIONS`]; smaller in tests).
    cap: usize,
    idle: Duration,
    max: Duration,
    /// `--web-secure-cookie`: the server is reached through TLS.
    secure: bool,
    live: Mutex<HashMap<String, Session>>,
    failures: Mutex<HashMap<IpAddr, Failing>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the map whole: a panic elsewhere cannot tear it.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sessions {
    pub(crate) fn new(idle: Duration, max: Duration, secure: bool) -> Sessions {
        Sessions {
            cap: MAX_SESSIONS,
            idle,
            max,
            secure,
            live: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The absolute lifetime of a session, also the cookie's `Max-Age`.
    pub(crate) fn max_age(&self) -> Duration {
        self.max
    }

    fn expired(&self, session: &Session, now: Instant) -> bool {
        now.duration_since(session.seen) >= self.idle
            || now.duration_since(session.opened) >= self.max
    }

    /// Opens a session for `token`; returns its id and CSRF token.
    pub(crate) fn open(&self, token: String) -> Result<(String, String), Error> {
        let (id, csrf) = (secret()?, secret()?);
        let now = Instant::now();
        let mut live = lock(&self.live);
        // Sign-ins are rare next to page loads: each one sweeps the expired out.
        live.retain(|_, s| !self.expired(s, now));
        if live.len() >= self.cap {
            let oldest = live
                .iter()
                .min_by_key(|(_, s)| s.seen)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                live.remove(&oldest);
            }
        }
        live.insert(
            id.clone(),
            Session {
                token,
                csrf: csrf.clone(),
                opened: now,
                seen: now,
                flash: None,
            },
        );
        Ok((id, csrf))
    }

    /// The token and CSRF token of a live session, marking it seen; an expired one
    /// is deleted and `None`.
    pub(crate) fn enter(&self, id: &str) -> Option<(String, String)> {
        let now = Instant::now();
        let mut live = lock(&self.live);
        let session = live.get_mut(id)?;
        if self.expired(session, now) {
            live.remove(id);
            return None;
        }
        session.seen = now;
        Some((session.token.clone(), session.csrf.clone()))
    }

    /// The token of a live session, without marking it seen: the request log names
    /// who made a request, and looking must not keep a session alive.
    pub(crate) fn token_of(&self, id: &str) -> Option<String> {
        let live = lock(&self.live);
        let session = live.get(id)?;
        (!self.expired(session, Instant::now())).then(|| session.token.clone())
    }

    pub(crate) fn take_flash(&self, id: &str) -> Option<Flash> {
        lock(&self.live).get_mut(id)?.flash.take()
    }

    /// Keeps `flash` for the session's next page.
    pub(crate) fn set_flash(&self, id: &str, flash: Flash) {
        if let Some(session) = lock(&self.live).get_mut(id) {
            session.flash = Some(flash);
        }
    }

    /// Ends a session.
    pub(crate) fn close(&self, id: &str) {
        lock(&self.live).remove(id);
    }

    /// Sessions held now (expired ones included until they are purged).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.live).len()
    }

    /// Counts a failed sign-in of `peer`: the delay before it is answered, or
    /// `Err` with a `Retry-After` when the peer has too many failures being
    /// delayed already (or too many peers are failing). `Ok(None)` for a request
    /// whose peer is unknown.
    pub(crate) fn sign_in_failed(
        &self,
        peer: Option<IpAddr>,
    ) -> Result<Option<Delayed<'_>>, Duration> {
        let Some(peer) = peer else { return Ok(None) };
        let now = Instant::now();
        let mut failures = lock(&self.failures);
        if failures.len() >= MAX_FAILING_PEERS && !failures.contains_key(&peer) {
            failures.retain(|_, f| f.delayed > 0 || now.duration_since(f.last) < FAILURE_WINDOW);
            if failures.len() >= MAX_FAILING_PEERS {
                return Err(MAX_DELAY);
            }
        }
        let failing = failures.entry(peer).or_insert(Failing {
            count: 0,
            last: now,
            delayed: 0,
        });
        if now.duration_since(failing.last) >= FAILURE_WINDOW {
            failing.count = 0;
        }
        failing.count = failing.count.saturating_add(1);
        failing.last = now;
        let delay = delay_of(failing.count);
        if failing.delayed >= MAX_DELAYED {
            return Err(delay);
        }
        failing.delayed += 1;
        Ok(Some(Delayed {
            sessions: self,
            peer,
            delay,
        }))
    }

    /// Whether the browser reaches this server through TLS: the flag says so, or a
    /// proxy on this machine forwards an https request. `X-Forwarded-Proto` from any
    /// other peer is not believed (anyone can send it).
    pub(crate) fn is_secure(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> bool {
        self.secure
            || (peer.is_some_and(|p| p.ip().is_loopback())
                && headers
                    .get("x-forwarded-proto")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("https")))
    }

    /// The `Set-Cookie` value of a cookie of this view (`Max-Age=0` deletes it).
    pub(crate) fn cookie(
        &self,
        name: &str,
        value: &str,
        max_age: Duration,
        secure: bool,
    ) -> HeaderValue {
        let secure = if secure { "; Secure" } else { "" };
        let text = format!(
            "{name}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}",
            max_age.as_secs()
        );
        // Names and values are ours: ASCII letters, digits and `_`.
        HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

/// 256 random bits from the OS, as 64 lowercase hex digits.
pub(crate) fn secret() -> Result<String, Error> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| Error::storage(format!("OS random source: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `text` has the shape of [`secret`]'s output; anything else in a cookie is
/// ignored before it reaches a lookup.
pub(crate) fn is_secret(text: &str) -> bool {
    text.len() == 2 * SECRET_BYTES && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The value of cookie `name` in the request, if it has the shape of a secret.
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, v)| *k == name && is_secret(v.trim()))
        .map(|(_, v)| v.trim().to_string())
}

/// The peer's address, as the connection layer recorded it.
pub(crate) fn peer(parts: &Parts) -> Option<SocketAddr> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| *addr)
}

/// The session cookie.
pub(crate) const SESSION_COOKIE: &str = "parley_session";

/// A form that the engine (or the view) refused, kept in the session for the next
/// page, which shows the refusal inside that form with what the person typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Flash {
    /// The form's `action` (`confirm`, `note`, …; `ask` for a new thread).
    pub(crate) action: String,
    /// The thread acted on; `None` for a new thread.
    pub(crate) thread: Option<String>,
    pub(crate) reason: String,
    pub(crate) message: String,
    /// The typed body (empty when none was typed).
    pub(crate) body: String,
    /// The chosen state of a `mark`.
    pub(crate) state: Option<String>,
    /// The message replied to, when the form carried one.
    pub(crate) parent: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_256_bit_hex_and_differ() {
        let (a, b) = (secret().unwrap(), secret().unwrap());
        assert!(is_secret(&a) && is_secret(&b));
        assert_ne!(a, b);
        assert!(!is_secret("abc"));
        assert!(!is_secret(&a.to_uppercase()));
    }

    #[test]
    fn cookies_are_found_by_name_and_shape() {
        let id = secret().unwrap();
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("other=1; parley_session=short"),
        );
        headers.append(
            header::COOKIE,
            HeaderValue::from_str(&format!("x=y; parley_session={id}")).unwrap(),
        );
        assert_eq!(cookie(&headers, "parley_session"), Some(id));
        assert_eq!(cookie(&headers, "parley_csrf"), None);
    }

    #[test]
    fn sessions_expire_when_idle_and_at_their_maximum() {
        let idle = Sessions::new(Duration::from_millis(30), Duration::from_secs(60), false);
        let (id, _) = idle.open("pt_x".into()).unwrap();
        assert!(idle.enter(&id).is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert!(idle.enter(&id).is_none());
        assert_eq!(idle.len(), 0, "an expired session is deleted");

        let max = Sessions::new(Duration::from_secs(60), Duration::from_millis(60), false);
        let (id, _) = max.open("pt_x".into()).unwrap();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(15));
            assert!(max.enter(&id).is_some());
        }
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            max.enter(&id).is_none(),
            "being busy does not extend the maximum"
        );
    }

    #[test]
    fn the_store_is_bounded_and_drops_the_longest_idle() {
        let s = Sessions {
            cap: 50,
            ..Sessions::new(Duration::from_secs(60), Duration::from_secs(60), false)
        };
        let (first, _) = s.open("pt_first".into()).unwrap();
        let (second, _) = s.open("pt_second".into()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert!(
            s.enter(&first).is_some(),
            "first is now the more recently seen"
        );
        for n in 2..50 {
            s.open(format!("pt_{n}")).unwrap();
        }
        assert_eq!(s.len(), 50);
        s.open("pt_one_more".into()).unwrap();
        assert_eq!(s.len(), 50);
        assert!(s.enter(&second).is_none(), "the longest idle went");
        assert!(s.enter(&first).is_some());
    }

    #[test]
    fn expired_sessions_are_purged_at_sign_in() {
        let s = Sessions::new(Duration::from_millis(20), Duration::from_secs(60), false);
        s.open("pt_a".into()).unwrap();
        s.open("pt_b".into()).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        s.open("pt_c".into()).unwrap();
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn a_flash_is_taken_once() {
        let s = Sessions::new(Duration::from_secs(60), Duration::from_secs(60), false);
        let (id, _) = s.open("pt_x".into()).unwrap();
        s.set_flash(
            &id,
            Flash {
                action: "note".into(),
                thread: Some("th_1".into()),
                reason: "invalid_body".into(),
                message: "empty".into(),
                body: String::new(),
                state: None,
                parent: None,
            },
        );
        assert_eq!(s.take_flash(&id).unwrap().action, "note");
        assert!(s.take_flash(&id).is_none());
    }

    #[test]
    fn failed_sign_ins_are_delayed_more_each_time_and_few_at_once() {
        assert_eq!(delay_of(1), FIRST_DELAY);
        assert_eq!(delay_of(2), FIRST_DELAY * 2);
        assert_eq!(delay_of(5), FIRST_DELAY * 16);
        assert_eq!(delay_of(6), MAX_DELAY);
        assert_eq!(delay_of(u32::MAX), MAX_DELAY);
        let s = Sessions::new(Duration::from_secs(60), Duration::from_secs(60), false);
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let first = s.sign_in_failed(Some(a)).unwrap().unwrap();
        assert_eq!(first.delay, FIRST_DELAY);
        drop(first);
        let held: Vec<_> = (0..MAX_DELAYED)
            .map(|n| {
                let d = s.sign_in_failed(Some(a)).unwrap().unwrap();
                assert_eq!(d.delay, delay_of(n + 2));
                d
            })
            .collect();
        assert!(s.sign_in_failed(Some(a)).is_err(), "too many at once");
        assert_eq!(
            s.sign_in_failed(Some(b)).unwrap().unwrap().delay,
            FIRST_DELAY,
            "other peers are not slowed"
        );
        drop(held);
        assert!(
            s.sign_in_failed(Some(a)).unwrap().is_some(),
            "places given back"
        );
        assert!(s.sign_in_failed(None).unwrap().is_none());
    }

    #[test]
    fn forwarded_https_is_believed_from_loopback_only() {
        let s = Sessions::new(Duration::from_secs(1), Duration::from_secs(1), false);
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let far: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        assert!(s.is_secure(&headers, Some(local)));
        assert!(!s.is_secure(&headers, Some(far)));
        assert!(!s.is_secure(&HeaderMap::new(), Some(local)));
        let flagged = Sessions::new(Duration::from_secs(1), Duration::from_secs(1), true);
        assert!(flagged.is_secure(&HeaderMap::new(), Some(far)));
    }
}

//! Accepting and holding connections: a cap on how many are served at once, and
//! two timeouts that close the ones that hold a place without using it.
//!
//! - The **header timeout** runs from a request's first byte (for a new connection,
//!   from its acceptance) until its headers are complete. A client that connects and
//!   says nothing, or sends its head a byte at a time, is closed when it runs out.
//! - The **idle timeout** runs from the end of a response until the next request's
//!   first byte: it closes kept-alive connections nobody uses, and also bounds how
//!   long a response may take to be read.
//! - The **body timeout** runs from the moment a handler starts reading a request's
//!   body until the body's end: a client that declares a body and sends it slowly,
//!   or not at all, is closed when it runs out. A handler that never reads the body
//!   (a refusal) starts no such clock.
//! - Nothing else runs while a request is being served: the engine answers in its
//!   own time (shutdown's grace period bounds it). A waiting read is being served
//!   for as long as it waits, so no timeout here cuts it, whatever its `wait_ms`. A
//!   response marked [`Streaming`] (an event stream) is being served until its body
//!   ends: the stream itself drops a client that stops reading.
//!
//! hyper's own `header_read_timeout` starts as soon as a connection is ready for its
//! next request, so on a kept-alive connection it is an idle timeout as well, and the
//! two could not differ. Each connection therefore carries its own watchdog: the
//! socket notes a request's first byte, the service notes when a request is handed
//! over and when its answer is ready, and the task serving the connection closes
//! it when the deadline of the phase it is in has passed.
//!
//! When the cap is full, a new connection waits a moment ([`stalls`]) for a place:
//! one given back, or one taken from the connection that has waited on its client
//! longest (a head or a body that does not finish arriving, or a kept-alive
//! connection between requests). Such clients, however many, thus never keep a
//! prompt one out for longer than that moment.
//! Otherwise it is answered with a `503` carrying a JSON body (reason
//! `too_many_connections`) and `Retry-After`, then closed. What the client sends meanwhile is read and discarded
//! for a moment first, so that the close does not reset the connection before the
//! client has read its answer.
//!
//! [`stalls`]: super::stalls

use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

pub(super) use cycle::Cycle;
use cycle::{Tracked, Watched};

mod cycle;
mod stalls;

use stalls::Held;

/// How long a refused connection is read from before it is closed, and how much of
/// it is read at most.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 64 * 1024;
/// Refused connections lingering at once; past this many, a refusal is written if
/// the socket takes it at once, and the connection closed.
const LINGERING_MAX: usize = 64;
/// What `Retry-After` says to a refused client, in seconds.
const RETRY_AFTER_S: u64 = 1;

/// Marks a response whose body is a long-lived stream: the connection counts as
/// serving until the body ends, not idle once the head is sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streaming;

/// The limits a connection is held to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest a request's head may take to arrive, from its first byte (or
    /// from the connection's acceptance).
    pub header_timeout: Duration,
    /// The longest a kept-alive connection waits for its next request.
    pub idle_timeout: Duration,
    /// The longest a request's body may take to arrive once its reading began.
    pub body_timeout: Duration,
    /// Connections served at once; one more is answered 503 and closed.
    pub max_connections: usize,
}

/// Descriptors kept for everything but client connections: the forum file, the
/// listener, the standard streams, and refusals past the cap while they linger.
const DESCRIPTORS_KEPT: u64 = 64 + LINGERING_MAX as u64;

/// The connection cap that fits this process's open-file limit: `max`, or less
/// with a warning when the limit (`ulimit -n`) cannot hold `max` sockets. Past the
/// limit `accept` would fail for everyone, where the cap answers one client 503.
pub fn fit_to_descriptors(max: usize) -> (usize, Option<String>) {
    let Some(limit) = open_file_limit() else {
        return (max, None);
    };
    let room = limit.saturating_sub(DESCRIPTORS_KEPT).max(1);
    if max as u64 <= room {
        return (max, None);
    }
    let fitted = room as usize;
    let warning = format!(
        "parley: warning: serving at most {fitted} connections, not {max}: the open-file limit is {limit} (raise it with `ulimit -n`)"
    );
    (fitted, Some(warning))
}

/// The soft limit on open files, from `/proc/self/limits` (Linux); `None` when
/// unknown or unlimited.
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Accepts connections until `stop` turns true, serves each with `router` under
/// `limits`, and then waits until every connection it accepted has ended. Idle
/// connections end at once on `stop`; requests in flight are finished first.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let held = Arc::new(Held::default());
    let lingering = Arc::new(Semaphore::new(LINGERING_MAX));
    let refusal: Arc<[u8]> = refusal_response(limits.max_connections).into();
    let mut builder = http1::Builder::new();
    // The watchdog below keeps the time; hyper's timer would double as an idle
    // timeout (see the module docs).
    builder.header_read_timeout(None);
    let mut stopping = stop.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopping.wait_for(|stop| *stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                accept_failed(err).await;
                continue;
            }
        };
        let start = Start {
            router: router.clone(),
            builder: builder.clone(),
            limits,
            stop: stop.clone(),
            held: Arc::clone(&held),
        };
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => start.spawn(stream, peer, slot),
            Err(_) => {
                // Full: wait a moment for a place (see `stalls`), holding one of the
                // lingering places, so that waiting connections are bounded too.
                let Ok(linger) = Arc::clone(&lingering).try_acquire_owned() else {
                    refuse_now(&stream, &refusal);
                    continue;
                };
                let (slots, refusal) = (Arc::clone(&slots), Arc::clone(&refusal));
                tokio::spawn(async move {
                    match start.held.place_for(&slots).await {
                        Some(slot) => {
                            drop(linger);
                            start.spawn(stream, peer, slot);
                        }
                        None => refuse(stream, refusal, linger).await,
                    }
                });
            }
        }
    }
    drop(listener);
    // Every slot back means every accepted connection has ended.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// What a connection needs to be served.
struct Start {
    router: Router,
    builder: http1::Builder,
    limits: Limits,
    stop: watch::Receiver<bool>,
    held: Arc<Held>,
}

impl Start {
    /// Serves `stream` in a task of its own, holding `slot` (which the registry of
    /// held connections keeps, so that a stalled connection's slot can be given to
    /// another) until it ends.
    fn spawn(self, stream: TcpStream, peer: SocketAddr, slot: OwnedSemaphorePermit) {
        let cycle = Arc::new(Cycle::new());
        let evicted = Arc::new(Notify::new());
        let id = self
            .held
            .insert(Arc::clone(&cycle), Arc::clone(&evicted), slot);
        tokio::spawn(async move {
            let Start {
                router,
                builder,
                limits,
                stop,
                held,
            } = self;
            let serving = Serving {
                router,
                builder,
                limits,
                stop,
                cycle,
                evicted,
            };
            connection(stream, peer, serving).await;
            held.remove(id);
        });
    }
}

/// A failed `accept`: a connection that went away before it was accepted is
/// nothing; anything else (out of file descriptors) is reported, and accepting
/// pauses for a second so the report is not a flood.
async fn accept_failed(err: io::Error) {
    if matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    eprintln!("parley: cannot accept a connection: {err}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// The 503 sent past the cap, whole, with its JSON body.
fn refusal_response(max: usize) -> Vec<u8> {
    let body = json!({ "error": {
        "reason": "too_many_connections",
        "status": 503,
        "message": format!("the server is serving its maximum of {max} connections; retry shortly"),
    } })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: {RETRY_AFTER_S}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers a connection past the cap with what the socket takes of the 503 at
/// once, and closes it: too many refused connections are lingering already.
fn refuse_now(stream: &TcpStream, refusal: &[u8]) {
    let _ = stream.try_write(refusal);
}

/// Answers a connection past the cap with the 503 and closes it, holding `permit`
/// (a lingering place) until done.
async fn refuse(mut stream: TcpStream, refusal: Arc<[u8]>, permit: OwnedSemaphorePermit) {
    let _ = tokio::time::timeout(LINGER, async {
        stream.write_all(&refusal).await?;
        stream.shutdown().await?;
        // Read what the client sent until it closes too, so that closing does not
        // turn unread bytes into a reset that could destroy the answer.
        let mut sink = [0u8; 4096];
        let mut read = 0;
        while read < LINGER_BYTES {
            match stream.read(&mut sink).await? {
                0 => break,
                n => read += n,
            }
        }
        io::Result::Ok(())
    })
    .await;
    drop(permit);
}

/// What serves one connection: the router and its limits, the server's stop, the
/// connection's request cycle, and the bell that evicts it.
struct Serving {
    router: Router,
    builder: http1::Builder,
    limits: Limits,
    stop: watch::Receiver<bool>,
    cycle: Arc<Cycle>,
    evicted: Arc<Notify>,
}

/// Serves one connection until it ends, times out, is evicted (its slot given to
/// another, see `stalls`), or (after `stop`) has finished its request in flight.
async fn connection(stream: TcpStream, peer: SocketAddr, serving: Serving) {
    let Serving {
        router,
        builder,
        limits,
        mut stop,
        cycle,
        evicted,
    } = serving;
    let io = TokioIo::new(Watched {
        stream,
        cycle: Arc::clone(&cycle),
    });
    let service = Tracked {
        inner: TowerToHyperService::new(router),
        cycle: Arc::clone(&cycle),
        peer,
    };
    let mut conn = pin!(builder.serve_connection(io, service));
    let mut stopped = pin!(async move {
        let _ = stop.wait_for(|stop| *stop).await;
    });
    let mut evicted = pin!(evicted.notified());
    let mut shutting_down = false;
    // The timer is armed at most as late as the current phase's deadline, and is
    // moved only when a phase brings a deadline earlier than the one armed: a
    // request followed by the next moves every deadline later, so a busy
    // connection leaves its timer alone, and the timer firing early only re-arms it.
    let mut armed_for = cycle.accepted + limits.header_timeout;
    let mut timer: Pin<&mut Sleep> = pin!(tokio::time::sleep_until(armed_for));
    poll_fn(|cx| loop {
        if conn.as_mut().poll(cx).is_ready() {
            // Ended (a failure of the connection, such as a client that went away
            // mid-request, is nobody's to hear).
            return Poll::Ready(());
        }
        if evicted.as_mut().poll(cx).is_ready() {
            // Its slot went to a new connection: dropping this one closes it.
            return Poll::Ready(());
        }
        if !shutting_down && stopped.as_mut().poll(cx).is_ready() {
            shutting_down = true;
            conn.as_mut().graceful_shutdown();
            continue;
        }
        let Some(deadline) = cycle.deadline(&limits) else {
            // Serving a request: no deadline.
            return Poll::Pending;
        };
        if deadline < armed_for {
            timer.as_mut().reset(deadline);
            armed_for = deadline;
        }
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        if deadline <= Instant::now() {
            // Dropping the connection closes it.
            return Poll::Ready(());
        }
        // Fired for an earlier phase: wait for this one's deadline.
        timer.as_mut().reset(deadline);
        armed_for = deadline;
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_fits_the_open_file_limit() {
        let limit = open_file_limit();
        let (small, warning) = fit_to_descriptors(8);
        if limit.is_none_or(|l| l >= 8 + DESCRIPTORS_KEPT) {
            assert_eq!((small, warning), (8, None));
        }
        if let Some(limit) = limit {
            let (fitted, warning) = fit_to_descriptors(usize::MAX / 2);
            assert_eq!(fitted as u64, limit.saturating_sub(DESCRIPTORS_KEPT).max(1));
            assert!(warning.unwrap().contains("ulimit -n"));
        }
    }

    #[test]
    fn the_refusal_is_a_whole_response_with_a_json_body() {
        let raw = String::from_utf8(refusal_response(8)).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(head.contains("retry-after: 1"));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["reason"], "too_many_connections");
        assert_eq!(body["error"]["status"], 503);
    }
}

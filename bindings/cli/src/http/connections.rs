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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use super::stalls::Held;

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
pub(crate) struct Limits {
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    /// The longest a request's body may take to arrive once its reading began.
    pub(crate) body_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// Descriptors kept for everything but client connections: the forum file, the
/// listener, the standard streams, and refusals past the cap while they linger.
const DESCRIPTORS_KEPT: u64 = 64 + LINGERING_MAX as u64;

/// The connection cap that fits this process's open-file limit: `max`, or less
/// with a warning when the limit (`ulimit -n`) cannot hold `max` sockets. Past the
/// limit `accept` would fail for everyone, where the cap answers one client 503.
pub(crate) fn fit_to_descriptors(max: usize) -> (usize, Option<String>) {
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

/// Where a connection is in its request cycle, and since when: the phase in the
/// top two bits, milliseconds since the connection's acceptance in the rest.
///
/// The socket, the service future and the watchdog are all polled by the task
/// serving the connection; the registry of held connections (`stalls`) reads the
/// phase from elsewhere, and a body may outlive its answer in another task: the
/// atomic makes the state shareable between them.
pub(super) struct Cycle {
    accepted: Instant,
    word: AtomicU64,
}

/// Waiting for the rest of a request's head.
const HEAD: u64 = 0;
/// A request handed to the service and not yet answered.
const BUSY: u64 = 1;
/// Between an answer and the next request's first byte.
const IDLE: u64 = 2;
/// A request whose handler is reading its body, which has not all arrived.
const BODY: u64 = 3;
const PHASE_SHIFT: u32 = 62;
const SINCE_MASK: u64 = (1 << PHASE_SHIFT) - 1;

impl Cycle {
    fn new() -> Cycle {
        // A new connection is waiting for its first head.
        Cycle {
            accepted: Instant::now(),
            word: AtomicU64::new(HEAD << PHASE_SHIFT),
        }
    }

    fn phase(&self) -> u64 {
        self.word.load(Ordering::Relaxed) >> PHASE_SHIFT
    }

    /// Since when the connection has been waiting on its client: to finish sending
    /// a request's head or a body being read, or (kept alive) to begin its next
    /// request; `None` while a request is served.
    pub(super) fn waiting_on_client_since(&self) -> Option<Instant> {
        let word = self.word.load(Ordering::Relaxed);
        let since = self.accepted + Duration::from_millis(word & SINCE_MASK);
        matches!(word >> PHASE_SHIFT, HEAD | BODY | IDLE).then_some(since)
    }

    /// Moves from `from` to `to` (now), if the connection is in `from`.
    fn shift(&self, from: u64, to: u64) {
        let since = self.accepted.elapsed().as_millis() as u64 & SINCE_MASK;
        let _ = self
            .word
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |word| {
                (word >> PHASE_SHIFT == from).then_some(to << PHASE_SHIFT | since)
            });
    }

    fn enter(&self, phase: u64) {
        let since = self.accepted.elapsed().as_millis() as u64 & SINCE_MASK;
        self.word
            .store(phase << PHASE_SHIFT | since, Ordering::Relaxed);
    }

    fn enter_busy(&self) {
        self.word.store(BUSY << PHASE_SHIFT, Ordering::Relaxed);
    }

    /// When the current phase runs out; `None` while a request is served.
    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        let word = self.word.load(Ordering::Relaxed);
        let since = self.accepted + Duration::from_millis(word & SINCE_MASK);
        match word >> PHASE_SHIFT {
            HEAD => Some(since + limits.header_timeout),
            IDLE => Some(since + limits.idle_timeout),
            BODY => Some(since + limits.body_timeout),
            _ => None,
        }
    }
}

/// The socket, noting the first byte of each request that follows an idle spell.
struct Watched {
    stream: TcpStream,
    cycle: Arc<Cycle>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before && self.cycle.phase() == IDLE {
            self.cycle.enter(HEAD);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The router as hyper's service, noting when each request is handed over (its
/// head is complete) and when its answer is ready.
struct Tracked {
    inner: TowerToHyperService<Router>,
    cycle: Arc<Cycle>,
    /// The client's address, handed to each request as `ConnectInfo` (the web view
    /// limits failed sign-ins per peer and trusts forwarded headers from loopback only).
    peer: SocketAddr,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Tracked {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = Answer;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Answer {
        self.cycle.enter_busy();
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let cycle = Some(Arc::clone(&self.cycle));
        let request = request.map(|inner| {
            Body::new(Inbound {
                inner,
                cycle,
                started: false,
            })
        });
        Answer {
            inner: Box::pin(self.inner.call(request)),
            cycle: Arc::clone(&self.cycle),
        }
    }
}

type RouterFuture = Pin<
    Box<dyn Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send>,
>;

/// A request being answered; once the answer is ready, the connection is idle.
struct Answer {
    inner: RouterFuture,
    cycle: Arc<Cycle>,
}

impl Future for Answer {
    type Output = Result<axum::response::Response, std::convert::Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = match self.inner.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(answer)) => answer,
            Poll::Ready(Err(never)) => match never {},
        };
        if answer.extensions().get::<Streaming>().is_none() {
            self.cycle.enter(IDLE);
            return Poll::Ready(Ok(answer));
        }
        let cycle = Some(Arc::clone(&self.cycle));
        Poll::Ready(Ok(
            answer.map(|inner| Body::new(StreamBody { inner, cycle }))
        ))
    }
}

/// A request's body: the body timeout runs from its first read until its end (or
/// until the handler drops it).
struct Inbound {
    inner: Incoming,
    /// Taken at the end of the body.
    cycle: Option<Arc<Cycle>>,
    started: bool,
}

impl Inbound {
    fn ended(&mut self) {
        if let Some(cycle) = self.cycle.take() {
            // Only a body still being read gives way to serving: once its answer
            // is out, the connection is idle whatever becomes of the body.
            cycle.shift(BODY, BUSY);
        }
    }
}

impl HttpBody for Inbound {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        if !self.started {
            self.started = true;
            if let Some(cycle) = &self.cycle {
                if !self.inner.is_end_stream() {
                    cycle.shift(BUSY, BODY);
                }
            }
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) || self.inner.is_end_stream() {
            self.ended();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Inbound {
    fn drop(&mut self) {
        self.ended();
    }
}

/// The body of a [`Streaming`] response: the connection turns idle when it ends.
struct StreamBody {
    inner: Body,
    cycle: Option<Arc<Cycle>>,
}

impl StreamBody {
    fn ended(&mut self) {
        if let Some(cycle) = self.cycle.take() {
            cycle.enter(IDLE);
        }
    }
}

impl HttpBody for StreamBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            self.ended();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        self.ended();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        header_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
        body_timeout: Duration::from_secs(5),
        max_connections: 8,
    };

    #[test]
    fn each_phase_has_its_own_deadline() {
        let cycle = Cycle::new();
        assert_eq!(
            cycle.deadline(&LIMITS),
            Some(cycle.accepted + LIMITS.header_timeout),
            "a new connection waits for its head"
        );
        cycle.enter_busy();
        assert_eq!(cycle.deadline(&LIMITS), None, "no deadline while serving");
        cycle.enter(IDLE);
        let idle = cycle.deadline(&LIMITS).unwrap();
        assert!(idle >= cycle.accepted + LIMITS.idle_timeout);
        assert!(idle <= Instant::now() + LIMITS.idle_timeout);
        cycle.enter(HEAD);
        assert_eq!(cycle.phase(), HEAD);
        assert!(cycle.deadline(&LIMITS).unwrap() <= Instant::now() + LIMITS.header_timeout);
        assert!(
            cycle.waiting_on_client_since().is_some(),
            "a head not all there is a stall"
        );
        cycle.enter_busy();
        assert!(cycle.waiting_on_client_since().is_none());
        cycle.shift(BUSY, BODY);
        assert_eq!(cycle.phase(), BODY);
        assert!(cycle.deadline(&LIMITS).unwrap() <= Instant::now() + LIMITS.body_timeout);
        assert!(cycle.waiting_on_client_since().is_some());
        cycle.shift(BODY, BUSY);
        assert_eq!(cycle.deadline(&LIMITS), None, "the body is in");
        cycle.enter(IDLE);
        cycle.shift(BODY, BUSY);
        assert_eq!(
            cycle.phase(),
            IDLE,
            "a body ending after its answer changes nothing"
        );
    }

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

//! A connection's request cycle: the phase it is in and since when (`Cycle`), and
//! the wrappers of its socket, service and bodies that move it from phase to phase.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::{Frame, Incoming};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::{Limits, Streaming};

/// Where a connection is in its request cycle, and since when: the phase in the
/// top two bits, milliseconds since the connection's acceptance in the rest.
///
/// The socket, the service future and the watchdog are all polled by the task
/// serving the connection; the registry of held connections (`stalls`) reads the
/// phase from elsewhere, and a body may outlive its answer in another task: the
/// atomic makes the state shareable between them.
pub(in crate::http) struct Cycle {
    pub(super) accepted: Instant,
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
    pub(super) fn new() -> Cycle {
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
    pub(in crate::http) fn waiting_on_client_since(&self) -> Option<Instant> {
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
    pub(super) fn deadline(&self, limits: &Limits) -> Option<Instant> {
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
pub(super) struct Watched {
    pub(super) stream: TcpStream,
    pub(super) cycle: Arc<Cycle>,
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
pub(super) struct Tracked {
    pub(super) inner: TowerToHyperService<Router>,
    pub(super) cycle: Arc<Cycle>,
    /// The client's address, handed to each request as `ConnectInfo` (the web view
    /// limits failed sign-ins per peer and trusts forwarded headers from loopback only).
    pub(super) peer: SocketAddr,
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
pub(super) struct Answer {
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
}

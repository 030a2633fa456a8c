//! The server side of the admin channel: the socket (`socket`), the accept loop,
//! and one thread per admin connection.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use parley_forum::{Error, Forum, TokenSpec};
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use serde_json::{json, Value};

use super::{failure, reply, socket_path, Kind, MAX_LINE};
use socket::{bind_privately, clear_the_way, own_uid, remove_if_ours};

mod socket;

/// How many connections the channel serves, and for how long.
#[derive(Clone, Copy)]
struct Limits {
    /// Admin connections served at once; one more is answered `busy` and closed.
    max_connections: usize,
    /// A connection that sends nothing this long (between requests or within one)
    /// is closed, so that a stalled client does not hold a slot.
    idle: Duration,
}

/// The channel is for a person's commands and scripts, not for load.
const LIMITS: Limits = Limits {
    max_connections: 16,
    idle: Duration::from_secs(30),
};
/// How long a reply may wait for a client that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the channel's requests go: the forum itself ([`Direct`]), whose group
/// commit joins the channel's posts to those of REST and MCP.
pub trait Backend: Send + Sync + 'static {
    /// The forum the channel's reads and token commands go to.
    fn forum(&self) -> &Forum;
    /// Posts an envelope the way the server posts its own requests.
    fn post(&self, token: Option<&str>, envelope: &Value) -> Result<Value, Error>;
}

/// The forum itself, served over HTTP or stdio: the engine's own group commit
/// joins concurrent posts, whichever way they came.
pub struct Direct(pub Arc<Forum>);

impl Backend for Direct {
    fn forum(&self) -> &Forum {
        &self.0
    }

    fn post(&self, token: Option<&str>, envelope: &Value) -> Result<Value, Error> {
        self.0.call(token, "post", envelope)
    }
}

/// How a connection's peer uid is learned; a parameter so that a test can play a
/// peer of another user (the tests may run as root, where no such peer can be made).
type PeerUid = fn(&UnixStream) -> io::Result<u32>;

fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    super::peer_uid(stream)
}

/// The running channel. Dropping it stops it: no new connection is accepted, open
/// ones are closed once their current request is answered, and the socket is
/// removed if it is still the one this server made.
pub struct Channel {
    path: PathBuf,
    /// Device and inode of the socket this server linked into place.
    made: (u64, u64),
    shared: Arc<Shared>,
    wake: UnixStream,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    stopping: AtomicBool,
    next_id: AtomicU64,
    /// A handle of every open connection, to close it at shutdown.
    open: Mutex<HashMap<u64, UnixStream>>,
    /// Signalled whenever a connection's thread has let go of the backend.
    ended: Condvar,
}

impl Shared {
    fn open(&self) -> MutexGuard<'_, HashMap<u64, UnixStream>> {
        // The map is only inserted into and removed from: a panic leaves it whole.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why the channel did not start.
#[derive(Debug)]
enum StartError {
    /// The server must not start: something not ours, or a live server, holds the path.
    Refuse(String),
    /// The channel cannot be offered (e.g. a path too long for a socket); the server
    /// may serve without it.
    Unavailable(String),
}

impl Channel {
    /// Starts the channel of the forum file `db`. A path held by something this
    /// server must not replace is an error (the server does not start); a channel
    /// that cannot be offered for another reason is a warning, and `None`.
    pub fn start(db: &Path, backend: Arc<dyn Backend>) -> Result<Option<Channel>, crate::Error> {
        if super::is_shared(db) {
            return Ok(None);
        }
        match Channel::start_with(db, backend, peer_uid, LIMITS) {
            Ok(channel) => {
                eprintln!(
                    "parley: admin channel on {} (token and forum commands reach this server through it)",
                    channel.path.display()
                );
                Ok(Some(channel))
            }
            Err(StartError::Refuse(message)) => Err(crate::Error::new(message)),
            Err(StartError::Unavailable(message)) => {
                eprintln!("parley: warning: no admin channel: {message}");
                Ok(None)
            }
        }
    }

    /// Checks what is at the channel's path before the forum file is opened (or
    /// made), so that a server that would be refused there leaves no new forum file
    /// behind. A stale socket of ours is removed here; `start` checks again.
    pub fn preflight(db: &Path) -> Result<(), crate::Error> {
        if super::is_shared(db) {
            return Ok(());
        }
        // A live server answers: opening the file reports that it is held, and by whom.
        if let Ok(Some(_)) = super::Client::connect(db) {
            return Ok(());
        }
        match clear_the_way(&socket_path(db), own_uid()) {
            Err(StartError::Refuse(message)) => Err(crate::Error::new(message)),
            Ok(()) | Err(StartError::Unavailable(_)) => Ok(()),
        }
    }

    fn start_with(
        db: &Path,
        backend: Arc<dyn Backend>,
        peer: PeerUid,
        limits: Limits,
    ) -> Result<Channel, StartError> {
        let path = socket_path(db);
        clear_the_way(&path, own_uid())?;
        let (listener, made) = bind_privately(&path)?;
        let unavailable =
            |e: io::Error| StartError::Unavailable(format!("{}: {e}", path.display()));
        // From here on, a failure takes back the socket just linked.
        let ready =
            UnixStream::pair().and_then(|pair| listener.set_nonblocking(true).map(|()| pair));
        let (wake, woken) = match ready {
            Ok(pair) => pair,
            Err(e) => {
                remove_if_ours(&path, made);
                return Err(unavailable(e));
            }
        };
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            ended: Condvar::new(),
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("parley-admin".into())
            .spawn(move || accept_loop(&listener, &woken, &accepting, &backend, peer, limits));
        let accept = match accept {
            Ok(handle) => handle,
            Err(e) => {
                remove_if_ours(&path, made);
                return Err(unavailable(e));
            }
        };
        Ok(Channel {
            path,
            made,
            shared,
            wake,
            accept: Some(accept),
        })
    }

    /// Stops accepting, closes every connection (a request being handled is
    /// answered first), waits until no connection holds the backend, and removes
    /// the socket if it is still ours.
    pub fn stop(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        let _ = self.wake.write_all(b"x");
        let _ = accept.join();
        let mut open = self.shared.open();
        for stream in open.values() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        while !open.is_empty() {
            open = self
                .shared
                .ended
                .wait(open)
                .unwrap_or_else(|p| p.into_inner());
        }
        drop(open);
        remove_if_ours(&self.path, self.made);
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(
    listener: &UnixListener,
    woken: &UnixStream,
    shared: &Arc<Shared>,
    backend: &Arc<dyn Backend>,
    peer: PeerUid,
    limits: Limits,
) {
    let own = own_uid();
    loop {
        let mut fds = [
            PollFd::new(listener, PollFlags::IN),
            PollFd::new(woken, PollFlags::IN),
        ];
        // The wake-up ends the wait at once; the bound only guards the stop flag
        // against a wake-up that never came.
        let bound = Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        if let Err(e) = poll(&mut fds, Some(&bound)) {
            if e != rustix::io::Errno::INTR {
                eprintln!("parley: admin channel: poll failed ({e}); it stops");
                return;
            }
        }
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        match listener.accept() {
            Ok((stream, _)) => admit(stream, shared, backend, peer, own, limits),
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                // Out of descriptors, most likely: wait for some to be freed.
                eprintln!("parley: admin channel: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Checks the peer and the connection cap, then serves the connection on a thread
/// of its own.
fn admit(
    stream: UnixStream,
    shared: &Arc<Shared>,
    backend: &Arc<dyn Backend>,
    peer: PeerUid,
    own: u32,
    limits: Limits,
) {
    // The accepted socket does not inherit the listener's non-blocking mode on
    // every platform; the connection's reads block with a timeout.
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    match peer(&stream) {
        Ok(uid) if uid == own => {}
        Ok(uid) => {
            refuse(
                stream,
                Kind::PeerRefused,
                &format!("the admin channel serves uid {own} only, not uid {uid}"),
            );
            return;
        }
        Err(e) => {
            refuse(
                stream,
                Kind::PeerRefused,
                &format!("the peer's uid is unknown ({e})"),
            );
            return;
        }
    }
    let _ = stream.set_read_timeout(Some(limits.idle));
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    {
        let mut open = shared.open();
        if open.len() >= limits.max_connections {
            drop(open);
            refuse(
                stream,
                Kind::Busy,
                &format!(
                    "{} admin connections are open; try again",
                    limits.max_connections
                ),
            );
            return;
        }
        match stream.try_clone() {
            Ok(handle) => open.insert(id, handle),
            Err(e) => {
                drop(open);
                refuse(
                    stream,
                    Kind::Internal,
                    &format!("cannot serve the connection: {e}"),
                );
                return;
            }
        };
    }
    let (serving, backend) = (Arc::clone(shared), Arc::clone(backend));
    let spawned = std::thread::Builder::new()
        .name("parley-admin-conn".into())
        .spawn(move || {
            serve_connection(stream, &*backend);
            // The backend (and through it the forum) is let go of before the
            // connection counts as ended, so that shutdown can close the forum.
            drop(backend);
            serving.open().remove(&id);
            serving.ended.notify_all();
        });
    if spawned.is_err() {
        // The closure, with the stream, is gone; so is the connection.
        shared.open().remove(&id);
        shared.ended.notify_all();
    }
}

fn refuse(mut stream: UnixStream, kind: Kind, message: &str) {
    let _ = writeln!(stream, "{}", failure(kind, message));
}

/// One line of a request.
enum Line {
    Text(String),
    TooLong,
    NotUtf8,
}

/// Reads one line of at most `max` bytes (the newline aside); `None` at the end of
/// input. A longer line is not read further.
fn read_line(input: &mut impl BufRead, max: usize) -> io::Result<Option<Line>> {
    let mut buf = Vec::new();
    input.take(max as u64 + 1).read_until(b'\n', &mut buf)?;
    if buf.is_empty() {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > max {
        return Ok(Some(Line::TooLong));
    }
    Ok(Some(match String::from_utf8(buf) {
        Ok(text) => Line::Text(text),
        Err(_) => Line::NotUtf8,
    }))
}

fn serve_connection(stream: UnixStream, backend: &dyn Backend) {
    let Ok(reading) = stream.try_clone() else {
        return;
    };
    let mut input = BufReader::new(reading);
    let mut output = stream;
    // A read error is the idle timeout, the client gone, or shutdown closing the
    // connection: in each case the connection ends.
    while let Ok(Some(line)) = read_line(&mut input, MAX_LINE) {
        let (answer, close) = match line {
            Line::Text(text) if text.trim().is_empty() => continue,
            Line::Text(text) => {
                let handled = crate::panics::contained(|| handle(backend, &text));
                let answer = handled.unwrap_or_else(|_| {
                    failure(
                        Kind::Internal,
                        "handling the request failed inside the server",
                    )
                });
                (answer, false)
            }
            Line::TooLong => (
                failure(
                    Kind::LineTooLong,
                    &format!(
                        "a request line is at most {MAX_LINE} bytes; the connection is closed"
                    ),
                ),
                true,
            ),
            Line::NotUtf8 => (
                failure(Kind::NotUtf8, "the request line is not UTF-8"),
                false,
            ),
        };
        if writeln!(output, "{answer}").is_err() || close {
            return;
        }
    }
}

/// Answers one request line.
fn handle(backend: &dyn Backend, text: &str) -> Value {
    let bad = |message: &str| failure(Kind::BadRequest, message);
    let request: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return bad(&format!("the request is not JSON: {e}")),
    };
    let Some(request) = request.as_object() else {
        return bad("the request must be a JSON object");
    };
    let forum = backend.forum();
    match request.get("op").and_then(Value::as_str) {
        Some("token_create") => match request.get("spec") {
            Some(spec @ Value::Object(_)) => reply(
                TokenSpec::from_json(spec)
                    .and_then(|spec| forum.create_token(&spec))
                    .map(|token| json!({ "token": token })),
            ),
            _ => bad("token_create needs `spec`, a JSON object"),
        },
        Some("token_revoke") => match request.get("token").and_then(Value::as_str) {
            Some(token) => reply(
                forum
                    .revoke_token(token)
                    .map(|revoked| json!({ "revoked": revoked })),
            ),
            None => bad("token_revoke needs `token`, a string"),
        },
        Some("token_list") => reply(forum.identities().map(|identities| {
            let list: Vec<Value> = identities
                .into_iter()
                .map(|i| {
                    json!({
                        "identity": i.identity,
                        "kind": i.kind.as_str(),
                        "label": i.label,
                        "active_tokens": i.active_tokens,
                    })
                })
                .collect();
            json!({ "identities": list })
        })),
        Some("call") => {
            let token = match request.get("token") {
                None | Some(Value::Null) => None,
                Some(Value::String(token)) => Some(token.as_str()),
                Some(_) => return bad("`token` must be a string or null"),
            };
            let Some(operation) = request.get("operation").and_then(Value::as_str) else {
                return bad("call needs `operation`, a string");
            };
            let args = request.get("args").unwrap_or(&Value::Null);
            if operation == "post" {
                reply(backend.post(token, args))
            } else {
                reply(forum.call(token, operation, args))
            }
        }
        Some(other) => bad(&format!(
            "unknown op `{}`: token_create, token_revoke, token_list or call",
            other.chars().take(40).collect::<String>()
        )),
        None => {
            bad("the request needs `op`, a string: token_create, token_revoke, token_list or call")
        }
    }
}

#[cfg(test)]
mod tests;

//! Commit descriptors (`parley_forum_commit_fd`): file descriptors that become
//! readable after every durable commit, for hosts that wait in their own
//! `poll`/`epoll` loop.
//!
//! Each descriptor is the read end of a connected pair of Unix stream sockets,
//! both non-blocking. The handle keeps the write ends; one hook registered with
//! [`Forum::on_commit`] writes one byte to each after every durable commit and
//! once when the forum's waits are ended. A full socket buffer is fine: its
//! reader has a byte waiting anyway, so commits coalesce. The read end belongs to
//! the C host, which drains and closes it. When the handle is freed the write ends
//! are closed and every reader sees end-of-file.
//!
//! A C host does not ignore `SIGPIPE` the way a Rust `main` does, so a write must
//! never raise it, even after the host closed its end. On Linux and Android std
//! writes to a Unix socket with `send(…, MSG_NOSIGNAL)` (`test_listen.c` checks
//! that no signal comes), and a pair whose reader is gone (`EPIPE`) is dropped at
//! that commit. Elsewhere the library keeps its own copy of the read end, so the
//! socket always has a reader and no write can fail that way; such a pair lives
//! until the handle is freed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use parley_forum::{CommitHook, Forum};

/// The commit descriptors of one forum handle.
pub(crate) struct Bell {
    /// The write sides, one per descriptor handed out; shared with the hook.
    ringers: Arc<Mutex<Vec<Ringer>>>,
    /// The hook that rings them, registered with the first descriptor.
    hook: OnceLock<CommitHook>,
    /// Set once the forum's waits are ended: a descriptor made later starts
    /// readable, as every earlier one is.
    ended: AtomicBool,
}

fn lock(ringers: &Mutex<Vec<Ringer>>) -> MutexGuard<'_, Vec<Ringer>> {
    // A push and a retain are whole: a panic elsewhere leaves nothing half-done.
    ringers.lock().unwrap_or_else(|p| p.into_inner())
}

/// Rings every descriptor once and forgets those whose reader is gone.
fn ring_all(ringers: &Mutex<Vec<Ringer>>) {
    lock(ringers).retain(Ringer::ring);
}

impl Bell {
    pub(crate) fn new() -> Bell {
        Bell {
            ringers: Arc::default(),
            hook: OnceLock::new(),
            ended: AtomicBool::new(false),
        }
    }

    /// A new descriptor on `forum`'s commits, owned by the caller from now on.
    pub(crate) fn open(&self, forum: &Forum) -> std::io::Result<i32> {
        let (ringer, fd) = Ringer::pair()?;
        self.hook.get_or_init(|| {
            let ringers = Arc::clone(&self.ringers);
            forum.on_commit(move || ring_all(&ringers))
        });
        let mut ringers = lock(&self.ringers);
        // `end_waits` sets the flag before the engine calls the hook, which rings
        // under this lock: a descriptor made while the waits end is rung at least
        // once, here or there.
        if self.ended.load(Ordering::SeqCst) {
            // The reader is not handed over yet, so this write finds it.
            ringer.ring();
        }
        ringers.push(ringer);
        Ok(fd)
    }

    /// Ends `forum`'s waits, now and later, which rings every descriptor.
    pub(crate) fn end_waits(&self, forum: &Forum) {
        self.ended.store(true, Ordering::SeqCst);
        forum.end_waits();
    }

    /// How many descriptors are still rung.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        lock(&self.ringers).len()
    }
}

impl Drop for Bell {
    fn drop(&mut self) {
        // The hook first, so that nothing rings while the write ends close.
        drop(self.hook.take());
        lock(&self.ringers).clear();
    }
}

/// The write side of one commit descriptor.
struct Ringer {
    #[cfg(unix)]
    writer: std::os::unix::net::UnixStream,
    /// Where std is not known to write without `SIGPIPE`: the library's own copy
    /// of the read end, so that the socket never lacks a reader.
    #[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
    _reader: std::os::unix::net::UnixStream,
}

#[cfg(unix)]
impl Ringer {
    /// A new pair: the ringer and the read end's descriptor, handed over.
    fn pair() -> std::io::Result<(Ringer, i32)> {
        use std::os::fd::IntoRawFd;
        use std::os::unix::net::UnixStream;

        let (reader, writer) = UnixStream::pair()?;
        // Both sides: the flag is on the open file, which the host's descriptor is.
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let ringer = Ringer { writer };
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let ringer = Ringer {
            writer,
            _reader: reader.try_clone()?,
        };
        Ok((ringer, reader.into_raw_fd()))
    }

    /// Writes one byte; `false` once the reader is gone for good.
    fn ring(&self) -> bool {
        use std::io::{ErrorKind, Write};
        loop {
            match (&self.writer).write(&[1u8]) {
                Ok(_) => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // Full: the reader has bytes waiting, this commit coalesces.
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
    }
}

#[cfg(not(unix))]
impl Ringer {
    fn pair() -> std::io::Result<(Ringer, i32)> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "commit descriptors need Unix sockets",
        ))
    }

    fn ring(&self) -> bool {
        false
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::{ErrorKind, Read};
    use std::os::fd::FromRawFd;
    use std::os::unix::net::UnixStream;

    use parley_forum::{Config, Right, TokenSpec};
    use serde_json::json;

    fn forum() -> (Forum, String) {
        let config = Config::from_json(&json!({ "limits": { "writes_per_minute": 0 } })).unwrap();
        let forum = Forum::in_memory(config).unwrap();
        let token = forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
            .unwrap();
        (forum, token)
    }

    fn post(forum: &Forum, token: &str, body: &str) {
        forum
            .call(Some(token), "post", &json!({ "kind": "ask", "body": body }))
            .unwrap();
    }

    /// The host's end, as C would use it.
    fn reader(fd: i32) -> UnixStream {
        assert!(fd >= 0);
        // SAFETY: the descriptor was just handed over and is owned by no one else.
        unsafe { UnixStream::from_raw_fd(fd) }
    }

    /// Reads what is waiting: `Some(bytes)`, or `None` at end-of-file.
    fn drain(reader: &mut UnixStream) -> Option<usize> {
        let mut total = 0;
        let mut buf = [0u8; 64];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => total += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Some(total),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("reading the commit descriptor: {e}"),
            }
        }
    }

    #[test]
    fn a_descriptor_is_rung_once_per_commit_and_reads_eof_when_the_bell_goes() {
        let (forum, token) = forum();
        let bell = Bell::new();
        let mut fd = reader(bell.open(&forum).unwrap());
        assert_eq!(drain(&mut fd), Some(0), "non-blocking, nothing yet");
        post(&forum, &token, "one?");
        post(&forum, &token, "two?");
        assert_eq!(drain(&mut fd), Some(2));
        assert_eq!(drain(&mut fd), Some(0));
        bell.end_waits(&forum);
        assert_eq!(drain(&mut fd), Some(1), "ending the waits rings");
        drop(bell);
        assert_eq!(drain(&mut fd), None, "the write end is gone");
    }

    #[test]
    fn a_descriptor_made_after_the_waits_ended_starts_readable() {
        let (forum, _) = forum();
        let bell = Bell::new();
        bell.end_waits(&forum);
        let mut fd = reader(bell.open(&forum).unwrap());
        assert_eq!(drain(&mut fd), Some(1));
    }

    #[test]
    fn a_full_socket_coalesces_and_a_closed_reader_is_forgotten() {
        let (forum, token) = forum();
        let bell = Bell::new();
        let mut kept = reader(bell.open(&forum).unwrap());
        let closed = reader(bell.open(&forum).unwrap());
        assert_eq!(bell.live(), 2);
        // Far more rings than a socket buffer holds: none blocks, none fails.
        for _ in 0..10_000 {
            ring_all(&bell.ringers);
        }
        drop(closed);
        post(&forum, &token, "still there?");
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert_eq!(bell.live(), 1, "the closed reader's pair is dropped");
        let waiting = drain(&mut kept).unwrap();
        assert!(waiting > 0 && waiting < 10_000, "{waiting} bytes");
        post(&forum, &token, "and now?");
        assert_eq!(drain(&mut kept), Some(1));
    }

    #[test]
    fn every_descriptor_is_rung() {
        let (forum, token) = forum();
        let bell = Bell::new();
        let mut fds: Vec<UnixStream> = (0..4).map(|_| reader(bell.open(&forum).unwrap())).collect();
        post(&forum, &token, "all of you?");
        for fd in &mut fds {
            assert_eq!(drain(fd), Some(1));
        }
        drop(bell);
        for fd in &mut fds {
            assert_eq!(drain(fd), None);
        }
    }
}

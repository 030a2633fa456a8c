//! Commit notifications as a file descriptor, for event loops (`Forum._commit_fd`).
//!
//! Each pipe is a connected pair of Unix stream sockets, both non-blocking. A hook
//! registered with [`Forum::on_commit`] writes one byte to the write end after
//! every durable commit and once when the forum's waits are ended; the read end is
//! handed to Python, which owns it from then on (it registers it with
//! `loop.add_reader` and closes it itself, so no descriptor number is ever closed
//! under an event loop that still watches it). When the forum closes, the write
//! ends are dropped and every reader sees end-of-file.
//!
//! A full socket buffer is fine: a reader that has not drained it yet has a byte
//! waiting anyway. A reader that went away makes the write fail; the hook then
//! stops writing, and the pipe is pruned when the next one is made.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parley_forum::{CommitHook, Forum};

/// One commit pipe's write side: the hook that owns the write end.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) struct CommitPipe {
    /// Removes the hook (and so closes the write end) when dropped.
    _hook: CommitHook,
    /// Cleared by the hook once a write failed for another reason than a full buffer.
    alive: Arc<AtomicBool>,
}

impl CommitPipe {
    /// Whether the reader may still be listening.
    pub(crate) fn alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }

    /// A new pipe on `forum`; returns it and the read end's descriptor, which the
    /// caller owns. With `ended`, the reader finds a byte at once.
    #[cfg(unix)]
    pub(crate) fn open(forum: &Forum, ended: bool) -> std::io::Result<(CommitPipe, i32)> {
        use std::os::fd::IntoRawFd;
        use std::os::unix::net::UnixStream;

        let (reader, writer) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        let alive = Arc::new(AtomicBool::new(true));
        let flag = Arc::clone(&alive);
        let ring = move || {
            if !flag.load(Ordering::Relaxed) {
                return;
            }
            loop {
                match (&writer).write(&[1]) {
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Ok(_) => break,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => {
                        flag.store(false, Ordering::Relaxed);
                        break;
                    }
                }
            }
        };
        if ended {
            ring();
        }
        let hook = forum.on_commit(ring);
        Ok((CommitPipe { _hook: hook, alive }, reader.into_raw_fd()))
    }

    /// Without Unix sockets there is no descriptor to hand out.
    #[cfg(not(unix))]
    pub(crate) fn open(_forum: &Forum, _ended: bool) -> std::io::Result<(CommitPipe, i32)> {
        Err(std::io::Error::new(
            ErrorKind::Unsupported,
            "commit notifications need Unix sockets",
        ))
    }
}

//! Posts from HTTP requests, handed to the engine in bunches.
//!
//! This is the server's one path for posts: REST's `POST /v1/messages`, MCP's
//! `tools/call` of `post` over Streamable HTTP (`mcp`) and the admin channel's
//! posts all queue here, so concurrent posts share bunches and group commits
//! whichever way they came.
//!
//! A post blocks until its batch is on disk, so it cannot run on an async worker.
//! Handing each one to tokio's blocking pool costs a thread hand-off there and a
//! wake-up back, and the engine then wakes each of those threads once its batch is
//! stored. Here requests queue up, and an engine thread takes every request
//! waiting and posts them with one `Forum::post_all`: the engine sees them as
//! concurrent posts (they share group commits and keep their own outcomes), and one
//! wake-up serves a whole bunch. While a bunch is synced, the next one queues.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use parley_forum::{Error, Forum};
use serde_json::Value;
use tokio::sync::oneshot;

/// Engine threads: one. A second applied the next bunch while the first waited for
/// the disk, but its bunches were smaller and each paid a commit of its own, and
/// the disk serves one at a time (measured in
/// `docs/decisions/0002-group-commit.md`).
const THREADS: usize = 1;

struct Request {
    token: Option<String>,
    envelope: Value,
    reply: oneshot::Sender<Result<Value, Error>>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Request>,
    stopping: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The queue is only pushed to and drained: a panic elsewhere leaves it whole.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The queue of posts and its engine threads.
pub(crate) struct Posts {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Posts {
    pub(crate) fn start(forum: &Arc<Forum>) -> std::io::Result<Posts> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
        });
        let mut threads = Vec::with_capacity(THREADS);
        for n in 0..THREADS {
            let (shared, forum) = (Arc::clone(&shared), Arc::clone(forum));
            threads.push(
                std::thread::Builder::new()
                    .name(format!("parley-post-{n}"))
                    .spawn(move || serve(&shared, &forum))?,
            );
        }
        Ok(Posts {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Posts `envelope` and waits for its outcome. `None`: the engine thread went
    /// away without answering (it panicked).
    pub(crate) async fn post(
        &self,
        token: Option<String>,
        envelope: Value,
    ) -> Option<Result<Value, Error>> {
        let (reply, outcome) = oneshot::channel();
        {
            let mut queue = self.shared.lock();
            queue.waiting.push(Request {
                token,
                envelope,
                reply,
            });
        }
        self.shared.ready.notify_one();
        outcome.await.ok()
    }

    /// Requests queued and not yet taken by an engine thread.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.shared.lock().waiting.len()
    }

    /// Posts every request already queued, then stops the engine threads; returns
    /// once they have ended (and let go of the forum).
    pub(crate) fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.ready.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for Posts {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An engine thread: takes every waiting request, posts them together, answers each.
fn serve(shared: &Shared, forum: &Forum) {
    loop {
        let bunch = {
            let mut queue = shared.lock();
            while queue.waiting.is_empty() && !queue.stopping {
                queue = shared.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            if queue.waiting.is_empty() {
                return;
            }
            std::mem::take(&mut queue.waiting)
        };
        let posts: Vec<(Option<&str>, &Value)> = bunch
            .iter()
            .map(|r| (r.token.as_deref(), &r.envelope))
            .collect();
        // A panic in the engine fails this bunch (each request hears nothing and
        // answers 500), not the thread.
        let Ok(outcomes) = catch_unwind(AssertUnwindSafe(|| forum.post_all(&posts))) else {
            continue;
        };
        for (request, outcome) in bunch.into_iter().zip(outcomes) {
            // A request whose client went away no longer listens; its post stands.
            let _ = request.reply.send(outcome);
        }
    }
}

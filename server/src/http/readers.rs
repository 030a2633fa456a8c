//! The reads of waiting requests and event streams, run by engine threads of
//! their own, in bunches.
//!
//! Every commit wakes every waiter, and each then runs its read again. Handed one
//! by one to tokio's blocking pool, each run pays a thread hand-off there and a
//! wake-up back, which costs several times the read itself when the read finds
//! nothing new (the common case of an idle listener). Here the runs queue up and a
//! few threads take them a bunch at a time: one wake-up of a thread serves every
//! run already waiting. The runs are short snapshot reads, never a write, so they
//! delay no writer and need no more threads than there are cores.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// Reader threads.
const THREADS: usize = 2;
/// Runs one thread takes at a time: enough to spread a burst over the threads.
const BUNCH: usize = 32;

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    waiting: Vec<Job>,
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

/// The queue of runs and its threads.
pub(crate) struct Readers {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Readers {
    pub(crate) fn start() -> std::io::Result<Readers> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
        });
        let mut threads = Vec::with_capacity(THREADS);
        for n in 0..THREADS {
            let shared = Arc::clone(&shared);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("parley-read-{n}"))
                    .spawn(move || serve(&shared))?,
            );
        }
        Ok(Readers {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Runs `read` on a reader thread and waits for its outcome. `None`: it
    /// panicked, or the readers have stopped.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (reply, outcome) = oneshot::channel();
        let job: Job = Box::new(move || {
            // A panic fails this run (its caller hears nothing), not the thread.
            if let Ok(value) = crate::panics::contained(read) {
                let _ = reply.send(value);
            }
        });
        {
            let mut queue = self.shared.lock();
            if queue.stopping {
                return None;
            }
            queue.waiting.push(job);
        }
        self.shared.ready.notify_one();
        outcome.await.ok()
    }

    /// Runs what is queued, then stops the threads; returns once they have ended
    /// (and dropped every run, with what it held).
    pub(crate) fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.ready.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A reader thread: takes a bunch of waiting runs and runs them.
fn serve(shared: &Shared) {
    loop {
        let bunch: Vec<Job> = {
            let mut queue = shared.lock();
            while queue.waiting.is_empty() && !queue.stopping {
                queue = shared.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            if queue.waiting.is_empty() {
                return;
            }
            let take = queue.waiting.len().min(BUNCH);
            let bunch = queue.waiting.drain(..take).collect();
            if !queue.waiting.is_empty() {
                // More than a bunch: another thread takes the next one.
                shared.ready.notify_one();
            }
            bunch
        };
        for job in bunch {
            job();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_come_back_and_a_panic_fails_only_its_own() {
        let readers = Readers::start().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let runs: Vec<_> = (0..100u64).map(|i| readers.run(move || i * 2)).collect();
            let mut sum = 0;
            for run in runs {
                sum += run.await.unwrap();
            }
            assert_eq!(sum, 9900);
            let failed = readers.run(|| -> u64 { panic!("a failing read") });
            assert_eq!(failed.await, None);
            assert_eq!(readers.run(|| 7).await, Some(7));
        });
        readers.stop();
        runtime.block_on(async { assert_eq!(readers.run(|| 1).await, None) });
    }
}

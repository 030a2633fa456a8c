//! Wake-ups across engines: one connection per store that `LISTEN`s on the
//! forum's channel and rings the engine's waiting calls for each commit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::conn::Pool;

type Ring = Arc<dyn Fn() + Send + Sync>;

/// How often the listening thread looks whether its store is gone.
const POLL: Duration = Duration::from_millis(250);
/// The wait before connecting again after the connection was lost.
const RETRY: Duration = Duration::from_millis(500);
/// How long opening a store waits for its first `LISTEN`.
const FIRST_LISTEN: Duration = Duration::from_secs(5);

/// The listening thread of one store; it ends when the store is dropped.
pub(super) struct Listener {
    rings: Arc<Mutex<Vec<Ring>>>,
    stop: Arc<AtomicBool>,
}

impl Listener {
    /// Starts listening, and returns once the first `LISTEN` is in place (or
    /// after [`FIRST_LISTEN`]): a wait begun after the store is open then hears of
    /// every later commit of another engine.
    pub(super) fn start(pool: Arc<Pool>) -> Listener {
        let rings: Arc<Mutex<Vec<Ring>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (Arc::clone(&rings), Arc::clone(&stop));
        let (listening, first) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("parley-pg-listen".into())
            .spawn(move || listen(&pool, &r, &s, listening));
        match spawned {
            Ok(_) => {
                let _ = first.recv_timeout(FIRST_LISTEN);
            }
            // Without the thread, waits still end at their deadline and see this
            // engine's own commits; only other engines' commits wake them late.
            Err(_) => stop.store(true, Ordering::Relaxed),
        }
        Listener { rings, stop }
    }

    pub(super) fn add(&self, ring: Ring) {
        self.rings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ring);
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn ring_all(rings: &Mutex<Vec<Ring>>) {
    let rings: Vec<Ring> = rings.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for ring in rings {
        ring();
    }
}

fn listen(
    pool: &Pool,
    rings: &Mutex<Vec<Ring>>,
    stop: &AtomicBool,
    listening: std::sync::mpsc::Sender<()>,
) {
    let mut first = true;
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut client) = pool.target.connect() else {
            std::thread::sleep(RETRY);
            continue;
        };
        if client
            .batch_execute(&format!("LISTEN {}", pool.target.channel))
            .is_err()
        {
            std::thread::sleep(RETRY);
            continue;
        }
        if first {
            first = false;
            let _ = listening.send(());
        } else {
            // Commits may have happened while no connection listened.
            ring_all(rings);
        }
        while !stop.load(Ordering::Relaxed) {
            let (heard, lost) = hear(&mut client, &pool.engine);
            if heard {
                pool.foreign.store(true, Ordering::Release);
                ring_all(rings);
            }
            if lost || client.is_closed() {
                break;
            }
        }
    }
}

/// Waits up to [`POLL`] for a notification, then takes those already received
/// without waiting. Returns whether another engine committed, and whether the
/// connection was lost. The rings follow each wait at once: a wait that went on
/// while notifications kept coming would ring nobody for as long as another engine
/// kept committing.
fn hear(client: &mut postgres::Client, engine: &str) -> (bool, bool) {
    use postgres::fallible_iterator::FallibleIterator;
    let mut notes = client.notifications();
    // This engine rang its own waits when it committed.
    let foreign = |n: &postgres::Notification| n.payload() != engine;
    let first = match notes.timeout_iter(POLL).next() {
        Ok(Some(n)) => foreign(&n),
        Ok(None) => false,
        Err(_) => return (false, true),
    };
    let mut heard = first;
    let mut received = notes.iter();
    loop {
        match received.next() {
            Ok(Some(n)) => heard |= foreign(&n),
            Ok(None) => return (heard, false),
            Err(_) => return (heard, true),
        }
    }
}

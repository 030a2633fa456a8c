//! A page log under redb, for durable forums.
//!
//! A durable redb commit writes its dirty pages (a post dirties ten or so, scattered
//! over the file) and calls `fdatasync`, which sends each scattered page to the disk
//! as its own request. This backend keeps redb's writes in memory (an overlay of
//! pages, read before the file) and, at each sync, seals them into one checksummed
//! record of the log next to it (`<forum>-wal`); whoever then needs the commit on
//! disk writes the sealed records with one sequential write (see [`sink`]). At a
//! checkpoint — the log or the overlay is full, or the forum closes — the overlay
//! goes to the forum file, the file is synced, and the log starts a new generation.
//!
//! The guarantee redb relies on is that of a plain file: every write made before a
//! completed sync survives a crash, and any subset of the later ones may. Replaying
//! the log in order on open restores every write up to the last completed sync;
//! writes after it either reached the forum file or did not, which redb's own commit
//! checksums already handle. A torn record (a crash during its write) fails its
//! checksum and ends the replay; its commit never returned. The log's format is in
//! [`format`].

mod format;
mod sink;

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

use format::{header_bytes, read_header, replay, without_zero_tail, HEADER, HEAD_LEN};
use format::{SET_LEN, WRITE};
use sink::{Aligned, Sink};

/// Once the log passes this size, the sync that passed it also checkpoints.
const LOG_LIMIT: u64 = 64 << 20;
/// Writes held for the next sync beyond this size are checkpointed at once, so a
/// large transaction cannot hold an unbounded copy of its pages.
const PENDING_LIMIT: usize = 16 << 20;
/// The overlay's page: redb's own page size, so a commit's writes map onto whole pages.
const PAGE: u64 = 4096;
/// Overlay pages before a checkpoint (16 MiB).
const OVERLAY_LIMIT: usize = 4096;
/// Buffers kept for sealed records: one per log write that may be under way at
/// once, so a record is sealed into memory already in use rather than into a fresh
/// allocation that grows, copying, to the record's size.
const SPARE_BUFFERS: usize = 8;
const SPARE_CAPACITY: usize = 1 << 20;
/// The log grows by zero-filled steps, written once: a record written over them
/// changes no file length or block map, so its write is a data-only flush.
const GROW_STEP: u64 = 1 << 20;

/// The log file of the forum file at `path`.
pub(super) fn log_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push("-wal");
    PathBuf::from(name)
}

/// The log of a forum file, opened and locked, after the replay of its records.
pub(super) struct Log {
    file: File,
    sink: Sink,
    salt: u64,
}

/// Opens (creating) and locks the log of the forum file at `path`, and replays its
/// records into the forum file. A second process opening the same forum is refused
/// here, before anything is written.
pub(super) fn recover(path: &Path) -> io::Result<Log> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(log_path(path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the forum is already open (its log is locked by another handle)",
            ))
        }
        Err(TryLockError::Error(e)) => return Err(e),
    }
    if let Some(generation) = read_header(&file)? {
        let main = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if replay(&file, &main, &generation)? > 0 {
            main.sync_all()?;
        }
    }
    // Every record is now in the synced forum file. Cut the log, so no record of a
    // generation that ended here can ever be read again, and start from a random
    // salt, so a record surviving anyhow cannot match the new generation either.
    file.set_len(0)?;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(Log {
        sink: Sink::open(&log_path(path)),
        file,
        salt: u64::from_le_bytes(random) >> 1,
    })
}

/// A durable forum file and its log, behind redb (as [`Shared`]).
///
/// redb calls `sync_data` at the end of each commit, under its write lock. Here
/// that seals the commit's record without writing it, so the next transaction can
/// start at once; [`LoggedFile::wait_durable`] then writes every sealed record in
/// one durable write, and whoever needs the commit on disk — a poster before its
/// success, a reader before it sees the commit — waits for it there. Several such
/// writes may be under way at once; a commit counts as durable only when its write
/// and every earlier one are done, since replay stops at the first missing record.
/// So a crash loses a suffix of commits, never one in the middle, and the forum
/// file is touched only after every record is on disk.
#[derive(Debug)]
pub(super) struct LoggedFile {
    main: FileBackend,
    log: File,
    sink: Sink,
    state: Mutex<State>,
    synced: Mutex<Synced>,
    /// Signalled when a log write ends.
    sync_done: Condvar,
    /// The log file's length (zero-filled up to here), and the lock of its growth
    /// with the block of zeros it writes (made once, as fresh memory costs a page
    /// fault per page).
    allocated: AtomicU64,
    growing: Mutex<Aligned>,
    /// Tests: every log write fails, after this long.
    #[cfg(test)]
    fail_writes_after: Mutex<Option<std::time::Duration>>,
}

#[derive(Debug)]
struct State {
    /// The next record: its head's room, then the entries written since the last sync.
    pending: Aligned,
    /// Sealed records that no log write has taken yet, each padded; they end at `end`.
    sealed: Aligned,
    /// Buffers finished log writes gave back, to hold the next sealed records.
    spare: Vec<Aligned>,
    salt: u64,
    seq: u64,
    /// Where the next record goes.
    end: u64,
    /// Commits so far (records sealed, or folded into a checkpoint).
    commits: u64,
    /// Pages written since the last checkpoint, by page number: the forum file's
    /// newest content, ahead of the file.
    pages: HashMap<u64, Box<[u8]>>,
    /// The forum file's length as redb sees it.
    len: u64,
    /// The forum file's length on disk (changed only by checkpoints).
    file_len: u64,
    /// The lowest length since the last checkpoint: bytes from here on that are not
    /// in the overlay were cut and read as zeros.
    low_water: u64,
    /// Set by a failed write or sync: from then on the file's state is unknown, and
    /// every write and sync fails until the forum is reopened (and replayed).
    broken: bool,
}

#[derive(Debug, Default)]
struct Synced {
    /// Commits known to be on disk.
    durable: u64,
    /// The most commits a log write under way will make durable.
    covering: u64,
    /// A write or sync failed: nothing more becomes durable.
    failed: bool,
    /// Log writes under way, oldest first: the commits each covers, and whether it
    /// is done.
    writes: VecDeque<(u64, bool)>,
    /// The number of `writes[0]`.
    first: u64,
}

impl Synced {
    /// Registers a log write covering `commits`; returns its number.
    fn start(&mut self, commits: u64) -> u64 {
        self.writes.push_back((commits, false));
        self.covering = self.covering.max(commits);
        self.first + self.writes.len() as u64 - 1
    }

    /// Marks write `number` done; commits become durable once every earlier write
    /// is done too.
    fn done(&mut self, number: u64) {
        self.writes[(number - self.first) as usize].1 = true;
        while let Some(&(commits, true)) = self.writes.front() {
            self.durable = self.durable.max(commits);
            self.writes.pop_front();
            self.first += 1;
        }
    }
}

/// Sealed records taken by one log write.
struct Claim {
    number: u64,
    at: u64,
    bytes: Aligned,
}

fn broken() -> io::Error {
    io::Error::other("an earlier write to the forum's log failed; reopen the forum")
}

fn fresh_record() -> Aligned {
    let mut record = Aligned::default();
    record.extend_from_slice(&[0; HEAD_LEN]);
    record
}

impl LoggedFile {
    /// The backend over `main` (the forum file) and its recovered `log`. Starts a
    /// new log generation: every replayed write is already synced in `main`.
    pub(super) fn new(main: File, log: Log) -> io::Result<Self> {
        let allocated = log.file.metadata()?.len().max(HEADER);
        let len = main.metadata()?.len();
        let backend = LoggedFile {
            main: FileBackend::new(main).map_err(|e| io::Error::other(e.to_string()))?,
            log: log.file,
            sink: log.sink,
            state: Mutex::new(State {
                pending: fresh_record(),
                sealed: Aligned::default(),
                spare: Vec::new(),
                salt: log.salt,
                seq: 0,
                end: HEADER,
                commits: 0,
                pages: HashMap::new(),
                len,
                file_len: len,
                low_water: len,
                broken: false,
            }),
            synced: Mutex::new(Synced::default()),
            sync_done: Condvar::new(),
            allocated: AtomicU64::new(allocated),
            growing: Mutex::new(Aligned::default()),
            #[cfg(test)]
            fail_writes_after: Mutex::new(None),
        };
        backend.guarded(|state| backend.reset(state))?;
        Ok(backend)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update of the state completes or marks it broken; a panic elsewhere
        // leaves nothing half-done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_synced(&self) -> MutexGuard<'_, Synced> {
        self.synced.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Commits known to be on disk.
    #[cfg(test)]
    pub(super) fn durable(&self) -> u64 {
        self.lock_synced().durable
    }

    /// Commits so far: the ticket [`Self::wait_durable`] takes.
    pub(super) fn commits(&self) -> u64 {
        self.lock().commits
    }

    /// Returns once the first `commits` commits are on disk, writing the sealed
    /// records unless a log write under way covers them.
    pub(super) fn wait_durable(&self, commits: u64) -> io::Result<()> {
        let mut synced = self.lock_synced();
        loop {
            if synced.durable >= commits {
                return Ok(());
            }
            if synced.failed {
                return Err(broken());
            }
            if synced.covering >= commits {
                synced = self
                    .sync_done
                    .wait(synced)
                    .unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // Write now rather than queue behind a write that took the records
            // sealed before this commit's: the disk takes both at once.
            drop(synced);
            let claim = self.claim()?;
            let outcome = self.write_log(claim.at, claim.bytes.as_slice());
            self.finish(claim, outcome)?;
            synced = self.lock_synced();
        }
    }

    /// Takes every sealed record for one log write.
    fn claim(&self) -> io::Result<Claim> {
        let mut state = self.lock();
        if state.broken {
            return Err(broken());
        }
        let fresh = state.spare.pop().unwrap_or_default();
        let bytes = std::mem::replace(&mut state.sealed, fresh);
        let at = state.end - bytes.len() as u64;
        // Registered under the state lock, so write numbers follow log order.
        let number = self.lock_synced().start(state.commits);
        Ok(Claim { number, at, bytes })
    }

    /// Writes `bytes` at `at` in the log, durably, growing the log first if needed.
    /// Nothing to write is nothing to wait for.
    fn write_log(&self, at: u64, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        #[cfg(test)]
        if let Some(delay) = *self.fail_writes_after.lock().unwrap() {
            std::thread::sleep(delay);
            return Err(io::Error::other("a log write failed (injected)"));
        }
        let end = at + bytes.len() as u64;
        if self.allocated.load(Ordering::Acquire) < end {
            let mut zeros = self.growing.lock().unwrap_or_else(|p| p.into_inner());
            let allocated = self.allocated.load(Ordering::Acquire);
            if allocated < end {
                if zeros.is_empty() {
                    *zeros = Aligned::zeroed(GROW_STEP as usize);
                }
                let target = end.div_ceil(GROW_STEP) * GROW_STEP;
                let mut from = allocated;
                while from < target {
                    let n = (target - from).min(GROW_STEP) as usize;
                    self.sink
                        .write_durable(&self.log, &zeros.as_slice()[..n], from)?;
                    from += n as u64;
                }
                self.allocated.store(target, Ordering::Release);
            }
        }
        self.sink.write_durable(&self.log, bytes, at)
    }

    /// Records the end of a log write, wakes its waiters, and keeps its buffer.
    fn finish(&self, claim: Claim, outcome: io::Result<()>) -> io::Result<()> {
        // The failure is told to waiters before the state lock is taken: a
        // checkpoint holds that lock while it waits for the writes under way.
        {
            let mut synced = self.lock_synced();
            match outcome {
                Ok(()) => synced.done(claim.number),
                // Never done: nothing after it becomes durable.
                Err(_) => synced.failed = true,
            }
            self.sync_done.notify_all();
        }
        let mut bytes = claim.bytes;
        bytes.clear();
        let mut state = self.lock();
        if outcome.is_err() {
            state.broken = true;
        }
        // The buffer of a large transaction's record is not kept.
        if state.spare.len() < SPARE_BUFFERS && bytes.capacity() <= SPARE_CAPACITY {
            state.spare.push(bytes);
        }
        outcome
    }

    /// Seals the pending writes into the next record.
    fn seal(&self, state: &mut State) {
        format::seal(state.pending.as_mut_slice(), state.salt, state.seq);
        state.seq += 1;
        let before = state.sealed.len();
        if before == 0 {
            std::mem::swap(&mut state.sealed, &mut state.pending);
            state.pending.clear();
            state.pending.extend_from_slice(&[0; HEAD_LEN]);
        } else {
            state.sealed.extend_from_slice(state.pending.as_slice());
            state.pending.truncate(HEAD_LEN);
        }
        state.sealed.pad();
        state.end += (state.sealed.len() - before) as u64;
    }

    /// Starts a new generation: a fresh header with the next salt, on disk. Only
    /// called when every write so far is synced in the forum file.
    fn reset(&self, state: &mut State) -> io::Result<()> {
        state.salt += 1;
        state.seq = 0;
        state.end = HEADER;
        state.pending.truncate(HEAD_LEN);
        state.sealed.clear();
        let mut header = Aligned::default();
        header.extend_from_slice(&header_bytes(state.salt));
        self.write_log(0, header.as_slice())
    }

    /// Makes every write so far durable in the forum file and empties the log. The
    /// log is written first, with the pending writes in it: a crash during the
    /// checkpoint replays every record over whatever part of it reached the file.
    fn checkpoint(&self, state: &mut State) -> io::Result<()> {
        if state.pending.len() > HEAD_LEN {
            self.seal(state);
        }
        let at = state.end - state.sealed.len() as u64;
        self.write_log(at, state.sealed.as_slice())?;
        state.sealed.clear();
        {
            // Log writes under way end without the state lock.
            let mut synced = self.lock_synced();
            while !synced.writes.is_empty() && !synced.failed {
                synced = self
                    .sync_done
                    .wait(synced)
                    .unwrap_or_else(|p| p.into_inner());
            }
            if synced.failed {
                return Err(broken());
            }
        }
        if state.file_len > state.low_water {
            self.main.set_len(state.low_water)?;
        }
        let mut numbers: Vec<u64> = state.pages.keys().copied().collect();
        numbers.sort_unstable();
        // Runs of consecutive pages go out in one write each.
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0;
        for (i, &n) in numbers.iter().enumerate() {
            if run.is_empty() {
                run_start = n;
            }
            run.extend_from_slice(&state.pages[&n]);
            if numbers.get(i + 1) != Some(&(n + 1)) {
                let at = run_start * PAGE;
                run.truncate(state.len.saturating_sub(at) as usize);
                self.main.write(at, &run)?;
                run.clear();
            }
        }
        if self.main.len()? != state.len {
            self.main.set_len(state.len)?;
        }
        self.main.sync_data()?;
        state.pages.clear();
        state.file_len = state.len;
        state.low_water = state.len;
        self.reset(state)?;
        let mut synced = self.lock_synced();
        synced.durable = synced.durable.max(state.commits);
        Ok(())
    }

    /// Copies `data` into the overlay at `offset`.
    fn overlay(&self, state: &mut State, offset: u64, data: &[u8]) -> io::Result<()> {
        let end = offset + data.len() as u64;
        let mut n = offset / PAGE;
        while n * PAGE < end {
            let (page_start, page_end) = (n * PAGE, (n + 1) * PAGE);
            let (from, to) = (offset.max(page_start), end.min(page_end));
            let src = &data[(from - offset) as usize..(to - offset) as usize];
            let within = (from - page_start) as usize..(to - page_start) as usize;
            match state.pages.get_mut(&n) {
                Some(page) => page[within].copy_from_slice(src),
                // redb writes whole pages: no zeros to write first.
                None if within.len() == PAGE as usize => {
                    state.pages.insert(n, Box::from(src));
                }
                None => {
                    // Partly written: the rest is the file's (zeros past its end).
                    let mut page = vec![0u8; PAGE as usize].into_boxed_slice();
                    let have = state.len.min(page_end).saturating_sub(page_start) as usize;
                    self.read_file(page_start, &mut page[..have], state)?;
                    page[within].copy_from_slice(src);
                    state.pages.insert(n, page);
                }
            }
            n += 1;
        }
        state.len = state.len.max(end);
        Ok(())
    }

    /// Reads `out` at `offset`: overlay pages first, then the file below the low
    /// water mark, zeros above it.
    fn read_file(&self, offset: u64, out: &mut [u8], state: &State) -> io::Result<()> {
        let end = offset + out.len() as u64;
        let on_disk = state.file_len.min(state.low_water);
        let mut at = offset;
        while at < end {
            let n = at / PAGE;
            let page_end = ((n + 1) * PAGE).min(end);
            let dst = &mut out[(at - offset) as usize..(page_end - offset) as usize];
            match state.pages.get(&n) {
                Some(page) => {
                    let from = (at - n * PAGE) as usize;
                    dst.copy_from_slice(&page[from..from + dst.len()]);
                }
                None => {
                    let from_file = on_disk.clamp(at, page_end) - at;
                    self.main.read(at, &mut dst[..from_file as usize])?;
                    dst[from_file as usize..].fill(0);
                }
            }
            at = page_end;
        }
        Ok(())
    }

    /// Runs `op` on the state unless it is broken; a failure breaks it.
    fn guarded(&self, op: impl FnOnce(&mut State) -> io::Result<()>) -> io::Result<()> {
        let mut state = self.lock();
        if state.broken {
            return Err(broken());
        }
        let outcome = op(&mut state);
        if outcome.is_err() {
            state.broken = true;
            self.lock_synced().failed = true;
            self.sync_done.notify_all();
        }
        outcome
    }
}

/// The redb storage backend of a durable forum file: a [`LoggedFile`] that redb
/// owns while the store keeps a handle to it, for [`LoggedFile::wait_durable`].
#[derive(Debug, Clone)]
pub(super) struct Shared(pub(super) Arc<LoggedFile>);

impl std::ops::Deref for Shared {
    type Target = LoggedFile;

    fn deref(&self) -> &LoggedFile {
        &self.0
    }
}

impl StorageBackend for Shared {
    fn len(&self) -> io::Result<u64> {
        Ok(self.lock().len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let state = self.lock();
        if offset + out.len() as u64 > state.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the forum file",
            ));
        }
        self.read_file(offset, out, &state)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.guarded(|state| {
            if len < state.len {
                // Pages past the new end are gone; a later growth reads zeros.
                state.pages.retain(|&n, _| n * PAGE < len);
                if let Some(page) = state.pages.get_mut(&(len / PAGE)) {
                    page[(len % PAGE) as usize..].fill(0);
                }
                state.low_water = state.low_water.min(len);
            }
            state.len = len;
            state.pending.push(SET_LEN);
            state.pending.extend_from_slice(&len.to_le_bytes());
            Ok(())
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        self.guarded(|state| {
            if state.pending.len() > HEAD_LEN {
                self.seal(state);
            }
            state.commits += 1;
            if state.end > LOG_LIMIT || state.pages.len() > OVERLAY_LIMIT {
                self.checkpoint(state)?;
            }
            Ok(())
        })
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.guarded(|state| {
            self.overlay(state, offset, data)?;
            let kept = &data[..without_zero_tail(data)];
            state.pending.push(WRITE);
            state.pending.extend_from_slice(&offset.to_le_bytes());
            state
                .pending
                .extend_from_slice(&(data.len() as u64).to_le_bytes());
            state
                .pending
                .extend_from_slice(&(kept.len() as u64).to_le_bytes());
            state.pending.extend_from_slice(kept);
            if state.pending.len() > PENDING_LIMIT || state.pages.len() > OVERLAY_LIMIT {
                self.checkpoint(state)?;
            }
            Ok(())
        })
    }

    fn close(&self) -> io::Result<()> {
        // A clean close leaves the forum file complete on its own. redb never
        // touches the backend after this, so the log's lock goes now, not whenever
        // the last handle to this value is dropped.
        let synced = self.guarded(|state| self.checkpoint(state));
        let unlocked = self.log.unlock();
        let closed = self.main.close();
        synced.and(unlocked).and(closed)
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.main.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.main.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.main.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.main.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.main.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.main.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests;

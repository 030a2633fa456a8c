//! A page log under redb, for durable forums.
//!
//! A durable redb commit writes its dirty pages (a post dirties ten or so, scattered
//! over the file) and calls `fdatasync`, which sends each scattered page to the disk
//! as its own request. This backend keeps redb's writes in memory (an overlay of
//! pages, read before the file) and, at each sync, appends them as one checksummed
//! record to a log file next to it (`<forum>-wal`) and syncs the log: one sequential
//! write per commit. At a checkpoint — the log or the overlay is full, or the forum
//! closes — the overlay goes to the forum file, the file is synced, and the log
//! starts a new generation.
//!
//! The guarantee redb relies on is that of a plain file: every write made before a
//! completed sync survives a crash, and any subset of the later ones may. Replaying
//! the log in order on open restores every write up to the last completed sync;
//! writes after it either reached the forum file or did not, which redb's own commit
//! checksums already handle. A torn record (a crash during its write) fails its
//! checksum and ends the replay; its commit never returned.
//!
//! Log layout: a 4 KiB header (magic, generation salt, CRC), then records. A record
//! is a 32-byte head (magic, CRC of the rest, salt, sequence number, body length) and
//! a body of entries: `1 ‖ offset ‖ length ‖ n ‖ n bytes` (a write of `length`
//! bytes whose bytes after the first `n` are zeros) or `2 ‖ length` (a length
//! change). Records of an older generation carry an older salt and are never
//! replayed.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::ops::Bound;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

const FILE_MAGIC: &[u8; 16] = b"parley page log1";
const RECORD_MAGIC: u32 = 0x504C_5247;
/// The log's header block; records start after it.
const HEADER: u64 = 4096;
const HEAD_LEN: usize = 32;
/// A write: `1 ‖ offset ‖ length ‖ n ‖ its first n bytes`, the rest zeros. redb's
/// pages are built in zeroed buffers and are seldom full, so this about halves a
/// commit's record.
const WRITE: u8 = 1;
const SET_LEN: u8 = 2;
/// Once the log passes this size, the sync that passed it also checkpoints.
const LOG_LIMIT: u64 = 64 << 20;
/// Writes held for the next sync beyond this size are checkpointed at once, so a
/// large transaction cannot hold an unbounded copy of its pages.
const PENDING_LIMIT: usize = 16 << 20;
/// The overlay's page: redb's own page size, so a commit's writes map onto whole pages.
const PAGE: u64 = 4096;
/// Overlay pages before a checkpoint (16 MiB).
const OVERLAY_LIMIT: usize = 4096;
/// The log grows by zero-filled steps: a sync that does not change the log's
/// length is a data-only flush.
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
    let salt = read_header(&file)?;
    if let Some(salt) = salt {
        let main = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if replay(&file, &main, salt)? > 0 {
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
        file,
        salt: u64::from_le_bytes(random) >> 1,
    })
}

fn header_bytes(salt: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER as usize);
    h.extend_from_slice(FILE_MAGIC);
    h.extend_from_slice(&salt.to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h.resize(HEADER as usize, 0);
    h
}

/// The salt of the log's current generation, or `None` for a new or torn header
/// (a header is only rewritten after a checkpoint, so no record then needs replay).
fn read_header(file: &File) -> io::Result<Option<u64>> {
    let mut h = [0u8; 28];
    if file.metadata()?.len() < HEADER {
        return Ok(None);
    }
    file.read_exact_at(&mut h, 0)?;
    let crc = u32::from_le_bytes(h[24..28].try_into().expect("4 bytes"));
    if &h[..16] != FILE_MAGIC || crc32fast::hash(&h[..24]) != crc {
        return Ok(None);
    }
    Ok(Some(u64::from_le_bytes(
        h[16..24].try_into().expect("8 bytes"),
    )))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Applies the valid records of generation `salt` in order; returns how many.
fn replay(log: &File, main: &File, salt: u64) -> io::Result<u64> {
    let len = log.metadata()?.len();
    let (mut pos, mut seq) = (HEADER, 0u64);
    while pos + HEAD_LEN as u64 <= len {
        let mut head = [0u8; HEAD_LEN];
        log.read_exact_at(&mut head, pos)?;
        let magic = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
        let body_len = u64_at(&head, 24);
        if magic != RECORD_MAGIC
            || u64_at(&head, 8) != salt
            || u64_at(&head, 16) != seq
            || body_len > len - pos - HEAD_LEN as u64
        {
            break;
        }
        let mut body = vec![0u8; body_len as usize];
        log.read_exact_at(&mut body, pos + HEAD_LEN as u64)?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&head[8..]);
        hasher.update(&body);
        if hasher.finalize() != crc {
            break;
        }
        let Some(entries) = parse(&body) else { break };
        for entry in entries {
            match entry {
                Entry::Write(offset, bytes, zeros) => {
                    main.write_all_at(bytes, offset)?;
                    main.write_all_at(&vec![0u8; zeros], offset + bytes.len() as u64)?;
                }
                Entry::SetLen(n) => main.set_len(n)?,
            }
        }
        pos += HEAD_LEN as u64 + body_len;
        seq += 1;
    }
    Ok(seq)
}

enum Entry<'a> {
    /// Offset, bytes, and how many zeros follow them.
    Write(u64, &'a [u8], usize),
    SetLen(u64),
}

/// How much of `data` is left once its trailing zeros are cut.
fn without_zero_tail(data: &[u8]) -> usize {
    let mut end = data.len();
    while end >= 8 && data[end - 8..end] == [0u8; 8] {
        end -= 8;
    }
    while end > 0 && data[end - 1] == 0 {
        end -= 1;
    }
    end
}

/// The entries of a record body, or `None` when it does not parse whole.
fn parse(mut body: &[u8]) -> Option<Vec<Entry<'_>>> {
    let mut out = Vec::new();
    while let Some((&tag, rest)) = body.split_first() {
        match tag {
            WRITE if rest.len() >= 24 => {
                let offset = u64_at(rest, 0);
                let len = usize::try_from(u64_at(rest, 8)).ok()?;
                let n = usize::try_from(u64_at(rest, 16)).ok()?;
                let bytes = rest.get(24..24usize.checked_add(n)?)?;
                out.push(Entry::Write(offset, bytes, len.checked_sub(n)?));
                body = &rest[24 + n..];
            }
            SET_LEN if rest.len() >= 8 => {
                out.push(Entry::SetLen(u64_at(rest, 0)));
                body = &rest[8..];
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A durable forum file and its log, behind redb (as [`Shared`]).
///
/// redb calls `sync_data` at the end of each commit, under its write lock. Here
/// that appends the commit's record to the log without waiting for the disk, so the
/// next transaction can start at once; [`LoggedFile::wait_durable`] then syncs the
/// log (one sync serving every record written before it) and whoever needs the
/// commit on disk — a poster before its success, a reader before it sees the
/// commit — waits for it there. A record is replayed only after every earlier one,
/// so a crash loses a suffix of commits, never one in the middle, and the forum
/// file is touched only after every record is synced.
#[derive(Debug)]
pub(super) struct LoggedFile {
    main: FileBackend,
    log: File,
    state: Mutex<State>,
    synced: Mutex<Synced>,
    /// Signalled when a log sync ends.
    sync_done: Condvar,
}

#[derive(Debug)]
struct State {
    /// The next record: its head's room, then the entries written since the last sync.
    pending: Vec<u8>,
    salt: u64,
    seq: u64,
    /// Where the next record goes.
    end: u64,
    /// The log file's length.
    allocated: u64,
    /// Commits so far (records appended, or folded into a checkpoint).
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
    /// The most commits a running sync will make durable.
    covering: u64,
    /// A write or sync failed: nothing more becomes durable.
    failed: bool,
}

fn broken() -> io::Error {
    io::Error::other("an earlier write to the forum's log failed; reopen the forum")
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
            state: Mutex::new(State {
                pending: vec![0; HEAD_LEN],
                salt: log.salt,
                seq: 0,
                end: HEADER,
                allocated,
                commits: 0,
                pages: HashMap::new(),
                len,
                file_len: len,
                low_water: len,
                broken: false,
            }),
            synced: Mutex::new(Synced::default()),
            sync_done: Condvar::new(),
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

    /// Returns once the first `commits` commits are on disk, syncing the log unless
    /// a sync already running covers them.
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
                // A sync already running covers this commit.
                synced = self
                    .sync_done
                    .wait(synced)
                    .unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // Start a sync now rather than queue behind one that started before this
            // commit's record was written: the disk takes both at once.
            drop(synced);
            // Every record counted here was written before this sync starts.
            let target = self.lock().commits;
            synced = self.lock_synced();
            synced.covering = synced.covering.max(target);
            drop(synced);
            let outcome = self.log.sync_data();
            if outcome.is_err() {
                self.lock().broken = true;
            }
            synced = self.lock_synced();
            match outcome {
                Ok(()) => synced.durable = synced.durable.max(target),
                Err(_) => synced.failed = true,
            }
            self.sync_done.notify_all();
            outcome?;
        }
    }

    /// Starts a new generation: a fresh header with the next salt, synced. Only
    /// called when every write so far is synced in the forum file.
    fn reset(&self, state: &mut State) -> io::Result<()> {
        state.salt += 1;
        state.seq = 0;
        state.end = HEADER;
        state.pending.truncate(HEAD_LEN);
        self.log.write_all_at(&header_bytes(state.salt), 0)?;
        self.log.sync_data()
    }

    /// Makes every write so far durable in the forum file and empties the log. The
    /// log is synced first, with the pending writes in it: a crash during the
    /// checkpoint replays every record over whatever part of it reached the file.
    fn checkpoint(&self, state: &mut State) -> io::Result<()> {
        if state.pending.len() > HEAD_LEN {
            self.append(state)?;
        }
        self.log.sync_data()?;
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
            if !state.pages.contains_key(&n) {
                let mut page = vec![0u8; PAGE as usize].into_boxed_slice();
                if from > page_start || to < page_end {
                    // Partly written: the rest is the file's (zeros past its end).
                    let have = state.len.min(page_end).saturating_sub(page_start) as usize;
                    self.read_file(page_start, &mut page[..have], state)?;
                }
                state.pages.insert(n, page);
            }
            let page = state.pages.get_mut(&n).expect("inserted above");
            page[(from - page_start) as usize..(to - page_start) as usize]
                .copy_from_slice(&data[(from - offset) as usize..(to - offset) as usize]);
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

    /// Writes the pending entries to the log as the next record, without syncing.
    fn append(&self, state: &mut State) -> io::Result<()> {
        let body_len = (state.pending.len() - HEAD_LEN) as u64;
        let record_len = HEAD_LEN as u64 + body_len;
        let head = &mut state.pending[..HEAD_LEN];
        head[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
        head[8..16].copy_from_slice(&state.salt.to_le_bytes());
        head[16..24].copy_from_slice(&state.seq.to_le_bytes());
        head[24..32].copy_from_slice(&body_len.to_le_bytes());
        let crc = crc32fast::hash(&state.pending[8..]);
        state.pending[4..8].copy_from_slice(&crc.to_le_bytes());
        if state.end + record_len > state.allocated {
            let target = (state.end + record_len).div_ceil(GROW_STEP) * GROW_STEP;
            let zeros = vec![0u8; (target - state.allocated) as usize];
            self.log.write_all_at(&zeros, state.allocated)?;
            state.allocated = target;
        }
        self.log.write_all_at(&state.pending, state.end)?;
        state.end += record_len;
        state.seq += 1;
        state.pending.truncate(HEAD_LEN);
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
                self.append(state)?;
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
mod tests {
    use super::*;

    fn open_pair(dir: &Path) -> (PathBuf, Shared) {
        let path = dir.join("forum.redb");
        let log = recover(&path).unwrap();
        let main = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap();
        (
            path.clone(),
            Shared(Arc::new(LoggedFile::new(main, log).unwrap())),
        )
    }

    /// A commit as the store makes it: redb's sync, then the wait for the disk.
    fn commit(b: &Shared) {
        b.sync_data().unwrap();
        b.wait_durable(b.commits()).unwrap();
    }

    fn read(b: &Shared, offset: u64, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        b.read(offset, &mut out).unwrap();
        out
    }

    /// A "crash": the backend goes away without `close`, so its overlay never
    /// reaches the forum file; only synced log records can bring writes back.
    fn crash(b: Shared) {
        drop(b);
    }

    #[test]
    fn synced_writes_come_back_from_the_log_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (path, b) = open_pair(dir.path());
        b.set_len(4 * PAGE).unwrap();
        b.write(0, &[1; 320]).unwrap();
        b.write(PAGE, &[2; PAGE as usize]).unwrap();
        commit(&b);
        b.write(2 * PAGE + 100, &[3; 50]).unwrap();
        commit(&b);
        b.write(3 * PAGE, &[9; 10]).unwrap(); // never synced
        assert_eq!(read(&b, 2 * PAGE + 90, 20)[10..], [3; 10]);
        crash(b);
        // Nothing reached the forum file, not even its length.
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);

        let (_, b) = open_pair(dir.path());
        assert_eq!(b.len().unwrap(), 4 * PAGE);
        assert_eq!(read(&b, 0, 320), vec![1; 320]);
        assert_eq!(read(&b, 320, 10), vec![0; 10]);
        assert_eq!(read(&b, PAGE, PAGE as usize), vec![2; PAGE as usize]);
        assert_eq!(read(&b, 2 * PAGE + 100, 50), vec![3; 50]);
        assert_eq!(
            read(&b, 3 * PAGE, 10),
            vec![0; 10],
            "an unsynced write is lost"
        );
    }

    #[test]
    fn a_torn_record_ends_the_replay() {
        let dir = tempfile::tempdir().unwrap();
        let (path, b) = open_pair(dir.path());
        b.set_len(2 * PAGE).unwrap();
        b.write(0, &[1; 8]).unwrap();
        commit(&b);
        b.write(8, &[2; 8]).unwrap();
        commit(&b);
        b.write(16, &[3; 8]).unwrap();
        commit(&b);
        crash(b);
        // Tear the last record: one flipped byte in its body.
        let log = log_path(&path);
        let mut bytes = std::fs::read(&log).unwrap();
        let mut third = HEADER as usize;
        for _ in 0..2 {
            third += HEAD_LEN + u64_at(&bytes, third + 24) as usize;
        }
        bytes[third + HEAD_LEN + 20] ^= 0xff;
        std::fs::write(&log, &bytes).unwrap();

        let (_, b) = open_pair(dir.path());
        assert_eq!(read(&b, 0, 24), [[1u8; 8], [2; 8], [0; 8]].concat());
    }

    #[test]
    fn records_of_an_older_generation_are_never_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let (path, b) = open_pair(dir.path());
        b.set_len(PAGE).unwrap();
        b.write(0, &[5; 16]).unwrap();
        commit(&b);
        b.close().unwrap(); // checkpoint: the file has it, the log starts over
        assert_eq!(&std::fs::read(&path).unwrap()[..16], &[5; 16]);
        // Overwrite the file behind the log's back: an old record replayed would
        // bring back 5s.
        let main = OpenOptions::new().write(true).open(&path).unwrap();
        main.write_all_at(&[7; 16], 0).unwrap();
        drop(main);
        drop(b);
        let (_, b) = open_pair(dir.path());
        assert_eq!(read(&b, 0, 16), vec![7; 16]);
    }

    #[test]
    fn the_overlay_reads_like_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (_, b) = open_pair(dir.path());
        b.set_len(3 * PAGE).unwrap();
        // A write across a page boundary, partly over the file's zeros.
        b.write(PAGE - 4, &[4; 8]).unwrap();
        assert_eq!(
            read(&b, PAGE - 8, 16),
            [[0u8; 4].as_slice(), &[4; 8], &[0; 4]].concat()
        );
        assert!(b.read(3 * PAGE - 4, &mut [0; 8]).is_err(), "past the end");
        // Shrink then grow: what was cut reads as zeros again.
        b.write(2 * PAGE, &[6; PAGE as usize]).unwrap();
        b.set_len(2 * PAGE + 10).unwrap();
        b.set_len(3 * PAGE).unwrap();
        assert_eq!(
            read(&b, 2 * PAGE, 12),
            [[6u8; 10].as_slice(), &[0; 2]].concat()
        );
        commit(&b);
        b.close().unwrap();
        drop(b);
        let (path, b) = open_pair(dir.path());
        assert_eq!(read(&b, PAGE - 4, 8), vec![4; 8]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 3 * PAGE);
        assert_eq!(read(&b, 2 * PAGE + 8, 4), [6, 6, 0, 0]);
    }

    #[test]
    fn a_second_handle_is_refused_before_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _held) = open_pair(dir.path());
        let err = recover(&path).err().expect("the log is locked");
        assert!(err.to_string().contains("already open"), "{err}");
    }

    #[test]
    fn a_large_transaction_checkpoints_instead_of_growing_memory() {
        let dir = tempfile::tempdir().unwrap();
        let (path, b) = open_pair(dir.path());
        let pages = OVERLAY_LIMIT as u64 + 10;
        b.set_len(pages * PAGE).unwrap();
        for n in 0..pages {
            b.write(n * PAGE, &[(n % 251) as u8; PAGE as usize])
                .unwrap();
        }
        assert!(b.lock().pages.len() < OVERLAY_LIMIT);
        // The checkpointed pages are in the file; the rest come with the next sync.
        commit(&b);
        crash(b);
        let (_, b) = open_pair(dir.path());
        for n in [0, pages / 2, pages - 1] {
            assert_eq!(read(&b, n * PAGE, 4), vec![(n % 251) as u8; 4], "page {n}");
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), pages * PAGE);
    }

    #[test]
    fn a_cut_and_regrown_file_reads_zeros_where_it_was_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (_, b) = open_pair(dir.path());
        b.set_len(3 * PAGE).unwrap();
        b.write(0, &[8; 3 * PAGE as usize]).unwrap();
        commit(&b);
        b.close().unwrap();
        drop(b);
        // The three pages are in the file now; cut to one and grow back.
        let (_, b) = open_pair(dir.path());
        b.set_len(PAGE + 1).unwrap();
        b.set_len(3 * PAGE).unwrap();
        let expect = [vec![8u8; PAGE as usize + 1], vec![0; 2 * PAGE as usize - 1]].concat();
        assert_eq!(read(&b, 0, 3 * PAGE as usize), expect);
        commit(&b);
        crash(b);
        let (path, b) = open_pair(dir.path());
        assert_eq!(read(&b, 0, 3 * PAGE as usize), expect, "after replay");
        b.close().unwrap();
        drop(b);
        assert_eq!(std::fs::read(&path).unwrap(), expect, "after a checkpoint");
    }

    #[test]
    fn commits_are_counted_and_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let (_, b) = open_pair(dir.path());
        assert_eq!(b.commits(), 0);
        b.wait_durable(0).unwrap();
        b.set_len(PAGE).unwrap();
        b.write(0, &[1; 8]).unwrap();
        b.sync_data().unwrap();
        b.sync_data().unwrap(); // nothing new: still a commit boundary
        assert_eq!(b.commits(), 2);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| b.wait_durable(2).unwrap());
            }
        });
        assert!(b.lock_synced().durable >= 2);
    }

    #[test]
    fn zero_tails_are_cut_and_written_back_as_zeros() {
        assert_eq!(without_zero_tail(&[0; 16]), 0);
        assert_eq!(without_zero_tail(&[1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0]), 3);
        assert_eq!(without_zero_tail(&[5; 9]), 9);
        let dir = tempfile::tempdir().unwrap();
        let (_, b) = open_pair(dir.path());
        b.set_len(PAGE).unwrap();
        b.write(0, &[9; PAGE as usize]).unwrap();
        commit(&b);
        b.close().unwrap();
        drop(b);
        // The file holds 9s; a page that is mostly zeros replaces it.
        let (_, b) = open_pair(dir.path());
        let mut page = vec![0u8; PAGE as usize];
        page[..10].fill(4);
        b.write(0, &page).unwrap();
        commit(&b);
        let record = b.lock().end - HEADER;
        assert!(
            record < 200,
            "the zeros stay out of the log: {record} bytes"
        );
        crash(b);
        let (_, b) = open_pair(dir.path());
        assert_eq!(read(&b, 0, PAGE as usize), page);
    }
}

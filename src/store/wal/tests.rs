//! The page log's tests. Each scenario runs twice: with the log written by direct
//! I/O where the file system allows it, and written through the page cache.

use super::format::u64_at;
use super::*;
use std::cell::Cell;
use std::os::unix::fs::FileExt;

thread_local! {
    /// Whether [`open_pair`] writes the log through the page cache.
    static BUFFERED: Cell<bool> = const { Cell::new(false) };
}

/// One `#[test]` per scenario, in a module per way of writing the log.
macro_rules! in_mode {
    ($mode:ident, $buffered:expr, $($name:ident),*) => {
        mod $mode {
            $(#[test]
            fn $name() {
                super::BUFFERED.set($buffered);
                super::$name();
            })*
        }
    };
}

macro_rules! in_both_modes {
    ($($name:ident),* $(,)?) => {
        in_mode!(direct, false, $($name),*);
        in_mode!(buffered, true, $($name),*);
    };
}

in_both_modes!(
    synced_writes_come_back_from_the_log_alone,
    a_torn_record_ends_the_replay,
    records_of_an_older_generation_are_never_replayed,
    the_overlay_reads_like_the_file,
    a_second_handle_is_refused_before_it_writes,
    a_large_transaction_checkpoints_instead_of_growing_memory,
    a_cut_and_regrown_file_reads_zeros_where_it_was_cut,
    commits_are_counted_and_waited_for,
    zero_tails_are_cut_and_written_back_as_zeros,
);

fn open_pair(dir: &Path) -> (PathBuf, Shared) {
    let path = dir.join("forum.redb");
    let mut log = recover(&path).unwrap();
    if BUFFERED.get() {
        log.sink = Sink::Buffered;
    }
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
        third += (HEAD_LEN + u64_at(&bytes, third + 24) as usize).next_multiple_of(4096);
    }
    bytes[third + HEAD_LEN + 20] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();

    let (_, b) = open_pair(dir.path());
    assert_eq!(read(&b, 0, 24), [[1u8; 8], [2; 8], [0; 8]].concat());
}

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

fn a_second_handle_is_refused_before_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _held) = open_pair(dir.path());
    let err = recover(&path).err().expect("the log is locked");
    assert!(err.to_string().contains("already open"), "{err}");
}

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

fn zero_tails_are_cut_and_written_back_as_zeros() {
    assert_eq!(without_zero_tail(&[0; 16]), 0);
    assert_eq!(without_zero_tail(&[1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0]), 3);
    assert_eq!(without_zero_tail(&[5; 9]), 9);
    for last in [0, 62, 63, 64, 65, 127, 128, 1000, 4095] {
        let mut page = vec![0u8; 4096];
        page[last] = 1;
        assert_eq!(
            without_zero_tail(&page),
            last + 1,
            "last non-zero at {last}"
        );
    }
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
    let log = std::fs::read(log_path(&dir.path().join("forum.redb"))).unwrap();
    let record = u64_at(&log, HEADER as usize + 24);
    assert!(
        record < 200,
        "the zeros stay out of the log: {record} bytes"
    );
    crash(b);
    let (_, b) = open_pair(dir.path());
    assert_eq!(read(&b, 0, PAGE as usize), page);
}

#[test]
fn a_log_write_is_durable_only_once_every_earlier_one_is() {
    let mut synced = Synced::default();
    let first = synced.start(3);
    let second = synced.start(5);
    let third = synced.start(6);
    assert_eq!(synced.covering, 6);
    synced.done(second);
    synced.done(third);
    assert_eq!(synced.durable, 0, "the first write is still under way");
    synced.done(first);
    assert_eq!(synced.durable, 6);
    assert!(synced.writes.is_empty());
    let fourth = synced.start(7);
    assert_eq!(fourth, 3, "numbers go on across the queue");
    synced.done(fourth);
    assert_eq!(synced.durable, 7);
}

#[test]
fn a_version_1_log_without_padding_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    // Two records back to back, as version 1 wrote them.
    let salt = 77u64;
    let mut log = b"parley page log1".to_vec();
    log.extend_from_slice(&salt.to_le_bytes());
    let crc = crc32fast::hash(&log);
    log.extend_from_slice(&crc.to_le_bytes());
    log.resize(HEADER as usize, 0);
    for (seq, byte) in [(0u64, 1u8), (1, 2)] {
        let mut record = vec![0u8; HEAD_LEN];
        if seq == 0 {
            record.push(SET_LEN);
            record.extend_from_slice(&PAGE.to_le_bytes());
        }
        record.push(WRITE);
        record.extend_from_slice(&(seq * 8).to_le_bytes());
        record.extend_from_slice(&8u64.to_le_bytes());
        record.extend_from_slice(&8u64.to_le_bytes());
        record.extend_from_slice(&[byte; 8]);
        format::seal(&mut record, salt, seq);
        log.extend_from_slice(&record);
    }
    std::fs::write(log_path(&path), &log).unwrap();

    let (_, b) = open_pair(dir.path());
    assert_eq!(b.len().unwrap(), PAGE);
    assert_eq!(read(&b, 0, 16), [[1u8; 8], [2; 8]].concat());
}

#[test]
fn a_failed_log_write_fails_its_waiters_and_the_checkpoint_waiting_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = open_pair(dir.path());
    b.set_len(PAGE).unwrap();
    b.write(0, &[1; 8]).unwrap();
    b.sync_data().unwrap();
    *b.fail_writes_after.lock().unwrap() = Some(std::time::Duration::from_millis(150));
    std::thread::scope(|s| {
        let waiter = s.spawn(|| b.wait_durable(1));
        // Let the waiter's write get under way, then close: the checkpoint waits
        // for that write, which fails, and must then fail rather than wait forever.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(b.close().is_err(), "the checkpoint heard of the failure");
        assert!(
            waiter.join().unwrap().is_err(),
            "the commit never became durable"
        );
    });
    assert!(b.sync_data().is_err(), "broken until the forum is reopened");
    assert!(b.wait_durable(1).is_err());
}

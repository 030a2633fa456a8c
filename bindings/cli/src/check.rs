//! `parley check PATH`: an offline look at a closed forum file that writes nothing.
//!
//! redb checks a database only when it may write to it (its integrity check can
//! repair, and opening a file marks it in use). So the file is opened read-only,
//! refused when it is missing, empty or not redb's, and otherwise copied into a
//! private temporary directory, where the check runs; the copy is removed
//! afterwards. While the copy is made, a shared lock on the file keeps a forum
//! from opening it for writing, and a file some process holds open as a forum is
//! refused rather than copied half-written.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use parley_forum::storage::{check, held_open, CheckReport};

use crate::terminal::visible;
use crate::{CmdResult, Failure};

/// Why a file some process holds open as a forum is not checked.
const HELD: &str = "a process holds it open as a forum (a running `parley serve`?); check it \
                    once that process has stopped";

/// The first bytes of every redb file.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// Prints what the check found; fails (exit 1) unless the forum is sound.
pub(crate) fn run(path: &Path) -> CmdResult {
    let shown = path.display().to_string();
    let refuse = |why: String| Failure::Other(format!("cannot check {shown}: {why}"));
    let mut file = File::open(path).map_err(|e| refuse(e.to_string()))?;
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".into()));
    }
    if meta.len() == 0 {
        return Err(refuse(
            "it is empty, not a forum (left untouched; `parley token create` starts one)".into(),
        ));
    }
    let mut head = [0u8; REDB_MAGIC.len()];
    let magic = file.read_exact(&mut head).is_ok() && head == REDB_MAGIC;
    if !magic {
        return Err(refuse(
            "it is not a Parley forum (not a redb file); left untouched".into(),
        ));
    }
    match file.try_lock_shared() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(refuse(HELD.into())),
        Err(TryLockError::Error(e)) => return Err(refuse(format!("cannot lock it: {e}"))),
    }
    // The lock keeps a forum from opening the file from now on; one already open
    // holds redb's own locks, which only redb can see.
    if held_open(path).map_err(|e| refuse(e.to_string()))? {
        return Err(refuse(HELD.into()));
    }
    let report = check_copy(path, &mut file)?;
    // The copy's size is the file's; its permissions are the copy's own.
    let mut report = report;
    report.mode = meta.permissions().mode() & 0o7777;
    print!("{}", visible(&describe(path, &report)));
    if report.ok() {
        Ok(())
    } else {
        Err(Failure::Other(format!(
            "{shown} is damaged (see above); restore it from a backup, or copy it aside before \
             opening it again"
        )))
    }
}

/// Copies the locked `file` (and a page log of an earlier version beside it, which
/// an open would look at) into a private temporary directory and checks the copy.
/// What the check says names `path`, not the copy.
fn check_copy(path: &Path, file: &mut File) -> Result<CheckReport, Failure> {
    let shown = path.display().to_string();
    let dir = tempfile::Builder::new()
        .prefix("parley-check-")
        .tempdir()
        .map_err(|e| {
            Failure::Other(format!(
                "cannot check {shown}: no private temporary directory for its copy ({e}); \
                 set TMPDIR to a directory with room"
            ))
        })?;
    let copy = dir.path().join("forum.redb");
    let copied = copy_into(file, &copy).and_then(|()| {
        let mut log = path.as_os_str().to_owned();
        log.push("-wal");
        match File::open(&log) {
            Ok(mut log) => copy_into(&mut log, &dir.path().join("forum.redb-wal")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    });
    copied.map_err(|e| {
        Failure::Other(format!(
            "cannot check {shown}: copying it into {} failed ({e}); set TMPDIR to a \
             directory with room",
            dir.path().display()
        ))
    })?;
    let copy_shown = copy.display().to_string();
    check(&copy).map_err(|e| Failure::Other(e.to_string().replace(&copy_shown, &shown)))
}

/// Copies `from` whole into a new file `to`, readable by its owner only.
fn copy_into(from: &mut File, to: &Path) -> io::Result<()> {
    from.rewind()?;
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)?;
    io::copy(from, &mut out)?;
    Ok(())
}

fn describe(path: &Path, r: &CheckReport) -> String {
    let mut out = format!(
        "{}: a Parley forum, schema version {}, {} bytes\n",
        path.display(),
        r.schema_version,
        r.bytes
    );
    out.push_str(if r.sound {
        "  pages: sound (every page passed redb's checksum)\n"
    } else {
        "  pages: DAMAGED (pages failed redb's checksums; the file itself was not changed)\n"
    });
    out.push_str(&format!(
        "  records: {} threads, {} messages, {} claims, {} events, {} identities, {} tokens\n",
        r.threads, r.messages, r.claims, r.events, r.identities, r.tokens
    ));
    if r.unreadable.is_empty() {
        out.push_str("  every thread and message record reads\n");
    } else {
        out.push_str(&format!("  {} records do not read:\n", r.unreadable.len()));
        for what in r.unreadable.iter().take(20) {
            out.push_str(&format!("    {what}\n"));
        }
    }
    if r.mode & 0o077 != 0 {
        out.push_str(&format!(
            "  note: other users may read it (mode {:o}); `chmod 600` makes it private\n",
            r.mode
        ));
    }
    out
}

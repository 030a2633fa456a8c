//! Opening a forum file without harming a file that is not ours.
//!
//! Before redb sees a file, this module decides whether it may: an existing file
//! must be a regular file that starts with redb's magic number (or be empty), and
//! a new one is created exclusively, readable by its owner only, with its directory
//! synced so the new name survives a power cut. Nothing is written, truncated or
//! created beside the forum file: a `<forum>-wal` is SQLite's name, and a log of an
//! earlier Parley found under it is only read, never replayed or cut.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The first bytes of every redb file.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// A forum file's mode when Parley creates it: messages are private to its owner.
const MODE: u32 = 0o600;

/// How the forum file was found.
pub(super) enum Opened {
    /// It existed (a redb file, or empty).
    Existing(File),
    /// This call created it.
    Created(File),
}

impl Opened {
    pub(super) fn into_file(self) -> File {
        match self {
            Opened::Existing(f) | Opened::Created(f) => f,
        }
    }
}

fn cannot_open(path: &Path, e: io::Error) -> Error {
    Error::storage_caused_by(format!("cannot open {}: {e}", path.display()), e)
}

fn not_a_forum(path: &Path, why: &str) -> Error {
    Error::NotAForum(format!(
        "{} {why}; Parley left it untouched",
        path.display()
    ))
}

/// Opens the forum file at `path` for reading and writing, creating it (mode 0600)
/// when `create` is set and it does not exist. Refuses, before writing anything, a
/// path that is not a regular file or a file that is neither empty nor redb's.
pub(super) fn open(path: &Path, create: bool) -> Result<Opened> {
    refuse_legacy_log(path)?;
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(not_a_forum(path, "is not a regular file"));
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            return create_new(path);
        }
        Err(e) => return Err(cannot_open(path, e)),
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| cannot_open(path, e))?;
    check_magic(path, &file)?;
    Ok(Opened::Existing(file))
}

/// Opens an existing forum file for reading only, after the same checks as [`open`].
pub(super) fn open_read_only(path: &Path) -> Result<File> {
    refuse_legacy_log(path)?;
    let file = File::open(path).map_err(|e| cannot_open(path, e))?;
    if !file.metadata().map_err(|e| cannot_open(path, e))?.is_file() {
        return Err(not_a_forum(path, "is not a regular file"));
    }
    check_magic(path, &file)?;
    Ok(file)
}

fn check_magic(path: &Path, file: &File) -> Result<()> {
    let len = file.metadata().map_err(|e| cannot_open(path, e))?.len();
    if len == 0 {
        return Ok(());
    }
    let mut head = [0u8; REDB_MAGIC.len()];
    let mut reader = file;
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(cannot_open(path, e)),
        }
    }
    if got < head.len() || head != REDB_MAGIC {
        return Err(not_a_forum(path, "is not a Parley forum (not a redb file)"));
    }
    Ok(())
}

fn create_new(path: &Path) -> Result<Opened> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(MODE)
        .open(path);
    let file = match file {
        Ok(file) => file,
        // Created by someone else since we looked: open it as an existing file.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return open(path, false),
        Err(e) => return Err(cannot_open(path, e)),
    };
    sync_dir(path).map_err(|e| {
        let why = format!("cannot open {}: syncing its directory: {e}", path.display());
        Error::storage_caused_by(why, e)
    })?;
    Ok(Opened::Created(file))
}

/// Syncs the directory holding `path`, so that a file just created there keeps its
/// name after a power cut.
fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    File::open(dir)?.sync_all()
}

/// The name earlier Parley versions gave their page log (SQLite's convention too).
pub(super) fn legacy_log_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push("-wal");
    PathBuf::from(name)
}

/// The log header of earlier versions: a 16-byte magic, a salt, a CRC-32.
const LEGACY_MAGICS: [&[u8; 16]; 2] = [b"parley page log1", b"parley page log2"];
const LEGACY_HEADER: u64 = 4096;
const LEGACY_RECORD_MAGIC: u32 = 0x504C_5247;

/// Refuses to open a forum whose `-wal` is a page log of an earlier Parley that still
/// holds commits (a crash before its last checkpoint): this version does not replay
/// it, and opening without it would hide acknowledged posts. The file is only read.
/// Any other `-wal` (SQLite's, say) is not ours and is not even read past its magic.
fn refuse_legacy_log(path: &Path) -> Result<()> {
    let log = legacy_log_path(path);
    let Ok(file) = File::open(&log) else {
        return Ok(());
    };
    match legacy_commits(&file) {
        Ok(false) | Err(_) => Ok(()),
        Ok(true) => Err(Error::storage(format!(
            "{} is a page log of an earlier Parley version that still holds commits not \
             in {}; this version does not replay it. Open the forum once with the version \
             that wrote it (it folds the log in on open), or move the log aside to give \
             those commits up. Nothing was changed.",
            log.display(),
            path.display()
        ))),
    }
}

/// Whether `file` is an earlier page log whose current generation has a record.
fn legacy_commits(file: &File) -> io::Result<bool> {
    let mut h = [0u8; 28];
    if file.metadata()?.len() < LEGACY_HEADER + 32 {
        return Ok(false);
    }
    file.read_exact_at(&mut h, 0)?;
    if !LEGACY_MAGICS.iter().any(|m| &h[..16] == *m) {
        return Ok(false);
    }
    let crc = u32::from_le_bytes(h[24..28].try_into().expect("4 bytes"));
    if crc32fast::hash(&h[..24]) != crc {
        return Ok(false);
    }
    let salt = &h[16..24];
    let mut head = [0u8; 32];
    file.read_exact_at(&mut head, LEGACY_HEADER)?;
    let magic = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
    // The first record of the current generation: its magic, salt and number 0.
    Ok(magic == LEGACY_RECORD_MAGIC && &head[8..16] == salt && head[16..24] == [0; 8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_new_file_is_private_to_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        assert!(matches!(open(&path, true).unwrap(), Opened::Created(_)));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_missing_file_is_not_created_without_create() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        assert!(open(&path, false).is_err());
        assert!(open_read_only(&path).is_err());
        assert!(!path.exists());
    }

    #[test]
    fn a_foreign_file_is_refused_and_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, b"hello, not a forum").unwrap();
        let err = open(&path, true).err().unwrap();
        assert!(matches!(err, Error::NotAForum(_)), "{err}");
        assert!(err.to_string().contains("untouched"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"hello, not a forum");
        // Shorter than the magic: refused too.
        std::fs::write(&path, b"re").unwrap();
        assert!(matches!(open(&path, true), Err(Error::NotAForum(_))));
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(dir.path(), true).err().unwrap();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    fn legacy_log(salt: u64, first_record: bool) -> Vec<u8> {
        let mut h = b"parley page log2".to_vec();
        h.extend_from_slice(&salt.to_le_bytes());
        let crc = crc32fast::hash(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        h.resize(LEGACY_HEADER as usize, 0);
        let mut rec = [0u8; 32];
        if first_record {
            rec[0..4].copy_from_slice(&LEGACY_RECORD_MAGIC.to_le_bytes());
            rec[8..16].copy_from_slice(&salt.to_le_bytes());
        }
        h.extend_from_slice(&rec);
        h.resize(2 * LEGACY_HEADER as usize, 0);
        h
    }

    #[test]
    fn an_earlier_log_with_commits_refuses_the_open_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        let log = legacy_log_path(&path);
        let bytes = legacy_log(77, true);
        std::fs::write(&log, &bytes).unwrap();
        let err = open(&path, true).err().unwrap();
        assert!(err.to_string().contains("earlier Parley version"), "{err}");
        assert!(!path.exists(), "nothing was created");
        assert_eq!(std::fs::read(&log).unwrap(), bytes);
    }

    #[test]
    fn an_earlier_log_without_commits_and_a_foreign_wal_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.redb");
        let log = legacy_log_path(&path);
        for bytes in [legacy_log(77, false), vec![0x37; 9000]] {
            std::fs::write(&log, &bytes).unwrap();
            let _ = std::fs::remove_file(&path);
            open(&path, true).unwrap();
            assert_eq!(std::fs::read(&log).unwrap(), bytes);
        }
    }
}

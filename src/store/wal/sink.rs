//! How the log's records reach the disk.
//!
//! Where the platform allows, the log is written with direct I/O and `O_DSYNC`: a
//! write returns once its bytes are on the disk, without passing through the page
//! cache and without a separate `fdatasync` (which would first write back the cached
//! pages, then flush). Direct I/O needs 4 KiB-aligned offsets, lengths and memory,
//! which records and [`Aligned`] provide. Elsewhere, or where the file system
//! refuses direct I/O (tmpfs before Linux 6.6, some network file systems), the log is written through the page cache and synced.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The boundary of direct I/O: records, the header and growth steps are multiples.
pub(super) const ALIGN: usize = 4096;

/// `O_DIRECT | O_DSYNC`, where its values are known (Linux's stable ABI).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const DIRECT_FLAGS: Option<i32> = Some(0o40000 | 0o10000);
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
const DIRECT_FLAGS: Option<i32> = Some(0o200000 | 0o10000);
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
const DIRECT_FLAGS: Option<i32> = None;

/// Bytes starting at a 4 KiB-aligned address, as direct I/O needs. The vector has
/// room for its content to start on the boundary; the start moves with each
/// allocation, so no unsafe code is needed.
#[derive(Debug, Default)]
pub(super) struct Aligned {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        let buf = vec![0u8; capacity + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        Aligned { buf, start, len: 0 }
    }

    /// `len` zeros.
    pub(super) fn zeroed(len: usize) -> Self {
        let mut zeros = Aligned::with_capacity(len);
        zeros.len = len;
        zeros
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The most bytes it holds without growing.
    pub(super) fn capacity(&self) -> usize {
        self.buf.len().saturating_sub(self.start)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    pub(super) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    pub(super) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    fn reserve(&mut self, extra: usize) {
        let needed = self.len + extra;
        if self.start + needed > self.buf.len() {
            let mut grown = Aligned::with_capacity(needed.max(2 * self.len).max(ALIGN));
            grown.extend_from_slice(self.as_slice());
            *self = grown;
        }
    }

    pub(super) fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let at = self.start + self.len;
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    pub(super) fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }

    /// Zeros up to the next multiple of [`ALIGN`].
    pub(super) fn pad(&mut self) {
        let target = self.len.next_multiple_of(ALIGN);
        self.reserve(target - self.len);
        let at = self.start + self.len;
        self.buf[at..self.start + target].fill(0);
        self.len = target;
    }
}

/// The log's writing handle.
#[derive(Debug)]
pub(super) enum Sink {
    /// Opened `O_DIRECT | O_DSYNC`: a write returns once it is on the disk.
    Direct(File),
    /// The log's own handle: a write goes to the page cache and is synced after.
    Buffered,
}

impl Sink {
    /// A direct handle on the log at `path` where the platform has one.
    pub(super) fn open(path: &Path) -> Sink {
        let Some(flags) = DIRECT_FLAGS else {
            return Sink::Buffered;
        };
        match OpenOptions::new()
            .write(true)
            .custom_flags(flags)
            .open(path)
        {
            // Some file systems take the flag and refuse the writes: the log is
            // empty here, so a block of zeros at its start shows which.
            Ok(file) => match file.write_all_at(Aligned::zeroed(ALIGN).as_slice(), 0) {
                Ok(()) => Sink::Direct(file),
                Err(_) => Sink::Buffered,
            },
            // Refused when the file is opened.
            Err(_) => Sink::Buffered,
        }
    }

    /// Writes `bytes` (aligned, when direct) at `at` and returns once they are on
    /// the disk.
    pub(super) fn write_durable(&self, log: &File, bytes: &[u8], at: u64) -> io::Result<()> {
        match self {
            Sink::Direct(file) => file.write_all_at(bytes, at),
            Sink::Buffered => {
                log.write_all_at(bytes, at)?;
                log.sync_data()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_bytes_stay_aligned_as_they_grow() {
        let mut a = Aligned::default();
        assert!(a.is_empty());
        for i in 0..20_000u32 {
            a.push(i as u8);
            assert_eq!(a.as_slice().as_ptr() as usize % ALIGN, 0);
        }
        assert_eq!(a.len(), 20_000);
        assert!(a.capacity() >= a.len());
        assert!(a.as_slice().iter().enumerate().all(|(i, &b)| b == i as u8));
        a.pad();
        assert_eq!(a.len(), 20_480);
        assert!(a.as_slice()[20_000..].iter().all(|&b| b == 0));
        a.truncate(10);
        a.pad();
        assert_eq!(a.len(), ALIGN);
        assert!(
            a.as_slice()[10..].iter().all(|&b| b == 0),
            "padding zeros old bytes"
        );
    }
}

//! The log's bytes: its header, its records, and their replay.
//!
//! Layout: a 4 KiB header (magic, generation salt, CRC), then records. A record is
//! a 32-byte head (magic, CRC of the rest, salt, sequence number, body length) and a
//! body of entries: `1 ‖ offset ‖ length ‖ n ‖ n bytes` (a write of `length` bytes
//! whose bytes after the first `n` are zeros) or `2 ‖ length` (a length change).
//! In a version-2 log each record is padded with zeros to the next 4 KiB, so the log
//! can be written with direct I/O; version 1 (no padding) is still replayed.
//! Records of an older generation carry an older salt and are never replayed.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::sink::ALIGN;

const MAGIC_V1: &[u8; 16] = b"parley page log1";
const MAGIC_V2: &[u8; 16] = b"parley page log2";
const RECORD_MAGIC: u32 = 0x504C_5247;
/// The log's header block; records start after it.
pub(super) const HEADER: u64 = 4096;
pub(super) const HEAD_LEN: usize = 32;
/// A write: `1 ‖ offset ‖ length ‖ n ‖ its first n bytes`, the rest zeros. redb's
/// pages are built in zeroed buffers and are seldom full, so this about halves a
/// commit's record.
pub(super) const WRITE: u8 = 1;
pub(super) const SET_LEN: u8 = 2;

/// The header of a generation: [`HEADER`] bytes.
pub(super) fn header_bytes(salt: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER as usize);
    h.extend_from_slice(MAGIC_V2);
    h.extend_from_slice(&salt.to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h.resize(HEADER as usize, 0);
    h
}

/// The current generation of a log: its salt, and where each record ends (padded
/// or not).
pub(super) struct Generation {
    pub(super) salt: u64,
    padded: bool,
}

/// The log's current generation, or `None` for a new or torn header (a header is
/// only rewritten after a checkpoint, so no record then needs replay).
pub(super) fn read_header(file: &File) -> io::Result<Option<Generation>> {
    let mut h = [0u8; 28];
    if file.metadata()?.len() < HEADER {
        return Ok(None);
    }
    file.read_exact_at(&mut h, 0)?;
    let crc = u32::from_le_bytes(h[24..28].try_into().expect("4 bytes"));
    let padded = match &h[..16] {
        m if m == MAGIC_V2 => true,
        m if m == MAGIC_V1 => false,
        _ => return Ok(None),
    };
    if crc32fast::hash(&h[..24]) != crc {
        return Ok(None);
    }
    Ok(Some(Generation {
        salt: u64_at(&h, 16),
        padded,
    }))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Fills in the head of the record in `record` (its first [`HEAD_LEN`] bytes,
/// reserved, then the body).
pub(super) fn seal(record: &mut [u8], salt: u64, seq: u64) {
    let body_len = (record.len() - HEAD_LEN) as u64;
    record[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    record[8..16].copy_from_slice(&salt.to_le_bytes());
    record[16..24].copy_from_slice(&seq.to_le_bytes());
    record[24..32].copy_from_slice(&body_len.to_le_bytes());
    let crc = crc32fast::hash(&record[8..]);
    record[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Applies the valid records of generation `current` to `main` in order; returns
/// how many.
pub(super) fn replay(log: &File, main: &File, current: &Generation) -> io::Result<u64> {
    let len = log.metadata()?.len();
    let (mut pos, mut seq) = (HEADER, 0u64);
    while pos + HEAD_LEN as u64 <= len {
        let mut head = [0u8; HEAD_LEN];
        log.read_exact_at(&mut head, pos)?;
        let magic = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
        let body_len = u64_at(&head, 24);
        if magic != RECORD_MAGIC
            || u64_at(&head, 8) != current.salt
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
        if current.padded {
            pos = pos.next_multiple_of(ALIGN as u64);
        }
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
pub(super) fn without_zero_tail(data: &[u8]) -> usize {
    let mut end = data.len();
    // 64 bytes at a time first: OR-ing a fixed-size block compiles to a few vector
    // instructions, where a byte loop costs one comparison per byte of a long tail.
    while end >= 64 && data[end - 64..end].iter().fold(0u8, |acc, &b| acc | b) == 0 {
        end -= 64;
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

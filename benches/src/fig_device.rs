//! Figure 21: one durable writer against the device's own rate of small durable
//! writes, in the same directory and the same run.
//!
//! A durable post needs at least one flush of the disk, so the device's rate of
//! 4 KiB writes each followed by `fdatasync` is the physical limit of a single
//! writer: the figure says how far the engine's durable path is from it. The
//! device's file is filled and synced once before the rounds, and the writes then
//! overwrite its 4 KiB blocks in turn, so a sync flushes data, not a file size
//! (redb's durable commits, too, write mostly inside a file already grown).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crate::measure::{median, per_second, rounds};
use crate::report::{Row, Target};
use crate::workload::{open, post_rate, Cast};
use crate::{Res, Sizes};

/// The size of one device write: a page, the unit redb and the kernel write in.
const BLOCK: usize = 4096;
/// The device file's size: the writes cycle through its blocks.
const FILE_BYTES: u64 = 16 << 20;

/// A preallocated file taking one 4 KiB write and one `fdatasync` at a time.
struct Device {
    file: File,
    block: Vec<u8>,
    next: u64,
}

impl Device {
    fn create(path: &Path) -> Res<Device> {
        let err = |e: std::io::Error| format!("device file {}: {e}", path.display());
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(err)?;
        let zeros = vec![0u8; 1 << 20];
        for mb in 0..FILE_BYTES >> 20 {
            file.write_all_at(&zeros, mb << 20).map_err(err)?;
        }
        file.sync_all().map_err(err)?;
        Ok(Device {
            file,
            block: vec![0xa5; BLOCK],
            next: 0,
        })
    }

    /// `count` durable 4 KiB writes; returns writes per second.
    fn write_rate(&mut self, count: usize) -> Res<f64> {
        let start = Instant::now();
        for _ in 0..count {
            let at = (self.next * BLOCK as u64) % FILE_BYTES;
            // A different first byte each time: no layer below can skip the write.
            self.block[0] = self.next as u8;
            self.file
                .write_all_at(&self.block, at)
                .and_then(|()| self.file.sync_data())
                .map_err(|e| format!("device write: {e}"))?;
            self.next += 1;
        }
        Ok(per_second(start.elapsed(), count))
    }
}

/// Figure 21: durable posts/s of one writer (figure 1's workload) against durable
/// 4 KiB writes/s, alternating repetitions of the same count.
pub fn device(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let forum = open(&dir.join("durable.redb"), true)?;
    let cast = Cast::new(&forum, 1, 64)?;
    let mut device = Device::create(&dir.join("device.bin"))?;
    let n = sizes.single_posts;
    // Warm-up: file growth and first-touch costs land outside the measured rounds.
    post_rate(&forum, &cast, &cast.batch(1, n / 10 + 1))?;
    device.write_rate(n / 10 + 1)?;
    let mut m_post = || post_rate(&forum, &cast, &cast.batch(1, n));
    let mut m_device = || device.write_rate(n);
    let series = rounds(sizes.reps, &mut [&mut m_post, &mut m_device])?;
    Ok(Row::new(
        "21",
        "durable posts/s, 1 writer",
        "the device: 4 KiB write + fdatasync, same directory",
        "posts/s",
        Target::None,
    )
    .measured(median(&series[0]), Some(median(&series[1])))
    .with_detail(json!({
        "per_rep": n,
        "reps": sizes.reps,
        "block_bytes": BLOCK,
        "device_file_bytes": FILE_BYTES,
        "series": series,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_writes_its_blocks_in_turn_and_wraps() {
        let dir = tempfile::tempdir().unwrap();
        let mut device = Device::create(&dir.path().join("d")).unwrap();
        assert!(device.write_rate(3).unwrap() > 0.0);
        assert_eq!(device.next, 3);
        let mut first = [0u8; 2];
        device.file.read_exact_at(&mut first, 0).unwrap();
        assert_eq!(first, [0x00, 0xa5]);
        // One lap later, block 7 again: the write lands at 7 × 4 KiB.
        device.next = FILE_BYTES / BLOCK as u64 + 7;
        device.write_rate(1).unwrap();
        device
            .file
            .read_exact_at(&mut first, 7 * BLOCK as u64)
            .unwrap();
        assert_eq!(first, [((FILE_BYTES / BLOCK as u64 + 7) % 256) as u8, 0xa5]);
        let len = device.file.metadata().unwrap().len();
        assert_eq!(len, FILE_BYTES, "the writes stay inside the file");
    }
}

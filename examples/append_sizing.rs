//! Sizes, on redb alone, a file layout that figures 2 and 4 of `parley-bench` point
//! to (`docs/decisions/0009-appending-layout-not-built.md`): a post's message and
//! thread record appended under its id, and moved to their thread's place in
//! bulk every 512 posts, against today's layout, where each post writes into its
//! thread's leaf of `messages`.
//!
//! ```sh
//! cargo run --release --example append_sizing -- volatile 1 20000
//! cargo run --release --example append_sizing -- durable 1 1500
//! cargo run --release --example append_sizing -- durable 8 8000
//! ```
//!
//! The arguments: the durability of the commits, the posts per commit (a batch of
//! the group commit), and the measured posts per series. Each round runs three
//! series on fresh files in the temporary directory: a raw 600-byte insert (the
//! baseline of figures 1 and 4), today's writes (a 500-byte message under
//! `(thread, id)` with a 200-byte thread record beside it, and the message's entry in
//! the map's block under `id / 64`) and the appending writes (the map's entry, and
//! 700 bytes under `id`, moved every 512 posts). Posts go to 64 threads. It prints
//! µs per post and each layout's ratio to the raw insert.
//!
//! A fourth argument, `raw`, `today` or `appending`, runs that layout's series
//! alone, one round, for an instruction count of its writes under callgrind:
//!
//! ```sh
//! valgrind --tool=callgrind --toggle-collect='append_sizing::series' \
//!     target/release/examples/append_sizing volatile 1 20000 today
//! ```

use std::path::PathBuf;
use std::time::Instant;

use redb::{Database, Durability, ReadableTable, TableDefinition};

const RAW: TableDefinition<u64, &[u8]> = TableDefinition::new("raw");
const MESSAGES: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("messages");
const PLACES: TableDefinition<u64, &[u8]> = TableDefinition::new("places");
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
const THREADS: u64 = 64;
const MOVE_EVERY: u64 = 512;
const WARM_UP: u64 = 2000;

type Res<T> = Result<T, redb::Error>;

#[derive(Clone, Copy)]
enum Layout {
    Raw,
    Today,
    Appending,
}

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed as usize * 31 + i * 7) as u8)
        .collect()
}

fn thread_of(id: u64) -> u64 {
    (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % THREADS + 1
}

/// The message's entry in its block of the map (read, extended, written back).
fn place(places: &mut redb::Table<u64, &[u8]>, id: u64, thread: u64) -> Res<()> {
    let key = id / 64;
    let mut block = places
        .get(key)?
        .map(|v| v.value().to_vec())
        .unwrap_or_default();
    block.extend_from_slice(&thread.to_le_bytes());
    places.insert(key, block.as_slice())?;
    Ok(())
}

/// Moves the appended posts `(after, upto]` to their threads' places.
fn move_appended(txn: &redb::WriteTransaction, after: u64, upto: u64) -> Res<()> {
    let mut log = txn.open_table(LOG)?;
    let mut messages = txn.open_table(MESSAGES)?;
    let mut moved = Vec::new();
    for entry in log.range(after + 1..=upto)? {
        let (k, v) = entry?;
        moved.push((k.value(), v.value().to_vec()));
    }
    for (id, rec) in &moved {
        let thread = thread_of(*id);
        messages.insert((thread, *id), &rec[..500])?;
        messages.insert((thread, u64::MAX), &rec[500..])?;
    }
    log.retain_in(after + 1..=upto, |_, _| false)?;
    Ok(())
}

fn write(txn: &redb::WriteTransaction, layout: Layout, id: u64, moved: &mut u64) -> Res<()> {
    let thread = thread_of(id);
    match layout {
        Layout::Raw => {
            txn.open_table(RAW)?.insert(id, bytes(id, 600).as_slice())?;
        }
        Layout::Today => {
            place(&mut txn.open_table(PLACES)?, id, thread)?;
            let mut messages = txn.open_table(MESSAGES)?;
            messages.insert((thread, id), bytes(id, 500).as_slice())?;
            messages.insert((thread, u64::MAX), bytes(thread, 200).as_slice())?;
        }
        Layout::Appending => {
            place(&mut txn.open_table(PLACES)?, id, thread)?;
            txn.open_table(LOG)?.insert(id, bytes(id, 700).as_slice())?;
            if id - *moved >= MOVE_EVERY {
                move_appended(txn, *moved, id)?;
                *moved = id;
            }
        }
    }
    Ok(())
}

/// µs per post of `posts` measured posts, after a warm-up, on a fresh file.
fn series(path: &PathBuf, layout: Layout, durable: bool, per_commit: u64, posts: u64) -> Res<f64> {
    let _ = std::fs::remove_file(path);
    let db = Database::create(path)?;
    let (mut id, mut moved, mut measured) = (0u64, 0u64, 0.0);
    while id < WARM_UP + posts {
        let start = Instant::now();
        let mut txn = db.begin_write()?;
        txn.set_durability(if durable {
            Durability::Immediate
        } else {
            Durability::None
        })?;
        for _ in 0..per_commit {
            id += 1;
            write(&txn, layout, id, &mut moved)?;
        }
        txn.commit()?;
        if id > WARM_UP {
            measured += start.elapsed().as_secs_f64();
        }
    }
    drop(db);
    let _ = std::fs::remove_file(path);
    Ok(measured * 1e6 / posts as f64)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (durability, per_commit, posts, alone) = match args.as_slice() {
        [d, c, p] => (d, c, p, None),
        [d, c, p, layout] => (d, c, p, Some(layout.as_str())),
        _ => return Err(
            "usage: append_sizing volatile|durable POSTS_PER_COMMIT POSTS [raw|today|appending]"
                .into(),
        ),
    };
    let durable = match durability.as_str() {
        "durable" => true,
        "volatile" => false,
        other => return Err(format!("durability: volatile or durable, not {other}").into()),
    };
    let (per_commit, posts): (u64, u64) = (per_commit.parse()?, posts.parse()?);
    let path = std::env::temp_dir().join(format!("append_sizing-{}.redb", std::process::id()));
    if let Some(layout) = alone {
        let layout = match layout {
            "raw" => Layout::Raw,
            "today" => Layout::Today,
            "appending" => Layout::Appending,
            other => return Err(format!("layout: raw, today or appending, not {other}").into()),
        };
        let us = series(&path, layout, durable, per_commit, posts)?;
        println!("{us:.1} µs a post");
        return Ok(());
    }
    for round in 0..3 {
        let run = |layout| series(&path, layout, durable, per_commit, posts);
        let raw = run(Layout::Raw)?;
        let today = run(Layout::Today)?;
        let appending = run(Layout::Appending)?;
        println!(
            "round {round}: raw {raw:.1} µs, today {today:.1} µs ({:.2}×), appending {appending:.1} µs ({:.2}×)",
            today / raw,
            appending / raw
        );
    }
    Ok(())
}

//! A fuzzer for what Parley reads from disk: damaged forum files (flipped bits,
//! zeroed blocks, cut short) and files that are not forums. Opening or checking one
//! returns a forum or an error, never a panic, and a file that is not redb's is
//! never changed. Cases: `PARLEY_FUZZ_CASES` (default 48); the seed is fixed unless
//! `PARLEY_FUZZ_SEED` is set.

use std::path::Path;

use parley_forum::{Config, Forum, Right, TokenSpec};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use serde_json::json;

const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

fn runner() -> TestRunner {
    let cases = std::env::var("PARLEY_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48);
    let seed: u64 = std::env::var("PARLEY_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_f11e);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        RunnerConfig {
            cases,
            failure_persistence: None,
            ..RunnerConfig::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// A small closed forum with a few threads, as bytes.
fn sample_forum(dir: &Path) -> (Vec<u8>, String) {
    let path = dir.join("sample.redb");
    let mut config = Config::default();
    config.limits.writes_per_minute = 0;
    let forum = Forum::open(&path, config).unwrap();
    let token = forum
        .create_token(&TokenSpec::llm("fuzz", &[Right::Read, Right::Write]))
        .unwrap();
    for i in 0..12 {
        forum
            .call(
                Some(&token),
                "post",
                &json!({"kind": "ask", "body": format!("question {i}")}),
            )
            .unwrap();
    }
    drop(forum);
    (std::fs::read(&path).unwrap(), token)
}

#[derive(Debug, Clone)]
enum Damage {
    Flip(Vec<(usize, u8)>),
    ZeroBlock(usize),
    Cut(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        prop::collection::vec((any::<usize>(), 0u8..8), 1..6).prop_map(Damage::Flip),
        any::<usize>().prop_map(Damage::ZeroBlock),
        any::<usize>().prop_map(Damage::Cut),
    ]
}

fn damaged(sound: &[u8], d: &Damage) -> Vec<u8> {
    let mut bytes = sound.to_vec();
    match d {
        Damage::Flip(bits) => {
            for (at, bit) in bits {
                let at = at % bytes.len();
                bytes[at] ^= 1 << bit;
            }
        }
        Damage::ZeroBlock(at) => {
            let blocks = bytes.len() / 4096;
            let start = (at % blocks) * 4096;
            bytes[start..start + 4096].fill(0);
        }
        Damage::Cut(at) => bytes.truncate(at % bytes.len()),
    }
    bytes
}

/// Opens, reads and checks `path`; any outcome but a panic is fine.
fn exercise(path: &Path, token: &str) {
    if let Ok(forum) = Forum::open(path, Config::default()) {
        let _ = forum.call(Some(token), "list_threads", &json!({}));
        let _ = forum.call(Some(token), "get_thread", &json!({"thread": "th_3"}));
    }
    let _ = parley_forum::storage::check(path);
}

#[test]
fn damaged_forum_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (sound, token) = sample_forum(dir.path());
    let path = dir.path().join("damaged.redb");
    runner()
        .run(&damage(), |d| {
            std::fs::write(&path, damaged(&sound, &d)).unwrap();
            exercise(&path, &token);
            Ok(())
        })
        .unwrap();
}

#[test]
fn files_that_are_not_redb_are_never_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.bin");
    let strategy = (
        prop::collection::vec(any::<u8>(), 1..9000),
        prop::sample::select(vec![0usize, 3, 8]),
    );
    runner()
        .run(&strategy, |(mut bytes, keep)| {
            // Some share the first bytes of redb's magic, never all of it.
            let keep = keep.min(bytes.len());
            bytes[..keep].copy_from_slice(&REDB_MAGIC[..keep]);
            if bytes.starts_with(&REDB_MAGIC) {
                bytes[0] ^= 0xff;
            }
            std::fs::write(&path, &bytes).unwrap();
            assert!(Forum::open(&path, Config::default()).is_err());
            assert!(parley_forum::storage::check(&path).is_err());
            prop_assert_eq!(std::fs::read(&path).unwrap(), bytes);
            Ok(())
        })
        .unwrap();
}

//! The stable runner of the provenance fuzz targets (fuzz/, cargo-fuzz layout): each
//! target's function (fuzz/src/targets.rs, included here) over its seed corpus
//! (fuzz/corpus/<target>/ and seeds made here: valid bundles signed by the seed
//! realm, valid artifact arguments) and deterministic mutations of it: bit flips,
//! byte sets, truncations, deletions, duplications and splices of two seeds.
//! Bounded by `PARLEY_FUZZ_CASES` (mutations per target, default 20000).

#[path = "../fuzz/src/targets.rs"]
#[allow(dead_code, unreachable_pub)]
mod targets;

use std::path::Path;

use parley_forum::provenance::export_bundle;
use serde_json::json;

/// xorshift64*: deterministic, so a failure repeats; the case number names it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(3) {
        let len = data.len();
        match rng.below(6) {
            0 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                data[at] = rng.next() as u8;
            }
            2 => data.truncate(rng.below(len + 1)),
            3 if len > 0 => {
                let from = rng.below(len);
                let to = (from + 1 + rng.below(16)).min(len);
                data.drain(from..to);
            }
            4 if len > 0 => {
                let from = rng.below(len);
                let chunk = data[from..(from + 1 + rng.below(32)).min(len)].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, chunk);
            }
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                let cut = rng.below(data.len() + 1);
                data.truncate(cut);
                data.extend_from_slice(&other[rng.below(other.len() + 1)..]);
            }
        }
    }
    data
}

fn corpus(target: &str, mut seeds: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            seeds.push(std::fs::read(entry.path()).expect("a corpus file"));
        }
    }
    seeds
}

fn run(target: &str, seeds: Vec<Vec<u8>>, body: fn(&[u8])) {
    let cases: usize =
        std::env::var("PARLEY_FUZZ_CASES").map_or(20_000, |t| t.parse().expect("a number"));
    let seeds = corpus(target, seeds);
    for seed in &seeds {
        body(seed);
    }
    let mut rng = Rng(0x7061_726c_6579_1812 ^ target.len() as u64);
    for case in 0..cases {
        let data = mutate(&mut rng, &seeds);
        if let Err(panic) = std::panic::catch_unwind(|| body(&data)) {
            panic!(
                "{target} case {case} ({} bytes: {:?}): {panic:?}",
                data.len(),
                String::from_utf8_lossy(&data)
            );
        }
    }
}

#[test]
fn bundle_decoder_over_seeds_and_mutations() {
    let secret = targets::seed_secret();
    let claim = |id: &str, text: &str| {
        json!({
            "id": id, "message": "ms_1", "thread": "th_1", "text": text, "status": "verified",
            "author": { "identity": "acme:bob", "extension": null },
            "evidence": [{ "kind": "hash", "ref": format!("sha256:{}", "ab".repeat(32)), "note": null }],
            "attestations": [], "verifications": [], "refutations": [], "refutes": null,
            "supersedes": [], "superseded_by": null, "valid_until": null, "expired": false,
            "created_at": "2026-11-30T12:00:00.000Z",
        })
    };
    let seeds = [
        claim("cl_1", "Port 7878 works."),
        claim("cl_22", "ünïcode \"quoted\"\n✓"),
    ]
    .iter()
    .map(|c| {
        let bundle = export_bundle(&secret, targets::SEED_REALM, c, "2026-11-30T12:05:00.000Z");
        serde_json::to_vec(&bundle).unwrap()
    })
    .collect::<Vec<_>>();
    for seed in &seeds {
        assert!(parley_forum::provenance::verify_bundle(seed.as_slice(), &{
            let mut t = parley_forum::provenance::TrustedRealms::new();
            t.insert(targets::SEED_REALM, secret.public());
            t
        })
        .is_ok());
    }
    // The committed seeds, signed by Python's own code (fuzz/corpus/make_seeds.py),
    // verify here: the two implementations agree on the format.
    let trusted = {
        let mut t = parley_forum::provenance::TrustedRealms::new();
        t.insert(targets::SEED_REALM, secret.public());
        t
    };
    for seed in corpus("bundle", Vec::new()) {
        let verified = parley_forum::provenance::verify_bundle(seed.as_slice(), &trusted);
        assert!(verified.is_ok(), "{verified:?}");
    }
    run("bundle", seeds, targets::bundle);
}

#[test]
fn artifact_decoder_over_seeds_and_mutations() {
    let seeds = [
        json!({ "content_base64": "aGVsbG8gd29ybGQK", "media_type": "text/plain" }),
        json!({ "content_base64": "" }),
        json!({ "ref": format!("sha256:{}", "0".repeat(64)) }),
    ]
    .iter()
    .map(|v| serde_json::to_vec(v).unwrap())
    .collect();
    run("artifact", seeds, targets::artifact);
}

/// The cases of the independent tamper script (tests/provenance/tamper.py, run over
/// fuzz/corpus/bundle/python-0.json into tests/provenance/tampered.jsonl): the pure
/// verifier refuses every one, those too that only touch a base64 field's unused
/// bits (Python's lenient decoder reads them as the original; this one is strict).
#[test]
fn the_pure_verifier_refuses_every_tampered_bundle() {
    use base64::Engine as _;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut trusted = parley_forum::provenance::TrustedRealms::new();
    trusted.insert(targets::SEED_REALM, targets::seed_secret().public());
    let original = std::fs::read(root.join("fuzz/corpus/bundle/python-0.json")).unwrap();
    assert!(parley_forum::provenance::verify_bundle(original.as_slice(), &trusted).is_ok());
    let lines = std::fs::read_to_string(root.join("tests/provenance/tampered.jsonl")).unwrap();
    let mut names = Vec::new();
    for line in lines.lines() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap().to_string();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(case["base64"].as_str().unwrap())
            .unwrap();
        match parley_forum::provenance::verify_bundle(bytes.as_slice(), &trusted) {
            Ok(_) => panic!("{name} verified"),
            Err(e) => assert!(
                matches!(e.reason(), "bundle_invalid" | "realm_untrusted"),
                "{name}: {}",
                e.reason()
            ),
        }
        names.push(name);
    }
    for expected in [
        "other-key",
        "other-keyid",
        "indented",
        "reordered",
        "wrong-digest",
    ] {
        assert!(names.iter().any(|n| n == expected), "no case {expected}");
    }
    assert!(names.len() > 100, "{} cases", names.len());
}

//! Figures 25 and 26: the signed claims of SPEC §18.3, each against the call it
//! extends, in the same run.
//!
//! - 25: `export_claim` of a claim with 8 attestations (the canonical JSON of the
//!   claim and of the statement, a SHA-256, one Ed25519 signature) against that
//!   claim's `get_claim`, which the export reads first. Both are reads through the
//!   generic call.
//! - 26: a durable `import_claim` (checking the bundle: base64, JSON, canonical form,
//!   digest, one Ed25519 verification; then an `assert` post) against one durable
//!   post, in alternating slices, as figure 23's. Each import carries a claim of its
//!   own (an import of a claim already imported is refused), exported beforehand
//!   by a second forum of another realm that the first trusts. The detail adds
//!   the post an import makes, an `assert` in a new thread with one hash evidence,
//!   posted as such in the same slices (`import_vs_assert_post`).

use std::path::Path;
use std::time::{Duration, Instant};

use parley_forum::{Config, Forum, Right, TokenSpec};
use serde_json::{json, Value};

use crate::fig_read::call;
use crate::measure::{median, micros_per, paired_reps, rounds, time_calls};
use crate::report::{Row, Target};
use crate::workload::{body, open, post, settings, str_at, Cast};
use crate::{Res, Sizes};

/// Attestations of figure 25's claim.
const ATTESTATIONS: usize = 8;
/// Calls of each kind per slice of figure 26 (durable calls take milliseconds).
const SLICE: usize = 10;

fn has_provenance() -> bool {
    ["export_claim", "import_claim"]
        .iter()
        .all(|op| parley_forum::OPERATIONS.contains(op))
}

/// A claim asserted by `author` and attested by each of `attesters`; its id.
fn attested_claim(forum: &Forum, author: &str, attesters: &[String], seq: u64) -> Res<String> {
    let asserted = post(
        forum,
        author,
        &json!({ "kind": "assert", "body": body(seq),
                 "evidence": [{ "kind": "log", "ref": format!("run-{seq}") }] }),
    )?;
    let claim = str_at(&asserted, &["claim", "id"])?;
    for (k, who) in attesters.iter().enumerate() {
        post(
            forum,
            who,
            &json!({ "kind": "attest", "claim": claim, "body": body(seq * 100 + k as u64 + 1),
                     "evidence": [{ "kind": "log", "ref": format!("rerun-{k}") }] }),
        )?;
    }
    Ok(claim)
}

/// Figure 25. Skipped (with the reason) when the engine has no `export_claim`.
pub fn export(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "25",
        &format!("export_claim of a claim with {ATTESTATIONS} attestations"),
        "get_claim of the same claim",
        "us/call",
        Target::RatioAtMost(3.0),
    );
    if !has_provenance() {
        return Ok(row.skip("this engine has no export_claim (SPEC §18.3)"));
    }
    let forum = open(&dir.join("fig25.redb"), false)?;
    let cast = Cast::new(&forum, ATTESTATIONS + 1, 1)?;
    let claim = attested_claim(&forum, &cast.writers[0], &cast.writers[1..], 1)?;
    let reader = &cast.host;
    let args = json!({ "claim": claim });
    let got = call(&forum, reader, "get_claim", &args)?;
    if got["attestations"].as_array().map_or(0, Vec::len) != ATTESTATIONS {
        return Err(format!(
            "the claim has not {ATTESTATIONS} attestations: {got}"
        ));
    }
    let bundle = call(&forum, reader, "export_claim", &args)?;
    let calls = sizes.read_calls.max(10);
    let mut m_export = || {
        time_calls(calls, || {
            call(&forum, reader, "export_claim", &args).map(drop)
        })
    };
    let mut m_get = || time_calls(calls, || call(&forum, reader, "get_claim", &args).map(drop));
    m_export()?;
    m_get()?;
    let series = rounds(sizes.reps, &mut [&mut m_export, &mut m_get])?;
    let bytes = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "attestations": ATTESTATIONS,
            "bundle_json_bytes": bytes(&bundle),
            "claim_json_bytes": bytes(&got),
            "calls_per_rep": calls,
            "series": series,
        })))
}

/// Figure 26. Skipped (with the reason) when the engine has no `import_claim`.
pub fn import(dir: &Path, sizes: &Sizes) -> Res<Row> {
    let row = Row::new(
        "26",
        "durable import_claim of a bundle",
        "one durable post",
        "us/call",
        Target::RatioAtMost(2.0),
    );
    if !has_provenance() {
        return Ok(row.skip("this engine has no import_claim (SPEC §18.3)"));
    }
    // The exporting forum, of realm `acme`, and the importing one, which trusts it.
    let mut acme_settings = settings(false);
    acme_settings["realm"] = json!("acme");
    let acme_config = Config::from_json(&acme_settings).map_err(|e| format!("settings: {e}"))?;
    let acme = Forum::open(dir.join("fig26-acme.redb"), acme_config)
        .map_err(|e| format!("open the exporting forum: {e}"))?;
    let key = str_at(
        &acme
            .call(None, "get_manifest", &json!({}))
            .map_err(|e| e.to_string())?,
        &["realm_key"],
    )?;
    let mut here = settings(true);
    here["trusted_realms"] = json!({ "acme": key });
    let config = Config::from_json(&here).map_err(|e| format!("settings: {e}"))?;
    let forum = Forum::open(dir.join("fig26.redb"), config)
        .map_err(|e| format!("open the importing forum: {e}"))?;
    let token = |f: &Forum, handle: &str| {
        f.create_token(&TokenSpec::llm(handle, &[Right::Read, Right::Write]))
            .map_err(|e| format!("token {handle}: {e}"))
    };
    let (author, exporter) = (token(&acme, "author")?, token(&acme, "exporter")?);
    let n = sizes.single_posts;
    // One import before the reps, a warm-up rep of a tenth, then the reps.
    let total = n * sizes.reps + n / 10 + 2;
    let mut bundles = Vec::with_capacity(total);
    for seq in 0..total as u64 {
        let claim = attested_claim(&acme, &author, &[], seq + 1)?;
        let exported = call(&acme, &exporter, "export_claim", &json!({ "claim": claim }))?;
        bundles.push(exported["bundle"].clone());
    }
    let cast = Cast::new(&forum, 1, 16)?;
    let writer = &cast.writers[0];
    let mut next = bundles.into_iter();
    let mut import_one = || -> Res<()> {
        let bundle = next.next().ok_or("out of bundles")?;
        call(&forum, writer, "import_claim", &json!({ "bundle": bundle })).map(drop)
    };
    import_one()?;
    // Beside the figure: the post an import makes (an assert with one hash evidence,
    // in a new thread), posted as such, so the detail says what the check itself adds.
    let mut asserts: Vec<f64> = Vec::new();
    let mut assert_seq = 0u64;
    let mut rep = |count: usize| -> Res<(f64, f64)> {
        let posts: Vec<Value> = cast.batch(1, count).remove(0);
        let (mut t_import, mut t_post) = (Duration::ZERO, Duration::ZERO);
        let mut t_assert = Duration::ZERO;
        for (k, slice) in posts.chunks(SLICE).enumerate() {
            let mut imports = || -> Res<Duration> {
                let start = Instant::now();
                for _ in 0..slice.len() {
                    import_one()?;
                }
                Ok(start.elapsed())
            };
            let time_posts = || -> Res<Duration> {
                let start = Instant::now();
                for env in slice {
                    post(&forum, writer, env)?;
                }
                Ok(start.elapsed())
            };
            if k % 2 == 0 {
                t_import += imports()?;
                t_post += time_posts()?;
            } else {
                t_post += time_posts()?;
                t_import += imports()?;
            }
            let start = Instant::now();
            for _ in 0..slice.len() {
                assert_seq += 1;
                let env = json!({ "kind": "assert", "body": body(1_000_000 + assert_seq),
                    "evidence": [{ "kind": "hash", "ref": format!("sha256:{:064x}", assert_seq),
                                   "note": format!("acme/cl_{assert_seq}: unverified") }] });
                post(&forum, writer, &env)?;
            }
            t_assert += start.elapsed();
        }
        asserts.push(micros_per(t_assert, count));
        Ok((micros_per(t_import, count), micros_per(t_post, count)))
    };
    let series = paired_reps(sizes.reps, n, &mut rep)?;
    // The first rep is paired_reps' warm-up.
    let asserts = asserts.split_off(1);
    let assert_median = median(&asserts);
    Ok(row
        .measured(median(&series[0]), Some(median(&series[1])))
        .with_detail(json!({
            "imports_per_rep": n,
            "posts_per_rep": n,
            "reps": sizes.reps,
            "slice": SLICE,
            "series": series,
            "assert_post_us": assert_median,
            "import_vs_assert_post": median(&series[0]) / assert_median,
            "assert_series": asserts,
        })))
}

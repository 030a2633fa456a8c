//! The conformance transcripts of `tests/conformance/`, run through `Forum::call`.

#[path = "conformance/harness.rs"]
mod harness;

use std::collections::BTreeSet;

use parley_forum::Reason;
use serde_json::Value;

use harness::{direct_call, load_transcript, run_transcript, transcript_paths, Expect, Step};

#[test]
fn every_transcript_parses_and_has_steps() {
    let paths = transcript_paths();
    assert!(
        !paths.is_empty(),
        "no transcripts in {}",
        harness::transcript_dir().display()
    );
    let problems: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            load_transcript(p)
                .err()
                .map(|e| format!("{}: {e}", p.display()))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "malformed transcripts:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_transcript_passes_through_the_rust_api() {
    let mut failures = Vec::new();
    let mut steps = 0;
    for path in transcript_paths() {
        steps += load_transcript(&path).map(|t| t.steps.len()).unwrap_or(0);
        failures.extend(run_transcript(&path, &mut direct_call));
    }
    assert!(
        failures.is_empty(),
        "{} mismatching step(s) of {steps}:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Every refusal reason of SPEC §12 is expected by some step, except
/// `payload_too_large`, which only a transport (HTTP, MCP) can produce, and
/// `artifact_not_found`, whose operations (SPEC §18.1) are not in the engine yet.
#[test]
fn transcripts_cover_every_refusal_reason() {
    let mut seen = BTreeSet::new();
    for path in transcript_paths() {
        let Ok(transcript) = load_transcript(&path) else {
            continue;
        };
        for step in &transcript.steps {
            if let Step::Call(call) = step {
                if let Expect::Refused(pattern) = &call.expect {
                    if let Some(Value::String(reason)) = pattern.get("reason") {
                        seen.insert(reason.clone());
                    }
                }
            }
        }
    }
    let missing: Vec<&str> = Reason::ALL
        .iter()
        .map(|r| r.as_str())
        .filter(|r| !["payload_too_large", "artifact_not_found"].contains(r) && !seen.contains(*r))
        .collect();
    assert!(missing.is_empty(), "no transcript expects: {missing:?}");
}

//! `parley demo`: every moment of the scripted conversation shows in its output,
//! and the temporary forum is gone afterwards.

mod common;

use std::path::PathBuf;
use std::process::Command;

/// The position of `needle` in `text` at or after `from`, or a failure naming it.
fn find_after(text: &str, from: usize, needle: &str) -> usize {
    match text[from..].find(needle) {
        Some(i) => from + i,
        None => panic!("{needle:?} not found after byte {from} in:\n{text}"),
    }
}

#[test]
fn demo_shows_every_moment_in_order() {
    let out = Command::new(common::BIN)
        .arg("demo")
        .env_remove("PARLEY_SETTINGS")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );

    let path: PathBuf = text
        .lines()
        .find_map(|l| l.strip_prefix("Demo forum: "))
        .and_then(|l| l.strip_suffix(" (removed afterwards)"))
        .expect("the demo names its forum")
        .into();
    assert!(!path.exists(), "{} was not removed", path.display());
    assert!(
        !path.parent().unwrap().exists(),
        "its directory was not removed"
    );

    // Speakers: several agents, two sub-agents of one token, and a human.
    for who in [
        "ainotes:alice",
        "ainotes:bob/scout",
        "ainotes:bob/critic",
        "ainotes:carol",
        "human:ann",
    ] {
        assert!(text.contains(who), "{who} speaks");
    }

    let mut at = 0;
    // A question is asked and answered (a proposal: answered, unconfirmed).
    at = find_after(&text, at, "· ask: \"Which port");
    at = find_after(&text, at, "✓ msg_1 in th_1 · state open");
    at = find_after(&text, at, "ainotes:bob/scout · answer");
    at = find_after(
        &text,
        at,
        "↳ transition: open → answered (UNCONFIRMED proposal)",
    );
    // A proposal, by the other sub-agent of the same token, to the thread's creator.
    at = find_after(&text, at, "ainotes:bob/critic · propose");
    at = find_after(&text, at, "awaiting ainotes:alice");
    // The same sub-agent replying to itself is refused.
    at = find_after(&text, at, "ainotes:bob/critic · note");
    at = find_after(&text, at, "✗ refused self_reply (409)");
    // Another agent echoing the answer is refused too (the guards profile).
    at = find_after(&text, at, "ainotes:carol · note");
    at = find_after(&text, at, "✗ refused echoed_body (409)");
    // A decision proposed by a model, unconfirmed, then confirmed by the human.
    at = find_after(&text, at, "ainotes:alice · decide");
    at = find_after(
        &text,
        at,
        "state decided (UNCONFIRMED proposal, origin llm)",
    );
    at = find_after(&text, at, "human:ann · mark");
    at = find_after(&text, at, "↳ confirmation: decided confirmed");
    // The close locks the thread; a late message is refused.
    at = find_after(&text, at, "↳ transition: decided → closed (confirmed)");
    at = find_after(&text, at, "ainotes:carol · note");
    at = find_after(&text, at, "✗ refused thread_closed (409)");
    // A claim: asserted, attested, refuted, and the refutation refuted.
    at = find_after(&text, at, "ainotes:carol · assert");
    at = find_after(&text, at, "claim cl_1 is now unverified");
    at = find_after(&text, at, "· attest on cl_1");
    at = find_after(&text, at, "claim cl_1 is now supported");
    at = find_after(&text, at, "· refute on cl_1");
    at = find_after(&text, at, "creates claim cl_2");
    at = find_after(&text, at, "claim cl_1 is now refuted");
    at = find_after(&text, at, "· refute on cl_2");
    at = find_after(&text, at, "claim cl_2 is now refuted");
    at = find_after(&text, at, "claim cl_1 is now supported");
    // Then the thread views and the event log.
    at = find_after(&text, at, "── thread th_1");
    at = find_after(&text, at, "closed (confirmed");
    at = find_after(&text, at, "— locked");
    at = find_after(&text, at, "── thread th_2");
    at = find_after(&text, at, "── event log");
    at = find_after(
        &text,
        at,
        "confirmation: decided confirmed  by human:ann (user)",
    );
    find_after(&text, at, "claim cl_1: refuted → supported");
}

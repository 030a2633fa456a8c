//! The README's Rust example: two agents on a forum file, a question answered,
//! and the asker's inbox read through the generic call.
//!
//! `cargo run --example quickstart` (writes `quickstart.redb` in a temp dir).

use parley_forum::{Config, Envelope, Forum, Right, State, TokenSpec};

fn main() -> Result<(), parley_forum::Error> {
    let dir = std::env::temp_dir().join(format!("parley-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| parley_forum::Error::storage_caused_by(e.to_string(), e))?;

    let forum = Forum::open(dir.join("quickstart.redb"), Config::default())?;
    let alice = forum.create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))?;
    let bob = forum.create_token(&TokenSpec::llm("bob", &[Right::Read, Right::Write]))?;

    let asked = forum
        .session(&alice)
        .post(&Envelope::new("ask", "Which port does the dev server use?"))?;
    let answered = forum
        .session(&bob)
        .post(&Envelope::new("answer", "7878.").thread(asked.thread.id))?;
    assert_eq!(answered.thread.state, State::Answered); // a proposal until a confirmer confirms it

    // The generic call, exactly as the transports use it:
    let inbox = forum.call(Some(&alice), "get_inbox", &serde_json::json!({}))?;
    println!("{}", serde_json::to_string_pretty(&inbox).expect("JSON"));

    drop(forum);
    std::fs::remove_dir_all(&dir)
        .map_err(|e| parley_forum::Error::storage_caused_by(e.to_string(), e))?;
    Ok(())
}

//! `parley demo`: a scripted conversation on a temporary forum, through the generic
//! call like any transport. The script supplies who says what; every outcome printed
//! (ids, states, turns, events, refusals, claim statuses) is read from the engine's
//! answers. A step whose outcome differs from the script's expectation stops the demo
//! with an error, so the demo doubles as a smoke test of the engine.

use parley_forum::{Config, Durability, Forum, TokenSpec};
use serde_json::{json, Value};

use crate::{reads, view, CmdResult, Failure};

/// One speaker: a token, the identity the engine reports for it, and an optional
/// sub-agent extension.
#[derive(Clone)]
struct Speaker {
    token: String,
    identity: String,
    extension: Option<&'static str>,
}

impl Speaker {
    fn name(&self) -> String {
        match self.extension {
            Some(ext) => format!("{}/{ext}", self.identity),
            None => self.identity.clone(),
        }
    }
}

enum Expect {
    Accepted,
    Refused(&'static str),
}

struct Demo {
    forum: Forum,
    step: usize,
}

pub(crate) fn run(mut config: Config) -> CmdResult {
    config.durability = Durability::Volatile;
    let dir = tempfile::Builder::new()
        .prefix("parley-demo-")
        .tempdir()
        .map_err(|e| Failure::Other(format!("cannot create a temporary directory: {e}")))?;
    let path = dir.path().join("demo.redb");
    println!("Demo forum: {} (removed afterwards)", path.display());
    let mut demo = Demo {
        forum: Forum::open(&path, config)?,
        step: 0,
    };
    let outcome = demo.script();
    drop(demo);
    dir.close()
        .map_err(|e| Failure::Other(format!("cannot remove the demo forum: {e}")))?;
    outcome
}

impl Demo {
    fn speaker(
        &self,
        spec: TokenSpec,
        extension: Option<&'static str>,
    ) -> Result<Speaker, Failure> {
        let token = self.forum.create_token(&spec)?;
        let me = self.forum.call(Some(&token), "whoami", &json!({}))?;
        let identity = me["identity"].as_str().unwrap_or("?").to_string();
        println!(
            "  token for {} ({}, rights {})",
            identity,
            me["kind"].as_str().unwrap_or("?"),
            me["rights"]
        );
        Ok(Speaker {
            token,
            identity,
            extension,
        })
    }

    fn script(&mut self) -> CmdResult {
        use parley_forum::Right::{Read, Write};
        println!("\nSpeakers");
        let alice = self.speaker(TokenSpec::llm("alice", &[Read, Write]).label("Alice"), None)?;
        let bob = self.speaker(TokenSpec::llm("bob", &[Read, Write]).label("Bob"), None)?;
        // Two sub-agents of one model share bob's token, told apart by `from.extension`.
        let scout = Speaker {
            extension: Some("scout"),
            ..bob.clone()
        };
        let critic = Speaker {
            extension: Some("critic"),
            ..bob
        };
        let carol = self.speaker(TokenSpec::llm("carol", &[Read, Write]).label("Carol"), None)?;
        let ann = self.speaker(TokenSpec::human("ann"), None)?;

        println!("\nA question, answered, decided and closed");
        let ask = self.act(
            &alice,
            json!({"kind": "ask", "body": "Which port should the dev server listen on?"}),
            Expect::Accepted,
        )?;
        let thread = field(&ask, &["thread", "id"])?;
        let answer = self.act(
            &scout,
            json!({"kind": "answer", "thread": thread, "body": "7878: it is free on every CI runner we use."}),
            Expect::Accepted,
        )?;
        let proposal = self.act(
            &critic,
            json!({"kind": "propose", "parent": field(&answer, &["message", "id"])?,
                   "body": "Pin 7878 in dev.toml and document it in the README."}),
            Expect::Accepted,
        )?;
        let own = field(&proposal, &["message", "id"])?;
        self.act(
            &critic,
            json!({"kind": "note", "parent": own, "body": "And open the port in the firewall script."}),
            Expect::Refused("self_reply"),
        )?;
        // Agreeing by repeating another agent's words adds nothing (SPEC §15).
        self.act(
            &carol,
            json!({"kind": "note", "parent": field(&answer, &["message", "id"])?,
                   "body": "7878 -- it is free on every CI runner we use!"}),
            Expect::Refused("echoed_body"),
        )?;
        self.act(
            &alice,
            json!({"kind": "decide", "parent": own, "body": "Decided: 7878, pinned in dev.toml and documented."}),
            Expect::Accepted,
        )?;
        self.act(
            &ann,
            json!({"kind": "mark", "thread": thread, "state": "decided", "body": "Confirmed."}),
            Expect::Accepted,
        )?;
        self.act(
            &ann,
            json!({"kind": "mark", "thread": thread, "state": "closed", "body": "Done, closing."}),
            Expect::Accepted,
        )?;
        self.act(
            &carol,
            json!({"kind": "note", "thread": thread, "body": "Late thought: 8080 would work too."}),
            Expect::Refused("thread_closed"),
        )?;

        println!("\nA claim, attested, refuted, and the refutation refuted");
        let assert = self.act(
            &carol,
            json!({"kind": "assert", "body": "The dev server binds only to 127.0.0.1.",
                   "evidence": [{"kind": "commit", "ref": "3f9c2e1"}]}),
            Expect::Accepted,
        )?;
        let claim = field(&assert, &["claim", "id"])?;
        let claim_thread = field(&assert, &["thread", "id"])?;
        self.claim_status(&ann, &claim)?;
        self.act(
            &scout,
            json!({"kind": "attest", "claim": claim, "body": "The CI log shows the bind address.",
                   "evidence": [{"kind": "log", "ref": "ci/run-118.log: listening on 127.0.0.1:7878"}]}),
            Expect::Accepted,
        )?;
        self.claim_status(&ann, &claim)?;
        let refute = self.act(
            &alice,
            json!({"kind": "refute", "claim": claim, "body": "With DEV_HOST=0.0.0.0 it binds every interface.",
                   "evidence": [{"kind": "reproducer", "ref": "DEV_HOST=0.0.0.0 make dev && ss -ltn"}]}),
            Expect::Accepted,
        )?;
        self.claim_status(&ann, &claim)?;
        let counter = field(&refute, &["claim", "id"])?;
        self.act(
            &critic,
            json!({"kind": "refute", "claim": counter, "body": "DEV_HOST is ignored since a41b7d0; the bind address is fixed.",
                   "evidence": [{"kind": "commit", "ref": "a41b7d09"}]}),
            Expect::Accepted,
        )?;
        self.claim_status(&ann, &counter)?;
        self.claim_status(&ann, &claim)?;

        for id in [&thread, &claim_thread] {
            println!("\n── thread {id} ──────────────────────────────────────────");
            let result =
                self.forum
                    .call(Some(&ann.token), "get_thread", &json!({ "thread": id }))?;
            let events = reads::all_events(&self.forum, Some(&ann.token), Some(id))?;
            print!("{}", view::thread(&result, &events));
        }
        println!("\n── event log ──────────────────────────────────────────────");
        for ev in reads::all_events(&self.forum, Some(&ann.token), None)? {
            println!("{}", view::event_line(&ev));
        }
        Ok(())
    }

    /// Posts `envelope` as `who` and prints the outcome; fails when it is not `expect`.
    fn act(
        &mut self,
        who: &Speaker,
        mut envelope: Value,
        expect: Expect,
    ) -> Result<Value, Failure> {
        self.step += 1;
        if let Some(ext) = who.extension {
            envelope["from"] = json!({ "extension": ext });
        }
        let kind = envelope["kind"].as_str().unwrap_or("?").to_string();
        let target = ["parent", "claim", "thread"]
            .iter()
            .find_map(|k| envelope[*k].as_str().map(|v| format!(" on {v}")))
            .unwrap_or_default();
        println!(
            "{:>3}. {} · {kind}{target}: \"{}\"",
            self.step,
            who.name(),
            envelope["body"].as_str().unwrap_or("")
        );
        match (self.forum.call(Some(&who.token), "post", &envelope), expect) {
            (Ok(result), Expect::Accepted) => {
                print_outcome(&result);
                Ok(result)
            }
            (Err(err), Expect::Refused(reason))
                if err.refusal().is_some_and(|r| r.reason.as_str() == reason) =>
            {
                let r = err.refusal().map(|r| r.to_json()).unwrap_or_default();
                println!(
                    "       ✗ refused {} ({}): {}",
                    r["reason"].as_str().unwrap_or("?"),
                    r["status"],
                    r["message"].as_str().unwrap_or("")
                );
                Ok(Value::Null)
            }
            (Ok(result), Expect::Refused(reason)) => Err(Failure::Other(format!(
                "demo step {} should have been refused with {reason} but was accepted: {result}",
                self.step
            ))),
            (Err(err), _) => Err(Failure::Other(format!(
                "demo step {} failed: {err}",
                self.step
            ))),
        }
    }

    fn claim_status(&self, reader: &Speaker, claim: &str) -> CmdResult {
        let c = self
            .forum
            .call(Some(&reader.token), "get_claim", &json!({ "claim": claim }))?;
        println!(
            "       claim {} is now {} ({} attestation(s), {} refutation(s))",
            c["id"].as_str().unwrap_or("?"),
            c["status"].as_str().unwrap_or("?"),
            c["attestations"].as_array().map_or(0, Vec::len),
            c["refutations"].as_array().map_or(0, Vec::len)
        );
        Ok(())
    }
}

/// What a post did: the message, the thread's state and turn, events, a new claim.
fn print_outcome(result: &Value) {
    let thread = &result["thread"];
    println!(
        "       ✓ {} in {} · state {} · awaiting {}",
        result["message"]["id"].as_str().unwrap_or("?"),
        thread["id"].as_str().unwrap_or("?"),
        view::state(thread),
        view::awaiting(&thread["awaiting"])
    );
    let events: Vec<&Value> = match (&result["event"], &result["events"]) {
        (Value::Object(_), _) => vec![&result["event"]],
        (_, Value::Array(list)) => list.iter().collect(),
        _ => Vec::new(),
    };
    for ev in events {
        println!("       ↳ {}", view::event_change(ev));
    }
    // `claim` is the claim an assert or refute created, or the one an attest or
    // verify moved.
    if let Some(claim) = result["claim"]["id"].as_str() {
        let created = matches!(
            result["message"]["kind"].as_str(),
            Some("assert" | "refute")
        );
        let verb = if created { "creates" } else { "now" };
        match result["claim"]["status"].as_str() {
            Some(status) => println!("       ↳ {verb} claim {claim} ({status})"),
            None => println!("       ↳ {verb} claim {claim}"),
        }
    }
}

/// A string at `path` in a result, or an error naming what the engine left out.
fn field(value: &Value, path: &[&str]) -> Result<String, Failure> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            Failure::Other(format!(
                "the engine's answer lacks {}: {value}",
                path.join(".")
            ))
        })
}

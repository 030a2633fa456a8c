//! Property tests: random sequences of acts by random actors keep the protocol's
//! invariants.

#[path = "pg/support.rs"]
mod support;

use std::collections::HashMap;

use parley_forum::{Config, Forum, Right, TokenSpec};
use proptest::prelude::*;
use serde_json::{json, Value};

const ACTORS: [&str; 5] = ["creator", "plain", "moderator", "human", "verifier"];
const KINDS: [&str; 13] = [
    "ask", "answer", "note", "propose", "object", "handoff", "decide", "mark", "reopen", "assert",
    "attest", "refute", "verify",
];
const STATES: [&str; 8] = [
    "open", "answered", "decided", "closed", "deferred", "obsolete", "rejected", "closed",
];
const FORWARD: [&str; 4] = ["open", "answered", "decided", "closed"];

#[derive(Debug, Clone)]
struct Step {
    actor: usize,
    kind: usize,
    thread: usize,
    parent: usize,
    extension: usize,
    state: usize,
    body: usize,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0..5usize,
        0..13usize,
        0..4usize,
        0..8usize,
        0..3usize,
        0..8usize,
        0..6usize,
    )
        .prop_map(
            |(actor, kind, thread, parent, extension, state, body)| Step {
                actor,
                kind,
                thread,
                parent,
                extension,
                state,
                body,
            },
        )
}

struct World {
    forum: Forum,
    tokens: Vec<String>,
    threads: Vec<String>,
    messages: HashMap<String, Vec<String>>,
    claims: Vec<String>,
    last_message: u64,
    last_event: u64,
}

fn num(key: &str) -> u64 {
    key.split('_').nth(1).unwrap().parse().unwrap()
}

impl World {
    fn new() -> World {
        let mut config = Config::default();
        config.limits.writes_per_minute = 0;
        World::on(Forum::in_memory(config).unwrap())
    }

    /// A world on a new forum of the PostgreSQL server, if one runs.
    fn on_postgres() -> Option<World> {
        let base = support::server()?;
        let mut config = Config::default();
        config.limits.writes_per_minute = 0;
        config.durability = parley_forum::Durability::Volatile;
        let url = support::fresh_url(&base, "props");
        Some(World::on(parley_postgres::open(url, config).unwrap()))
    }

    fn on(forum: Forum) -> World {
        let rw = [Right::Read, Right::Write];
        let tokens = vec![
            forum.create_token(&TokenSpec::llm("creator", &rw)).unwrap(),
            forum.create_token(&TokenSpec::llm("plain", &rw)).unwrap(),
            forum
                .create_token(
                    &TokenSpec::llm("moderator", &[Right::Read, Right::Write, Right::Lock])
                        .label("Mod"),
                )
                .unwrap(),
            forum.create_token(&TokenSpec::human("ann")).unwrap(),
            forum
                .create_token(&TokenSpec::llm(
                    "verifier",
                    &[Right::Read, Right::Write, Right::Verify],
                ))
                .unwrap(),
        ];
        World {
            forum,
            tokens,
            threads: Vec::new(),
            messages: HashMap::new(),
            claims: Vec::new(),
            last_message: 0,
            last_event: 0,
        }
    }

    fn envelope(&self, s: &Step) -> Value {
        let kind = KINDS[s.kind];
        let mut env = json!({ "kind": kind, "body": format!("body {} {}", s.body, kind) });
        if let Some(thread) = self.threads.get(s.thread % (self.threads.len().max(1))) {
            let msgs = &self.messages[thread];
            if s.parent < 4 {
                env["parent"] = json!(msgs[s.parent % msgs.len()]);
            } else if !(kind == "ask" || kind == "assert") || s.parent < 6 {
                env["thread"] = json!(thread);
            }
        }
        if s.extension > 0 {
            env["from"] = json!({ "extension": format!("x{}", s.extension) });
        }
        match kind {
            "mark" => env["state"] = json!(STATES[s.state]),
            "handoff" => env["to"] = json!(format!("ainotes:{}", ACTORS[s.state % 2])),
            "attest" | "refute" | "verify" => {
                if let Some(c) = self.claims.get(s.state % self.claims.len().max(1)) {
                    env["claim"] = json!(c);
                } else {
                    env["claim"] = json!("cl_1");
                }
                env["evidence"] = json!([{ "kind": "log", "ref": format!("run {}", s.body) }]);
            }
            _ => {}
        }
        env
    }

    fn thread(&self, id: &str) -> Value {
        self.forum
            .call(
                Some(&self.tokens[3]),
                "get_thread",
                &json!({ "thread": id }),
            )
            .unwrap()
    }
}

/// Folds a thread's state events from `open` and compares with its summary.
fn replay_matches(world: &World, thread: &str) -> Result<(), TestCaseError> {
    let events = world
        .forum
        .call(
            Some(&world.tokens[3]),
            "get_events",
            &json!({ "thread": thread, "limit": 200 }),
        )
        .unwrap();
    let mut state = "open".to_string();
    let mut confirmed = true;
    for e in events["items"].as_array().unwrap() {
        match e["type"].as_str().unwrap() {
            "transition" => {
                prop_assert_eq!(e["from_state"].as_str().unwrap(), state.as_str());
                state = e["to_state"].as_str().unwrap().to_string();
                confirmed = e["confirmed"].as_bool().unwrap();
            }
            "confirmation" => {
                prop_assert_eq!(e["to_state"].as_str().unwrap(), state.as_str());
                confirmed = true;
            }
            _ => {}
        }
    }
    let view = world.thread(thread);
    prop_assert_eq!(view["thread"]["state"].as_str().unwrap(), state.as_str());
    prop_assert_eq!(view["thread"]["state_confirmed_at"].is_null(), !confirmed);
    Ok(())
}

/// The message that set the turn: the last one of a turn-setting act.
fn last_turn_setter(view: &Value) -> Option<(String, String)> {
    fn walk(m: &Value, out: &mut Vec<(u64, String, String)>) {
        out.push((
            num(m["id"].as_str().unwrap()),
            m["id"].as_str().unwrap().into(),
            m["kind"].as_str().unwrap().into(),
        ));
        for r in m["replies"].as_array().unwrap() {
            walk(r, out);
        }
    }
    let mut all = Vec::new();
    for m in view["messages"].as_array().unwrap() {
        walk(m, &mut all);
    }
    all.sort();
    let root = all.first().map(|m| m.1.clone());
    all.into_iter()
        .rev()
        .find(|(_, id, kind)| {
            // note, attest, verify and a nested assert leave the turn as it was.
            let keeps_turn = matches!(kind.as_str(), "note" | "attest" | "verify")
                || (kind == "assert" && Some(id) != root.as_ref());
            !keeps_turn
        })
        .map(|(_, id, kind)| (id, kind))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn random_acts_keep_the_invariants(steps in proptest::collection::vec(step(), 1..60)) {
        keep_the_invariants(World::new(), &steps)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    /// The same on the PostgreSQL backend.
    #[test]
    fn random_acts_keep_the_invariants_on_postgres(steps in proptest::collection::vec(step(), 1..60)) {
        if let Some(world) = World::on_postgres() {
            keep_the_invariants(world, &steps)?;
        }
    }
}

fn keep_the_invariants(mut world: World, steps: &[Step]) -> Result<(), TestCaseError> {
    for s in steps {
        let env = world.envelope(s);
        let before = env.get("thread").or(env.get("parent")).map(|_| ());
        let target = env
            .get("thread")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                env.get("parent").and_then(Value::as_str).and_then(|p| {
                    world
                        .messages
                        .iter()
                        .find(|(_, ms)| ms.iter().any(|m| m == p))
                        .map(|(t, _)| t.clone())
                })
            });
        let prior = target.as_ref().map(|t| world.thread(t)["thread"].clone());
        let result = world.forum.call(Some(&world.tokens[s.actor]), "post", &env);
        let Ok(result) = result else { continue };
        let _ = before;

        // Ids strictly increase.
        let msg = result["message"]["id"].as_str().unwrap().to_string();
        prop_assert!(num(&msg) > world.last_message);
        world.last_message = num(&msg);
        for e in result
            .get("events")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .iter()
            .chain(result.get("event"))
        {
            let id = num(e["id"].as_str().unwrap());
            prop_assert!(id > world.last_event);
            world.last_event = id;
        }
        let thread = result["thread"]["id"].as_str().unwrap().to_string();
        if !world.threads.contains(&thread) {
            world.threads.push(thread.clone());
        }
        world.messages.entry(thread.clone()).or_default().push(msg);
        if let Some(c) = result.get("claim") {
            world.claims.push(c["id"].as_str().unwrap().to_string());
        }

        if let Some(prior) = prior {
            let kind = KINDS[s.kind];
            // A locked thread accepts nothing but reopen.
            if prior["locked"].as_bool().unwrap() {
                prop_assert_eq!(kind, "reopen");
            }
            // No llm moves a state backwards (reopen is the one way back).
            let human = ACTORS[s.actor] == "human";
            let (from, to) = (
                prior["state"].as_str().unwrap(),
                result["thread"]["state"].as_str().unwrap(),
            );
            if !human && kind != "reopen" && from != to {
                let rank = |s: &str| FORWARD.iter().position(|f| *f == s);
                if let (Some(a), Some(b)) = (rank(from), rank(to)) {
                    prop_assert!(b > a, "{} moved {} back to {}", ACTORS[s.actor], from, to);
                }
                prop_assert!(
                    rank(from).is_some(),
                    "{} left side state {} by {}",
                    ACTORS[s.actor],
                    from,
                    kind
                );
            }
        }
    }
    for thread in world.threads.clone() {
        let view = world.thread(&thread);
        // One state per thread, from the protocol's list.
        prop_assert!(STATES.contains(&view["thread"]["state"].as_str().unwrap()));
        let locked = view["thread"]["locked"].as_bool().unwrap();
        prop_assert_eq!(
            locked,
            view["thread"]["state"] == "closed" && !view["thread"]["state_confirmed_at"].is_null()
        );
        replay_matches(&world, &thread)?;
        // `awaiting` is what the last turn-setting message says.
        let awaiting = &view["thread"]["awaiting"];
        match last_turn_setter(&view) {
            Some((_, kind)) if kind == "decide" || kind == "mark" => {
                prop_assert!(awaiting.is_null())
            }
            Some((id, _)) => prop_assert_eq!(awaiting["message"].as_str(), Some(id.as_str())),
            None => {}
        }
    }
    Ok(())
}

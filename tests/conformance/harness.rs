//! Runs the language-neutral conformance transcripts of `tests/conformance/`.
//!
//! The format is specified in `tests/conformance/README.md`; the C and Python
//! harnesses follow the same text. This module parses a transcript strictly (an
//! unknown key is an error, so a typo cannot silently weaken an expectation),
//! drives it through a caller-supplied `call` function and returns every mismatch.
//! Passing a different `call` (for instance one that goes through the MCP handler)
//! runs the same transcripts over another transport.

// Each test crate that includes this module uses a different part of it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use parley_forum::{Config, Forum, TokenSpec};
use serde_json::{json, Map, Value};

/// How a step is run: `(forum, token, operation, args)` to `Ok(result)` or
/// `Err(refusal)`, where the refusal is the JSON object of SPEC §12
/// (`{"reason", "status", "message", …}`).
pub type CallFn<'a> = dyn FnMut(&Forum, Option<&str>, &str, &Value) -> Result<Value, Value> + 'a;

/// One parsed transcript.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The `name` key; equal to the file stem.
    pub name: String,
    /// What the transcript exercises.
    pub description: String,
    /// Passed to `Config::from_json`.
    pub settings: Value,
    /// `(actor, token spec)` in creation order.
    pub tokens: Vec<(String, Value)>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step of a transcript.
#[derive(Debug, Clone)]
pub enum Step {
    /// `{"revoke": actor}`.
    Revoke(String),
    /// An operation call and its expectation.
    Call(CallStep),
}

/// An operation call.
#[derive(Debug, Clone)]
pub struct CallStep {
    /// Whose token is sent.
    pub who: Who,
    /// The operation name (SPEC §11).
    pub op: String,
    /// The arguments, before `$name` substitution.
    pub args: Value,
    /// What must come back.
    pub expect: Expect,
    /// `(name, dotted path)` pairs saved from a successful result.
    pub save: Vec<(String, String)>,
}

/// The token a step sends.
#[derive(Debug, Clone)]
pub enum Who {
    /// `"actor": "alice"` (the actor's secret) or `"actor": null` (no token).
    Actor(Option<String>),
    /// `"token": "…"`: this literal string.
    Literal(String),
}

/// The expectation of a step.
#[derive(Debug, Clone)]
pub enum Expect {
    /// `{"ok": pattern}`: success, the result matching `pattern`.
    Ok(Value),
    /// `{"refused": pattern}`: a refusal matching `pattern`.
    Refused(Value),
}

impl Who {
    fn describe(&self) -> String {
        match self {
            Who::Actor(Some(actor)) => actor.clone(),
            Who::Actor(None) => "no token".into(),
            Who::Literal(token) => format!("token {token:?}"),
        }
    }
}

/// The directory holding the transcripts: `tests/conformance` of the workspace's
/// root package. The engine's tests include this file, and so do parley-postgres's
/// (`postgres/tests/postgres.rs`), whose package sits one level down.
pub fn transcript_dir() -> PathBuf {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    [Some(package), package.parent()]
        .into_iter()
        .flatten()
        .map(|root| root.join("tests").join("conformance"))
        .find(|dir| dir.is_dir())
        .expect("tests/conformance beside this package or its parent")
}

/// Every `*.json` file of the transcript directory, sorted by name.
pub fn transcript_paths() -> Vec<PathBuf> {
    let dir = transcript_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
}

/// The call of the Rust API: `Forum::call`, a refusal turned into its JSON.
pub fn direct_call(
    forum: &Forum,
    token: Option<&str>,
    op: &str,
    args: &Value,
) -> Result<Value, Value> {
    forum
        .call(token, op, args)
        .map_err(|err| match err.refusal() {
            Some(refusal) => refusal.to_json(),
            // Not a protocol refusal: report it in a shape no `refused` pattern matches
            // by accident, so the step fails with the error text visible.
            None => json!({ "reason": null, "status": null, "host_error": err.to_string() }),
        })
}

/// Reads and checks one transcript file.
pub fn load_transcript(path: &Path) -> Result<Transcript, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let top = doc
        .as_object()
        .ok_or("the transcript is not a JSON object")?;
    only_keys(
        top,
        &["name", "description", "settings", "tokens", "steps"],
        "the transcript",
    )?;
    let name = string_at(top, "name", "the transcript")?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if name != stem {
        return Err(format!("name {name:?} differs from the file name {stem:?}"));
    }
    let description = string_at(top, "description", "the transcript")?;
    let settings = top.get("settings").cloned().unwrap_or_else(|| json!({}));
    if !settings.is_object() {
        return Err("settings is not an object".into());
    }

    let mut tokens = Vec::new();
    for (i, entry) in array_at(top, "tokens")?.iter().enumerate() {
        let mut spec = entry
            .as_object()
            .ok_or_else(|| format!("tokens[{i}] is not an object"))?
            .clone();
        let actor = match spec.remove("actor") {
            Some(Value::String(actor)) => actor,
            _ => return Err(format!("tokens[{i}] has no string `actor`")),
        };
        if tokens.iter().any(|(a, _)| *a == actor) {
            return Err(format!("tokens[{i}]: actor {actor:?} defined twice"));
        }
        tokens.push((actor, Value::Object(spec)));
    }

    let mut steps = Vec::new();
    for (i, raw) in array_at(top, "steps")?.iter().enumerate() {
        let step = parse_step(raw, &tokens).map_err(|e| format!("steps[{i}]: {e}"))?;
        steps.push(step);
    }
    if steps.is_empty() {
        return Err("the transcript has no steps".into());
    }
    Ok(Transcript {
        name,
        description,
        settings,
        tokens,
        steps,
    })
}

fn parse_step(raw: &Value, tokens: &[(String, Value)]) -> Result<Step, String> {
    let obj = raw.as_object().ok_or("not an object")?;
    let known_actor = |actor: &str| -> Result<(), String> {
        if tokens.iter().any(|(a, _)| a == actor) {
            Ok(())
        } else {
            Err(format!("unknown actor {actor:?}"))
        }
    };
    if let Some(revoke) = obj.get("revoke") {
        only_keys(obj, &["revoke"], "a revoke step")?;
        let actor = revoke.as_str().ok_or("`revoke` is not a string")?;
        known_actor(actor)?;
        return Ok(Step::Revoke(actor.to_string()));
    }
    only_keys(
        obj,
        &["actor", "token", "op", "args", "expect", "save"],
        "a call step",
    )?;
    let who = match (obj.get("actor"), obj.get("token")) {
        (Some(Value::Null), None) => Who::Actor(None),
        (Some(Value::String(actor)), None) => {
            known_actor(actor)?;
            Who::Actor(Some(actor.clone()))
        }
        (None, Some(Value::String(token))) => Who::Literal(token.clone()),
        _ => {
            return Err(
                "needs exactly one of `actor` (a name or null) and `token` (a string)".into(),
            )
        }
    };
    let op = string_at(obj, "op", "a call step")?;
    let args = obj.get("args").cloned().ok_or("no `args`")?;
    let expect_obj = obj
        .get("expect")
        .and_then(Value::as_object)
        .ok_or("no `expect` object")?;
    let expect = match (
        expect_obj.get("ok"),
        expect_obj.get("refused"),
        expect_obj.len(),
    ) {
        (Some(pattern), None, 1) => Expect::Ok(pattern.clone()),
        (None, Some(pattern @ Value::Object(fields)), 1) => {
            if !fields.contains_key("reason") || !fields.contains_key("status") {
                return Err("`refused` must give `reason` and `status`".into());
            }
            Expect::Refused(pattern.clone())
        }
        _ => return Err("`expect` must hold exactly one of `ok` and `refused` (an object)".into()),
    };
    let mut save = Vec::new();
    if let Some(raw) = obj.get("save") {
        if matches!(expect, Expect::Refused(_)) {
            return Err("`save` on a step expected to be refused".into());
        }
        for (name, path) in raw.as_object().ok_or("`save` is not an object")? {
            let path = path.as_str().ok_or("a `save` path is not a string")?;
            save.push((name.clone(), path.to_string()));
        }
    }
    Ok(Step::Call(CallStep {
        who,
        op,
        args,
        expect,
        save,
    }))
}

fn only_keys(obj: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!("{what} has an unknown key {key:?}")),
        None => Ok(()),
    }
}

fn string_at(obj: &Map<String, Value>, key: &str, what: &str) -> Result<String, String> {
    obj.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("{what} has no string `{key}`"))
}

fn array_at<'v>(obj: &'v Map<String, Value>, key: &str) -> Result<&'v Vec<Value>, String> {
    obj.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{key}` is not an array"))
}

/// Runs one transcript through `call` and returns every mismatch, each naming the
/// file and the step. An empty list means the transcript passed.
pub fn run_transcript(path: &Path, call: &mut CallFn<'_>) -> Vec<String> {
    run_transcript_on(path, call, &|config| Forum::in_memory(config))
}

/// [`run_transcript`] on the forums `open` makes (another backend).
#[allow(dead_code)]
pub fn run_transcript_on(
    path: &Path,
    call: &mut CallFn<'_>,
    open: &dyn Fn(Config) -> parley_forum::Result<Forum>,
) -> Vec<String> {
    let file = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_string();
    let transcript = match load_transcript(path) {
        Ok(t) => t,
        Err(e) => return vec![format!("{file}: {e}")],
    };
    let config = match Config::from_json(&transcript.settings) {
        Ok(c) => c,
        Err(e) => return vec![format!("{file}: settings refused: {e}")],
    };
    let forum = match open(config) {
        Ok(f) => f,
        Err(e) => return vec![format!("{file}: cannot open a forum: {e}")],
    };
    let mut secrets: HashMap<String, String> = HashMap::new();
    for (actor, spec) in &transcript.tokens {
        let made = TokenSpec::from_json(spec).and_then(|spec| forum.create_token(&spec));
        match made {
            Ok(secret) => {
                secrets.insert(actor.clone(), secret);
            }
            Err(e) => return vec![format!("{file}: token of actor {actor:?} refused: {e}")],
        }
    }

    let mut failures = Vec::new();
    let mut saved: HashMap<String, Value> = HashMap::new();
    for (index, step) in transcript.steps.iter().enumerate() {
        let step = match step {
            Step::Revoke(actor) => {
                match forum.revoke_token(&secrets[actor]) {
                    Ok(true) => {}
                    Ok(false) => failures.push(format!(
                        "{file}: step {index}: revoke {actor}: the token was not active"
                    )),
                    Err(e) => failures.push(format!("{file}: step {index}: revoke {actor}: {e}")),
                }
                continue;
            }
            Step::Call(step) => step,
        };
        let head = format!(
            "{file}: step {index} ({} as {})",
            step.op,
            step.who.describe()
        );
        let args = match substitute(&step.args, &saved) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{head}: args: {e}"));
                continue;
            }
        };
        let expect = match &step.expect {
            Expect::Ok(p) => substitute(p, &saved).map(Expect::Ok),
            Expect::Refused(p) => substitute(p, &saved).map(Expect::Refused),
        };
        let expect = match expect {
            Ok(e) => e,
            Err(e) => {
                failures.push(format!("{head}: expect: {e}"));
                continue;
            }
        };
        let token = match &step.who {
            Who::Actor(Some(actor)) => Some(secrets[actor].as_str()),
            Who::Actor(None) => None,
            Who::Literal(token) => Some(token.as_str()),
        };
        let outcome = call(&forum, token, &step.op, &args);

        let mut problems = Vec::new();
        match (&expect, &outcome) {
            (Expect::Ok(pattern), Ok(actual)) => match_value(pattern, actual, "", &mut problems),
            (Expect::Refused(pattern), Err(actual)) => {
                match_value(pattern, actual, "", &mut problems)
            }
            (Expect::Ok(_), Err(_)) => problems.push("expected success, got a refusal".into()),
            (Expect::Refused(_), Ok(_)) => problems.push("expected a refusal, got success".into()),
        }
        if let Ok(actual) = &outcome {
            for (name, path) in &step.save {
                match lookup(actual, path) {
                    Some(v) => {
                        saved.insert(name.clone(), v.clone());
                    }
                    None => problems.push(format!("save {name}: no value at {path:?}")),
                }
            }
        }
        if !problems.is_empty() {
            let (expected, actual) = match (&expect, &outcome) {
                (Expect::Ok(p), _) => (json!({ "ok": p }), outcome_json(&outcome)),
                (Expect::Refused(p), _) => (json!({ "refused": p }), outcome_json(&outcome)),
            };
            let mut msg = format!("{head}: {}", problems.join("; "));
            let _ = write!(msg, "\n    args:     {}", compact(&args));
            let _ = write!(msg, "\n    expected: {}", compact(&expected));
            let _ = write!(msg, "\n    actual:   {}", compact(&actual));
            failures.push(msg);
        }
    }
    failures
}

fn outcome_json(outcome: &Result<Value, Value>) -> Value {
    match outcome {
        Ok(v) => json!({ "ok": v }),
        Err(v) => json!({ "refused": v }),
    }
}

fn compact(v: &Value) -> String {
    const MAX: usize = 3000;
    let text = v.to_string();
    if text.chars().count() <= MAX {
        text
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

/// Replaces every string `"$name"` (the whole string) by the saved value.
pub fn substitute(v: &Value, saved: &HashMap<String, Value>) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => match s.strip_prefix('$') {
            Some(name) => saved
                .get(name)
                .cloned()
                .ok_or_else(|| format!("nothing saved under {name:?}"))?,
            None => v.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| substitute(item, saved))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, item) in map {
                out.insert(k.clone(), substitute(item, saved)?);
            }
            Value::Object(out)
        }
        _ => v.clone(),
    })
}

/// Follows a dotted path (`"items.0.thread.id"`); numeric segments index arrays.
pub fn lookup<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(v, |cur, seg| match cur {
        Value::Object(map) => map.get(seg),
        Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// Matches `actual` against `pattern`: objects as subsets, arrays element-wise with
/// equal length, scalars by equality (numbers by value). Appends one line per
/// mismatch, naming its path.
pub fn match_value(pattern: &Value, actual: &Value, path: &str, problems: &mut Vec<String>) {
    let at = |p: &str| {
        if p.is_empty() {
            "the result".to_string()
        } else {
            p.to_string()
        }
    };
    match (pattern, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, sub) in want {
                let sub_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match got.get(key) {
                    Some(value) => match_value(sub, value, &sub_path, problems),
                    None => problems.push(format!("{sub_path}: missing")),
                }
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                problems.push(format!(
                    "{}: expected {} items, got {}",
                    at(path),
                    want.len(),
                    got.len()
                ));
                return;
            }
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                let sub_path = if path.is_empty() {
                    i.to_string()
                } else {
                    format!("{path}.{i}")
                };
                match_value(w, g, &sub_path, problems);
            }
        }
        (Value::Number(want), Value::Number(got)) => {
            let same = match (want.as_i64(), got.as_i64()) {
                (Some(a), Some(b)) => a == b,
                _ => want.as_f64() == got.as_f64(),
            };
            if !same {
                problems.push(format!("{}: expected {want}, got {got}", at(path)));
            }
        }
        _ => {
            if pattern != actual {
                problems.push(format!(
                    "{}: expected {}, got {}",
                    at(path),
                    compact(pattern),
                    compact(actual)
                ));
            }
        }
    }
}

//! `parley digest THREAD`: what matters of a thread too long to read (SPEC §17).

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::human::Call;
use crate::reads::print_json;
use crate::terminal::visible;
use crate::token_arg::TokenArg;
use crate::{view, CmdResult};

/// `parley digest`'s arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) auth: TokenArg,
    /// The thread id (`th_1` or `1`).
    id: String,
    /// Print the raw result as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(forum: &dyn Call, token: Option<&str>, a: &Args) -> CmdResult {
    let result = forum.call(token, "get_digest", &json!({ "thread": a.id }))?;
    if a.json {
        print_json(&result);
    } else {
        print!("{}", visible(&describe(&result)));
    }
    Ok(())
}

/// The digest as sections: the summary, then each part with its messages.
pub(crate) fn describe(d: &Value) -> String {
    let summary = &d["thread"];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  {}",
        summary["id"].as_str().unwrap_or("?"),
        summary["topic"].as_str().unwrap_or("")
    );
    let _ = writeln!(out, "  state     {}", view::state(summary));
    let _ = writeln!(out, "  awaiting  {}", view::awaiting(&summary["awaiting"]));
    let _ = writeln!(
        out,
        "  messages  {} · {} not shown here",
        summary["message_count"], d["omitted"]
    );
    section(&mut out, "Root", std::slice::from_ref(&d["root"]));
    let decision = match &d["decision"] {
        Value::Null => &[][..],
        m => std::slice::from_ref(m),
    };
    section(&mut out, "Decision", decision);
    section(&mut out, "Open questions", list(&d["open_questions"]));
    let claims = list(&d["claims"]);
    let _ = writeln!(out, "\nClaims (newest first)");
    if claims.is_empty() {
        out.push_str("  none\n");
    }
    for c in claims {
        let _ = writeln!(
            out,
            "  {} [{}] {}",
            c["id"].as_str().unwrap_or("?"),
            c["status"].as_str().unwrap_or("?"),
            first_line(&c["text"])
        );
    }
    section(&mut out, "Recent", list(&d["recent"]));
    out
}

fn list(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn first_line(v: &Value) -> &str {
    v.as_str().and_then(|s| s.lines().next()).unwrap_or("")
}

fn section(out: &mut String, title: &str, messages: &[Value]) {
    let _ = writeln!(out, "\n{title}");
    if messages.is_empty() {
        out.push_str("  none\n");
    }
    for m in messages {
        let _ = write!(
            out,
            "  {} {} · {} ({}) · {}",
            m["id"].as_str().unwrap_or("?"),
            m["kind"].as_str().unwrap_or("?"),
            view::author(&m["from"]),
            m["author_kind"].as_str().unwrap_or("?"),
            m["created_at"].as_str().unwrap_or("?")
        );
        if let Some(parent) = m["parent"].as_str() {
            let _ = write!(out, " · under {parent}");
        }
        out.push('\n');
        for line in m["body"].as_str().unwrap_or("").lines() {
            let _ = writeln!(out, "    │ {line}");
        }
    }
}

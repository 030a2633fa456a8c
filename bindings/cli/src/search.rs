//! `parley search WORDS`: messages holding every word, newest first (SPEC §14.4).

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::human::Call;
use crate::reads::{print_json, Page};
use crate::terminal::visible;
use crate::token_arg::TokenArg;
use crate::CmdResult;

/// `parley search`'s arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) auth: TokenArg,
    /// The words (1 to 16); case does not matter.
    #[arg(required = true, num_args = 1..)]
    words: Vec<String>,
    /// Only in this thread.
    #[arg(long)]
    thread: Option<String>,
    #[command(flatten)]
    page: Page,
    /// Print the raw result as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(forum: &dyn Call, token: Option<&str>, a: &Args) -> CmdResult {
    let mut args = a.page.args();
    args.insert("q".into(), json!(a.words.join(" ")));
    if let Some(thread) = &a.thread {
        args.insert("thread".into(), json!(thread));
    }
    let result = forum.call(token, "search", &Value::Object(args))?;
    if a.json {
        print_json(&result);
    } else {
        print!("{}", visible(&describe(&result)));
    }
    Ok(())
}

fn describe(result: &Value) -> String {
    let mut out = String::new();
    let items = result["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if items.is_empty() {
        out.push_str("No message holds every one of these words.\n");
    }
    for item in items {
        let (m, t) = (&item["message"], &item["thread"]);
        let _ = writeln!(
            out,
            "{} in {} ({})  {} by {}",
            m["id"].as_str().unwrap_or("?"),
            t["id"].as_str().unwrap_or("?"),
            t["state"].as_str().unwrap_or("?"),
            m["kind"].as_str().unwrap_or("?"),
            m["from"]["identity"].as_str().unwrap_or("?"),
        );
        let body = m["body"].as_str().unwrap_or("");
        let _ = writeln!(out, "    {}", body.lines().next().unwrap_or(""));
    }
    if let Some(cursor) = result["cursor"].as_str() {
        if result["more"].as_bool() == Some(true) {
            let _ = writeln!(out, "(older matches: --since {cursor})");
        }
    }
    out
}

//! `parley post | thread | inbox | events | claim`: the operations from the command
//! line, through the same generic call every transport uses (on the forum file, or
//! through a running server's admin channel).

use std::io::Read;

use clap::Args;
use serde_json::{json, Map, Value};

use crate::human::Call;
use crate::terminal::visible;
use crate::{view, CmdResult, Failure};

/// Paging options shared by the list views.
#[derive(Args)]
pub(crate) struct Page {
    /// Only what came after this cursor (as printed by a previous call).
    #[arg(long)]
    since: Option<String>,
    /// At most this many items.
    #[arg(long)]
    limit: Option<u64>,
}

impl Page {
    pub(crate) fn args(&self) -> Map<String, Value> {
        let mut args = Map::new();
        if let Some(since) = &self.since {
            args.insert("since".into(), json!(since));
        }
        if let Some(limit) = self.limit {
            args.insert("limit".into(), json!(limit));
        }
        args
    }
}

pub(crate) fn post(forum: &dyn Call, token: Option<&str>, envelope: &str) -> CmdResult {
    let text = if envelope == "-" {
        let mut buf = String::new();
        std::io::stdin().read_to_string(&mut buf)?;
        buf
    } else {
        envelope.to_string()
    };
    let envelope: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Other(format!("the envelope is not valid JSON: {e}")))?;
    let result = forum.call(token, "post", &envelope)?;
    print_json(&result);
    Ok(())
}

pub(crate) fn thread(forum: &dyn Call, token: Option<&str>, id: &str, raw: bool) -> CmdResult {
    let result = forum.call(token, "get_thread", &json!({ "thread": id }))?;
    if raw {
        print_json(&result);
        return Ok(());
    }
    let thread_id = result["thread"]["id"].as_str().unwrap_or(id).to_string();
    let events = all_events(forum, token, Some(&thread_id))?;
    print!("{}", visible(&view::thread(&result, &events)));
    Ok(())
}

pub(crate) fn inbox(
    forum: &dyn Call,
    token: Option<&str>,
    page: &Page,
    extension: Option<String>,
    raw: bool,
) -> CmdResult {
    let mut args = page.args();
    if let Some(ext) = extension {
        args.insert("extension".into(), json!(ext));
    }
    let result = forum.call(token, "get_inbox", &Value::Object(args))?;
    if raw {
        print_json(&result);
    } else {
        print!("{}", visible(&view::inbox(&result)));
    }
    Ok(())
}

pub(crate) fn events(
    forum: &dyn Call,
    token: Option<&str>,
    page: &Page,
    thread: Option<String>,
    raw: bool,
) -> CmdResult {
    let mut args = page.args();
    if let Some(thread) = thread {
        args.insert("thread".into(), json!(thread));
    }
    let result = forum.call(token, "get_events", &Value::Object(args))?;
    if raw {
        print_json(&result);
    } else {
        print!("{}", visible(&view::events(&result)));
    }
    Ok(())
}

pub(crate) fn claim(forum: &dyn Call, token: Option<&str>, id: &str, raw: bool) -> CmdResult {
    let result = forum.call(token, "get_claim", &json!({ "claim": id }))?;
    if raw {
        print_json(&result);
    } else {
        print!("{}", visible(&view::claim(&result)));
    }
    Ok(())
}

/// Every event (of one thread, or of the forum), following the cursor page by page.
pub(crate) fn all_events(
    forum: &dyn Call,
    token: Option<&str>,
    thread: Option<&str>,
) -> Result<Vec<Value>, Failure> {
    let mut events = Vec::new();
    let mut since: Option<String> = None;
    // Each page advances the cursor; the bound guards against a cursor that never moves.
    for _ in 0..100_000 {
        let mut args = Map::new();
        if let Some(thread) = thread {
            args.insert("thread".into(), json!(thread));
        }
        if let Some(cursor) = &since {
            args.insert("since".into(), json!(cursor));
        }
        let page = forum.call(token, "get_events", &Value::Object(args))?;
        let items = page["items"].as_array().cloned().unwrap_or_default();
        let more = page["more"].as_bool().unwrap_or(false);
        let empty = items.is_empty();
        events.extend(items);
        match page["cursor"].as_str() {
            Some(cursor) if more && !empty => since = Some(cursor.to_string()),
            _ => return Ok(events),
        }
    }
    Ok(events)
}

/// Prints `value` as pretty JSON; DEL and C1 characters, which JSON allows raw, are
/// escaped too (see `terminal`).
pub(crate) fn print_json(value: &Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    println!("{}", visible(&text));
}

//! MCP over stdio: one JSON-RPC message per line in, one per line out.
//!
//! stdout carries nothing but MCP messages; diagnostics go to stderr. The loop ends
//! at end of input. Meanwhile the admin channel (`control`) answers beside the
//! forum file, and is removed when the loop ends.

use std::io::{BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use parley_forum::Forum;

use crate::{CmdResult, Failure};
use parley_forum::mcp::codes::{INTERNAL_ERROR, PARSE_ERROR};
use parley_forum::mcp::error_response;
use parley_server::control::{Channel, Direct};
use parley_server::too_large_response;

pub(crate) fn serve(forum: Forum, db: &Path, token: Option<&str>) -> CmdResult {
    let forum = Arc::new(forum);
    let mut channel = Channel::start(db, Arc::new(Direct(Arc::clone(&forum))))?;
    let served = serve_lines(&forum, token);
    // The channel's connections let go of the forum before it is closed; a
    // waiting read among them answers now rather than at its deadline.
    forum.end_waits();
    if let Some(channel) = channel.as_mut() {
        channel.stop();
    }
    drop(channel);
    if Arc::try_unwrap(forum).is_err() {
        return Err(Failure::Other(
            "the forum was still in use at shutdown".into(),
        ));
    }
    served
}

fn serve_lines(forum: &Forum, token: Option<&str>) -> CmdResult {
    let token = token.filter(|t| !t.is_empty());
    let max = forum.config().limits.request_max_bytes;
    eprintln!(
        "parley: MCP over stdio on {} ({})",
        forum.config().realm,
        if token.is_some() {
            "token from PARLEY_TOKEN"
        } else {
            "no token: PARLEY_TOKEN is unset"
        }
    );
    // The caller is one identity for the whole stream: looked up once, for the log.
    let identity = token
        .and_then(|t| forum.identity_of(t))
        .unwrap_or_else(|| "-".into());
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut output = stdout.lock();
    while let Some(line) = read_line(&mut input, max)? {
        let reply = match line {
            Line::Message(text) => {
                let text = text.trim();
                if text.is_empty() {
                    continue;
                }
                let started = std::time::Instant::now();
                let span = parley_server::telemetry::stdio_begin();
                // A panic in the handler answers this message; the next ones are still served.
                let handled =
                    std::panic::catch_unwind(AssertUnwindSafe(|| forum.mcp_reply(token, text)));
                if let Some(span) = span {
                    let reply = handled.as_ref().ok().and_then(Option::as_ref);
                    parley_server::telemetry::stdio_end(span, text, reply, handled.is_err());
                }
                let (reply, reason) = match handled {
                    Ok(Some(reply)) => (Some(reply.text), reply.reason),
                    Ok(None) => (None, None),
                    Err(_) => (Some(internal_error(text)), Some("jsonrpc -32603".into())),
                };
                log_message(text, reason.as_deref(), &identity, started);
                reply
            }
            Line::TooLong => Some(too_large_response(max)),
            Line::NotUtf8(at) => Some(not_utf8_response(at)),
        };
        if let Some(reply) = reply {
            output.write_all(one_line(reply).as_bytes())?;
            output.write_all(b"\n")?;
            output.flush()?;
        }
    }
    Ok(())
}

/// The request log's line for one message (as `parley_server` writes one per request).
fn log_message(request: &str, reason: Option<&str>, identity: &str, started: std::time::Instant) {
    if !tracing::enabled!(target: "parley::request", tracing::Level::INFO) {
        return;
    }
    let tool = parley_server::tool_of(request);
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    tracing::info!(
        target: "parley::request",
        transport = "stdio",
        tool = tool.as_deref().unwrap_or("-"),
        identity,
        reason = reason.unwrap_or("-"),
        ms,
        "request"
    );
}

/// The JSON-RPC internal error (-32603) for a message whose handling failed, echoing
/// its id when it has one.
fn internal_error(request: &str) -> String {
    let id = serde_json::from_str::<serde_json::Value>(request)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(serde_json::Value::Null);
    error_response(id, INTERNAL_ERROR, "Internal error", None).to_string()
}

/// The JSON-RPC parse error (-32700, id null) for a line that is not UTF-8: text
/// that is not UTF-8 is not JSON (RFC 8259 §8.1), and decoding it lossily would
/// store U+FFFD in place of the bytes sent. The same answer as over HTTP.
fn not_utf8_response(at: usize) -> String {
    error_response(
        serde_json::Value::Null,
        PARSE_ERROR,
        format!("Parse error: the line is not valid UTF-8 (invalid byte at offset {at})"),
        None,
    )
    .to_string()
}

/// The reply on a single line: a newline inside would break the framing.
fn one_line(reply: String) -> String {
    if !reply.contains('\n') {
        return reply;
    }
    match serde_json::from_str::<serde_json::Value>(&reply) {
        Ok(value) => value.to_string(),
        Err(_) => reply.replace(['\r', '\n'], " "),
    }
}

enum Line {
    Message(String),
    /// A line over the size limit, already skipped up to its end.
    TooLong,
    /// A line that is not UTF-8: the offset of its first invalid byte.
    NotUtf8(usize),
}

/// Reads one line holding at most `max` bytes (the newline aside) without buffering
/// more than that: a longer line is consumed and reported as `TooLong`.
fn read_line(input: &mut impl BufRead, max: usize) -> std::io::Result<Option<Line>> {
    let mut buf = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            if buf.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            let content = if done {
                &chunk[..take - 1]
            } else {
                &chunk[..take]
            };
            if buf.len() + content.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(content);
            }
        }
        input.consume(take);
        if done {
            break;
        }
    }
    if too_long {
        return Ok(Some(Line::TooLong));
    }
    match String::from_utf8(buf) {
        Ok(text) => Ok(Some(Line::Message(text))),
        Err(err) => Ok(Some(Line::NotUtf8(err.utf8_error().valid_up_to()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = std::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        while let Some(line) = read_line(&mut reader, max).unwrap() {
            out.push(match line {
                Line::Message(m) => m,
                Line::TooLong => "<too long>".into(),
                Line::NotUtf8(at) => format!("<not UTF-8 at {at}>"),
            });
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn every_line_comes_back_whole_or_too_long(
            lines in proptest::collection::vec("[ -~]{0,40}", 0..8),
            max in 0usize..30,
            capacity in 1usize..16,
        ) {
            let input: Vec<u8> = lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect();
            let mut reader = std::io::BufReader::with_capacity(capacity, input.as_slice());
            for line in &lines {
                match read_line(&mut reader, max).unwrap() {
                    Some(Line::Message(m)) => proptest::prop_assert!(line.len() <= max && &m == line),
                    Some(Line::TooLong) => proptest::prop_assert!(line.len() > max),
                    Some(Line::NotUtf8(_)) => proptest::prop_assert!(false, "ASCII is UTF-8"),
                    None => proptest::prop_assert!(false, "input ended early"),
                }
            }
            proptest::prop_assert!(read_line(&mut reader, max).unwrap().is_none());
        }
    }

    #[test]
    fn internal_errors_echo_the_request_id() {
        let v: serde_json::Value = serde_json::from_str(&internal_error(
            r#"{"jsonrpc":"2.0","id":"a1","method":"x"}"#,
        ))
        .unwrap();
        assert_eq!(
            (v["id"].as_str(), v["error"]["code"].as_i64()),
            (Some("a1"), Some(-32603))
        );
        let v: serde_json::Value = serde_json::from_str(&internal_error("{broken")).unwrap();
        assert!(v["id"].is_null());
    }

    #[test]
    fn splits_lines_and_skips_long_ones_whole() {
        assert_eq!(lines(b"ab\ncd", 10), ["ab", "cd"]);
        assert_eq!(lines(b"abcdefghijkl\nxy\n", 5), ["<too long>", "xy"]);
        assert_eq!(lines(b"12345\n123456", 5), ["12345", "<too long>"]);
        assert!(lines(b"", 5).is_empty());
    }

    #[test]
    fn lines_that_are_not_utf8_are_reported_not_decoded() {
        assert_eq!(
            lines(b"ok\n{\"a\":\"caf\xC3\"}\n\xFF\ncaf\xC3\xA9\n", 64),
            ["ok", "<not UTF-8 at 9>", "<not UTF-8 at 0>", "caf\u{e9}"]
        );
        let v: serde_json::Value = serde_json::from_str(&not_utf8_response(3)).unwrap();
        assert_eq!(v["error"]["code"], -32700);
        assert!(v["id"].is_null());
    }
}

//! Transport parity: every conformance transcript, replayed through the MCP handler
//! (`tools/call`, in both MCP revisions), has exactly the outcomes it has through
//! the generic call, and every structured result fits its tool's `outputSchema`.

#[path = "conformance/harness.rs"]
mod harness;
mod mcp_support;

use std::collections::HashMap;

use harness::{direct_call, load_transcript, run_transcript, transcript_paths, Step};
use mcp_support::{request, send, tools, validate, Era};
use parley_forum::Forum;
use serde_json::{json, Value};

/// A tools/call through `forum.mcp`, mapped back to the harness's outcome:
/// `Ok(structuredContent)` for a success, `Err(refusal)` for a tool error. Along the
/// way it checks what MCP promises beyond the outcome, and records every breach in
/// `problems`.
struct McpCall {
    era: Era,
    schemas: HashMap<String, Value>,
    problems: Vec<String>,
    next_id: i64,
    calls: usize,
}

impl McpCall {
    fn new(era: Era) -> Self {
        McpCall {
            era,
            schemas: HashMap::new(),
            problems: Vec::new(),
            next_id: 1,
            calls: 0,
        }
    }

    fn call(
        &mut self,
        forum: &Forum,
        token: Option<&str>,
        op: &str,
        args: &Value,
    ) -> Result<Value, Value> {
        if self.schemas.is_empty() {
            for tool in tools(forum, self.era) {
                self.schemas.insert(
                    tool["name"].as_str().unwrap().to_string(),
                    tool["outputSchema"].clone(),
                );
            }
        }
        // Reads have no effect, so the generic call can run first and be compared
        // exactly, not only against the transcript's pattern.
        let writes = [
            "post",
            "set_presence",
            "lease",
            "release",
            "put_artifact",
            "import_claim",
        ];
        let before = (!writes.contains(&op)).then(|| direct_call(forum, token, op, args));

        self.calls += 1;
        self.next_id += 1;
        let id = json!(self.next_id);
        let r = send(
            forum,
            token,
            &request(
                self.era,
                id.clone(),
                "tools/call",
                json!({ "name": op, "arguments": args }),
            ),
        );
        let here = format!("{op} {args}");
        if r["id"] != id {
            self.problems
                .push(format!("{here}: id {} not echoed", r["id"]));
        }
        if let Some(error) = r.get("error") {
            // An operation of a profile that is off is an unknown tool over MCP
            // (-32602) and `invalid_argument` to the generic call (SPEC §16).
            if !forum.offers(op) && error["code"] == -32602 {
                return Err(json!({ "reason": "invalid_argument", "status": 400 }));
            }
            return Err(json!({ "reason": null, "status": null, "jsonrpc_error": error }));
        }
        let result = &r["result"];
        if (self.era == Era::Modern) != (result["resultType"] == "complete") {
            self.problems.push(format!(
                "{here}: resultType {} in the {:?} era",
                result["resultType"], self.era
            ));
        }
        let structured = result["structuredContent"].clone();
        if let Some(schema) = self.schemas.get(op) {
            for p in validate(schema, &structured) {
                self.problems.push(format!("{here}: outputSchema: {p}"));
            }
        }
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let outcome = match result["isError"].as_bool() {
            Some(false) => {
                if serde_json::from_str::<Value>(&text).ok().as_ref() != Some(&structured) {
                    self.problems
                        .push(format!("{here}: the text content is not the result"));
                }
                Ok(structured)
            }
            Some(true) => {
                let refusal = structured["error"].clone();
                let expected = format!(
                    "{}: {}",
                    refusal["reason"].as_str().unwrap_or("?"),
                    refusal["message"].as_str().unwrap_or("?")
                );
                if text != expected {
                    self.problems.push(format!(
                        "{here}: error text {text:?}, expected {expected:?}"
                    ));
                }
                Err(refusal)
            }
            None => {
                self.problems.push(format!("{here}: isError missing"));
                Err(Value::Null)
            }
        };
        if let Some(before) = before {
            if before != outcome {
                self.problems.push(format!(
                    "{here}: generic call gave {before:?}, MCP gave {outcome:?}"
                ));
            }
        }
        outcome
    }
}

#[test]
fn transcripts_have_the_same_outcomes_over_mcp() {
    let paths = transcript_paths();
    assert!(!paths.is_empty(), "no transcripts");
    let mut differences = Vec::new();
    let call_steps: usize = paths
        .iter()
        .filter_map(|p| load_transcript(p).ok())
        .map(|t| {
            t.steps
                .iter()
                .filter(|s| matches!(s, Step::Call(_)))
                .count()
        })
        .sum();
    let mut calls = 0;
    for era in [Era::Modern, Era::Legacy] {
        for path in &paths {
            let direct = run_transcript(path, &mut direct_call);
            let mut mcp = McpCall::new(era);
            let over_mcp = run_transcript(path, &mut |forum, token, op, args| {
                mcp.call(forum, token, op, args)
            });
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
            if direct != over_mcp {
                differences.push(format!(
                    "{name} ({era:?}): mismatches differ\n  generic call:\n    {}\n  MCP:\n    {}",
                    direct.join("\n    "),
                    over_mcp.join("\n    ")
                ));
            }
            calls += mcp.calls;
            for p in mcp.problems {
                differences.push(format!("{name} ({era:?}): {p}"));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
    assert_eq!(
        calls,
        2 * call_steps,
        "every call step went through MCP in both eras"
    );
}

//! What `tools/list` says of a tool's result: no output schema, a compact one (the
//! default), or the exact one. Why compact is the default, with the figures:
//! `docs/decisions/0013-compact-output-schemas.md`.
//!
//! An MCP client validates every structured result against the tool's
//! `outputSchema`. mcp 1.x checks the schema itself against the 2020-12 meta-schema
//! on every call, about 0.2 ms of client CPU for each subschema, so an exact schema
//! of 100-odd subschemas costs it ten times its own work on the call; mcp 2.x
//! compiles the schema once but walks every item of a page through it. The compact
//! schema is derived from the exact one, so a new tool gets it without more code,
//! and it is true of every result the exact one admits: the root is an object, each
//! required key of a success has the type the exact schema gives it, and a result
//! holding the first of those keys holds them all (a refusal holds only `error`).

use std::str::FromStr;

use serde_json::{json, Map, Value};

/// How `tools/list` describes each tool's structured result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputSchemas {
    /// No `outputSchema`: clients check nothing (the structured result is sent all
    /// the same).
    None,
    /// The top level of a success: its required keys and their JSON types. The
    /// default: it costs a client little whichever MCP SDK it runs.
    #[default]
    Compact,
    /// Every key the engine returns, nested shapes included (SPEC §8, §10, §13,
    /// §14, §16), with a refusal's `error`.
    Exact,
}

impl OutputSchemas {
    /// The names accepted by [`FromStr`], in order.
    pub const NAMES: [&'static str; 3] = ["none", "compact", "exact"];

    /// The name of this choice.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputSchemas::None => "none",
            OutputSchemas::Compact => "compact",
            OutputSchemas::Exact => "exact",
        }
    }
}

impl FromStr for OutputSchemas {
    type Err = String;

    /// `none`, `compact` or `exact`; anything else is refused with a message
    /// naming the three.
    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "none" => Ok(OutputSchemas::None),
            "compact" => Ok(OutputSchemas::Compact),
            "exact" => Ok(OutputSchemas::Exact),
            other => Err(format!(
                "unknown output schemas {}: expected none, compact or exact",
                Value::from(other)
            )),
        }
    }
}

/// What a client reads about a refusal, which the compact schema does not list.
const DESCRIPTION: &str = "The top level of a successful result: its required keys and \
    their JSON types; other keys may be present. A refused call (isError: true) carries \
    only `error`: {reason, status, message, ...}, its reason one of get_manifest's reasons.";

/// The compact schema derived from an operation's exact schema.
pub(crate) fn compact(exact: &Value) -> Value {
    let required: Vec<&str> = exact["anyOf"][0]["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut properties = Map::new();
    for key in &required {
        // A key whose exact schema has no single type (a nullable shape) is left
        // out: a list of types is what some clients refuse.
        if let Some(kind) = resolve(exact, &exact["properties"][key]).get("type") {
            if kind.is_string() {
                properties.insert((*key).to_string(), json!({ "type": kind }));
            }
        }
    }
    let mut schema = json!({
        "type": "object",
        "description": DESCRIPTION,
        "properties": properties,
    });
    // `dependentRequired` rather than `anyOf [success, error]`: it holds names, not
    // subschemas, so the meta-schema check of mcp 1.x does not pay for it.
    if let [first, rest @ ..] = required.as_slice() {
        if !rest.is_empty() {
            schema["dependentRequired"] = json!({ *first: rest });
        }
    }
    schema
}

/// `schema`, or the definition it refers to in `doc`'s `$defs`.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| doc.get("$defs")?.get(name))
        .unwrap_or(schema)
}

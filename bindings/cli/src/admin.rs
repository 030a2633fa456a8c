//! `parley token …`: the host side of identity. Tokens are issued here (and by the
//! library bindings), never over MCP or HTTP (SPEC §2). While a server holds the
//! forum file, the same commands reach it through its admin channel (`control`).

use clap::Subcommand;
use serde_json::{json, Map, Value};

pub(crate) use parley_server::control::Tokens;

use crate::terminal::visible;
use crate::{CmdResult, Failure};

#[derive(Subcommand)]
pub(crate) enum TokenCommand {
    /// Issue a token; prints the secret alone on stdout (it is shown only once).
    Create {
        /// The handle (an agent becomes `<realm>:<handle>`, a human `human:<handle>`).
        handle: String,
        /// A human token: all rights, outranks every agent.
        #[arg(long)]
        human: bool,
        /// Rights of an agent token, comma-separated: read,write,lock,verify.
        #[arg(long, value_delimiter = ',', conflicts_with = "human")]
        rights: Option<Vec<String>>,
        /// The label shown as `KI · <label>` on marks made through the lock right.
        #[arg(long)]
        label: Option<String>,
    },
    /// Revoke a token; it stops working at once.
    Revoke {
        /// The secret to revoke.
        token: String,
    },
    /// List the identities with their kind, label and number of active tokens.
    List,
}

pub(crate) fn run(forum: &dyn Tokens, cmd: TokenCommand) -> CmdResult {
    match cmd {
        TokenCommand::Create {
            handle,
            human,
            rights,
            label,
        } => {
            println!(
                "{}",
                forum.create(&spec_json(&handle, human, rights, label))?
            );
            Ok(())
        }
        TokenCommand::Revoke { token } => {
            if forum.revoke(&token)? {
                eprintln!("parley: token revoked");
                Ok(())
            } else {
                Err(Failure::Other(
                    "no active token matches (unknown or already revoked)".into(),
                ))
            }
        }
        TokenCommand::List => {
            let identities = forum.identities()?;
            if identities.is_empty() {
                eprintln!("parley: no identities yet (`parley token create HANDLE`)");
                return Ok(());
            }
            let width = identities
                .iter()
                .map(|i| i.identity.chars().count())
                .max()
                .unwrap_or(8)
                .max(8);
            println!(
                "{:<width$}  {:<5}  {:>6}  label",
                "identity", "kind", "tokens"
            );
            for info in identities {
                let row = format!(
                    "{:<width$}  {:<5}  {:>6}  {}",
                    info.identity,
                    info.kind.as_str(),
                    info.active_tokens,
                    info.label
                );
                println!("{}", visible(&row));
            }
            Ok(())
        }
    }
}

/// The token spec in the JSON form every binding shares, so the engine validates it.
fn spec_json(
    handle: &str,
    human: bool,
    rights: Option<Vec<String>>,
    label: Option<String>,
) -> Value {
    let mut spec = Map::new();
    spec.insert("handle".into(), json!(handle));
    spec.insert("kind".into(), json!(if human { "human" } else { "llm" }));
    if let Some(rights) = rights {
        let rights: Vec<&str> = rights
            .iter()
            .map(|r| r.trim())
            .filter(|r| !r.is_empty())
            .collect();
        spec.insert("rights".into(), json!(rights));
    }
    if let Some(label) = label {
        spec.insert("label".into(), json!(label));
    }
    Value::Object(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_json_keeps_only_what_was_given() {
        assert_eq!(
            spec_json("ann", true, None, None),
            json!({"handle": "ann", "kind": "human"})
        );
        let spec = spec_json(
            "bob",
            false,
            Some(vec!["read".into(), " lock ".into()]),
            Some("Bob".into()),
        );
        assert_eq!(
            spec,
            json!({"handle": "bob", "kind": "llm", "rights": ["read", "lock"], "label": "Bob"})
        );
    }
}

//! `parley artifact put|get`, `parley export-claim` and `parley import-claim`: the
//! provenance profile (SPEC §18) from the command line, through the same generic
//! call as every other verb.
//!
//! A bundle is written and read as the JSON of its DSSE envelope, so that
//! `parley export-claim 12 > c.json` on one forum and `parley import-claim c.json`
//! on another carry a claim across realms.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;

use base64::Engine as _;
use clap::Subcommand;
use parley_forum::provenance::{self, BundleError, TrustedRealms};
use serde_json::{json, Map, Value};

use crate::coordination::Here;
use crate::reads::print_json;
use crate::terminal::visible;
use crate::token_arg::TokenArg;
use crate::{CmdResult, Failure};

/// The verbs of this module, flattened into the command line's.
#[derive(Subcommand)]
pub(crate) enum Verb {
    /// Store a file as an artifact (content-addressed evidence) or read one back.
    #[command(subcommand)]
    Artifact(ArtifactCommand),
    /// Print a claim as a signed bundle (a DSSE envelope) another realm can import.
    ExportClaim {
        #[command(flatten)]
        auth: TokenArg,
        /// The claim id (`c_12` or `12`).
        claim: String,
        /// Write the bundle to this file instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print this forum's realm key (`ed25519:…`), the public half that other
    /// forums trust with `--trust REALM=KEY`.
    RealmKey {
        /// Print `{"realm_key"}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a bundle offline, without a forum, against the realms of --trust (and
    /// of --settings' trusted_realms); print its claim and status. Exit 6 when the
    /// bundle is malformed or tampered, 7 when its realm is not trusted or its
    /// signature does not verify.
    VerifyBundle {
        /// The bundle's file, or `-`.
        file: String,
        /// Print what was verified as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Import a claim of a trusted realm from its bundle (`-` reads standard input):
    /// posts it as an assert of yours that carries its origin.
    ImportClaim {
        #[command(flatten)]
        auth: TokenArg,
        /// The bundle's file, or `-`.
        file: String,
        /// Post it in this thread [default: a new thread].
        #[arg(long)]
        thread: Option<String>,
    },
}

#[derive(Subcommand)]
pub(crate) enum ArtifactCommand {
    /// Store FILE (`-` reads standard input) and print its ref (`sha256:…`).
    Put {
        #[command(flatten)]
        auth: TokenArg,
        /// The file, or `-`.
        file: String,
        /// Its media type [default: application/octet-stream].
        #[arg(long, value_name = "TYPE")]
        media_type: Option<String>,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write an artifact's bytes to standard output (or to FILE with -o).
    Get {
        #[command(flatten)]
        auth: TokenArg,
        /// The artifact's ref (`sha256:<64 hex>`).
        reference: String,
        /// Write the bytes to this file.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print the raw result (the bytes in base64) as JSON instead.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one of the verbs. The token and the input are read before the forum is opened.
pub(crate) fn run(here: Here<'_>, verb: Verb, settings: (Option<&str>, &[String])) -> CmdResult {
    match verb {
        Verb::VerifyBundle { file, json } => verify(&file, json, settings),
        Verb::RealmKey { json } => {
            // The manifest shows the key to anyone (SPEC §18.3): no token needed.
            let manifest = here(false)?
                .calls()
                .call(None, "get_manifest", &Value::Null)?;
            let Some(key) = manifest["realm_key"].as_str() else {
                return Err(Failure::Other("this forum shows no realm key".into()));
            };
            if json {
                print_json(&json!({ "realm_key": key }));
            } else {
                println!("{}", visible(key));
            }
            Ok(())
        }
        Verb::Artifact(ArtifactCommand::Put {
            auth,
            file,
            media_type,
            json,
        }) => {
            let token = auth.resolve()?;
            let bytes = read_input(&file)?;
            let mut args = Map::new();
            let content = base64::engine::general_purpose::STANDARD.encode(bytes);
            args.insert("content_base64".into(), Value::String(content));
            if let Some(media_type) = media_type {
                args.insert("media_type".into(), Value::String(media_type));
            }
            let forum = here(false)?;
            let result =
                forum
                    .calls()
                    .call(token.as_deref(), "put_artifact", &Value::Object(args))?;
            if json {
                print_json(&result);
            } else {
                println!(
                    "{}",
                    visible(result["artifact"]["ref"].as_str().unwrap_or(""))
                );
            }
            Ok(())
        }
        Verb::Artifact(ArtifactCommand::Get {
            auth,
            reference,
            output,
            json,
        }) => {
            let token = auth.resolve()?;
            let forum = here(false)?;
            let args = json!({ "ref": reference });
            let result = forum
                .calls()
                .call(token.as_deref(), "get_artifact", &args)?;
            if json {
                print_json(&result);
                return Ok(());
            }
            let content = result["content_base64"].as_str().unwrap_or("");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(content)
                .map_err(|e| Failure::Other(format!("the artifact is not base64: {e}")))?;
            write_output(output.as_ref(), &bytes)
        }
        Verb::ExportClaim {
            auth,
            claim,
            output,
        } => {
            let token = auth.resolve()?;
            let forum = here(false)?;
            let args = json!({ "claim": claim });
            let result = forum
                .calls()
                .call(token.as_deref(), "export_claim", &args)?;
            let text = serde_json::to_string_pretty(&result["bundle"])
                .map_err(|e| Failure::Other(e.to_string()))?;
            write_output(output.as_ref(), format!("{text}\n").as_bytes())
        }
        Verb::ImportClaim { auth, file, thread } => {
            let token = auth.resolve()?;
            let bundle = read_bundle(&file)?;
            let mut args = Map::new();
            args.insert("bundle".into(), bundle);
            if let Some(thread) = thread {
                args.insert("thread".into(), Value::String(thread));
            }
            let forum = here(false)?;
            let result =
                forum
                    .calls()
                    .call(token.as_deref(), "import_claim", &Value::Object(args))?;
            print_json(&result);
            Ok(())
        }
    }
}

/// Exit code of `verify-bundle` for a bundle that is malformed or tampered.
pub(crate) const EXIT_BUNDLE_INVALID: u8 = 6;
/// Exit code of `verify-bundle` for a realm not trusted or a signature that fails.
pub(crate) const EXIT_REALM_UNTRUSTED: u8 = 7;

/// `parley verify-bundle FILE`: the same check as `import_claim`'s, offline.
fn verify(file: &str, json: bool, (settings, trust): (Option<&str>, &[String])) -> CmdResult {
    let trusted = trusted_realms(settings, trust)?;
    let bytes = read_input(file)?;
    let claim = match provenance::verify_bundle(&bytes, &trusted) {
        Ok(claim) => claim,
        Err(err) => {
            let code = match err {
                BundleError::Invalid(_) => EXIT_BUNDLE_INVALID,
                BundleError::Untrusted(_) => EXIT_REALM_UNTRUSTED,
            };
            return Err(Failure::Exit(code, err.to_string()));
        }
    };
    if json {
        print_json(&json!({
            "realm": claim.realm, "claim": claim.claim_id, "text": claim.text,
            "status": claim.status, "exported_at": claim.exported_at, "key": claim.key,
            "digest": claim.digest,
        }));
        return Ok(());
    }
    let text = format!(
        "verified: {}/{} signed by {}\nstatus at export: {} (exported {})\n{}\n",
        claim.realm, claim.claim_id, claim.key, claim.status, claim.exported_at, claim.text
    );
    print!("{}", visible(&text));
    Ok(())
}

/// The realms trusted offline: --settings' `trusted_realms` with --trust added.
fn trusted_realms(settings: Option<&str>, trust: &[String]) -> Result<TrustedRealms, Failure> {
    let settings = match settings {
        None => None,
        Some(text) => Some(
            serde_json::from_str(text)
                .map_err(|e| Failure::Other(format!("--settings is not valid JSON: {e}")))?,
        ),
    };
    let merged = with_trust(settings, trust)?.unwrap_or(Value::Null);
    let mut pairs = Vec::new();
    match &merged["trusted_realms"] {
        Value::Null => {}
        Value::Object(realms) => {
            for (realm, key) in realms {
                let key = key.as_str().ok_or_else(|| {
                    Failure::Other(format!("the key of realm {realm} is not a string"))
                })?;
                pairs.push((realm.as_str(), key));
            }
        }
        _ => {
            return Err(Failure::Other(
                "trusted_realms in --settings must be an object of realm to key".into(),
            ))
        }
    }
    TrustedRealms::parse(pairs)
        .map_err(|(realm, err)| Failure::Other(format!("the key of realm {realm}: {err}")))
}

/// The settings with each `--trust REALM=KEY` added to their `trusted_realms`. With
/// no `--trust`, the settings as given (a forum without the provenance profile
/// never sees the key).
pub(crate) fn with_trust(
    settings: Option<Value>,
    trust: &[String],
) -> Result<Option<Value>, Failure> {
    if trust.is_empty() {
        return Ok(settings);
    }
    let mut settings = settings.unwrap_or_else(|| json!({}));
    let Some(object) = settings.as_object_mut() else {
        return Err(Failure::Other("--settings must be a JSON object".into()));
    };
    let realms = object.entry("trusted_realms").or_insert_with(|| json!({}));
    let Some(realms) = realms.as_object_mut() else {
        return Err(Failure::Other(
            "trusted_realms in --settings must be an object of realm to key".into(),
        ));
    };
    for pair in trust {
        let (realm, key) = trust_pair(pair)?;
        realms.insert(realm.to_string(), Value::String(key.to_string()));
    }
    Ok(Some(settings))
}

/// `REALM=KEY`, both non-empty.
pub(crate) fn trust_pair(pair: &str) -> Result<(&str, &str), Failure> {
    match pair.split_once('=') {
        Some((realm, key)) if !realm.trim().is_empty() && !key.trim().is_empty() => {
            Ok((realm.trim(), key.trim()))
        }
        _ => Err(Failure::Other(format!(
            "--trust {pair}: expected REALM=KEY (e.g. acme=ed25519:…)"
        ))),
    }
}

/// The bytes of FILE, or of standard input for `-`.
pub(crate) fn read_input(file: &str) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin().read_to_end(&mut bytes)?;
    } else {
        bytes = std::fs::read(file).map_err(|e| Failure::Other(format!("{file}: {e}")))?;
    }
    Ok(bytes)
}

/// A bundle's JSON from FILE or `-`. A file that is not JSON is refused here; its
/// shape is judged by the forum (`bundle_invalid`).
pub(crate) fn read_bundle(file: &str) -> Result<Value, Failure> {
    let bytes = read_input(file)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Failure::Other(format!("the bundle in {file} is not valid JSON: {e}")))
}

fn write_output(output: Option<&PathBuf>, bytes: &[u8]) -> CmdResult {
    match output {
        Some(path) => std::fs::write(path, bytes)
            .map_err(|e| Failure::Other(format!("{}: {e}", path.display()))),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)?;
            out.flush()?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_added_to_the_settings_trusted_realms() {
        assert_eq!(with_trust(None, &[]).unwrap(), None);
        let given = json!({"limits": {"verify_quorum": 2}, "trusted_realms": {"a": "ed25519:A", "b": "ed25519:B"}});
        let trust = ["b=ed25519:B2".to_string(), "c = ed25519:C".to_string()];
        let merged = with_trust(Some(given), &trust).unwrap().unwrap();
        assert_eq!(
            merged,
            json!({"limits": {"verify_quorum": 2},
                   "trusted_realms": {"a": "ed25519:A", "b": "ed25519:B2", "c": "ed25519:C"}})
        );
        let alone = with_trust(None, &trust[..1]).unwrap().unwrap();
        assert_eq!(alone, json!({"trusted_realms": {"b": "ed25519:B2"}}));
        for bad in ["acme", "=ed25519:K", "acme=", ""] {
            assert!(with_trust(None, &[bad.to_string()]).is_err(), "{bad}");
        }
        assert!(with_trust(Some(json!([1])), &trust).is_err());
        assert!(with_trust(Some(json!({"trusted_realms": 1})), &trust).is_err());
    }
}

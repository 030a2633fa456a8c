//! Where a command's bearer token comes from: `--token-file PATH`, `--token`, or
//! `PARLEY_TOKEN`. A command line is public on the machine (`ps`,
//! `/proc/PID/cmdline`), so `--token` still works but warns; a file or the
//! environment keep the secret to its owner. A token file must be the owner's alone
//! (no group or other permission bits, as ssh asks of a private key), a regular
//! file, and hold one token.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::Failure;

/// The variable read when neither flag is given.
pub(crate) const ENV: &str = "PARLEY_TOKEN";

/// The largest token file read; a token is some fifty bytes.
const MAX_FILE: u64 = 4096;

#[derive(Args)]
pub(crate) struct TokenArg {
    /// The bearer token. Other local users can read a command line (ps,
    /// /proc/PID/cmdline), so this warns: prefer --token-file or PARLEY_TOKEN.
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
    token: Option<String>,
    /// Read the bearer token from this file: one line, readable by its owner only
    /// (chmod 600). Without either flag, the token comes from PARLEY_TOKEN.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
}

impl TokenArg {
    /// The token to present: from `--token-file`, else `--token` (with a warning on
    /// stderr), else `PARLEY_TOKEN`; `None` when none is given (the forum then
    /// answers `token_missing` where one is needed).
    pub(crate) fn resolve(&self) -> Result<Option<String>, Failure> {
        if let Some(path) = &self.token_file {
            return read_file(path).map(Some);
        }
        if let Some(token) = &self.token {
            eprintln!(
                "parley: warning: --token shows the token to every local user (ps, \
                 /proc/PID/cmdline); use --token-file PATH or {ENV}"
            );
            return Ok(Some(token.clone()));
        }
        Ok(std::env::var(ENV).ok().filter(|t| !t.is_empty()))
    }
}

/// The token in the file at `path`, after refusing a file others may open, a file
/// that is not a regular file, and one that does not hold exactly one token.
fn read_file(path: &Path) -> Result<String, Failure> {
    let shown = path.display();
    let refuse = |why: String| Failure::Other(format!("--token-file {shown}: {why}"));
    // The checks are made on the opened file, so a rename in between cannot slip
    // another file past them.
    let file = File::open(path).map_err(|e| refuse(format!("cannot open it: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file".into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(refuse(format!(
            "other users may read it (mode {mode:o}); `chmod 600 {shown}` keeps it to you"
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(refuse(format!(
            "longer than {MAX_FILE} bytes: not a token file"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| refuse("is not UTF-8 text".into()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(refuse("is empty: it must hold the token".into()));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(refuse(
            "holds more than one token: one line, the token alone".into(),
        ));
    }
    Ok(token.to_string())
}

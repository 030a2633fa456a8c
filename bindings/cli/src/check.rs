//! `parley check PATH`: an offline look at a closed forum file.

use std::path::Path;

use parley_forum::storage::{check, CheckReport};

use crate::terminal::visible;
use crate::{CmdResult, Failure};

/// Prints what the check found; fails (exit 1) unless the forum is sound.
pub(crate) fn run(path: &Path) -> CmdResult {
    let report = check(path).map_err(|e| Failure::Other(e.to_string()))?;
    print!("{}", visible(&describe(path, &report)));
    if report.ok() {
        Ok(())
    } else {
        Err(Failure::Other(format!(
            "{} is damaged (see above); restore it from a backup, or copy it aside before \
             opening it again",
            path.display()
        )))
    }
}

fn describe(path: &Path, r: &CheckReport) -> String {
    let mut out = format!(
        "{}: a Parley forum, schema version {}, {} bytes\n",
        path.display(),
        r.schema_version,
        r.bytes
    );
    out.push_str(if r.sound {
        "  pages: sound (every page passed redb's checksum)\n"
    } else {
        "  pages: DAMAGED (pages failed redb's checksums; redb repaired what it could)\n"
    });
    out.push_str(&format!(
        "  records: {} threads, {} messages, {} claims, {} events, {} identities, {} tokens\n",
        r.threads, r.messages, r.claims, r.events, r.identities, r.tokens
    ));
    if r.unreadable.is_empty() {
        out.push_str("  every thread and message record reads\n");
    } else {
        out.push_str(&format!("  {} records do not read:\n", r.unreadable.len()));
        for what in r.unreadable.iter().take(20) {
            out.push_str(&format!("    {what}\n"));
        }
    }
    if r.mode & 0o077 != 0 {
        out.push_str(&format!(
            "  note: other users may read it (mode {:o}); `chmod 600` makes it private\n",
            r.mode
        ));
    }
    out
}

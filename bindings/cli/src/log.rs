//! The server's log on stderr: `tracing` events (the request log of `http::log`),
//! filtered by `RUST_LOG` (default `info`), as text or one JSON object per line.

use tracing_subscriber::EnvFilter;

use crate::Failure;

/// Installs the subscriber for `serve`; `format` is `text` or `json` (clap checks it).
pub(crate) fn start(format: &str) -> Result<(), Failure> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec)
            .map_err(|e| Failure::Other(format!("RUST_LOG={spec:?} is not a log filter: {e}")))?,
        _ => EnvFilter::new("info"),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let installed = if format == "json" {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
    installed.map_err(|e| Failure::Other(format!("cannot start the log: {e}")))
}

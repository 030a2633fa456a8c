//! The server's log on stderr: `tracing` events (the request log of `http::log`),
//! filtered by `RUST_LOG` (default `info`), as text or one JSON object per line.
//! Beside it, when traces are exported, the OpenTelemetry layer (`telemetry`).
//!
//! One filter serves both, with the server spans (`parley::otel`) always let
//! through: `RUST_LOG` cannot turn spans off, and no span is ever written to the
//! log (they are never entered, and hold no events). A per-layer filter on the
//! OpenTelemetry layer would be neater, but it lost the spans opened on the
//! runtime's worker threads.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::telemetry::OtelLayer;
use crate::Error;

/// Installs the subscriber for `serve`; `format` is `text` or `json` (clap checks it).
pub fn start(format: &str, otel: Option<OtelLayer>) -> Result<(), Error> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec)
            .map_err(|e| Error::new(format!("RUST_LOG={spec:?} is not a log filter: {e}")))?,
        // The exporter's own warning per failed batch is left out: the server warns
        // once (`telemetry::export`).
        _ => EnvFilter::new("info,opentelemetry-otlp=error"),
    };
    let filter = match format!("{}=info", crate::telemetry::TARGET).parse() {
        Ok(spans) => filter.add_directive(spans),
        Err(_) => filter,
    };
    let fmt = || {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
    };
    let base = tracing_subscriber::registry().with(otel);
    let installed = if format == "json" {
        base.with(fmt().json().flatten_event(true))
            .with(filter)
            .try_init()
    } else {
        base.with(fmt()).with(filter).try_init()
    };
    installed.map_err(|e| Error::new(format!("cannot start the log: {e}")))
}

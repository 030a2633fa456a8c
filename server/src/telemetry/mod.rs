//! OpenTelemetry traces of the server: one SERVER span per request (MCP over HTTP or
//! stdio, REST, the web view), named and described after the GenAI/MCP and HTTP
//! semantic conventions (`spans`), exported over OTLP/HTTP (protobuf) in batches
//! from a background thread (`export`).
//!
//! Export is off unless asked for (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); then no layer is installed and every hook
//! returns at its first check of [`on`], so a server without a collector pays one
//! relaxed atomic load per request. The engine knows nothing of this: what a span
//! says comes from the request's arguments and the JSON of its answer.
//!
//! A collector that is down or slow never holds a request up: a request only hands
//! its finished span to the batch processor's bounded queue (`OTEL_BSP_*`, 2048
//! spans by default); past that, spans are dropped (the SDK warns once and counts
//! them). A failed export is warned about once, until one succeeds again, and the
//! spans it lost are counted; the count is reported when the server stops, after
//! the last batch is flushed.

mod export;
mod spans;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_subscriber::{Layer, Registry};

use crate::Error;

pub(crate) use spans::{http_span, note_json, McpTrace};
pub use spans::{stdio_begin, stdio_end};

/// Whether spans are exported: set once, when export starts.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported. Every hook checks this first.
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The `tracing` target of the server spans, the only one the OpenTelemetry layer sees.
pub(crate) const TARGET: &str = "parley::otel";

/// The path of the traces signal under an OTLP/HTTP base URL.
const TRACES_PATH: &str = "/v1/traces";

/// How long the last flush may take when the server stops.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// A running export; [`Telemetry::stop`] flushes it.
pub struct Telemetry {
    provider: SdkTracerProvider,
    lost: export::Lost,
}

/// The `tracing` layer that turns the server spans into OpenTelemetry spans.
pub type OtelLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// The traces endpoint (a full URL) when export is on, from the flag or the
/// standard variables; `None` when it is off. The flag and the generic
/// `OTEL_EXPORTER_OTLP_ENDPOINT` are base URLs (`/v1/traces` is added when they
/// have no path); `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as it is.
/// `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none` turn export off, flag
/// or not.
pub fn endpoint(flag: Option<&str>) -> Result<Option<String>, Error> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    let (url, from) = if let Some(flag) = flag {
        (base(flag), "--otlp-endpoint")
    } else if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        (url, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    } else if let Some(url) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
        (base(&url), "OTEL_EXPORTER_OTLP_ENDPOINT")
    } else {
        return Ok(None);
    };
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(protocol) = var(name).filter(|p| p != "http/protobuf") {
            return Err(Error::new(format!(
                "{name}={protocol:?}: this server exports traces over http/protobuf only"
            )));
        }
    }
    if !url.starts_with("http://") {
        return Err(Error::new(format!(
            "{from} {url:?}: the OTLP endpoint must be an http:// URL (a collector or \
             agent on this host or network; this build has no TLS for OTLP)"
        )));
    }
    Ok(Some(url))
}

/// A base URL as the traces endpoint: `/v1/traces` added when it has no path.
fn base(url: &str) -> String {
    let url = url.trim();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    match rest.find('/') {
        Some(at) if rest[at..] != *"/" => url.to_string(),
        _ => format!("{}{TRACES_PATH}", url.trim_end_matches('/')),
    }
}

/// Starts exporting to `url`: the batch processor's thread, and the layer to install.
/// `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` describe the service (its name
/// is `parley` otherwise).
pub fn start(url: &str) -> Result<(Telemetry, OtelLayer), Error> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
        .map_err(|e| Error::new(format!("cannot start the OTLP exporter for {url}: {e}")))?;
    let (exporter, lost) = export::Counted::new(exporter);
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(BatchConfigBuilder::default().build())
        .build();
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("parley");
    }
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("parley");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        // A span says what the conventions say, nothing of this process's threads
        // or source files.
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .boxed();
    ON.store(true, Ordering::Relaxed);
    eprintln!("parley: exporting traces to {url} (OTLP/HTTP)");
    Ok((Telemetry { provider, lost }, layer))
}

impl Telemetry {
    /// Exports what is queued (within a few seconds) and stops the export thread.
    pub fn stop(self) {
        ON.store(false, Ordering::Relaxed);
        if let Err(e) = self.provider.shutdown_with_timeout(FLUSH_TIMEOUT) {
            tracing::warn!(target: "parley::telemetry", "the last traces could not be flushed: {e}");
        }
        let lost = self.lost.count();
        if lost > 0 {
            tracing::warn!(target: "parley::telemetry", lost, "spans were not exported (the collector failed)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::base;

    #[test]
    fn base_urls_get_the_traces_path_once() {
        assert_eq!(
            base("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            base("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            base("http://collector:4318/v1/traces"),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            base("http://c:4318/otlp/v1/traces"),
            "http://c:4318/otlp/v1/traces"
        );
    }
}

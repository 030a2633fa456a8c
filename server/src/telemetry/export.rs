//! The OTLP exporter, counting what it fails to send: one warning when exports
//! start failing (and a note when they recover), instead of an error per batch
//! while a collector is down.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

/// The spans lost to failed exports, shared with [`super::Telemetry`].
#[derive(Clone, Debug, Default)]
pub(super) struct Lost(Arc<AtomicU64>);

impl Lost {
    pub(super) fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Debug)]
pub(super) struct Counted<E> {
    inner: E,
    lost: Lost,
    failing: AtomicBool,
}

impl<E> Counted<E> {
    pub(super) fn new(inner: E) -> (Counted<E>, Lost) {
        let lost = Lost::default();
        let counted = Counted {
            inner,
            lost: lost.clone(),
            failing: AtomicBool::new(false),
        };
        (counted, lost)
    }
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        match self.inner.export(batch).await {
            Ok(()) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(target: "parley::telemetry", "exporting traces again");
                }
            }
            Err(e) => {
                self.lost.0.fetch_add(spans, Ordering::Relaxed);
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(target: "parley::telemetry", "cannot export traces (spans are dropped until the collector answers): {e}");
                }
            }
        }
        // Handled here: the batch processor has nothing more to do about it.
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

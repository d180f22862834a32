//! The Prometheus recorder behind `/metrics`: installed once per process, with histogram
//! buckets for the metrics whose dashboards expect them.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use switchboard_characters::TOOL_LATENCY_BUCKETS;

const REQUEST_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The gateway's own share of a request: tens of microseconds when all is well.
/// Fine enough below a millisecond that a quantile read from them is within tens of
/// microseconds.
const OVERHEAD_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_075, 0.000_1, 0.000_15, 0.000_2, 0.000_3, 0.000_4,
    0.000_5, 0.000_75, 0.001, 0.001_5, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's Prometheus handle, installing the recorder on first use. Where another
/// recorder is already global (a test's), the handle renders nothing rather than failing.
pub fn prometheus() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full("character_tool_latency_seconds".into()), TOOL_LATENCY_BUCKETS)
                .and_then(|builder| builder.set_buckets_for_metric(Matcher::Suffix("_duration_seconds".into()), REQUEST_BUCKETS))
                .and_then(|builder| builder.set_buckets_for_metric(Matcher::Suffix("_latency_seconds".into()), REQUEST_BUCKETS))
                .and_then(|builder| builder.set_buckets_for_metric(Matcher::Full("gateway_backend_ttfb_seconds".into()), REQUEST_BUCKETS))
                .and_then(|builder| builder.set_buckets_for_metric(Matcher::Full("gateway_overhead_seconds".into()), OVERHEAD_BUCKETS))
                .unwrap_or_else(|_| PrometheusBuilder::new());
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was already installed; /metrics will not show this process's metrics");
            }
            handle
        })
        .clone()
}

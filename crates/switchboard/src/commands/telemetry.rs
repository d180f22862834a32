//! What the process reports about itself: its log lines on stderr (every command) and, for
//! `serve`, OpenTelemetry traces over OTLP/HTTP when the standard variables ask for them
//! (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). Without them no
//! OpenTelemetry layer, exporter or export thread exists, and the gateway's spans are
//! disabled where they are made.

use std::io::IsTerminal;

use anyhow::Context;
use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use switchboard_server::traces::TARGET;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The MCP library's log target. At INFO it writes what peers send whole (every
/// notification, `clientInfo`, `serverInfo`, `instructions`) and session ids: a peer could
/// fill the log, so it is held to warnings unless `RUST_LOG` names it.
const MCP_LIBRARY: &str = "rmcp";

/// Which lines are written: `RUST_LOG`, `info` by default (the MCP library's warnings
/// only, unless `RUST_LOG` names it); never the spans meant for OpenTelemetry, which would
/// otherwise prefix every line written inside them and cost their fields on every request.
fn log_filter() -> EnvFilter {
    let asked = std::env::var(EnvFilter::DEFAULT_ENV).ok();
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let mut quiet = vec![format!("{TARGET}=off")];
    if !asked.is_some_and(|asked| asked.contains(MCP_LIBRARY)) {
        quiet.push(format!("{MCP_LIBRARY}=warn"));
    }
    for directive in quiet {
        if let Ok(directive) = directive.parse() {
            filter = filter.add_directive(directive);
        }
    }
    filter
}

/// The log lines, on stderr.
fn log_layer<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
}

/// Installs `serve`'s subscriber: the log lines, and the traces when the environment asks
/// for them. Keep the returned exporter until the server has stopped: dropping it sends
/// the spans still waiting.
pub fn init_serve() -> anyhow::Result<Option<Traces>> {
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
    };
    let Some(protocol) = wanted(&env)? else {
        // The subscriber every command has: the spans' call sites stay disabled.
        init_character_logs();
        return Ok(None);
    };
    let traces = Traces::start(protocol)?;
    let spans = tracing_opentelemetry::layer()
        .with_tracer(traces.provider.tracer("switchboard"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE));
    let _ = tracing_subscriber::registry()
        .with(log_layer().with_filter(log_filter()))
        .with(spans)
        .try_init();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    tracing::info!(
        "exporting traces over OTLP/HTTP ({})",
        match protocol {
            Protocol::HttpJson => "http/json",
            _ => "http/protobuf",
        }
    );
    Ok(Some(traces))
}

/// The protocol to export with; `None` when no endpoint is set or the standard switches
/// turn traces off.
fn wanted(env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Option<Protocol>> {
    let endpoint = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .is_some();
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|value| value.eq_ignore_ascii_case("none"));
    if !endpoint || disabled {
        return Ok(None);
    }
    let named = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .map(|value| ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", value))
        .or_else(|| {
            env("OTEL_EXPORTER_OTLP_PROTOCOL").map(|value| ("OTEL_EXPORTER_OTLP_PROTOCOL", value))
        });
    // Resolved here rather than by the exporter: its default, with both encodings built
    // in, is JSON, where the specification's is protobuf.
    match named {
        None => Ok(Some(Protocol::HttpBinary)),
        Some((_, value)) if value.eq_ignore_ascii_case("http/protobuf") => {
            Ok(Some(Protocol::HttpBinary))
        }
        Some((_, value)) if value.eq_ignore_ascii_case("http/json") => Ok(Some(Protocol::HttpJson)),
        Some((variable, value)) => anyhow::bail!(
            "{variable}={value}: switchboard exports traces over HTTP only; use http/protobuf (the default) or http/json"
        ),
    }
}

/// The OTLP exporter and its batch processor, shut down (the waiting spans sent) when
/// dropped.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// The exporter reads the standard variables itself: endpoint, headers, timeout,
    /// compression, and the batch settings (`OTEL_BSP_*`); the sampler comes from
    /// `OTEL_TRACES_SAMPLER`. Its worker is a thread of its own, and its HTTP client a
    /// blocking one, so exporting takes nothing from the runtime serving requests.
    fn start(protocol: Protocol) -> anyhow::Result<Self> {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .build()
            .context("cannot export traces (OTEL_EXPORTER_OTLP_*)")?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build();
        Ok(Self { provider })
    }
}

impl Drop for Traces {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!("traces not all exported at shutdown: {error}");
        }
    }
}

/// The resource the standard variables describe (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), named `switchboard` when they name no service.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    if named {
        detected
    } else {
        Resource::builder().with_service_name("switchboard").build()
    }
}

/// Character code's console output (tracing target `character`) and load warnings go to
/// standard error as plain lines without timestamps; `RUST_LOG` can change the level.
pub fn init_character_logs() {
    // Another command may have installed a subscriber already; that one then applies.
    let _ = tracing_subscriber::registry()
        .with(log_filter())
        .with(log_layer())
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn traces_follow_the_standard_variables() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert_eq!(wanted(&env(&[])).ok(), Some(None));
        assert_eq!(
            wanted(&env(&[("OTEL_SERVICE_NAME", "gateway")])).ok(),
            Some(None),
            "no endpoint, no traces"
        );
        assert_eq!(
            wanted(&env(&[endpoint])).ok(),
            Some(Some(Protocol::HttpBinary))
        );
        assert_eq!(
            wanted(&env(&[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://collector:4318/v1/traces"
            )]))
            .ok(),
            Some(Some(Protocol::HttpBinary))
        );
        assert_eq!(
            wanted(&env(&[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            ]))
            .ok(),
            Some(Some(Protocol::HttpJson))
        );
        assert_eq!(
            wanted(&env(&[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
            ]))
            .ok(),
            Some(Some(Protocol::HttpBinary)),
            "the signal's own variable first"
        );
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(wanted(&env(&[endpoint, off])).ok(), Some(None), "{off:?}");
        }
        let grpc = wanted(&env(&[
            endpoint,
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
        ]))
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
        assert!(
            grpc.starts_with(
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc: switchboard exports traces over HTTP only"
            ),
            "{grpc}"
        );
    }
}

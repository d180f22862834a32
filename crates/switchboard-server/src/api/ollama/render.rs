//! An answer in Ollama's shapes: NDJSON lines (`application/x-ndjson`), each a chunk with
//! `done: false`, then one with `done: true`, the `done_reason`, the counts and the
//! durations; or that last chunk alone, holding the whole answer. `/api/generate` puts the
//! text in `response` where `/api/chat` has a `message`. Tool calls arrive whole, with
//! object arguments (the wire crate's encoder holds each until it ends). Errors are
//! `{"error": "…"}`, as a body with its status, or as the last line of a stream.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchboard_wire::ollama::{NdjsonEncoder, OllamaChunk, response};

use crate::api::error::ApiError;
use crate::api::sse::{Renderer, WholeBody};
use switchboard_pipeline::{Answer, Output};

/// The content type of Ollama's streams.
pub const NDJSON: &str = "application/x-ndjson";

/// Which endpoint's shapes the answer takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Chat,
    Generate,
}

/// How the answer is presented.
#[derive(Debug, Clone)]
pub struct Presentation {
    /// The model name as the client sent it (`qwen:latest`).
    pub model: String,
    pub created_at: String,
    pub endpoint: Endpoint,
    /// When the request arrived, for the durations of the last chunk.
    pub received: Instant,
    /// Set for a load request, answered without the model: whether it unloads.
    pub load: Option<bool>,
}

impl Presentation {
    pub fn new(model: String, endpoint: Endpoint) -> Self {
        Self {
            model,
            created_at: rfc3339(SystemTime::now()),
            endpoint,
            received: Instant::now(),
            load: None,
        }
    }

    /// A chunk as this endpoint writes it, with the durations on the last one:
    /// `prompt_eval_duration` until the first output, `eval_duration` from then on (the
    /// gateway loads nothing, so `load_duration` is 0).
    fn shape(&self, mut chunk: OllamaChunk, first_output: Option<Instant>) -> Value {
        if chunk.done {
            let now = Instant::now();
            let first = first_output.unwrap_or(now);
            let nanos = |duration: Duration| u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
            chunk.total_duration = Some(nanos(now - self.received));
            chunk.load_duration = Some(0);
            chunk.prompt_eval_duration = Some(nanos(first - self.received));
            chunk.eval_duration = Some(nanos(now - first));
            chunk.prompt_eval_count.get_or_insert(0);
            chunk.eval_count.get_or_insert(0);
        }
        let mut value = serde_json::to_value(chunk).unwrap_or(Value::Null);
        if self.endpoint == Endpoint::Generate
            && let Value::Object(fields) = &mut value
        {
            let message = fields.remove("message").unwrap_or(Value::Null);
            fields.insert(
                "response".into(),
                message.get("content").cloned().unwrap_or_else(|| json!("")),
            );
            if let Some(thinking) = message.get("thinking") {
                fields.insert("thinking".into(), thinking.clone());
            }
        }
        value
    }
}

/// One NDJSON line.
fn line(value: &Value) -> String {
    format!("{value}\n")
}

/// Ollama's error body: `{"error": "…"}` with the status.
pub fn error_response(error: ApiError) -> Response {
    (error.status, Json(json!({"error": error.message}))).into_response()
}

/// The whole answer as one JSON object: the last chunk, holding everything.
pub struct WholeChunk(pub Presentation);

impl WholeBody for WholeChunk {
    async fn respond(self, answer: Answer) -> Response {
        let presentation = self.0;
        match response(
            &answer.response,
            presentation.model.clone(),
            presentation.created_at.clone(),
        ) {
            Ok(chunk) => Json(presentation.shape(chunk, None)).into_response(),
            Err(error) => error_response(ApiError::upstream(
                axum::http::StatusCode::BAD_GATEWAY,
                format!("the model's answer cannot be written in Ollama's shape: {error}"),
                "bad_answer",
            )),
        }
    }
}

/// Outputs as NDJSON lines. The gateway's own events (a character's tool runs) have no
/// Ollama shape and are not sent; no keep-alive either: a blank line breaks the clients
/// that parse each line as JSON.
pub struct ChunkLines {
    presentation: Presentation,
    encoder: NdjsonEncoder,
    first_output: Option<Instant>,
}

impl ChunkLines {
    pub fn new(presentation: Presentation) -> Self {
        Self {
            encoder: NdjsonEncoder::new(
                presentation.model.clone(),
                presentation.created_at.clone(),
            ),
            presentation,
            first_output: None,
        }
    }
}

impl Renderer for ChunkLines {
    fn content_type(&self) -> &'static str {
        NDJSON
    }

    fn output(&mut self, output: Output) -> String {
        let Output::Event(event) = output else {
            return String::new();
        };
        self.first_output.get_or_insert_with(Instant::now);
        match self.encoder.event(&event) {
            Ok(Some(chunk)) => line(&self.presentation.shape(chunk, None)),
            Ok(None) => String::new(),
            Err(error) => line(&json!({"error": format!(
                "the model's answer cannot be written in Ollama's shape: {error}"
            )})),
        }
    }

    fn end(&mut self) -> String {
        let chunk = self.encoder.finish();
        line(&self.presentation.shape(chunk, self.first_output))
    }

    fn error(&mut self, error: &ApiError) -> String {
        line(&json!({"error": error.message}))
    }
}

/// `time` in RFC 3339 with an explicit `+00:00` offset, which Python's
/// `datetime.fromisoformat` reads in every version (Open WebUI reads `expires_at` so).
pub fn rfc3339(time: SystemTime) -> String {
    let elapsed = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = elapsed.as_secs();
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    // Howard Hinnant's days-to-civil algorithm, from 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}+00:00",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        elapsed.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_python_reads_them() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000000+00:00");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_723) + Duration::from_micros(5);
        assert_eq!(rfc3339(leap), "2000-02-29T01:02:03.000005+00:00");
        let later = UNIX_EPOCH + Duration::from_secs(1_764_288_000);
        assert_eq!(rfc3339(later), "2025-11-28T00:00:00.000000+00:00");
    }
}

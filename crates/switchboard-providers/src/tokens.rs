//! Counting a prompt's tokens with the backend's own tokenizer: vLLM's `POST /tokenize`
//! (chat messages in, a count out), llama.cpp's `POST /apply-template` then `POST
//! /tokenize`, Anthropic's `POST /v1/messages/count_tokens`. Which of the two an
//! OpenAI-compatible server speaks, or that it speaks neither, is learnt on the first count
//! and remembered, so later counts cost no failed requests.

use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::{Map, Value, json};
use switchboard_wire::ChatRequest;
use switchboard_wire::ids::IdMap;

use crate::BackendError;
use crate::transport::Transport;

const UNKNOWN: u8 = 0;
const VLLM: u8 = 1;
const LLAMA_CPP: u8 = 2;
const NONE: u8 = 3;

/// What an OpenAI-compatible server offers for counting, once known.
#[derive(Debug)]
pub(crate) struct Tokenizer(AtomicU8);

impl Default for Tokenizer {
    fn default() -> Self {
        Self(AtomicU8::new(UNKNOWN))
    }
}

impl Tokenizer {
    /// The prompt's tokens as the server's own tokenizer counts them, chat template
    /// included; `None` when the server has no tokenizer endpoint.
    pub(crate) async fn count(
        &self,
        transport: &Transport,
        request: &ChatRequest,
    ) -> Result<Option<u64>, BackendError> {
        // A server known to have no tokenizer costs nothing, not even the request's JSON.
        let known = self.0.load(Ordering::Relaxed);
        if known == NONE {
            return Ok(None);
        }
        let base = transport.url("");
        let root = server_root(&base);
        let wire = serde_json::to_value(switchboard_wire::openai::build_request(request))
            .map_err(|error| BackendError::Config(error.to_string()))?;
        let chat = pick(&wire, &["model", "messages", "tools"]);
        if known != LLAMA_CPP {
            let mut body = chat.clone();
            body.insert("add_generation_prompt".into(), Value::Bool(true));
            match transport
                .post_json(&format!("{root}/tokenize"), &Value::Object(body))
                .await
            {
                Ok(answer) => {
                    if let Some(count) = answer.and_then(|answer| answer.get("count")?.as_u64()) {
                        self.0.store(VLLM, Ordering::Relaxed);
                        return Ok(Some(count));
                    }
                }
                Err(error) if !refused(&error) => return Err(error),
                Err(_) => {}
            }
        }
        let templated = match transport
            .post_json(&format!("{root}/apply-template"), &Value::Object(chat))
            .await
        {
            Ok(answer) => answer,
            Err(error) if refused(&error) => {
                self.0.store(NONE, Ordering::Relaxed);
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let Some(prompt) = templated
            .as_ref()
            .and_then(|answer| answer.get("prompt")?.as_str())
        else {
            self.0.store(NONE, Ordering::Relaxed);
            return Ok(None);
        };
        let answer = transport
            .post_json(&format!("{root}/tokenize"), &json!({"content": prompt}))
            .await?;
        match answer
            .as_ref()
            .and_then(|answer| answer.get("tokens")?.as_array())
        {
            Some(tokens) => {
                self.0.store(LLAMA_CPP, Ordering::Relaxed);
                Ok(Some(tokens.len() as u64))
            }
            None => {
                self.0.store(NONE, Ordering::Relaxed);
                Ok(None)
            }
        }
    }
}

/// Anthropic's own count of the prompt; `None` from an Anthropic-compatible server without
/// the endpoint.
pub(crate) async fn anthropic_count(
    transport: &Transport,
    request: &ChatRequest,
) -> Result<Option<u64>, BackendError> {
    let wire = switchboard_wire::anthropic::build_request(request, &mut IdMap::new())?;
    let wire =
        serde_json::to_value(wire).map_err(|error| BackendError::Config(error.to_string()))?;
    // The endpoint takes only what shapes the prompt; sampling fields are refused.
    let body = pick(
        &wire,
        &[
            "model",
            "messages",
            "system",
            "tools",
            "tool_choice",
            "thinking",
        ],
    );
    match transport
        .post_json(
            &transport.url("/v1/messages/count_tokens"),
            &Value::Object(body),
        )
        .await
    {
        Ok(answer) => Ok(answer.and_then(|answer| answer.get("input_tokens")?.as_u64())),
        Err(error) if refused(&error) => Ok(None),
        Err(error) => Err(error),
    }
}

/// The server's root: tokenizer endpoints live beside `/v1`, not under it.
fn server_root(base: &str) -> &str {
    let base = base.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

fn pick(value: &Value, fields: &[&str]) -> Map<String, Value> {
    fields
        .iter()
        .filter_map(|field| {
            value
                .get(*field)
                .map(|found| ((*field).to_owned(), found.clone()))
        })
        .collect()
}

/// The server has no such endpoint, or refuses the request as it stands.
fn refused(error: &BackendError) -> bool {
    matches!(
        error,
        BackendError::Http {
            status: 400 | 404 | 405 | 422 | 501,
            ..
        }
    )
}

/// Posts `body`; the answer as JSON, or `None` when it is not JSON or too large to be a
/// tokenizer's (either way the server offers nothing to count with there).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_endpoints_sit_beside_v1() {
        assert_eq!(server_root("http://gpu:8000/v1"), "http://gpu:8000");
        assert_eq!(server_root("http://gpu:8000/v1/"), "http://gpu:8000");
        assert_eq!(server_root("http://gpu:8080"), "http://gpu:8080");
    }
}

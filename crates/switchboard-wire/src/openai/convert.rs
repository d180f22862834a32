//! OpenAI request ↔ our request. Messages and tools already are OpenAI's shape; what is
//! translated is the request's own fields, `tool_choice` above all.

use super::types::{ChatCompletionRequest, NamedFunction, NamedToolChoice, Stop, WireToolChoice};
use crate::{ChatRequest, ConvertError, ToolChoice};

/// A client's OpenAI request in our model; an unknown `tool_choice` is an error, never
/// silently `auto`.
pub fn parse_request(request: ChatCompletionRequest) -> Result<ChatRequest, ConvertError> {
    let tool_choice = match request.tool_choice {
        None => None,
        Some(WireToolChoice::Mode(mode)) => Some(match mode.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            other => {
                return Err(ConvertError::invalid(
                    "tool_choice",
                    format!(
                        "must be \"auto\", \"none\", \"required\" or a named function, got \"{other}\""
                    ),
                ));
            }
        }),
        Some(WireToolChoice::Named(named)) if named.kind == "function" => {
            Some(ToolChoice::Function(named.function.name))
        }
        Some(WireToolChoice::Named(named)) => {
            return Err(ConvertError::invalid(
                "tool_choice.type",
                format!("must be \"function\", got \"{}\"", named.kind),
            ));
        }
    };
    if let Some(ToolChoice::Function(name)) = &tool_choice {
        let tools = request.tools.as_deref().unwrap_or_default();
        if !tools.iter().any(|tool| tool.name() == name) {
            return Err(ConvertError::invalid(
                "tool_choice.function.name",
                format!("no tool named \"{name}\" in tools"),
            ));
        }
    }
    Ok(ChatRequest {
        model: request.model,
        messages: request.messages,
        tools: request.tools.unwrap_or_default(),
        tool_choice,
        parallel_tool_calls: request.parallel_tool_calls,
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: request.max_completion_tokens.or(request.max_tokens),
        stop: match request.stop {
            None => Vec::new(),
            Some(Stop::One(stop)) => vec![stop],
            Some(Stop::Many(stops)) => stops,
        },
        stream: request.stream.unwrap_or(false),
        reasoning_effort: request.reasoning_effort,
        response_format: request.response_format,
        seed: request.seed,
        top_k: request.top_k,
        extra: request.extra,
    })
}

/// Our request as an OpenAI request body. `stream_options` is left to the caller: only a
/// client of a streaming backend knows whether it wants usage.
pub fn build_request(request: &ChatRequest) -> ChatCompletionRequest {
    ChatCompletionRequest {
        model: request.model.clone(),
        messages: request.messages.clone(),
        tools: (!request.tools.is_empty()).then(|| std::sync::Arc::clone(&request.tools)),
        tool_choice: request.tool_choice.as_ref().map(|choice| match choice {
            ToolChoice::Auto => WireToolChoice::Mode("auto".to_owned()),
            ToolChoice::None => WireToolChoice::Mode("none".to_owned()),
            ToolChoice::Required => WireToolChoice::Mode("required".to_owned()),
            ToolChoice::Function(name) => WireToolChoice::Named(NamedToolChoice {
                kind: "function".to_owned(),
                function: NamedFunction { name: name.clone() },
            }),
        }),
        parallel_tool_calls: request.parallel_tool_calls,
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: request.max_tokens,
        max_completion_tokens: None,
        stop: (!request.stop.is_empty()).then(|| Stop::Many(request.stop.clone())),
        stream: request.stream.then_some(true),
        stream_options: None,
        reasoning_effort: request.reasoning_effort.clone(),
        response_format: request.response_format.clone(),
        seed: request.seed,
        top_k: request.top_k,
        extra: request.extra.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: serde_json::Value) -> Result<ChatRequest, ConvertError> {
        parse_request(serde_json::from_value(value).unwrap())
    }

    #[test]
    fn tool_choice_forms() {
        let tools = json!([{"type": "function", "function": {"name": "f"}}]);
        for (wire, ours) in [
            (json!("auto"), ToolChoice::Auto),
            (json!("none"), ToolChoice::None),
            (json!("required"), ToolChoice::Required),
            (
                json!({"type": "function", "function": {"name": "f"}}),
                ToolChoice::Function("f".into()),
            ),
        ] {
            let request =
                parse(json!({"model": "m", "messages": [], "tools": tools, "tool_choice": wire}))
                    .unwrap();
            assert_eq!(request.tool_choice, Some(ours));
            assert_eq!(
                serde_json::to_value(build_request(&request)).unwrap()["tool_choice"],
                wire
            );
        }
    }

    #[test]
    fn bad_tool_choice_is_an_error_naming_the_field() {
        let error =
            parse(json!({"model": "m", "messages": [], "tool_choice": "sometimes"})).unwrap_err();
        assert!(error.to_string().starts_with("tool_choice: "), "{error}");
        let error = parse(json!({"model": "m", "messages": [], "tool_choice": {"type": "function", "function": {"name": "g"}}}))
            .unwrap_err();
        assert!(error.to_string().contains("no tool named \"g\""), "{error}");
    }

    #[test]
    fn max_completion_tokens_wins() {
        let request = parse(
            json!({"model": "m", "messages": [], "max_tokens": 5, "max_completion_tokens": 9}),
        )
        .unwrap();
        assert_eq!(request.max_tokens, Some(9));
    }
}

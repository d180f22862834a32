//! Checks an `/api/chat` or `/api/generate` body, read into its types, before anything is
//! sent anywhere (every problem listed, each at its path), then turns it into the
//! pipeline's request through the wire crate's reader of Ollama requests, which gives
//! calls without ids their ids and pairs results with calls: by `tool_call_id` (Open
//! WebUI), by `tool_name` (Ollama's clients), else by position (Home Assistant sends
//! neither).

use serde_json::{Map, Value, json};
use switchboard_tools::Toolset;
use switchboard_wire::ids::IdSource;
use switchboard_wire::ollama::{
    OllamaChatRequest, OllamaFunction, OllamaMessage, OllamaToolCall, parse_request,
};
use switchboard_wire::{ChatRequest, REASONING_EFFORTS};

use super::request::{ChatBody, ClientMessage, Common, GenerateBody, Think};
use crate::api::body::PathStyle;
use crate::api::error::ApiError;
use crate::api::fields::{self, Invalid, Sent, invalid, rejection};
use switchboard_pipeline::compile_tools;

/// A request checked: the pipeline's request and its tools compiled under the `api`
/// profile, to check the model's calls.
#[derive(Debug)]
pub struct Checked {
    pub request: ChatRequest,
    pub tools: Toolset,
    /// Set for Ollama's load request (no messages, or an empty prompt and no images),
    /// which asks nothing of the model: whether it unloads (`keep_alive: 0`).
    pub load: Option<bool>,
}

/// Numeric `options` and the range each takes; Ollama's other options (`num_ctx`,
/// `num_gpu`, `repeat_penalty`, `mirostat`…) tune a local runtime and are ignored.
const NUMBER_OPTIONS: &[(&str, f64, f64)] = &[
    ("temperature", 0.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("frequency_penalty", -2.0, 2.0),
    ("presence_penalty", -2.0, 2.0),
];

/// `POST /api/chat`.
pub fn check_chat(body: ChatBody) -> Result<Checked, ApiError> {
    let ChatBody {
        model,
        messages,
        tools,
        common,
    } = body;
    let mut problems = Vec::new();
    let model = fields::model(model, &mut problems);
    let toolset = check_tools(tools.as_ref(), &mut problems);
    let messages = check_messages(messages.unwrap_or_default(), &mut problems);
    let settings = check_common(common, &mut problems);
    if !problems.is_empty() {
        return Err(rejection(&problems));
    }
    if messages.is_empty() {
        return Ok(load(model, &settings));
    }
    answer(model, messages, toolset.unwrap_or_default(), settings)
}

/// `POST /api/generate`: the prompt becomes the user's message after the system prompt.
pub fn check_generate(body: GenerateBody) -> Result<Checked, ApiError> {
    let GenerateBody {
        model,
        prompt,
        system,
        suffix,
        raw,
        images,
        common,
    } = body;
    let mut problems = Vec::new();
    let model = fields::model(model, &mut problems);
    let prompt = prompt.check("prompt", "expected a string", |_| true, &mut problems);
    let system = system.check("system", "expected a string", |_| true, &mut problems);
    if suffix
        .check("suffix", "expected a string", |_| true, &mut problems)
        .is_some_and(|suffix| !suffix.is_empty())
    {
        problems.push(invalid(
            "suffix",
            "fill-in-the-middle is not served: the gateway asks every backend through its chat API, which completes no text around a suffix",
        ));
    }
    // Without a template the prompt is still one user message: a chat API has no raw text.
    raw.check("raw", "expected a boolean", |_| true, &mut problems);
    let settings = check_common(common, &mut problems);
    if !problems.is_empty() {
        return Err(rejection(&problems));
    }
    let prompt = prompt.unwrap_or_default();
    if prompt.is_empty() && images.as_ref().is_none_or(Vec::is_empty) {
        return Ok(load(model, &settings));
    }
    let mut messages = Vec::new();
    if let Some(system) = system.filter(|system| !system.is_empty()) {
        messages.push(OllamaMessage {
            role: "system".into(),
            content: system,
            ..OllamaMessage::default()
        });
    }
    messages.push(OllamaMessage {
        role: "user".into(),
        content: prompt,
        images,
        ..OllamaMessage::default()
    });
    answer(model, messages, Toolset::default(), settings)
}

/// What `/api/chat` and `/api/generate` share, checked.
struct Settings {
    options: Map<String, Value>,
    response_format: Option<Value>,
    reasoning_effort: Option<String>,
    stream: bool,
    unload: bool,
}

fn check_common(common: Common, problems: &mut Vec<Invalid>) -> Settings {
    let Common {
        format,
        options,
        think,
        keep_alive,
        stream,
    } = common;
    let response_format = match format {
        None | Some(Value::Null) => None,
        Some(Value::String(format)) if format == "json" => Some(json!({"type": "json_object"})),
        Some(Value::String(format)) if format.is_empty() => None,
        Some(schema @ Value::Object(_)) => Some(json!({"type": "json_schema",
            "json_schema": {"name": "response", "schema": schema, "strict": true}})),
        Some(other) => {
            problems.push(invalid(
                "format",
                format!(
                    "must be \"json\" or a JSON Schema object, got {}",
                    switchboard_tools::quote_value(&other)
                ),
            ));
            None
        }
    };
    let options = options
        .check("options", "expected an object", |_| true, problems)
        .unwrap_or_default();
    let options = check_options(options, problems);
    let reasoning_effort = match think.check(
        "think",
        &format!(
            "must be true, false or one of {}",
            REASONING_EFFORTS.join(", ")
        ),
        |think| match think {
            Think::On(_) => true,
            Think::Level(level) => REASONING_EFFORTS.contains(&level.as_str()),
        },
        problems,
    ) {
        None => None,
        Some(Think::On(true)) => Some("medium".to_owned()),
        Some(Think::On(false)) => Some("none".to_owned()),
        Some(Think::Level(level)) => Some(level),
    };
    let unload = match &keep_alive {
        None | Some(Value::Null) => false,
        Some(Value::Number(seconds)) => seconds.as_f64() == Some(0.0),
        Some(Value::String(duration)) => {
            duration.trim_end_matches(['s', 'm', 'h']).parse::<f64>() == Ok(0.0)
        }
        Some(other) => {
            problems.push(invalid(
                "keep_alive",
                format!(
                    "must be a number of seconds or a duration such as \"5m\", got {}",
                    switchboard_tools::quote_value(other)
                ),
            ));
            false
        }
    };
    let stream = stream
        .check("stream", "expected a boolean", |_| true, problems)
        .unwrap_or(true);
    Settings {
        options,
        response_format,
        reasoning_effort,
        stream,
        unload,
    }
}

/// The options the pipeline reads, checked by type; the wire reader takes them from here.
fn check_options(
    mut options: Map<String, Value>,
    problems: &mut Vec<Invalid>,
) -> Map<String, Value> {
    for (name, min, max) in NUMBER_OPTIONS {
        fields::number(
            Sent::field(&options, name),
            &format!("options.{name}"),
            *min,
            *max,
            problems,
        );
    }
    for name in ["top_k", "seed", "num_predict"] {
        Sent::<i64>::field(&options, name).check(
            &format!("options.{name}"),
            "expected an integer",
            |_| true,
            problems,
        );
    }
    // Ollama takes one stop string as well as a list.
    if let Some(Value::String(stop)) = options.get("stop") {
        let stop = Value::from(vec![stop.clone()]);
        options.insert("stop".into(), stop);
    }
    Sent::<Vec<String>>::field(&options, "stop").check(
        "options.stop",
        "must be a string or an array of strings",
        |_| true,
        problems,
    );
    options
}

fn check_tools(tools: Option<&Value>, problems: &mut Vec<Invalid>) -> Option<Toolset> {
    match tools {
        None | Some(Value::Null) => None,
        Some(list) => match compile_tools(list) {
            Ok(toolset) => Some(toolset),
            Err(found) => {
                for problem in found.0 {
                    problems.push(invalid(
                        PathStyle::Brackets.pointer("tools", &problem.path),
                        problem.message,
                    ));
                }
                None
            }
        },
    }
}

/// The messages in the wire crate's Ollama shape; a message without a role is a problem
/// at its place (the reader names wrong roles).
fn check_messages(messages: Vec<ClientMessage>, problems: &mut Vec<Invalid>) -> Vec<OllamaMessage> {
    let mut checked = Vec::with_capacity(messages.len());
    for (index, message) in messages.into_iter().enumerate() {
        let ClientMessage {
            role,
            content,
            thinking,
            images,
            tool_calls,
            tool_name,
            tool_call_id,
        } = message;
        let at = format!("messages[{index}].role");
        let role = match role {
            Sent::Given(role) => role,
            Sent::Absent => {
                problems.push(invalid(
                    at,
                    "every message needs a role: system, user, assistant or tool",
                ));
                continue;
            }
            wrong => {
                wrong.check(
                    &at,
                    "must be one of system, user, assistant, tool",
                    |_| true,
                    problems,
                );
                continue;
            }
        };
        let tool_calls = tool_calls.map(|calls| {
            calls
                .into_iter()
                .map(|call| OllamaToolCall {
                    id: call.id,
                    function: OllamaFunction {
                        index: call.function.index,
                        name: call.function.name,
                        arguments: call.function.arguments,
                    },
                })
                .collect()
        });
        checked.push(OllamaMessage {
            role,
            content: content.unwrap_or_default(),
            thinking,
            images,
            tool_calls,
            tool_name,
            tool_call_id,
        });
    }
    checked
}

/// The request for the model, read by the wire crate's Ollama reader, with what it leaves
/// to the front-end: structured output, reasoning, the penalties.
fn answer(
    model: String,
    messages: Vec<OllamaMessage>,
    tools: Toolset,
    settings: Settings,
) -> Result<Checked, ApiError> {
    let Settings {
        options,
        response_format,
        reasoning_effort,
        stream,
        unload: _,
    } = settings;
    let extra: Map<String, Value> = ["frequency_penalty", "presence_penalty"]
        .into_iter()
        .filter_map(|name| Some((name.to_owned(), options.get(name)?.clone())))
        .collect();
    let wire = OllamaChatRequest {
        model,
        messages,
        tools: None,
        stream: Some(stream),
        options: Some(options),
        extra: Map::new(),
    };
    let mut request = parse_request(wire, &mut IdSource::random())
        .map_err(|error| ApiError::invalid_request(error.to_string(), None))?;
    request.tools = tools.definitions().cloned().collect();
    request.response_format = response_format;
    request.reasoning_effort = reasoning_effort;
    request.extra = extra;
    Ok(Checked {
        request,
        tools,
        load: None,
    })
}

/// Ollama's load (or, with `keep_alive: 0`, unload) request: resolved and admitted like any
/// other, then answered without the model.
fn load(model: String, settings: &Settings) -> Checked {
    Checked {
        request: ChatRequest::new(model, Vec::new()),
        tools: Toolset::default(),
        load: Some(settings.unload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::parse_typed;

    fn chat(body: Value) -> Result<Checked, ApiError> {
        check_chat(parse_typed(
            body.to_string().as_bytes(),
            PathStyle::Brackets,
        )?)
    }

    #[test]
    fn formats_thinking_and_options_become_the_pipelines_fields() {
        let user = json!([{"role": "user", "content": "hi"}]);
        let checked = chat(
            json!({"model": "m", "messages": user, "format": "json", "think": "low",
            "options": {"temperature": 0.5, "stop": "END", "num_predict": -1, "num_ctx": 4096,
            "presence_penalty": 0.5}, "keep_alive": -1.0}),
        )
        .unwrap();
        let request = checked.request;
        assert_eq!(
            request.response_format,
            Some(json!({"type": "json_object"}))
        );
        assert_eq!(request.reasoning_effort.as_deref(), Some("low"));
        assert_eq!(request.temperature, Some(0.5));
        assert_eq!(request.stop, ["END"]);
        assert_eq!(request.max_tokens, None);
        assert_eq!(
            request.extra,
            json!({"presence_penalty": 0.5})
                .as_object()
                .cloned()
                .unwrap()
        );
        assert!(request.stream);
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let request = chat(
            json!({"model": "m", "messages": user, "format": schema, "think": false,
            "stream": false}),
        )
        .unwrap()
        .request;
        assert_eq!(
            request.response_format.unwrap()["json_schema"]["schema"],
            schema
        );
        assert_eq!(request.reasoning_effort.as_deref(), Some("none"));
        assert!(!request.stream);
    }

    #[test]
    fn every_wrong_field_is_named() {
        let error = chat(
            json!({"model": 3, "messages": [{"content": "x"}], "think": "hard",
            "stream": "yes", "keep_alive": [], "options": {"top_k": "many"}}),
        )
        .unwrap_err();
        for param in [
            "model",
            "messages[0].role",
            "think",
            "stream",
            "keep_alive",
            "options.top_k",
        ] {
            assert!(error.message.contains(param), "{param}: {}", error.message);
        }
    }

    #[test]
    fn results_pair_with_calls_by_id_by_name_or_by_position() {
        let call = |name: &str| json!({"function": {"name": name, "arguments": {}}});
        let checked = chat(json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b"), call("c")]},
            {"role": "tool", "tool_name": "b", "content": "B"},
            {"role": "tool", "content": "A"},
            {"role": "tool", "content": "C"}]}))
        .unwrap();
        let messages = serde_json::to_value(&checked.request.messages).unwrap();
        let ids: Vec<&Value> = messages[1]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| &call["id"])
            .collect();
        assert_eq!(&messages[2]["tool_call_id"], ids[1]);
        assert_eq!(&messages[3]["tool_call_id"], ids[0]);
        assert_eq!(&messages[4]["tool_call_id"], ids[2]);
    }

    #[test]
    fn load_requests_are_told_from_requests_for_the_model() {
        let generate = |body: Value| {
            check_generate(parse_typed(
                body.to_string().as_bytes(),
                PathStyle::Brackets,
            )?)
        };
        let unload = generate(json!({"model": "m", "prompt": "", "keep_alive": 0}));
        assert_eq!(unload.unwrap().load, Some(true));
        let loaded = chat(json!({"model": "m", "messages": []}));
        assert_eq!(loaded.unwrap().load, Some(false));
        assert_eq!(
            generate(json!({"model": "m", "prompt": "hi"}))
                .unwrap()
                .load,
            None
        );
        // A wrong type is named, load request or not.
        assert!(chat(json!({"model": "m", "messages": "hi"})).is_err());
        assert!(chat(json!({"model": 5, "messages": []})).is_err());
    }
}

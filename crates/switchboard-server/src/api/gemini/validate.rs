//! Checks a Gemini request, read into [`GenerateBody`], before anything is sent anywhere,
//! every problem listed with its path as Google names it
//! (`contents[1].parts[0].functionResponse.name`); then turns it into the pipeline's
//! request. Settings no backend here can honour (`safetySettings`, `cachedContent`, a
//! `generationConfig` field with no counterpart) are named, not refused, and Google's
//! built-in tools are left out and named; the front-end sends both lists back as headers.

use serde_json::{Map, Value, json};
use switchboard_tools::{Content, Message, ToolCall, Toolset, quote, quote_value};
use switchboard_wire::{ChatRequest, ToolChoice};

use super::request::{
    Blob, ClientContent, ClientPart, ClientTool, FunctionCallingConfig, GenerateBody,
    GenerationConfig, ThinkingConfig, ToolConfig,
};
use crate::api::body::PathStyle;
use crate::api::error::ApiError;
use crate::api::fields::{Invalid, Sent, invalid, number, rejection};
use switchboard_pipeline::compile_converted;

/// The request in the pipeline's model, and what presenting its answer needs.
#[derive(Debug)]
pub struct Checked {
    pub request: ChatRequest,
    /// The request's tools compiled under the `api` profile, to check the model's calls.
    pub tools: Toolset,
    /// Whether the answer shows the model's reasoning as `thought` parts.
    pub include_thoughts: bool,
    /// Settings named and not honoured (`generationConfig.responseModalities`, …).
    pub dropped_fields: Vec<String>,
    /// Google's built-in tools, left out (`googleSearch`, …).
    pub dropped_tools: Vec<String>,
}

/// Part fields that describe a part rather than being one: accepted and left aside.
const PART_METADATA: &[&str] = &[
    "videoMetadata",
    "video_metadata",
    "partMetadata",
    "part_metadata",
    "mediaResolution",
    "media_resolution",
];

/// Part kinds that only Google's own tools produce (its code execution).
const GOOGLE_ONLY_PARTS: &[&str] = &[
    "executableCode",
    "executable_code",
    "codeExecutionResult",
    "code_execution_result",
];

/// Checks a request read into its types, for `model` (from the path). All problems are
/// reported in one 400.
pub fn check_request(body: GenerateBody, model: String, stream: bool) -> Result<Checked, ApiError> {
    let GenerateBody {
        contents,
        system_instruction,
        tools,
        tool_config,
        generation_config,
        safety_settings,
        cached_content,
        generate_content_request: _,
        extra,
    } = body;
    let mut problems = Vec::new();
    let mut dropped_fields = Vec::new();
    let mut dropped_tools = Vec::new();
    let mut messages = Vec::new();
    if let Some(system) = system_instruction {
        messages.extend(check_system(system, &mut problems));
    }
    messages.extend(check_contents(contents, &mut problems));
    let declared = check_tools(tools, &mut dropped_tools, &mut problems);
    let (tool_choice, declared) = check_tool_config(tool_config, declared, &mut problems);
    let toolset = compile(&declared, &mut problems);
    let mut request = ChatRequest::new(model, messages);
    request.stream = stream;
    request.tool_choice = tool_choice;
    let include_thoughts = check_generation_config(
        generation_config.unwrap_or_default(),
        &mut request,
        &mut dropped_fields,
        &mut problems,
    );
    for (name, value) in [
        ("safetySettings", safety_settings),
        ("cachedContent", cached_content),
    ] {
        if value.is_some_and(|value| !value.is_null()) {
            dropped_fields.push(name.to_owned());
        }
    }
    // The path names the model; a body may name it too (`countTokens`' inner request
    // always does), and the path wins.
    dropped_fields.extend(
        extra
            .into_iter()
            .map(|(key, _)| key)
            .filter(|key| key != "model"),
    );
    if !problems.is_empty() {
        return Err(rejection(&problems));
    }
    let tools = toolset.unwrap_or_default();
    request.tools = tools.definitions().cloned().collect();
    Ok(Checked {
        request,
        tools,
        include_thoughts,
        dropped_fields,
        dropped_tools,
    })
}

/// `systemInstruction`: text parts, as one system message.
fn check_system(system: ClientContent, problems: &mut Vec<Invalid>) -> Option<Message> {
    let mut text = Vec::new();
    for (index, part) in system.parts.unwrap_or_default().into_iter().enumerate() {
        match part.text {
            Some(part) => text.push(part),
            None => problems.push(invalid(
                format!("systemInstruction.parts[{index}]"),
                "a system instruction takes text parts only",
            )),
        }
    }
    (!text.is_empty()).then(|| Message::system(text.join("\n")))
}

/// A call of the history, for answering: its id (the client's, or one given here) and name.
struct Call {
    id: String,
    name: String,
    answered: bool,
}

/// `contents` as the pipeline's messages: a `model` turn is an assistant message (its
/// `thought` parts its reasoning, its calls its tool calls), a `user` turn's
/// `functionResponse`s are tool messages answering the calls before it, the rest of it a
/// user message.
fn check_contents(
    contents: Option<Vec<ClientContent>>,
    problems: &mut Vec<Invalid>,
) -> Vec<Message> {
    let contents = match contents {
        Some(contents) if !contents.is_empty() => contents,
        _ => {
            problems.push(invalid("contents", "at least one content is required"));
            return Vec::new();
        }
    };
    let mut calls: Vec<Call> = Vec::new();
    let mut messages = Vec::with_capacity(contents.len());
    for (turn, content) in contents.into_iter().enumerate() {
        let at = format!("contents[{turn}]");
        let model = match &content.role {
            Sent::Absent => false,
            Sent::Given(role) if matches!(role.as_str(), "user" | "function") => false,
            Sent::Given(role) if role == "model" => true,
            other => {
                let got = match other {
                    Sent::Given(role) => quote(role),
                    Sent::Wrong(value) => quote_value(value),
                    Sent::Absent => String::new(),
                };
                problems.push(invalid(
                    format!("{at}.role"),
                    format!("must be \"user\" or \"model\", got {got}"),
                ));
                continue;
            }
        };
        let parts = match content.parts {
            Some(parts) if !parts.is_empty() => parts,
            _ => {
                problems.push(invalid(
                    format!("{at}.parts"),
                    "a content needs at least one part",
                ));
                continue;
            }
        };
        let mut turn_parts = Turn::default();
        for (index, part) in parts.into_iter().enumerate() {
            check_part(
                part,
                &format!("{at}.parts[{index}]"),
                model,
                (turn, index),
                &mut calls,
                &mut turn_parts,
                problems,
            );
        }
        messages.extend(turn_parts.into_messages(model));
    }
    messages
}

/// The parts of one turn, sorted by what they become.
#[derive(Default)]
struct Turn {
    text: Vec<String>,
    thoughts: Vec<String>,
    /// OpenAI-shaped content parts, for a user turn with images: made from its first
    /// image on, the text before it included.
    parts: Vec<Value>,
    images: bool,
    calls: Vec<ToolCall>,
    results: Vec<Message>,
}

impl Turn {
    fn into_messages(self, model: bool) -> Vec<Message> {
        let mut messages = self.results;
        if model {
            let content = (!self.text.is_empty()).then(|| Content::Text(self.text.concat()));
            let reasoning = (!self.thoughts.is_empty()).then(|| self.thoughts.concat());
            if content.is_some() || reasoning.is_some() || !self.calls.is_empty() {
                messages.push(Message::Assistant {
                    content,
                    reasoning_content: reasoning,
                    reasoning_signature: None,
                    tool_calls: self.calls,
                    name: None,
                });
            }
        } else if self.images {
            messages.push(Message::User {
                content: Content::Parts(self.parts),
                name: None,
            });
        } else if !self.text.is_empty() {
            messages.push(Message::user(self.text.join("\n")));
        }
        messages
    }
}

fn check_part(
    part: ClientPart,
    at: &str,
    model: bool,
    (turn, index): (usize, usize),
    calls: &mut Vec<Call>,
    into: &mut Turn,
    problems: &mut Vec<Invalid>,
) {
    let ClientPart {
        text,
        inline_data,
        file_data,
        function_call,
        function_response,
        thought,
        thought_signature,
        extra,
    } = part;
    let mut kinds = 0;
    for (key, _) in extra {
        if PART_METADATA.contains(&key.as_str()) {
            continue;
        }
        kinds += 1;
        let message = if GOOGLE_ONLY_PARTS.contains(&key.as_str()) {
            format!(
                "{} parts come from Google's code execution, which cannot run here",
                quote(&key)
            )
        } else {
            format!(
                "unknown part kind {}: a part is one of text, inlineData, functionCall, functionResponse",
                quote(&key)
            )
        };
        problems.push(invalid(format!("{at}.{key}"), message));
    }
    kinds += [
        text.is_some(),
        inline_data.is_some(),
        file_data.is_some(),
        function_call.is_some(),
        function_response.is_some(),
    ]
    .iter()
    .filter(|given| **given)
    .count();
    if kinds > 1 {
        problems.push(invalid(
            at,
            "a part carries exactly one of text, inlineData, functionCall, functionResponse",
        ));
        return;
    }
    if kinds == 0 {
        // Gemini sends a part holding only its reasoning's signature; it says nothing.
        if thought_signature.is_none() {
            problems.push(invalid(
                at,
                "a part needs one of text, inlineData, functionCall, functionResponse",
            ));
        }
        return;
    }
    if let Some(text) = text {
        if thought == Some(true) {
            if model {
                into.thoughts.push(text);
            }
        } else {
            if into.images {
                into.parts.push(text_content_part(&text));
            }
            into.text.push(text);
        }
    } else if let Some(blob) = inline_data {
        if model {
            problems.push(invalid(
                format!("{at}.inlineData"),
                "images are taken in user turns only",
            ));
        } else if let Some(url) = image_url(blob, &format!("{at}.inlineData"), problems) {
            if !into.images {
                into.images = true;
                into.parts = into
                    .text
                    .iter()
                    .map(|text| text_content_part(text))
                    .collect();
            }
            into.parts
                .push(json!({"type": "image_url", "image_url": {"url": url}}));
        }
    } else if file_data.is_some() {
        problems.push(invalid(
            format!("{at}.fileData"),
            "files by URI cannot be read by this gateway's backends: send the bytes as inlineData",
        ));
    } else if let Some(call) = function_call {
        let at = format!("{at}.functionCall");
        if !model {
            problems.push(invalid(at, "only model turns make function calls"));
            return;
        }
        let Some(name) = call.name.filter(|name| !name.is_empty()) else {
            problems.push(invalid(format!("{at}.name"), "name the function called"));
            return;
        };
        // Gemini's calls often come without ids; this one is named by its place.
        let id = call
            .id
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| format!("call_{turn}_{index}"));
        let arguments = Value::Object(call.args.unwrap_or_default()).to_string();
        calls.push(Call {
            id: id.clone(),
            name: name.clone(),
            answered: false,
        });
        into.calls.push(ToolCall {
            id,
            name,
            arguments,
        });
    } else if let Some(result) = function_response {
        let at = format!("{at}.functionResponse");
        if model {
            problems.push(invalid(at, "function responses go in user turns"));
            return;
        }
        let Some(name) = result.name.filter(|name| !name.is_empty()) else {
            problems.push(invalid(format!("{at}.name"), "name the function answered"));
            return;
        };
        // By its id where the client kept the call's; by name, the first call still
        // unanswered, where it did not (clients give id-less calls ids of their own).
        let found = result
            .id
            .as_deref()
            .and_then(|id| calls.iter().position(|call| call.id == id))
            .or_else(|| {
                calls
                    .iter()
                    .position(|call| !call.answered && call.name == name)
            });
        let Some(found) = found else {
            problems.push(invalid(
                format!("{at}.name"),
                format!(
                    "{} does not answer a functionCall of an earlier model turn",
                    quote(&name)
                ),
            ));
            return;
        };
        calls[found].answered = true;
        into.results.push(Message::Tool {
            tool_call_id: calls[found].id.clone(),
            content: Content::Text(result_text(result.response)),
        });
    }
}

fn text_content_part(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A result as the model reads it: the text of `{"output": "…"}`, the JSON of any other.
fn result_text(response: Option<Value>) -> String {
    match response {
        None | Some(Value::Null) => String::new(),
        Some(Value::Object(object))
            if object.len() == 1 && object.get("output").is_some_and(Value::is_string) =>
        {
            object["output"].as_str().unwrap_or_default().to_owned()
        }
        Some(other) => other.to_string(),
    }
}

/// An image as a data URL in standard base64: the SDKs send URL-safe base64, which most
/// backends refuse.
fn image_url(blob: Blob, at: &str, problems: &mut Vec<Invalid>) -> Option<String> {
    let Some(mime) = blob.mime_type.filter(|mime| mime.starts_with("image/")) else {
        problems.push(invalid(
            format!("{at}.mimeType"),
            "inline data must be an image (image/png, image/jpeg, …)",
        ));
        return None;
    };
    let Some(data) = blob.data.as_deref().and_then(standard_base64) else {
        problems.push(invalid(format!("{at}.data"), "must be base64"));
        return None;
    };
    Some(format!("data:{mime};base64,{data}"))
}

/// Base64 in either alphabet, padded or not, as standard padded base64; `None` when it is
/// not base64.
fn standard_base64(data: &str) -> Option<String> {
    let mut standard = String::with_capacity(data.len() + 3);
    let body = data.trim_end_matches('=');
    for byte in body.bytes() {
        standard.push(match byte {
            b'-' => '+',
            b'_' => '/',
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => byte as char,
            _ => return None,
        });
    }
    if standard.len() % 4 == 1 || data.len() - body.len() > 2 {
        return None;
    }
    while !standard.len().is_multiple_of(4) {
        standard.push('=');
    }
    Some(standard)
}

/// A declared function as the client wrote it, with where it was declared.
struct Declared {
    at: String,
    /// The field its schema came in (`parameters`, Google's OpenAPI subset, or
    /// `parametersJsonSchema`).
    schema_field: &'static str,
    name: String,
    description: Option<String>,
    /// None: no parameters.
    schema: Option<Value>,
}

impl Declared {
    /// In OpenAI's function shape, its schema as JSON Schema.
    fn function(&self) -> Value {
        let parameters = match (&self.schema, self.schema_field) {
            (Some(schema), "parameters") => json_schema(schema),
            (Some(schema), _) => schema.clone(),
            (None, _) => json!({"type": "object", "properties": {}}),
        };
        let mut function = json!({"name": self.name, "parameters": parameters});
        if let Some(description) = &self.description {
            function["description"] = json!(description);
        }
        json!({"type": "function", "function": function})
    }
}

/// `tools`: the function declarations, each with its schema as JSON Schema; Google's
/// built-in tools are named in `dropped`.
fn check_tools(
    tools: Option<Vec<ClientTool>>,
    dropped: &mut Vec<String>,
    problems: &mut Vec<Invalid>,
) -> Vec<Declared> {
    let mut declared = Vec::new();
    for (index, tool) in tools.unwrap_or_default().into_iter().enumerate() {
        dropped.extend(tool.built_in.into_iter().map(|(key, _)| key));
        for (number, declaration) in tool
            .function_declarations
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let at = format!("tools[{index}].functionDeclarations[{number}]");
            let Some(name) = declaration.name else {
                problems.push(invalid(format!("{at}.name"), "name the function"));
                continue;
            };
            let (schema_field, schema) =
                match (declaration.parameters, declaration.parameters_json_schema) {
                    (Some(_), Some(_)) => {
                        problems.push(invalid(
                            at.clone(),
                            "give parameters or parametersJsonSchema, not both",
                        ));
                        continue;
                    }
                    (Some(schema), None) => ("parameters", Some(schema)),
                    (None, Some(schema)) => ("parametersJsonSchema", Some(schema)),
                    (None, None) => ("parameters", None),
                };
            declared.push(Declared {
                at,
                schema_field,
                name,
                description: declaration.description,
                schema,
            });
        }
    }
    declared
}

/// `toolConfig.functionCallingConfig`: `AUTO`, `ANY` (a call it must make), `NONE`,
/// `VALIDATED` (calls checked against their schemas, which every call here is); its
/// `allowedFunctionNames` leave the model only those functions.
fn check_tool_config(
    config: Option<ToolConfig>,
    declared: Vec<Declared>,
    problems: &mut Vec<Invalid>,
) -> (Option<ToolChoice>, Vec<Declared>) {
    let Some(FunctionCallingConfig {
        mode,
        allowed_function_names,
    }) = config.and_then(|config| config.function_calling_config)
    else {
        return (None, declared);
    };
    const AT: &str = "toolConfig.functionCallingConfig";
    let mode = mode.check(
        &format!("{AT}.mode"),
        "must be AUTO, ANY, NONE or VALIDATED",
        |mode| {
            matches!(
                mode.to_ascii_uppercase().as_str(),
                "AUTO" | "ANY" | "NONE" | "VALIDATED" | "MODE_UNSPECIFIED"
            )
        },
        problems,
    );
    let mut declared = declared;
    if let Some(allowed) = &allowed_function_names {
        for (index, name) in allowed.iter().enumerate() {
            if !declared.iter().any(|tool| &tool.name == name) {
                problems.push(invalid(
                    format!("{AT}.allowedFunctionNames[{index}]"),
                    format!("{} is not a declared function", quote(name)),
                ));
            }
        }
        declared.retain(|tool| allowed.contains(&tool.name));
    }
    let choice = match mode.map(|mode| mode.to_ascii_uppercase()).as_deref() {
        Some("ANY") => {
            if declared.is_empty() {
                problems.push(invalid(
                    format!("{AT}.mode"),
                    "ANY needs at least one function declaration",
                ));
            }
            match declared.as_slice() {
                [only] if allowed_function_names.is_some() => {
                    Some(ToolChoice::Function(only.name.clone()))
                }
                _ => Some(ToolChoice::Required),
            }
        }
        Some("NONE") => Some(ToolChoice::None),
        Some(_) => Some(ToolChoice::Auto),
        None => None,
    };
    (choice, declared)
}

/// The declarations compiled together, each problem named where it was declared.
fn compile(declared: &[Declared], problems: &mut Vec<Invalid>) -> Option<Toolset> {
    if declared.is_empty() {
        return None;
    }
    // Kept by what the declarations are made of, as the client wrote them: a list compiled
    // before is neither converted to JSON Schema nor compiled again.
    let made_of: Vec<_> = declared
        .iter()
        .map(|tool| {
            (
                &tool.name,
                &tool.description,
                tool.schema_field,
                &tool.schema,
            )
        })
        .collect();
    let functions = || Value::Array(declared.iter().map(Declared::function).collect());
    match compile_converted("gemini", &made_of, functions) {
        Ok(toolset) => Some(toolset),
        Err(found) => {
            for problem in found.0 {
                let mut segments = problem.path.splitn(4, '/').skip(1);
                let tool = segments
                    .next()
                    .and_then(|index| index.parse::<usize>().ok())
                    .and_then(|index| declared.get(index));
                let param = match (tool, segments.next(), segments.next()) {
                    (Some(tool), Some("function"), Some(field)) => {
                        let rest = problem.path.splitn(5, '/').nth(4).unwrap_or_default();
                        let field = if field == "parameters" {
                            tool.schema_field
                        } else {
                            field
                        };
                        let rest = if rest.is_empty() {
                            String::new()
                        } else {
                            format!("/{rest}")
                        };
                        PathStyle::Brackets.pointer(&format!("{}.{field}", tool.at), &rest)
                    }
                    _ => PathStyle::Brackets.pointer("tools", &problem.path),
                };
                problems.push(invalid(param, problem.message));
            }
            None
        }
    }
}

/// `generationConfig` into the request; whether thoughts are shown.
fn check_generation_config(
    config: GenerationConfig,
    request: &mut ChatRequest,
    dropped: &mut Vec<String>,
    problems: &mut Vec<Invalid>,
) -> bool {
    const AT: &str = "generationConfig";
    let at = |field: &str| format!("{AT}.{field}");
    let GenerationConfig {
        temperature,
        top_p,
        top_k,
        max_output_tokens,
        stop_sequences,
        candidate_count,
        seed,
        presence_penalty,
        frequency_penalty,
        response_mime_type,
        response_schema,
        response_json_schema,
        thinking_config,
        extra,
    } = config;
    request.temperature = number(temperature, &at("temperature"), 0.0, 2.0, problems);
    request.top_p = number(top_p, &at("topP"), 0.0, 1.0, problems);
    // The SDKs send topK as a float.
    request.top_k = top_k
        .check(
            &at("topK"),
            &format!("must be a whole number from 0 to {}", u32::MAX),
            |k| k.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(k),
            problems,
        )
        .map(|k| k as u32);
    request.max_tokens =
        crate::api::fields::token_count(max_output_tokens, &at("maxOutputTokens"), problems);
    request.stop = stop_sequences
        .check(
            &at("stopSequences"),
            "must be an array of strings",
            |_| true,
            problems,
        )
        .unwrap_or_default();
    candidate_count.check(
        &at("candidateCount"),
        "only one candidate is generated here: candidateCount must be 1",
        |count| *count == 1,
        problems,
    );
    request.seed = seed.check(&at("seed"), "must be an integer", |_| true, problems);
    for (field, name, value) in [
        ("presencePenalty", "presence_penalty", presence_penalty),
        ("frequencyPenalty", "frequency_penalty", frequency_penalty),
    ] {
        if let Some(penalty) = number(value, &at(field), -2.0, 2.0, problems) {
            request.extra.insert(name.to_owned(), json!(penalty));
        }
    }
    let json_answer = matches!(
        response_mime_type
            .check(
                &at("responseMimeType"),
                "must be \"text/plain\" or \"application/json\"",
                |mime| matches!(mime.as_str(), "text/plain" | "application/json"),
                problems,
            )
            .as_deref(),
        Some("application/json")
    );
    let schema = match (response_schema, response_json_schema) {
        (Some(_), Some(_)) => {
            problems.push(invalid(
                at("responseSchema"),
                "give responseSchema or responseJsonSchema, not both",
            ));
            None
        }
        (Some(schema), None) | (None, Some(schema)) if !schema.is_object() => {
            problems.push(invalid(at("responseSchema"), "must be a schema object"));
            None
        }
        (Some(schema), None) | (None, Some(schema)) => Some(json_schema(&schema)),
        (None, None) => None,
    };
    request.response_format = match (json_answer, schema) {
        (true, Some(schema)) => Some(json!({"type": "json_schema",
            "json_schema": {"name": "response", "schema": schema}})),
        (true, None) => Some(json!({"type": "json_object"})),
        (false, Some(_)) => {
            problems.push(invalid(
                at("responseMimeType"),
                "a response schema needs responseMimeType \"application/json\"",
            ));
            None
        }
        (false, None) => None,
    };
    let include_thoughts =
        thinking_config.is_some_and(|thinking| check_thinking(thinking, request, problems));
    dropped.extend(extra.into_iter().map(|(key, _)| key).map(|key| at(&key)));
    include_thoughts
}

/// `thinkingConfig`: its budget or level as the request's reasoning effort; whether the
/// client wants the thoughts.
fn check_thinking(
    config: ThinkingConfig,
    request: &mut ChatRequest,
    problems: &mut Vec<Invalid>,
) -> bool {
    const AT: &str = "generationConfig.thinkingConfig";
    let ThinkingConfig {
        include_thoughts,
        thinking_budget,
        thinking_level,
    } = config;
    let budget = thinking_budget.check(
        &format!("{AT}.thinkingBudget"),
        "must be -1 (as the model likes), 0 (none) or a number of tokens",
        |budget| *budget >= -1,
        problems,
    );
    let level = thinking_level.check(
        &format!("{AT}.thinkingLevel"),
        "must be MINIMAL, LOW, MEDIUM or HIGH",
        |level| {
            matches!(
                level.to_ascii_uppercase().as_str(),
                "MINIMAL" | "LOW" | "MEDIUM" | "HIGH" | "THINKING_LEVEL_UNSPECIFIED"
            )
        },
        problems,
    );
    let effort = match (level.map(|level| level.to_ascii_lowercase()), budget) {
        (Some(level), _) if level != "thinking_level_unspecified" => Some(level),
        (_, Some(0)) => Some("none".to_owned()),
        (_, Some(1..=1024)) => Some("low".to_owned()),
        (_, Some(1025..=8192)) => Some("medium".to_owned()),
        (_, Some(8193..)) => Some("high".to_owned()),
        _ => None,
    };
    request.reasoning_effort = effort;
    crate::api::fields::boolean(include_thoughts, &format!("{AT}.includeThoughts"), problems)
}

/// A schema in Google's OpenAPI subset as JSON Schema: upper-case types in lower case,
/// `nullable` as a `null` type, proto spellings in JSON's, Google's own keys left out.
/// JSON Schema comes through unchanged but for upper-case types (which Gemini CLI sends in
/// `responseJsonSchema`).
pub fn json_schema(schema: &Value) -> Value {
    let Value::Object(schema) = schema else {
        return schema.clone();
    };
    let mut converted = Map::new();
    for (key, value) in schema {
        let value = match key.as_str() {
            "nullable" | "propertyOrdering" | "property_ordering" | "example" => continue,
            "type" => match value {
                Value::String(kind) if kind.eq_ignore_ascii_case("type_unspecified") => continue,
                Value::String(kind) => Value::String(kind.to_ascii_lowercase()),
                other => other.clone(),
            },
            "properties" => match value {
                Value::Object(properties) => Value::Object(
                    properties
                        .iter()
                        .map(|(name, schema)| (name.clone(), json_schema(schema)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" => json_schema(value),
            "anyOf" | "any_of" => match value {
                Value::Array(options) => Value::Array(options.iter().map(json_schema).collect()),
                other => other.clone(),
            },
            _ => value.clone(),
        };
        let key = match key.as_str() {
            "any_of" => "anyOf",
            "min_items" => "minItems",
            "max_items" => "maxItems",
            "min_length" => "minLength",
            "max_length" => "maxLength",
            "min_properties" => "minProperties",
            "max_properties" => "maxProperties",
            other => other,
        };
        converted.insert(key.to_owned(), value);
    }
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        match converted.get_mut("type") {
            Some(Value::String(kind)) => {
                let kind = std::mem::take(kind);
                converted.insert("type".into(), json!([kind, "null"]));
            }
            _ => {
                if let Some(Value::Array(options)) = converted.get_mut("anyOf") {
                    options.push(json!({"type": "null"}));
                }
            }
        }
        if let Some(Value::Array(values)) = converted.get_mut("enum") {
            values.push(Value::Null);
        }
    }
    converted.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::{PathStyle, parse_typed};

    fn checked(body: Value) -> Result<Checked, String> {
        let bytes = serde_json::to_vec(&body).unwrap();
        parse_typed(&bytes, PathStyle::Brackets)
            .and_then(|body| check_request(body, "m".into(), false))
            .map_err(|error| error.message)
    }

    fn problems(body: Value) -> String {
        checked(body).err().unwrap_or_default()
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "parts": [{"text": text}]})
    }

    #[test]
    fn openapi_schemas_become_json_schema() {
        let schema = json!({"type": "OBJECT", "properties": {
            "city": {"type": "STRING", "nullable": true, "enum": ["a", "b"], "format": "enum"},
            "days": {"type": "ARRAY", "items": {"type": "INTEGER"}, "min_items": 1},
            "type": {"type": "STRING"}},
            "required": ["city"], "propertyOrdering": ["city", "days"]});
        assert_eq!(
            json_schema(&schema),
            json!({"type": "object", "properties": {
                "city": {"type": ["string", "null"], "enum": ["a", "b", null], "format": "enum"},
                "days": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
                "type": {"type": "string"}},
                "required": ["city"]})
        );
    }

    #[test]
    fn both_spellings_make_the_same_request() {
        let camel = checked(json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"},
                {"inlineData": {"mimeType": "image/png", "data": "-_8"}}]}],
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"type": "object"}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
            "generationConfig": {"maxOutputTokens": 5, "thinkingConfig": {"includeThoughts": true}}
        }))
        .unwrap();
        let snake = checked(json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"},
                {"inline_data": {"mime_type": "image/png", "data": "-_8="}}]}],
            "system_instruction": {"parts": [{"text": "be brief"}]},
            "tools": [{"function_declarations": [{"name": "f", "parameters_json_schema": {"type": "object"}}]}],
            "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["f"]}},
            "generation_config": {"max_output_tokens": 5, "thinking_config": {"include_thoughts": true}}
        }))
        .unwrap();
        assert_eq!(camel.request.messages, snake.request.messages);
        assert_eq!(camel.request.tools, snake.request.tools);
        assert_eq!(
            camel.request.tool_choice,
            Some(ToolChoice::Function("f".into()))
        );
        assert_eq!(snake.request.max_tokens, Some(5));
        assert!(camel.include_thoughts && snake.include_thoughts);
        let Message::User {
            content: Content::Parts(parts),
            ..
        } = &camel.request.messages[1]
        else {
            panic!("{:?}", camel.request.messages);
        };
        assert_eq!(parts[1]["image_url"]["url"], "data:image/png;base64,+/8=");
    }

    #[test]
    fn a_turn_with_images_keeps_its_parts_in_order() {
        let checked = checked(
            json!({"contents": [{"role": "user", "parts": [{"text": "a"},
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}, {"text": "b"}]}]}),
        )
        .unwrap();
        let Message::User {
            content: Content::Parts(parts),
            ..
        } = &checked.request.messages[0]
        else {
            panic!("{:?}", checked.request.messages);
        };
        let kinds: Vec<_> = parts.iter().map(|part| part["type"].clone()).collect();
        assert_eq!(kinds, [json!("text"), json!("image_url"), json!("text")]);
        assert_eq!(
            (&parts[0]["text"], &parts[2]["text"]),
            (&json!("a"), &json!("b"))
        );
    }

    #[test]
    fn a_call_and_its_answer_become_a_tool_round() {
        let checked = checked(json!({"contents": [
            user("weather?"),
            {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {"c": "P"}}, "thoughtSignature": "c2ln"}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "cli-own-id", "name": "w", "response": {"output": "sunny"}}}]}
        ]}))
        .unwrap();
        let messages = &checked.request.messages;
        let Message::Assistant { tool_calls, .. } = &messages[1] else {
            panic!("{messages:?}");
        };
        assert_eq!(tool_calls[0].arguments, r#"{"c":"P"}"#);
        assert_eq!(
            messages[2],
            Message::Tool {
                tool_call_id: tool_calls[0].id.clone(),
                content: Content::Text("sunny".into())
            }
        );
    }

    #[test]
    fn each_problem_is_named_by_its_path() {
        for (body, param) in [
            (json!({}), "contents:"),
            (
                json!({"contents": [user("a"), {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]}),
                "contents[1].parts[0].functionResponse.name:",
            ),
            (
                json!({"contents": [{"role": "user", "parts": [{"text": "a", "bogus": {}}]}]}),
                "contents[0].parts[0].bogus:",
            ),
            (
                json!({"contents": [{"role": "user", "parts": [{"fileData": {"fileUri": "gs://x"}}]}]}),
                "contents[0].parts[0].fileData:",
            ),
            (
                json!({"contents": [{"role": "robot", "parts": [{"text": "a"}]}]}),
                "contents[0].role:",
            ),
            (
                json!({"contents": [user("a")], "generationConfig": {"candidateCount": 2}}),
                "generationConfig.candidateCount:",
            ),
            (
                json!({"contents": [user("a")], "tools": [{"functionDeclarations": [{"name": "bad name"}]}]}),
                "tools[0].functionDeclarations[0].name:",
            ),
            (
                json!({"contents": [user("a")], "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT", "properties": {"x": {"type": "WHATEVER"}}}}]}]}),
                "tools[0].functionDeclarations[0].parameters",
            ),
            (
                json!({"contents": [user("a")], "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}),
                "toolConfig.functionCallingConfig.mode:",
            ),
        ] {
            let message = problems(body.clone());
            assert!(message.starts_with(param), "{body}: {message}");
        }
    }

    #[test]
    fn what_cannot_be_honoured_is_named() {
        let checked = checked(json!({"contents": [user("a")],
            "tools": [{"googleSearch": {}}, {"codeExecution": {}}],
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
            "generationConfig": {"responseModalities": ["TEXT"]}}))
        .unwrap();
        assert_eq!(checked.dropped_tools, ["googleSearch", "codeExecution"]);
        assert_eq!(
            checked.dropped_fields,
            ["generationConfig.responseModalities", "safetySettings"]
        );
    }

    #[test]
    fn base64_of_either_alphabet_becomes_standard() {
        assert_eq!(standard_base64("-_8").as_deref(), Some("+/8="));
        assert_eq!(standard_base64("aGk=").as_deref(), Some("aGk="));
        assert_eq!(standard_base64("a b"), None);
        assert_eq!(standard_base64("a"), None);
    }
}

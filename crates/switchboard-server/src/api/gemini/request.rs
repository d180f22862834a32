//! What a client may send to `POST /v1beta/models/{model}:generateContent` (and its stream
//! and `:countTokens`, which may wrap it as `generateContentRequest`), as types shaped for naming its problems: the body is read once into
//! these (a shape problem is a 400 naming its path, `contents[1].parts[0].text`), and
//! `validate` checks their values and turns them into the pipeline's request.
//!
//! Google's API takes each field in its JSON spelling (`systemInstruction`) and in its
//! proto spelling (`system_instruction`), and the SDKs send both, even mixed in one body:
//! every field here takes both. Fields this front-end does not know stay in `extra`, so
//! that they can be named (a part's unknown kind is a 400, as Google answers it; a
//! request's unknown setting is named in `x-switchboard-dropped-fields`).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::api::fields::{self, Sent};

/// The body of `:generateContent` and `:streamGenerateContent`.
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a JSON object", rename_all = "camelCase")]
pub struct GenerateBody {
    #[serde(default, deserialize_with = "fields::array")]
    pub contents: Option<Vec<ClientContent>>,
    #[serde(default, alias = "system_instruction")]
    pub system_instruction: Option<ClientContent>,
    #[serde(default, deserialize_with = "fields::array")]
    pub tools: Option<Vec<ClientTool>>,
    #[serde(default, alias = "tool_config")]
    pub tool_config: Option<ToolConfig>,
    #[serde(default, alias = "generation_config")]
    pub generation_config: Option<GenerationConfig>,
    /// Google's content filters: no other backend has them.
    #[serde(default, alias = "safety_settings")]
    pub safety_settings: Option<Value>,
    /// A context cached on Google's side: nothing here holds it.
    #[serde(default, alias = "cached_content")]
    pub cached_content: Option<Value>,
    /// `:countTokens` takes the contents alone, or a whole request wrapped in this.
    #[serde(default, alias = "generate_content_request")]
    pub generate_content_request: Option<Box<GenerateBody>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One turn of the conversation, or the system instruction.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a Content object")]
pub struct ClientContent {
    #[serde(default)]
    pub role: Sent<String>,
    #[serde(default, deserialize_with = "fields::array")]
    pub parts: Option<Vec<ClientPart>>,
}

/// One part of a turn. Its kind is whichever data field it carries; the rest is metadata.
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a Part object", rename_all = "camelCase")]
pub struct ClientPart {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default, alias = "inline_data")]
    pub inline_data: Option<Blob>,
    #[serde(default, alias = "file_data")]
    pub file_data: Option<Value>,
    #[serde(default, alias = "function_call")]
    pub function_call: Option<FunctionCall>,
    #[serde(default, alias = "function_response")]
    pub function_response: Option<FunctionResponse>,
    /// Whether this part is the model's reasoning.
    #[serde(default)]
    pub thought: Option<bool>,
    /// Google's opaque signature of the model's reasoning, which Google wants back
    /// unchanged; other backends have no use for it.
    #[serde(default, alias = "thought_signature")]
    pub thought_signature: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Inline bytes: an image, base64 in either alphabet.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a Blob object", rename_all = "camelCase")]
pub struct Blob {
    #[serde(default, alias = "mime_type")]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub data: Option<String>,
}

/// A call the model made, in the history.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a FunctionCall object")]
pub struct FunctionCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The arguments as an object.
    #[serde(default)]
    pub args: Option<Map<String, Value>>,
}

/// The result of a call, sent back by the client.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a FunctionResponse object")]
pub struct FunctionResponse {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The result as an object (`{"output": …}` or `{"error": …}` by convention).
    #[serde(default)]
    pub response: Option<Value>,
}

/// One entry of `tools`: function declarations, or one of Google's built-in tools.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a Tool object", rename_all = "camelCase")]
pub struct ClientTool {
    #[serde(
        default,
        alias = "function_declarations",
        deserialize_with = "fields::array"
    )]
    pub function_declarations: Option<Vec<FunctionDeclaration>>,
    /// Google's built-in tools (`googleSearch`, `codeExecution`, `urlContext`, …), which
    /// only Google runs.
    #[serde(flatten)]
    pub built_in: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a FunctionDeclaration object", rename_all = "camelCase")]
pub struct FunctionDeclaration {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Google's OpenAPI subset (upper-case types, `nullable`).
    #[serde(default)]
    pub parameters: Option<Value>,
    /// JSON Schema, as it is. (What the function returns, `response` or
    /// `responseJsonSchema`, only Google's models read: accepted and left aside.)
    #[serde(default, alias = "parameters_json_schema")]
    pub parameters_json_schema: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolConfig {
    #[serde(default, alias = "function_calling_config")]
    pub function_calling_config: Option<FunctionCallingConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCallingConfig {
    #[serde(default)]
    pub mode: Sent<String>,
    #[serde(default, alias = "allowed_function_names")]
    pub allowed_function_names: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    #[serde(default)]
    pub temperature: Sent<f64>,
    #[serde(default, alias = "top_p")]
    pub top_p: Sent<f64>,
    #[serde(default, alias = "top_k")]
    pub top_k: Sent<f64>,
    #[serde(default, alias = "max_output_tokens")]
    pub max_output_tokens: Sent<u64>,
    #[serde(default, alias = "stop_sequences")]
    pub stop_sequences: Sent<Vec<String>>,
    #[serde(default, alias = "candidate_count")]
    pub candidate_count: Sent<u64>,
    #[serde(default)]
    pub seed: Sent<i64>,
    #[serde(default, alias = "presence_penalty")]
    pub presence_penalty: Sent<f64>,
    #[serde(default, alias = "frequency_penalty")]
    pub frequency_penalty: Sent<f64>,
    #[serde(default, alias = "response_mime_type")]
    pub response_mime_type: Sent<String>,
    /// Google's OpenAPI subset.
    #[serde(default, alias = "response_schema")]
    pub response_schema: Option<Value>,
    /// JSON Schema, as it is.
    #[serde(default, alias = "response_json_schema", alias = "_responseJsonSchema")]
    pub response_json_schema: Option<Value>,
    #[serde(default, alias = "thinking_config")]
    pub thinking_config: Option<ThinkingConfig>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingConfig {
    #[serde(default, alias = "include_thoughts")]
    pub include_thoughts: Sent<bool>,
    /// Tokens to think: 0 none, -1 as the model likes.
    #[serde(default, alias = "thinking_budget")]
    pub thinking_budget: Sent<i64>,
    /// `LOW`, `MEDIUM`, `HIGH`, `MINIMAL` (Gemini 3).
    #[serde(default, alias = "thinking_level")]
    pub thinking_level: Sent<String>,
}

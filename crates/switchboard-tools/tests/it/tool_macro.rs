//! `#[tool]` through the public API: generated definitions, and calls through a `Toolbox`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_tools::{Profile, Tool, ToolCall, Toolbox, tool};

#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Importance {
    Low,
    Medium,
    High,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Place {
    /// City name
    city: String,
    country: Option<String>,
}

/// Log an important narrative event.
///
/// Everything after the first paragraph is not part of the description.
///
/// # Arguments
/// * `event` - The story event to log
/// * `importance` - Importance level of this event
#[tool]
fn log_event(event: String, importance: Option<Importance>) -> String {
    format!("{event} ({:?})", importance.unwrap_or(Importance::Medium))
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tool]
fn undocumented(flag: bool) -> bool {
    !flag
}

/// Sum a list and count words in a map.
#[tool]
fn tally(
    /// Numbers to sum
    numbers: Vec<f64>,
    words: HashMap<String, u32>,
    place: Place,
) -> Result<String, String> {
    if numbers.is_empty() {
        return Err("no numbers given".into());
    }
    let total: f64 = numbers.iter().sum();
    Ok(format!(
        "{total} {} {}",
        words.values().sum::<u32>(),
        place.city
    ))
}

/// Wait, then answer.
#[tool]
async fn slow_echo(text: String) -> String {
    tokio::task::yield_now().await;
    text
}

/// Takes nothing.
#[tool(name = "ping_pong")]
fn ping() {}

struct Counter {
    start: i64,
}

impl Counter {
    /// Offset a number by the counter's start.
    #[tool]
    fn offset(&self, value: i64) -> i64 {
        self.start + value
    }

    /// The same, asynchronously.
    #[tool]
    async fn offset_later(&self, value: i64) -> i64 {
        self.start + value
    }
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

#[test]
fn definition_comes_from_signature_and_docs() {
    let definition = log_event_tool().definition();
    assert_eq!(definition.function.name, "log_event");
    assert_eq!(
        definition.function.description.as_deref(),
        Some("Log an important narrative event.")
    );
    let parameters = definition.function.parameters.unwrap();
    assert_eq!(parameters["type"], "object");
    assert_eq!(parameters["properties"]["event"]["type"], "string");
    assert_eq!(
        parameters["properties"]["event"]["description"],
        "The story event to log"
    );
    assert_eq!(
        parameters["properties"]["importance"]["description"],
        "Importance level of this event"
    );
    assert_eq!(parameters["required"], json!(["event"]));
    assert_eq!(parameters["additionalProperties"], false);
    assert!(parameters.get("title").is_none() && parameters.get("$schema").is_none());
    assert_eq!(
        definition.function.output_schema,
        Some(json!({"type": "string"}))
    );
}

#[test]
fn basic_types_map_to_json_schema_types() {
    let parameters = add_tool().definition().function.parameters.unwrap();
    assert_eq!(parameters["properties"]["a"]["type"], "integer");
    assert_eq!(parameters["required"], json!(["a", "b"]));
    let parameters = undocumented_tool()
        .definition()
        .function
        .parameters
        .unwrap();
    assert_eq!(parameters["properties"]["flag"]["type"], "boolean");
}

#[test]
fn no_doc_comment_means_no_description() {
    assert_eq!(undocumented_tool().definition().function.description, None);
}

#[test]
fn collections_structs_and_parameter_doc_attributes() {
    let parameters = tally_tool().definition().function.parameters.unwrap();
    let properties = &parameters["properties"];
    assert_eq!(properties["numbers"]["type"], "array");
    assert_eq!(properties["numbers"]["items"]["type"], "number");
    assert_eq!(properties["numbers"]["description"], "Numbers to sum");
    assert_eq!(properties["words"]["type"], "object");
    assert_eq!(
        properties["words"]["additionalProperties"]["type"],
        "integer"
    );
    assert_eq!(
        properties["place"]["properties"]["city"]["description"],
        "City name"
    );
    assert!(
        parameters.get("$defs").is_none(),
        "subschemas are inlined: {parameters}"
    );
}

#[test]
fn renamed_tool_without_parameters_or_result() {
    let definition = ping_tool().definition();
    assert_eq!(definition.function.name, "ping_pong");
    assert_eq!(definition.function.output_schema, None);
}

#[tokio::test]
async fn calls_run_through_validation() {
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(log_event_tool()),
        Arc::new(add_tool()),
        Arc::new(tally_tool()),
        Arc::new(slow_echo_tool()),
        Arc::new(ping_tool()),
    ];
    let toolbox = Toolbox::new(tools, &Profile::api()).unwrap();

    let result = toolbox
        .call(&call(
            "log_event",
            json!({"event": "The hero fell", "importance": "high"}),
        ))
        .await;
    assert_eq!(
        (result.content.as_str(), result.is_error),
        ("The hero fell (High)", false)
    );

    let result = toolbox.call(&call("add", json!({"a": 2, "b": 40}))).await;
    assert_eq!(result.content, "42");

    let result = toolbox.call(&call("add", json!({"a": "2", "b": 40}))).await;
    assert!(result.is_error);
    assert!(
        result
            .content
            .starts_with("Error: Invalid parameters - /a: expected integer"),
        "{}",
        result.content
    );

    let result = toolbox
        .call(&call(
            "log_event",
            json!({"event": "x", "importance": "loud"}),
        ))
        .await;
    assert!(
        result.content.contains("\"low\", \"medium\", \"high\""),
        "{}",
        result.content
    );

    let result = toolbox
        .call(&call(
            "tally",
            json!({"numbers": [], "words": {}, "place": {"city": "Oslo"}}),
        ))
        .await;
    assert_eq!(
        (result.content.as_str(), result.is_error),
        ("Error: no numbers given", true)
    );

    let result = toolbox
        .call(&call(
            "tally",
            json!({"numbers": [1.5, 2], "words": {"a": 3}, "place": {"city": "Oslo"}}),
        ))
        .await;
    assert_eq!(result.content, "3.5 3 Oslo");

    let result = toolbox
        .call(&call("slow_echo", json!({"text": "later"})))
        .await;
    assert_eq!(result.content, "later");

    let result = toolbox
        .call(&ToolCall {
            id: "c".into(),
            name: "ping_pong".into(),
            arguments: String::new(),
        })
        .await;
    assert_eq!((result.content.as_str(), result.is_error), ("", false));

    let result = toolbox
        .call(&call("add", json!({"a": 1, "b": 2, "c": 3})))
        .await;
    assert!(
        result.content.contains("unexpected property \"c\""),
        "{}",
        result.content
    );

    let result = toolbox.call(&call("missing", json!({}))).await;
    assert_eq!(result.content, "Error: Unknown tool: missing");
}

#[tokio::test]
async fn methods_share_their_object() {
    let counter = Arc::new(Counter { start: 100 });
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Arc::clone(&counter).offset_tool()),
        Arc::new(counter.offset_later_tool()),
    ];
    let toolbox = Toolbox::new(tools, &Profile::api()).unwrap();
    assert_eq!(
        toolbox
            .call(&call("offset", json!({"value": 5})))
            .await
            .content,
        "105"
    );
    assert_eq!(
        toolbox
            .call(&call("offset_later", json!({"value": -1})))
            .await
            .content,
        "99"
    );
}

#[test]
fn unsupported_signatures_fail_to_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}

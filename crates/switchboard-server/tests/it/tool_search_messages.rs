//! Anthropic's tool search tools run by the gateway, for a model that has none, through the
//! official `anthropic` SDK (`client.beta.messages`, tests/messages_sdk/tool_search.py): 40
//! deferred tools and the regex or BM25 search tool; the scripted model searches, then calls
//! the tool found. The backend never sees a deferred definition before the search; the SDK
//! reads `server_tool_use` and `tool_search_tool_result` blocks as its own types, streamed
//! as whole; bad input is the model's to read; Anthropic's 400s stay 400s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{
    Captured, OpenAiScript, Reply, ScriptedServer, message_text, tool_names,
};

use crate::common::{python_client, route, sent};

const FOUND: &str = "get_weather";

/// The model: the user's "Find: X" has it search for X once ("Always: X" on every turn),
/// then call the weather tool once it is offered, then answer in words.
fn model(request: &Captured) -> Reply {
    let body = &request.body;
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .iter()
        .find(|message| message["role"] == "user")
        .map(message_text)
        .unwrap_or_default();
    let tools = tool_names(body);
    let search = tools
        .iter()
        .find(|tool| tool.starts_with("tool_search_tool_"))
        .cloned()
        .unwrap_or_default();
    let field = if search.ends_with("bm25") {
        "query"
    } else {
        "pattern"
    };
    let last = messages.last().cloned().unwrap_or_default();
    let search_call = |asked: &str| {
        let arguments = json!({ field: asked }).to_string();
        OpenAiScript::new()
            .text("Let me look.")
            .tool_call("call_s", &search, &[&arguments[..3], &arguments[3..]])
            .finish("tool_calls", 100, 10)
    };
    let script = if let Some(asked) = user.strip_prefix("Always: ") {
        search_call(asked)
    } else if last["role"] == "tool" && message_text(&last).starts_with("Error") {
        OpenAiScript::new()
            .text("The search failed.")
            .finish("stop", 120, 4)
    } else if last["role"] == "tool" && message_text(&last).contains("18 degrees") {
        OpenAiScript::new()
            .text("It is 18 degrees.")
            .finish("stop", 140, 5)
    } else if tools.iter().any(|tool| tool == FOUND) {
        OpenAiScript::new()
            .tool_call("call_w", FOUND, &[r#"{"city": "Paris"}"#])
            .finish("tool_calls", 130, 8)
    } else {
        search_call(user.strip_prefix("Find: ").unwrap_or_default())
    };
    script.reply()
}

async fn gateway(backend: &ScriptedServer) -> RunningGateway {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"tests/no-characters-here\"\n{}",
        route(
            "native",
            "openai",
            &format!("{}/v1", backend.base),
            "max_tool_rounds = 3"
        )
    );
    RunningGateway::start(&Config::from_toml(&text).unwrap(), &|_| None)
        .await
        .unwrap()
}

async fn sdk(case: &'static str) -> (Value, Vec<Value>) {
    let backend = ScriptedServer::responding(model).await;
    let gateway = gateway(&backend).await;
    let result = python_client(
        "messages_sdk/tool_search.py",
        &[&gateway.base_url(), case],
        "anthropic",
        None,
    )
    .await;
    // The chat requests, not the token counts a stream asks for beside them.
    let sent = backend
        .requests()
        .iter()
        .enumerate()
        .filter(|(_, request)| request.head.starts_with("post /v1/chat/completions "))
        .map(|(index, _)| sent(&backend, index))
        .collect();
    gateway.stop().await.unwrap();
    (result, sent)
}

/// The message with its per-request ids replaced.
fn comparable(message: &Value) -> Value {
    let mut message = message.clone();
    message["id"] = json!("msg_<id>");
    for block in message["content"].as_array_mut().unwrap() {
        for field in ["id", "tool_use_id"] {
            if block[field].is_string() {
                block[field] = json!("<id>");
            }
        }
    }
    message
}

async fn searches_then_calls_the_tool_found(case: &'static str, search: &str, input: Value) {
    let (result, sent) = sdk(case).await;
    assert_eq!(
        comparable(&result["whole"]),
        comparable(&result["streamed"]),
        "{result}"
    );
    let whole = &result["whole"];
    let content = whole["content"].as_array().unwrap();
    let kinds: Vec<&str> = content
        .iter()
        .map(|block| block["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "text",
            "server_tool_use",
            "tool_search_tool_result",
            "tool_use"
        ],
        "{whole}"
    );
    assert_eq!(
        result["classes"],
        json!([
            "BetaTextBlock",
            "BetaServerToolUseBlock",
            "BetaToolSearchToolResultBlock",
            "BetaToolUseBlock"
        ])
    );
    // The stream's accumulator holds its text as `ParsedBetaTextBlock`, the rest alike.
    assert_eq!(
        result["classes"].as_array().unwrap()[1..],
        result["streamed_classes"].as_array().unwrap()[1..]
    );
    let call = &content[1];
    assert!(
        call["id"].as_str().unwrap().starts_with("srvtoolu_"),
        "{call}"
    );
    assert_eq!(call["name"], search);
    assert_eq!(call["input"], input);
    assert_eq!(content[2]["tool_use_id"], call["id"]);
    let references = &content[2]["content"]["tool_references"];
    assert_eq!(
        content[2]["content"]["type"],
        "tool_search_tool_search_result"
    );
    assert_eq!(references[0]["tool_name"], FOUND, "{references}");
    assert!(references.as_array().unwrap().len() <= 5);
    assert_eq!(content[3]["name"], FOUND);
    assert_eq!(content[3]["input"], json!({"city": "Paris"}));
    assert_eq!(whole["stop_reason"], "tool_use");
    // The backend saw only the search tool until the search, then the tool it found, in
    // full; never the other 39.
    assert_eq!(tool_names(&sent[0]), [search]);
    let found = sent[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == FOUND)
        .unwrap();
    assert_eq!(
        found["function"]["parameters"]["properties"]["city"]["type"],
        "string"
    );
    for body in &sent {
        assert!(
            tool_names(body)
                .iter()
                .all(|name| !name.starts_with("inventory_bin_")),
            "{body}"
        );
    }
}

#[tokio::test]
async fn the_sdk_searches_by_regex_and_calls_the_deferred_tool_found() {
    searches_then_calls_the_tool_found(
        "regex",
        "tool_search_tool_regex",
        json!({"pattern": "weather"}),
    )
    .await;
}

#[tokio::test]
async fn the_sdk_searches_by_bm25_and_calls_the_deferred_tool_found() {
    searches_then_calls_the_tool_found(
        "bm25",
        "tool_search_tool_bm25",
        json!({"query": "current weather"}),
    )
    .await;
}

#[tokio::test]
async fn a_history_with_the_search_goes_on_with_the_found_tool_offered() {
    let (result, sent) = sdk("history").await;
    assert_eq!(
        result["second"]["content"][0]["text"], "It is 18 degrees.",
        "{result}"
    );
    let last = sent.last().unwrap();
    assert!(tool_names(last).iter().any(|tool| tool == FOUND), "{last}");
    assert!(
        !tool_names(last)
            .iter()
            .any(|name| name.starts_with("inventory_bin_"))
    );
}

#[tokio::test]
async fn bad_search_input_is_an_error_result_for_the_model() {
    let (result, _) = sdk("bad").await;
    for case in ["invalid", "long", "empty"] {
        let message = &result[case];
        let content = message["content"].as_array().unwrap();
        let searched = content
            .iter()
            .find(|block| block["type"] == "tool_search_tool_result")
            .unwrap_or_else(|| panic!("{case}: {message}"));
        assert_eq!(
            searched["content"]["type"], "tool_search_tool_result_error",
            "{case}"
        );
        assert_eq!(
            searched["content"]["error_code"], "invalid_tool_input",
            "{case}"
        );
        assert_eq!(
            content.last().unwrap()["text"],
            "The search failed.",
            "{case}"
        );
    }
}

#[tokio::test]
async fn a_model_searching_forever_pauses_at_max_tool_rounds() {
    let (result, sent) = sdk("forever").await;
    assert_eq!(result["whole"]["stop_reason"], "pause_turn", "{result}");
    assert_eq!(result["streamed"]["stop_reason"], "pause_turn");
    let searches = result["whole"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "server_tool_use")
        .count();
    assert_eq!(searches, 3);
    assert_eq!(sent.len(), 6);
}

#[tokio::test]
async fn anthropics_refusals_stay_400s() {
    let (result, sent) = sdk("refused").await;
    assert!(sent.is_empty());
    for (case, says) in [
        ("all_deferred", "every tool has defer_loading"),
        (
            "unknown_reference",
            "\"no_such_tool\" is not one of the request's tools",
        ),
        ("server_id", "\"srvtoolu_1\" is a server tool's call"),
        ("cached_deferred", "defer_loading cannot have cache_control"),
    ] {
        assert_eq!(result[case]["status"], 400, "{case}: {result}");
        assert!(
            result[case]["message"].as_str().unwrap().contains(says),
            "{case}: {result}"
        );
    }
}

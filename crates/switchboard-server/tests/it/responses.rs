//! The Responses API through the gateway, over loopback in front of scripted backends: the
//! stream's protocol (sequence numbers, every item added and done, one terminal event), the
//! same response streamed or whole whatever the backend's chunking, tools of every kind
//! mapped to functions and back, the store, and errors in OpenAI's shape.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::responses::*;
use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{
    AnthropicScript, Chunking, OllamaScript, OpenAiScript, Reply, ScriptedServer,
};

const GOOD_ID: &str = "call_abcdefghijklmnopqrstuvwx";
const CHUNKINGS: [Chunking; 3] = [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole];
const HERMES: &str = "tool_calling = \"prompted\"\nformat = \"hermes\"";

fn ask(model: &str, input: Value) -> Value {
    json!({"model": model, "input": input, "store": false})
}

fn weather() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

fn apply_patch() -> Value {
    json!({"type": "custom", "name": "apply_patch", "description": "Edit files.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: \"*** Begin Patch\" /(.|\\n)*/"}})
}

/// The same backend output asked for whole and streamed; returns the (agreed) response,
/// the streamed events, and the backend.
async fn both_ways(
    provider: &str,
    extra: &str,
    reply: Reply,
    body: &Value,
) -> (Value, Vec<Value>, ScriptedServer) {
    let backend = ScriptedServer::start(vec![reply.clone(), reply]).await;
    let gateway = one_route(provider, &backend.base, extra).await;
    let whole = post_to(&gateway, "/v1/responses", body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let streamed = post_to(&gateway, "/v1/responses", &streaming).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert_eq!(streamed.headers["content-type"], "text/event-stream");
    let events = events(&streamed.text);
    let from_stream = replay(&events);
    let whole = whole.json();
    assert_eq!(
        comparable(whole.clone()),
        comparable(from_stream),
        "streamed and whole differ"
    );
    gateway.stop().await.unwrap();
    (whole, events, backend)
}

fn output_types(response: &Value) -> Vec<&str> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn text_and_a_call_are_the_same_streamed_or_whole_in_every_chunking() {
    let script = OpenAiScript::new()
        .text("Let me ")
        .text("check.")
        .tool_call(GOOD_ID, "get_weather", &["{\"ci", "ty\": \"Par", "is\"}"])
        .finish("tool_calls", 10, 5);
    let mut body = ask("qwen", json!("Weather in Paris?"));
    body["tools"] = json!([weather()]);
    body["instructions"] = json!("Be brief.");
    for chunking in CHUNKINGS {
        let (response, events, backend) =
            both_ways("openai", "", script.reply_in(chunking), &body).await;
        assert_eq!(response["object"], "response");
        assert_eq!(response["status"], "completed");
        assert_eq!(response["model"], "qwen");
        assert_eq!(output_types(&response), ["message", "function_call"]);
        let message = &response["output"][0];
        assert_eq!(message["role"], "assistant");
        assert_eq!(
            message["content"],
            json!([{"type": "output_text", "text": "Let me check.", "annotations": []}])
        );
        let call = &response["output"][1];
        assert!(call["id"].as_str().unwrap().starts_with("fc_"), "{call}");
        assert_eq!(call["call_id"], GOOD_ID);
        assert_eq!(call["name"], "get_weather");
        assert_eq!(call["arguments"], "{\"city\": \"Paris\"}");
        assert_eq!(call["status"], "completed");
        assert_eq!(
            response["usage"],
            json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15})
        );
        assert_eq!(
            response["tools"],
            json!([weather()]),
            "the request's tools are echoed"
        );
        assert_eq!(response["tool_choice"], "auto");
        assert_eq!(response["parallel_tool_calls"], true);
        assert_eq!(response["instructions"], "Be brief.");
        // Argument fragments go out as the backend sent them.
        let fragments: Vec<&str> = events
            .iter()
            .filter(|event| event["type"] == "response.function_call_arguments.delta")
            .map(|event| event["delta"].as_str().unwrap())
            .collect();
        assert_eq!(fragments, ["{\"ci", "ty\": \"Par", "is\"}"], "{chunking:?}");
        let sent = sent(&backend, 0);
        assert_eq!(
            sent["messages"],
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}])
        );
        assert_eq!(
            sent["tools"][0],
            json!({"type": "function", "function": {"name": "get_weather",
            "description": "Current weather in a city", "parameters": weather()["parameters"]}})
        );
    }
}

#[tokio::test]
async fn reasoning_parallel_calls_and_custom_tool_calls_agree_both_ways() {
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+hello \"world\"\n*** End Patch\n";
    let arguments = json!({"input": patch}).to_string();
    let (head, tail) = arguments.split_at(20);
    let script = OpenAiScript::new()
        .delta(json!({"reasoning_content": "The user wants "}))
        .delta(json!({"reasoning_content": "a file."}))
        .tool_call("", "get_weather", &["{\"city\": \"Oslo\"}"])
        .tool_call("", "apply_patch", &[head, tail])
        .finish("tool_calls", 30, 12);
    let mut body = ask(
        "qwen",
        json!([{"role": "user", "content": [{"type": "input_text", "text": "Do both"}]}]),
    );
    body["tools"] = json!([weather(), apply_patch()]);
    for chunking in CHUNKINGS {
        let (response, events, backend) =
            both_ways("openai", "", script.reply_in(chunking), &body).await;
        assert_eq!(
            output_types(&response),
            ["reasoning", "function_call", "custom_tool_call"]
        );
        assert_eq!(
            response["output"][0]["summary"],
            json!([{"type": "summary_text", "text": "The user wants a file."}])
        );
        let custom = &response["output"][2];
        assert_eq!(custom["name"], "apply_patch");
        assert_eq!(custom["input"], patch, "{custom}");
        assert!(custom["id"].as_str().unwrap().starts_with("ctc_"));
        assert_ne!(response["output"][1]["call_id"], custom["call_id"]);
        // The custom call's input streams as text, never as JSON.
        let streamed: String = events
            .iter()
            .filter(|event| event["type"] == "response.custom_tool_call_input.delta")
            .map(|event| event["delta"].as_str().unwrap())
            .collect();
        assert_eq!(streamed, patch);
        assert!(
            events
                .iter()
                .any(|event| event["type"] == "response.reasoning_summary_text.delta")
        );
        // The model was offered the custom tool as a function with one string parameter.
        let offered = &sent(&backend, 0)["tools"][1]["function"];
        assert_eq!(offered["name"], "apply_patch");
        assert_eq!(offered["parameters"]["required"], json!(["input"]));
        assert!(
            offered["description"]
                .as_str()
                .unwrap()
                .contains("lark grammar"),
            "{offered}"
        );
    }
}

#[tokio::test]
async fn anthropic_and_ollama_routes_answer_in_the_same_shapes() {
    let mut body = ask("qwen", json!("Weather?"));
    body["tools"] = json!([weather()]);
    let anthropic = AnthropicScript::new(42)
        .text("Looking ")
        .text("now.")
        .tool_use("toolu_01A", "get_weather", &["{\"city\":", " \"Paris\"}"])
        .finish("tool_use", 7);
    let ollama = OllamaScript::new()
        .text("Looking now.")
        .tool_calls(&[("get_weather", json!({"city": "Paris"}))])
        .finish("stop", 42, 7);
    for (provider, reply) in [
        ("anthropic", anthropic.reply_in(Chunking::Bytes)),
        ("ollama", ollama.reply_in(Chunking::Bytes)),
    ] {
        let (response, _, _) = both_ways(provider, "", reply, &body).await;
        assert_eq!(
            output_types(&response),
            ["message", "function_call"],
            "{provider}"
        );
        assert_eq!(response["output"][0]["content"][0]["text"], "Looking now.");
        let arguments: Value =
            serde_json::from_str(response["output"][1]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, json!({"city": "Paris"}));
        assert_eq!(response["usage"]["total_tokens"], 49, "{provider}");
    }
}

#[tokio::test]
async fn prompted_routes_parse_calls_out_of_hermes_markup_both_ways() {
    let markup = "I'll check.\n<tool_call>\n{\"name\": \"apply_patch\", \"arguments\": {\"input\": \"*** Begin Patch\\n*** End Patch\\n\"}}\n</tool_call>";
    let script = markup
        .as_bytes()
        .chunks(7)
        .fold(OpenAiScript::new(), |script, piece| {
            script.text(std::str::from_utf8(piece).unwrap())
        })
        .finish("stop", 40, 17);
    let mut body = ask("qwen", json!("Patch it"));
    body["tools"] = json!([weather(), apply_patch()]);
    for chunking in CHUNKINGS {
        let (response, _, backend) =
            both_ways("openai", HERMES, script.reply_in(chunking), &body).await;
        assert_eq!(
            output_types(&response),
            ["message", "custom_tool_call"],
            "{response}"
        );
        assert_eq!(response["output"][0]["content"][0]["text"], "I'll check.");
        assert_eq!(
            response["output"][1]["input"],
            "*** Begin Patch\n*** End Patch\n"
        );
        let sent = sent(&backend, 0);
        assert!(
            sent.get("tools").is_none_or(|tools| tools == &json!([])),
            "{sent}"
        );
        let system = sent["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("<tool_call>") && system.contains("apply_patch"),
            "{system}"
        );
    }
}

#[tokio::test]
async fn a_length_cut_is_incomplete_both_ways() {
    let script = OpenAiScript::new().text("Once upon").finish("length", 2, 3);
    let (response, events, _) =
        both_ways("openai", "", script.reply(), &ask("qwen", json!("story"))).await;
    assert_eq!(response["status"], "incomplete");
    assert_eq!(
        response["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(events.last().unwrap()["type"], "response.incomplete");
}

#[tokio::test]
async fn a_call_output_round_trip_reaches_the_backend_as_chat_history() {
    let backend = ScriptedServer::start(vec![
        OpenAiScript::new()
            .text("It is sunny.")
            .finish("stop", 9, 4)
            .reply(),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = ask(
        "qwen",
        json!([
            {"type": "message", "id": "msg_0f6b8e2c-8a1f-4d59-b2f0-5ad3c1e4a001", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look it up."}], "encrypted_content": "opaque"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
            {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": [{"type": "input_text", "text": "sunny"}]}
        ]),
    );
    body["tools"] = json!([weather()]);
    let answer = post_to(&gateway, "/v1/responses", &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        answer.json()["output"][0]["content"][0]["text"],
        "It is sunny."
    );
    assert_eq!(
        sent(&backend, 0)["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "reasoning_content": "Look it up.", "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
        ])
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn namespaces_and_additional_tools_are_flattened_and_mapped_back() {
    let script = OpenAiScript::new()
        .tool_call(GOOD_ID, "agents__spawn", &["{\"task\": \"x\"}"])
        .tool_call("", "exec", &["{\"input\": \"await tools.ls()\"}"])
        .finish("tool_calls", 5, 5);
    let backend = ScriptedServer::start(vec![script.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = ask(
        "qwen",
        json!([
            {"type": "additional_tools", "id": "at_1", "role": "developer", "tools": [
                {"type": "namespace", "name": "functions", "description": "", "tools": [{"type": "custom", "name": "exec", "description": "Run JavaScript."}]}]},
            {"role": "user", "content": "go"}
        ]),
    );
    body["tools"] = json!([
        {"type": "namespace", "name": "agents", "description": "Sub-agents", "tools": [
            {"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {"task": {"type": "string"}}}}]},
        {"type": "web_search"}
    ]);
    let answer = post_to(&gateway, "/v1/responses", &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.headers["x-switchboard-dropped-tools"], "web_search");
    let response = answer.json();
    let spawn = &response["output"][0];
    assert_eq!(
        (
            spawn["type"].as_str(),
            spawn["name"].as_str(),
            spawn["namespace"].as_str()
        ),
        (Some("function_call"), Some("spawn"), Some("agents"))
    );
    let exec = &response["output"][1];
    assert_eq!(
        (
            exec["type"].as_str(),
            exec["name"].as_str(),
            exec["input"].as_str()
        ),
        (
            Some("custom_tool_call"),
            Some("exec"),
            Some("await tools.ls()")
        )
    );
    let sent = sent(&backend, 0);
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["agents__spawn", "exec"],
        "hosted tools are left out"
    );
    // A forced hosted tool cannot be honoured: a 400 naming it, before any backend request.
    body["tool_choice"] = json!({"type": "web_search"});
    let error = post_to(&gateway, "/v1/responses", &body).await.error(400);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("\"web_search\""),
        "{error}"
    );
    assert_eq!(backend.requests().len(), 1);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn stored_responses_continue_and_can_be_read_and_deleted() {
    let first = OpenAiScript::new()
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": \"Rome\"}"])
        .finish("tool_calls", 5, 5);
    let second = OpenAiScript::new()
        .text("Sunny in Rome.")
        .finish("stop", 9, 4);
    let backend = ScriptedServer::start(vec![
        first.reply(),
        Reply::sse(second.body(), Chunking::Bytes),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, "").await;
    let body = json!({"model": "qwen", "input": "Weather in Rome?", "tools": [weather()], "instructions": "Be brief."});
    let answer = post_to(&gateway, "/v1/responses", &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let first = answer.json();
    assert_eq!(first["store"], true, "store defaults to true");
    let id = first["id"].as_str().unwrap().to_owned();
    let call_id = first["output"][0]["call_id"].as_str().unwrap().to_owned();
    let fetched = get(&gateway, &format!("/v1/responses/{id}")).await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.json(), first);
    // The continuation answers the stored call; its instructions are its own.
    let next = json!({"model": "qwen", "previous_response_id": id, "stream": true, "tools": [weather()],
        "input": [{"type": "function_call_output", "call_id": call_id, "output": "sunny"}]});
    let answer = post_to(&gateway, "/v1/responses", &next).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let second = replay(&events(&answer.text));
    assert_eq!(second["previous_response_id"], json!(id));
    let messages = &sent(&backend, 1)["messages"];
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"], "{messages}");
    assert_eq!(messages[1]["tool_calls"][0]["id"], json!(call_id));
    // The streamed response was stored before its last event went out.
    let second_id = second["id"].as_str().unwrap();
    let items = get(&gateway, &format!("/v1/responses/{second_id}/input_items"))
        .await
        .json();
    assert_eq!(items["data"].as_array().unwrap().len(), 3, "{items}");
    let deleted = delete(&gateway, &format!("/v1/responses/{id}")).await;
    assert_eq!(
        deleted.json(),
        json!({"id": id, "object": "response", "deleted": true})
    );
    assert_eq!(
        get(&gateway, &format!("/v1/responses/{id}"))
            .await
            .error(404)["code"],
        "not_found"
    );
    let error = post_to(&gateway, "/v1/responses", &next).await.error(400);
    assert_eq!(error["code"], "previous_response_not_found");
    assert_eq!(error["param"], "previous_response_id");
    assert_eq!(backend.requests().len(), 2);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn store_false_keeps_nothing() {
    let backend = ScriptedServer::start(vec![
        OpenAiScript::new().text("hi").finish("stop", 1, 1).reply(),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, "").await;
    let answer = post_to(&gateway, "/v1/responses", &ask("qwen", json!("hi")))
        .await
        .json();
    assert_eq!(answer["store"], false);
    let id = answer["id"].as_str().unwrap();
    get(&gateway, &format!("/v1/responses/{id}"))
        .await
        .error(404);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn bad_requests_are_400s_naming_the_field_and_never_reach_the_backend() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let cases = [
        (
            ask(
                "qwen",
                json!([{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "call_x", "output": "y"}]),
            ),
            "input[1].call_id",
        ),
        (
            ask(
                "qwen",
                json!([{"type": "function_call", "name": "f", "arguments": "{}"}]),
            ),
            "input[0].call_id",
        ),
        (
            ask("qwen", json!([{"role": "robot", "content": "x"}])),
            "input[0].role",
        ),
        (
            json!({"model": "qwen", "input": "x", "temperature": 9}),
            "temperature",
        ),
        (
            json!({"model": "qwen", "input": "x", "tools": [{"type": "function", "name": "bad name!", "parameters": {"type": "object"}}]}),
            "tools[0].name",
        ),
        (
            json!({"model": "qwen", "input": "x", "tools": [{"type": "namespace", "name": "n", "tools": [{"type": "function", "name": "f", "parameters": {"type": "objekt"}}]}]}),
            "tools[0].tools[0].parameters",
        ),
        (
            json!({"model": "qwen", "input": "x", "tools": [weather()], "tool_choice": {"type": "function", "name": "nope"}}),
            "tool_choice.name",
        ),
        (
            json!({"model": "qwen", "input": "x", "text": {"format": {"type": "xml"}}}),
            "text.format.type",
        ),
        (
            json!({"model": "qwen", "input": "x", "previous_response_id": "resp_unknown"}),
            "previous_response_id",
        ),
    ];
    for (body, param) in cases {
        let error = post_to(&gateway, "/v1/responses", &body).await.error(400);
        assert!(
            error["param"].as_str().unwrap().starts_with(param),
            "{param}: {error}"
        );
        assert!(
            error["message"].as_str().unwrap().contains(param),
            "{param}: {error}"
        );
    }
    let error = post_to(&gateway, "/v1/responses", &ask("gpt-9", json!("hi")))
        .await
        .error(404);
    assert_eq!(error["code"], "model_not_found");
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn aliases_reach_routes_and_backend_errors_keep_their_meaning() {
    let limited =
        Reply::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "0");
    let cut = OpenAiScript::new()
        .text("Half an ans")
        .text("wer")
        .finish("stop", 1, 1)
        .cut_after(2);
    // A 429 is retried twice before it reaches the client.
    let backend = ScriptedServer::start(vec![limited.clone(), limited.clone(), limited, cut]).await;
    let gateway = one_route("openai", &backend.base, "aliases = [\"gpt-5*\"]").await;
    let error = post_to(&gateway, "/v1/responses", &ask("gpt-5.5", json!("hi")))
        .await
        .error(429);
    assert_eq!(error["code"], "rate_limited");
    // An error after the stream began is a response.failed event, never a silent close.
    let mut body = ask("gpt-5.5", json!("hi"));
    body["stream"] = json!(true);
    let answer = post_to(&gateway, "/v1/responses", &body).await;
    assert_eq!(answer.status, 200);
    let events = events(&answer.text);
    let failed = replay(&events);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "backend_stream_cut", "{failed}");
    assert_eq!(failed["model"], "gpt-5.5");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn call_problems_ride_on_the_response_under_the_report_policy() {
    let script = OpenAiScript::new()
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": 7}"])
        .finish("tool_calls", 5, 5);
    let mut body = ask("qwen", json!("Weather?"));
    body["tools"] = json!([weather()]);
    let (response, _, _) = both_ways("openai", "", script.reply(), &body).await;
    assert_eq!(
        response["tool_call_errors"][0]["code"], "invalid_tool_arguments",
        "{response}"
    );
    assert_eq!(
        response["output"][0]["arguments"], "{\"city\": 7}",
        "the call is passed on unchanged"
    );
}

#[tokio::test]
async fn characters_answer_through_the_responses_api() {
    let backend = ScriptedServer::start(vec![
        OpenAiScript::new()
            .text("The tale begins.")
            .finish("stop", 3, 3)
            .reply(),
    ])
    .await;
    let gateway = start("", &[route("qwen", "openai", &backend.base, "")]).await;
    let answer = post_to(
        &gateway,
        "/v1/responses",
        &ask("character/narrator", json!("Begin.")),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        answer.json()["output"][0]["content"][0]["text"],
        "The tale begins."
    );
    gateway.stop().await.unwrap();
}

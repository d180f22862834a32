//! What the renderers write, checked byte for byte against the markup the families' own
//! chat templates and encoders produce for the same two-call turn (the renders in the
//! CanIToolCall format notes), and the behaviour around it: results naming their calls,
//! arguments that are not a JSON object, the system-prompt text and its example, and the
//! corrective message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_parsers::{
    ALL_FAMILIES, Family, ToolRequirement, corrective_message, parse_whole, render_tool_calls,
    render_tool_results, tool_prompt,
};
use switchboard_tools::{Profile, ToolCall, ToolDefinition, Toolset};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

/// The turn every format note renders: two parallel calls with Unicode, embedded quotes,
/// a nested object, an array and an integer.
fn turn() -> Vec<ToolCall> {
    vec![
        call(
            "call_a",
            "get_weather",
            r#"{"city": "Zürich", "unit": "c"}"#,
        ),
        call(
            "call_b",
            "search",
            r#"{"query": "café \"best\"", "filters": {"tags": ["a", "b"], "max": 3}}"#,
        ),
    ]
}

fn expected_calls(family: Family) -> &'static str {
    match family {
        Family::Hermes => concat!(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"c\"}}\n</tool_call>\n",
            "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}}\n</tool_call>"
        ),
        Family::Qwen3Coder => concat!(
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nZürich\n</parameter>\n<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>\n",
            "<tool_call>\n<function=search>\n<parameter=query>\ncafé \"best\"\n</parameter>\n<parameter=filters>\n{\"tags\": [\"a\", \"b\"], \"max\": 3}\n</parameter>\n</function>\n</tool_call>"
        ),
        Family::Llama3Json => concat!(
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Zürich\", \"unit\": \"c\"}}; ",
            "{\"name\": \"search\", \"parameters\": {\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}}"
        ),
        Family::Pythonic => {
            "[get_weather(city=\"Zürich\", unit=\"c\"), search(query=\"café \\\"best\\\"\", filters={\"tags\": [\"a\", \"b\"], \"max\": 3})]"
        }
        Family::Mistral => concat!(
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Zürich\", \"unit\": \"c\"}",
            "[TOOL_CALLS]search[ARGS]{\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}"
        ),
        Family::DeepseekV3 => concat!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Zürich\", \"unit\": \"c\"}\n```<｜tool▁call▁end｜>\n",
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        Family::DeepseekV31 => concat!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Zürich\", \"unit\": \"c\"}<｜tool▁call▁end｜>",
            "<｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        Family::DeepseekV32 => concat!(
            "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n",
            "<｜DSML｜parameter name=\"city\" string=\"true\">Zürich</｜DSML｜parameter>\n",
            "<｜DSML｜parameter name=\"unit\" string=\"true\">c</｜DSML｜parameter>\n",
            "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"search\">\n",
            "<｜DSML｜parameter name=\"query\" string=\"true\">café \"best\"</｜DSML｜parameter>\n",
            "<｜DSML｜parameter name=\"filters\" string=\"false\">{\"tags\": [\"a\", \"b\"], \"max\": 3}</｜DSML｜parameter>\n",
            "</｜DSML｜invoke>\n</｜DSML｜function_calls>"
        ),
        Family::DeepseekV4 => concat!(
            "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n",
            "<｜DSML｜parameter name=\"city\" string=\"true\">Zürich</｜DSML｜parameter>\n",
            "<｜DSML｜parameter name=\"unit\" string=\"true\">c</｜DSML｜parameter>\n",
            "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"search\">\n",
            "<｜DSML｜parameter name=\"query\" string=\"true\">café \"best\"</｜DSML｜parameter>\n",
            "<｜DSML｜parameter name=\"filters\" string=\"false\">{\"tags\": [\"a\", \"b\"], \"max\": 3}</｜DSML｜parameter>\n",
            "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
        ),
        Family::DeepseekV41 => concat!(
            "<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"get_weather\">\n",
            "<｜DSML｜ parameter name=\"city\" string=\"true\">Zürich</｜DSML｜ parameter>\n",
            "<｜DSML｜ parameter name=\"unit\" string=\"true\">c</｜DSML｜ parameter>\n",
            "</｜DSML｜ invoke>\n<｜DSML｜ invoke name=\"search\">\n",
            "<｜DSML｜ parameter name=\"query\" string=\"true\">café \"best\"</｜DSML｜ parameter>\n",
            "<｜DSML｜ parameter name=\"filters\" string=\"false\">{\"tags\": [\"a\", \"b\"], \"max\": 3}</｜DSML｜ parameter>\n",
            "</｜DSML｜ invoke>\n</｜DSML｜ calls>"
        ),
        Family::GptOss => concat!(
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Zürich\", \"unit\": \"c\"}<|call|>",
            "<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}<|call|>"
        ),
        Family::KimiK2 => concat!(
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Zürich\", \"unit\": \"c\"}<|tool_call_end|>",
            "<|tool_call_begin|>functions.search:1<|tool_call_argument_begin|>{\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}<|tool_call_end|><|tool_calls_section_end|>"
        ),
        Family::KimiK3 => concat!(
            "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>",
            "<|open|>argument key=\"city\" type=\"string\"<|sep|>Zürich<|close|>argument<|sep|>",
            "<|open|>argument key=\"unit\" type=\"string\"<|sep|>c<|close|>argument<|sep|><|close|>call<|sep|>",
            "<|open|>call tool=\"search\" index=\"2\"<|sep|>",
            "<|open|>argument key=\"query\" type=\"string\"<|sep|>café \"best\"<|close|>argument<|sep|>",
            "<|open|>argument key=\"filters\" type=\"object\"<|sep|>{\"tags\": [\"a\", \"b\"], \"max\": 3}<|close|>argument<|sep|>",
            "<|close|>call<|sep|><|close|>tools<|sep|>"
        ),
        Family::Glm45 => concat!(
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Zürich</arg_value>\n<arg_key>unit</arg_key>\n<arg_value>c</arg_value>\n</tool_call>\n",
            "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>café \"best\"</arg_value>\n<arg_key>filters</arg_key>\n<arg_value>{\"tags\": [\"a\", \"b\"], \"max\": 3}</arg_value>\n</tool_call>"
        ),
        Family::Glm47 => concat!(
            "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Zürich</arg_value><arg_key>unit</arg_key><arg_value>c</arg_value></tool_call>",
            "<tool_call>search<arg_key>query</arg_key><arg_value>café \"best\"</arg_value><arg_key>filters</arg_key><arg_value>{\"tags\": [\"a\", \"b\"], \"max\": 3}</arg_value></tool_call>"
        ),
        Family::Gemma4 => concat!(
            "<|tool_call>call:get_weather{city:<|\"|>Zürich<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|>",
            "<|tool_call>call:search{filters:{max:3,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>]},query:<|\"|>café \"best\"<|\"|>}<tool_call|>"
        ),
        Family::Json => concat!(
            "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"c\"}}, ",
            "{\"name\": \"search\", \"arguments\": {\"query\": \"café \\\"best\\\"\", \"filters\": {\"tags\": [\"a\", \"b\"], \"max\": 3}}}]}"
        ),
    }
}

#[test]
fn calls_are_written_as_each_family_writes_them() {
    for family in ALL_FAMILIES {
        assert_eq!(
            render_tool_calls(*family, &turn()),
            expected_calls(*family),
            "{family}"
        );
    }
}

#[test]
fn no_calls_and_no_results_write_nothing() {
    for family in ALL_FAMILIES {
        assert_eq!(render_tool_calls(*family, &[]), "", "{family}");
        assert_eq!(render_tool_results(*family, &[]), "", "{family}");
    }
}

fn results() -> Vec<(ToolCall, String)> {
    let calls = turn();
    vec![
        (calls[0].clone(), r#"{"temp": 20}"#.to_owned()),
        (calls[1].clone(), "no results for café".to_owned()),
    ]
}

#[test]
fn results_use_the_family_convention_and_name_their_call() {
    let expected = [
        (
            Family::Hermes,
            "<tool_response>\n{\"name\": \"get_weather\", \"content\": {\"temp\": 20}}\n</tool_response>\n<tool_response>\n{\"name\": \"search\", \"content\": \"no results for café\"}\n</tool_response>",
        ),
        (
            Family::GptOss,
            "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"temp\": 20}<|end|><|start|>functions.search to=assistant<|channel|>commentary<|message|>no results for café<|end|>",
        ),
        (
            Family::Json,
            "{\"tool_results\": [{\"name\": \"get_weather\", \"content\": {\"temp\": 20}}, {\"name\": \"search\", \"content\": \"no results for café\"}]}",
        ),
        (
            Family::KimiK2,
            "## Return of functions.get_weather:0\n{\"temp\": 20}\n\n## Return of functions.search:1\nno results for café",
        ),
        (
            Family::Gemma4,
            "<|tool_response>response:get_weather{value:<|\"|>{\"temp\": 20}<|\"|>}<tool_response|><|tool_response>response:search{value:<|\"|>no results for café<|\"|>}<tool_response|>",
        ),
        (
            Family::DeepseekV4,
            "<tool_result>{\"name\": \"get_weather\", \"content\": {\"temp\": 20}}</tool_result>\n\n<tool_result>{\"name\": \"search\", \"content\": \"no results for café\"}</tool_result>",
        ),
    ];
    for (family, text) in expected {
        assert_eq!(render_tool_results(family, &results()), text, "{family}");
    }
    for family in ALL_FAMILIES {
        let text = render_tool_results(*family, &results());
        let weather = text.find("get_weather").expect("names the first call");
        let search = text.find("search").expect("names the second call");
        assert!(weather < search, "{family}: results keep the call order");
        assert!(
            text.contains("20") && text.contains("no results for café"),
            "{family}: {text}"
        );
    }
}

/// Families with a raw JSON region keep arguments that are not an object as given (and the
/// parser then reports them, never returns a call); the others write `{}`.
#[test]
fn arguments_that_are_not_an_object_follow_the_documented_rule() {
    let as_is = [
        Family::Mistral,
        Family::DeepseekV3,
        Family::DeepseekV31,
        Family::KimiK2,
        Family::GptOss,
        Family::KimiK3,
    ];
    let broken = [call("call_x", "get_weather", "{\"city\": \"Par")];
    for family in ALL_FAMILIES {
        let text = render_tool_calls(*family, &broken);
        let parsed = parse_whole(*family, &[], &text);
        if as_is.contains(family) {
            assert!(text.contains("{\"city\": \"Par"), "{family}: {text}");
            assert!(parsed.tool_calls.is_empty(), "{family}: {parsed:?}");
            assert!(!parsed.issues.is_empty(), "{family}: {parsed:?}");
        } else {
            assert!(!text.contains("Par"), "{family}: {text}");
            assert_eq!(parsed.tool_calls.len(), 1, "{family}: {text}");
            assert_eq!(parsed.tool_calls[0].arguments, json!({}), "{family}");
        }
    }
}

#[test]
fn empty_arguments_are_an_empty_object() {
    for family in ALL_FAMILIES {
        let text = render_tool_calls(*family, &[call("call_t", "get_time", "")]);
        let parsed = parse_whole(*family, &[], &text);
        assert_eq!(parsed.tool_calls.len(), 1, "{family}: {text}");
        assert_eq!(parsed.tool_calls[0].name, "get_time");
        assert_eq!(parsed.tool_calls[0].arguments, json!({}), "{family}");
        assert!(
            parsed.content.is_none() && parsed.issues.is_empty(),
            "{family}"
        );
    }
}

fn tools_json() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {"type": "object", "properties": {
                "unit": {"type": "string", "enum": ["c", "f"]},
                "city": {"type": "string"},
                "days": {"type": "integer"}
            }, "required": ["city", "days"]}
        }},
        {"type": "function", "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string"},
                "limit": {"type": "number"}
            }, "required": ["query"]}
        }}
    ])
}

/// The example call in a prompt: the text between the line introducing it and the rules.
fn example_in(prompt: &str) -> &str {
    let start = prompt.find(":\n\n").expect("example intro") + 3;
    let rest = &prompt[start..];
    let end = ["\n\nYou may", "\n\nCall at most"]
        .iter()
        .filter_map(|marker| rest.find(marker))
        .min()
        .expect("rules after the example");
    &rest[..end]
}

#[test]
fn the_prompt_lists_the_tools_and_shows_a_call_the_parser_reads() {
    let definitions: Vec<ToolDefinition> = serde_json::from_value(tools_json()).unwrap();
    let toolset = Toolset::from_json(&tools_json(), &Profile::api()).unwrap();
    let requirements = [
        ToolRequirement::Auto,
        ToolRequirement::Required,
        ToolRequirement::Named("search".to_owned()),
    ];
    for family in ALL_FAMILIES {
        for requirement in &requirements {
            for parallel in [true, false] {
                let prompt = tool_prompt(*family, &definitions, requirement, parallel);
                let context = format!("{family} {requirement:?} parallel={parallel}:\n{prompt}");
                for line in [
                    "{\"name\": \"get_weather\", \"description\": \"Current weather for a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"unit\": {\"type\": \"string\", \"enum\": [\"c\", \"f\"]}, \"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}, \"required\": [\"city\", \"days\"]}}",
                    "{\"name\": \"search\", \"description\": \"Search the web\", \"parameters\": {\"type\": \"object\", \"properties\": {\"query\": {\"type\": \"string\"}, \"limit\": {\"type\": \"number\"}}, \"required\": [\"query\"]}}",
                ] {
                    assert!(prompt.lines().any(|l| l == line), "{context}");
                }
                let example = parse_whole(*family, &definitions, example_in(&prompt));
                assert_eq!(example.tool_calls.len(), 1, "{context}");
                assert!(
                    example.content.is_none() && example.issues.is_empty(),
                    "{context}"
                );
                let shown = &example.tool_calls[0];
                let expected_name = match requirement {
                    ToolRequirement::Named(name) => name.as_str(),
                    _ => "get_weather",
                };
                assert_eq!(shown.name, expected_name, "{context}");
                // Placeholders are valid for the schema: required properties come first.
                toolset
                    .check_call(&shown.name, &shown.arguments.to_string())
                    .unwrap_or_else(|error| panic!("{error}\n{context}"));
                let several = prompt.contains("You may call several tools in one reply");
                assert_eq!(several, parallel, "{context}");
                assert_eq!(
                    prompt.contains("Call at most one tool per reply."),
                    !parallel,
                    "{context}"
                );
                let demand = match requirement {
                    ToolRequirement::Auto => "otherwise answer in plain text",
                    ToolRequirement::Required => "you must call at least one of these tools",
                    ToolRequirement::Named(_) => "you must call the tool search",
                };
                assert!(prompt.contains(demand), "{context}");
            }
        }
    }
}

#[test]
fn a_prompt_without_tools_is_empty() {
    for family in ALL_FAMILIES {
        assert_eq!(
            tool_prompt(*family, &[], &ToolRequirement::Required, true),
            ""
        );
    }
}

#[test]
fn the_corrective_message_names_the_tool_and_the_markup_that_opens_a_call() {
    for family in ALL_FAMILIES {
        let named = corrective_message(*family, &ToolRequirement::Named("search".to_owned()));
        assert!(
            named.contains("a call to search is required"),
            "{family}: {named}"
        );
        for requirement in [
            ToolRequirement::Required,
            ToolRequirement::Named("search".to_owned()),
        ] {
            let message = corrective_message(*family, &requirement);
            let start = message.find("(it begins with ").expect("opener") + 16;
            let opener = &message[start..start + message[start..].find("),").expect("end")];
            let markup = render_tool_calls(*family, &[call("call_s", "search", "{}")]);
            assert!(
                markup.starts_with(opener),
                "{family}: {opener:?} does not open {markup:?}"
            );
        }
    }
}

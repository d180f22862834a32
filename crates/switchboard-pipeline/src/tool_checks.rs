//! Checking the model's tool calls against the request's tools. A call is never altered:
//! problems are reported beside it (`tool_call_errors` on the choice), answered as an error
//! under the `reject` policy, or replaced by the model's corrected call under `repair`.

use serde::Serialize;
use switchboard_tools::{CallError, ToolCall, Toolset};

use crate::error::PipelineError;

/// One problem with one of the model's calls, as it appears in `choices[].tool_call_errors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCallProblem {
    pub index: usize,
    pub code: &'static str,
    pub message: String,
}

/// The problem with call number `index`, if any, counted in
/// `gateway_tool_call_errors_total`. Requests without tools have nothing to check against.
pub fn check_call(index: usize, call: &ToolCall, tools: &Toolset) -> Option<ToolCallProblem> {
    let problem = describe(index, call, tools)?;
    metrics::counter!("gateway_tool_call_errors_total", "code" => problem.code).increment(1);
    Some(problem)
}

/// The problem with a call checked before, numbered anew (not counted again).
pub fn recheck(index: usize, call: &ToolCall, tools: &Toolset) -> Option<ToolCallProblem> {
    describe(index, call, tools)
}

fn describe(index: usize, call: &ToolCall, tools: &Toolset) -> Option<ToolCallProblem> {
    if tools.is_empty() {
        return None;
    }
    let error = tools.check_call(&call.name, &call.arguments).err()?;
    let code = match error {
        CallError::UnknownTool(_) => "unknown_tool_call",
        CallError::InvalidJson(_)
        | CallError::NotAnObject(_)
        | CallError::ArgumentsTooLarge { .. } => "malformed_tool_arguments",
        CallError::MissingRequired(_)
        | CallError::InvalidParameters(_)
        | CallError::InvalidResult(_) => "invalid_tool_arguments",
    };
    let text = error.to_string();
    let message = text.strip_prefix("Error: ").unwrap_or(&text);
    Some(ToolCallProblem {
        index,
        code,
        message: format!("tool call {index} ({}): {message}", call.name),
    })
}

/// The error response the `reject` policy answers with: the first problem's code, every
/// problem's message.
pub fn rejection(problems: &[ToolCallProblem]) -> Option<PipelineError> {
    let first = problems.first()?;
    let message = problems
        .iter()
        .map(|problem| problem.message.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    Some(PipelineError::BadAnswer {
        message: format!("the model made an invalid tool call: {message}"),
        code: first.code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_tools::Profile;

    fn tools() -> Toolset {
        let list = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
        Toolset::from_json(&list, &Profile::api()).unwrap()
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "call_x".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn each_problem_gets_its_code() {
        let calls = [
            call("get_weather", r#"{"city": "Paris"}"#),
            call("get_time", "{}"),
            call("get_weather", r#"{"city": "Par"#),
            call("get_weather", r#"{"city": 7}"#),
        ];
        let tools = tools();
        let problems: Vec<ToolCallProblem> = calls
            .iter()
            .enumerate()
            .filter_map(|(index, call)| check_call(index, call, &tools))
            .collect();
        let codes: Vec<(usize, &str)> = problems
            .iter()
            .map(|problem| (problem.index, problem.code))
            .collect();
        assert_eq!(
            codes,
            [
                (1, "unknown_tool_call"),
                (2, "malformed_tool_arguments"),
                (3, "invalid_tool_arguments")
            ]
        );
        assert!(
            problems[2].message.contains("/city: expected string"),
            "{}",
            problems[2].message
        );
        assert!(matches!(
            rejection(&problems),
            Some(PipelineError::BadAnswer {
                code: "unknown_tool_call",
                ..
            })
        ));
    }

    #[test]
    fn requests_without_tools_check_nothing() {
        assert!(check_call(0, &call("anything", "not json"), &Toolset::default()).is_none());
    }
}

//! Target `tools`: tool definitions through validation under both profiles
//! (`Toolset::from_json`), then arbitrary argument text through each compiled tool's checks.
//! Validation must answer with the tools or with named problems; argument checks must
//! answer within the documented message length.
//!
//! Input: the tool list's JSON, then optionally a 0xFF byte (never part of UTF-8 text) and the
//! argument text (lossy UTF-8).

use serde_json::Value;
use switchboard_tools::{MAX_MESSAGE_CHARS, Profile, Toolset};

use crate::{Finding, repo};

const SEPARATOR: u8 = 0xFF;

/// Enough tools to reach every compiled-validator path; an `api` list can be any length.
const TOOLS_CHECKED: usize = 8;

pub(crate) fn check(data: &[u8]) -> Result<(), Finding> {
    let (list, arguments) = match data.iter().position(|&byte| byte == SEPARATOR) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(list) = serde_json::from_slice::<Value>(list) else {
        return Ok(());
    };
    let arguments = String::from_utf8_lossy(arguments);
    for profile in [Profile::character(), Profile::api()] {
        let what = |tool: &str| format!("{:?} profile, tool {tool:?}", profile.kind);
        let toolset = match Toolset::from_json(&list, &profile) {
            Ok(toolset) => toolset,
            Err(problems) if problems.0.is_empty() => {
                return Err(Finding::broken(
                    what(""),
                    "refused without naming a problem",
                ));
            }
            Err(_) => continue,
        };
        for tool in toolset.tools().iter().take(TOOLS_CHECKED) {
            match tool.check_arguments(&arguments) {
                Ok(valid) => {
                    let _ = tool.check_result(&Value::Object(valid));
                }
                Err(error) => {
                    let length = error.to_string().chars().count();
                    if length > MAX_MESSAGE_CHARS {
                        return Err(Finding::broken(
                            what(tool.name()),
                            format!("a {length}-character message for the model"),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn input(list: &[u8], arguments: &str) -> Vec<u8> {
    let mut input = list.to_vec();
    input.push(SEPARATOR);
    input.extend(arguments.as_bytes());
    input
}

/// The repository's tool lists (the example, the CLI's six-mistakes file, the parser
/// fixtures' tools), each with the arguments of every call in the parser fixtures.
pub(crate) fn seeds() -> std::io::Result<Vec<Vec<u8>>> {
    let fixtures = repo::parser_fixtures()?;
    let mut lists = vec![
        repo::read("examples/narrator-tools.json")?,
        repo::read("crates/switchboard/tests/fixtures/six-mistakes.json")?,
    ];
    if let Some(header) = fixtures.first() {
        lists.push(header["tools"].to_string().into_bytes());
    }
    let mut arguments = vec![String::new(), "{}".to_owned()];
    for case in fixtures.iter().skip(1) {
        for call in case["expected"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let text = call["arguments"].to_string();
            if !arguments.contains(&text) {
                arguments.push(text);
            }
        }
    }
    Ok(lists
        .iter()
        .flat_map(|list| arguments.iter().map(|arguments| input(list, arguments)))
        .collect())
}

//! Anthropic's tool search tools as the gateway serves them: the tool types a request
//! names, and the result block's content.

use serde_json::{Value, json};

/// What a server tool's call id starts with; a `tool_result` cannot answer one.
pub const SERVER_ID_PREFIX: &str = "srvtoolu_";

/// The beta that introduced tool search; accepted, not required.
pub const BETA: &str = "advanced-tool-use-2025-11-20";

/// How a search tool searches (as Responses' `tool_search` names it in its `mode`, which
/// the gateway accepts beside OpenAI's fields: `"regex"` or `"bm25"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    Regex,
    Bm25,
}

/// The search a tool `type` names, dated or not: `tool_search_tool_regex_20251119`,
/// `tool_search_tool_bm25`, …
pub fn search_kind(kind: &str) -> Option<SearchKind> {
    let undated = kind.strip_suffix("_20251119").unwrap_or(kind);
    match undated {
        "tool_search_tool_regex" => Some(SearchKind::Regex),
        "tool_search_tool_bm25" => Some(SearchKind::Bm25),
        _ => None,
    }
}

/// A `tool_search_tool_result` block's content: the tools found by name, or the error a
/// bad input gets (`invalid_tool_input`).
pub fn result_content(found: Result<&[String], ()>) -> Value {
    match found {
        Ok(names) => json!({
            "type": "tool_search_tool_search_result",
            "tool_references": names
                .iter()
                .map(|name| json!({"type": "tool_reference", "tool_name": name}))
                .collect::<Vec<_>>(),
        }),
        Err(()) => json!({
            "type": "tool_search_tool_result_error",
            "error_code": "invalid_tool_input",
        }),
    }
}

/// The tools a `tool_search_tool_result` block's content names; `None` for an error.
pub fn referenced(content: &Value) -> Option<Vec<String>> {
    if content.get("type")?.as_str()? != "tool_search_tool_search_result" {
        return None;
    }
    Some(
        content
            .get("tool_references")?
            .as_array()?
            .iter()
            .filter_map(|reference| reference.get("tool_name")?.as_str().map(str::to_owned))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_types_dated_or_not() {
        assert_eq!(
            search_kind("tool_search_tool_regex_20251119"),
            Some(SearchKind::Regex)
        );
        assert_eq!(search_kind("tool_search_tool_bm25"), Some(SearchKind::Bm25));
        assert_eq!(search_kind("web_search_20250305"), None);
    }

    #[test]
    fn results_read_back() {
        let names = ["a".to_owned(), "b".to_owned()];
        let content = result_content(Ok(&names));
        assert_eq!(referenced(&content).unwrap(), names);
        assert_eq!(referenced(&result_content(Err(()))), None);
    }
}

//! Tool search the gateway runs for any model: a request's deferred tools (sent with
//! `defer_loading`) are not offered to the model; it is offered a search tool instead, an
//! ordinary function it calls with a regular expression (`pattern`) or words (`query`),
//! and the tools found are offered with their full definitions from the next round on
//! (`tool_loop.rs`). The search reads each tool's name, description, and its parameters'
//! names and descriptions. A regular expression is Rust's `regex` (linear in the text,
//! case-insensitive, its compiled size bounded); words are ranked by BM25. Bad input is
//! the model's to read, never the client's error.
//!
//! Agents send the same deferred tools on every turn, so the index a search reads (each
//! tool's text and words) is kept between requests, keyed by a hash of what it was built
//! from and checked against it on every use: a kept index serves only the very same text,
//! so keeping never changes a result. The kept indexes are bounded in number and in text.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::num::NonZeroUsize;
use std::sync::{Arc, LazyLock, Mutex};

use lru::LruCache;
use regex::RegexBuilder;
use serde_json::{Value, json};
use switchboard_tools::ToolDefinition;

/// The longest pattern a regex search takes (Anthropic's bound).
pub const MAX_PATTERN_CHARS: usize = 200;

/// The most tools one search returns where neither the API nor the route says otherwise
/// (Anthropic's number).
pub const DEFAULT_MAX_RESULTS: usize = 5;

/// The compiled size a pattern may take: a pattern of 200 characters can still ask for a
/// large automaton (`a{1000}{1000}`).
const MAX_COMPILED_BYTES: usize = 1 << 20;

/// The most indexes kept between requests, least recently used first out.
pub const KEPT_INDEXES: usize = 64;

/// The searchable text all kept indexes may be built from together (an index holds about
/// ten times its text in words); a larger one is built for its request alone.
pub const KEPT_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// BM25's usual constants: term saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// How the model searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchMode {
    /// A regular expression, `{"pattern": …}`.
    Regex,
    /// Words ranked by BM25, `{"query": …}`.
    Bm25,
}

impl SearchMode {
    /// The argument the model fills in.
    pub fn field(self) -> &'static str {
        match self {
            Self::Regex => "pattern",
            Self::Bm25 => "query",
        }
    }
}

/// Why a search did not run: the model's input was unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("the input must be a JSON object with a string \"{0}\"")]
    NotAnObject(&'static str),
    #[error("\"{0}\" must not be empty")]
    Empty(&'static str),
    #[error("the pattern is longer than {MAX_PATTERN_CHARS} characters")]
    TooLong,
    #[error("the pattern is not a valid regular expression: {0}")]
    InvalidPattern(String),
}

/// The search tool of one request, over its deferred tools.
#[derive(Debug, Clone)]
pub struct ToolSearch {
    /// The name the model calls it by.
    pub name: String,
    pub mode: SearchMode,
    /// The most tools one search returns; `None`: the route's `tool_search_max_results`.
    pub max_results: Option<usize>,
    /// What the model is told of the deferred tools before it searches, after the search
    /// tool's own description (Responses shows their names and descriptions).
    pub about: Option<String>,
    deferred: Vec<ToolDefinition>,
    index: Arc<Index>,
}

/// What a search reads of the deferred tools, in their order: built from their searchable
/// text alone, so one index serves every request with the same text.
#[derive(Debug)]
struct Index {
    mode: SearchMode,
    /// Each deferred tool's searchable text.
    texts: Vec<String>,
    /// Each deferred tool's words with their counts, for BM25 (none for a regex search).
    words: Vec<HashMap<String, usize>>,
    /// Each deferred tool's number of words, for BM25.
    lengths: Vec<usize>,
}

impl Index {
    fn build(mode: SearchMode, deferred: &[ToolDefinition]) -> Self {
        let texts: Vec<String> = deferred.iter().map(searchable).collect();
        // Only BM25 reads words.
        let words: Vec<HashMap<String, usize>> = texts
            .iter()
            .filter(|_| mode == SearchMode::Bm25)
            .map(|text| {
                let mut counts = HashMap::new();
                for word in tokens(text) {
                    *counts.entry(word).or_insert(0) += 1;
                }
                counts
            })
            .collect();
        let lengths = words.iter().map(|words| words.values().sum()).collect();
        Self {
            mode,
            texts,
            words,
            lengths,
        }
    }

    /// Whether this index was built, in `mode`, from exactly these tools' text.
    fn reads(&self, mode: SearchMode, deferred: &[ToolDefinition]) -> bool {
        self.mode == mode
            && self.texts.len() == deferred.len()
            && self
                .texts
                .iter()
                .zip(deferred)
                .all(|(text, tool)| text_of(text, tool))
    }

    fn text_bytes(&self) -> usize {
        self.texts.iter().map(String::len).sum()
    }
}

/// The indexes kept between requests, with the text they were built from in all.
struct Kept {
    indexes: LruCache<u64, Arc<Index>>,
    text_bytes: usize,
}

static KEPT: LazyLock<Mutex<Kept>> = LazyLock::new(|| {
    Mutex::new(Kept {
        indexes: NonZeroUsize::new(KEPT_INDEXES).map_or_else(LruCache::unbounded, LruCache::new),
        text_bytes: 0,
    })
});

/// The index of `deferred` for a `mode` search: a kept one built from the same text, or
/// one built now (and kept, within the bounds).
fn index(mode: SearchMode, deferred: &[ToolDefinition]) -> Arc<Index> {
    let key = key(mode, deferred);
    // A poisoned lock only means a panic elsewhere mid-update; the cache is still usable.
    let lock = || {
        KEPT.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let found = lock().indexes.get(&key).cloned();
    if let Some(index) = found
        && index.reads(mode, deferred)
    {
        return index;
    }
    let index = Arc::new(Index::build(mode, deferred));
    let bytes = index.text_bytes();
    if bytes <= KEPT_TEXT_BYTES {
        let mut kept = lock();
        kept.text_bytes += bytes;
        if let Some((_, out)) = kept.indexes.push(key, Arc::clone(&index)) {
            kept.text_bytes -= out.text_bytes();
        }
        while kept.text_bytes > KEPT_TEXT_BYTES {
            match kept.indexes.pop_lru() {
                Some((_, out)) => kept.text_bytes -= out.text_bytes(),
                None => break,
            }
        }
    }
    index
}

/// The hash of what an index of `deferred` is built from: the mode and each tool's
/// searchable pieces, read in place.
fn key(mode: SearchMode, deferred: &[ToolDefinition]) -> u64 {
    let mut hasher = DefaultHasher::new();
    mode.hash(&mut hasher);
    for tool in deferred {
        for piece in pieces(tool) {
            piece.hash(&mut hasher);
        }
        // Where one tool ends and the next begins.
        hasher.write_u8(0);
    }
    hasher.finish()
}

impl ToolSearch {
    pub fn new(
        name: impl Into<String>,
        mode: SearchMode,
        max_results: Option<usize>,
        deferred: Vec<ToolDefinition>,
    ) -> Self {
        Self {
            name: name.into(),
            mode,
            max_results: max_results.map(|max| max.max(1)),
            about: None,
            index: index(mode, &deferred),
            deferred,
        }
    }

    /// Adds tools for the search to find (those of a deferred MCP server, known once the
    /// server is listed).
    pub fn defer(&mut self, more: Vec<ToolDefinition>) {
        if more.is_empty() {
            return;
        }
        self.deferred.extend(more);
        self.index = index(self.mode, &self.deferred);
    }

    /// The deferred tools, in the request's order.
    pub fn deferred(&self) -> &[ToolDefinition] {
        &self.deferred
    }

    /// A deferred tool by name.
    pub fn get(&self, name: &str) -> Option<&ToolDefinition> {
        self.deferred.iter().find(|tool| tool.name() == name)
    }

    /// The search tool as the model is offered it: an ordinary function.
    pub fn definition(&self) -> ToolDefinition {
        let (description, about) = match self.mode {
            SearchMode::Regex => (
                "Search the deferred tools with a regular expression (case-insensitive) matched against each tool's name, description and parameters. The tools found can be called from your next turn on.",
                "A regular expression of at most 200 characters, such as \"weather\" or \"get_.*_data\".",
            ),
            SearchMode::Bm25 => (
                "Search the deferred tools with words describing what you need, matched against each tool's name, description and parameters. The tools found can be called from your next turn on.",
                "Words describing the tool you need, such as \"current weather in a city\".",
            ),
        };
        let field = self.mode.field();
        let description = match &self.about {
            Some(about) => format!("{description}\n\n{about}"),
            None => description.to_owned(),
        };
        ToolDefinition::function(
            self.name.clone(),
            description,
            json!({
                "type": "object",
                "properties": {field: {"type": "string", "description": about}},
                "required": [field],
            }),
        )
    }

    /// The tools a call with `arguments` finds, best first, at most `max_results`.
    pub fn run(&self, arguments: &str) -> Result<Vec<&ToolDefinition>, SearchError> {
        let field = self.mode.field();
        let input: Value =
            serde_json::from_str(arguments).map_err(|_| SearchError::NotAnObject(field))?;
        let asked = input
            .get(field)
            .and_then(Value::as_str)
            .ok_or(SearchError::NotAnObject(field))?;
        if asked.trim().is_empty() {
            return Err(SearchError::Empty(field));
        }
        let found = match self.mode {
            SearchMode::Regex => self.by_pattern(asked)?,
            SearchMode::Bm25 => self.by_words(asked),
        };
        Ok(found
            .into_iter()
            .take(self.max_results.unwrap_or(DEFAULT_MAX_RESULTS))
            .map(|index| &self.deferred[index])
            .collect())
    }

    /// Tools whose text matches, those whose name matches first, each in the request's
    /// order.
    fn by_pattern(&self, pattern: &str) -> Result<Vec<usize>, SearchError> {
        if pattern.chars().count() > MAX_PATTERN_CHARS {
            return Err(SearchError::TooLong);
        }
        let regex = RegexBuilder::new(pattern)
            .case_insensitive(true)
            .size_limit(MAX_COMPILED_BYTES)
            .dfa_size_limit(MAX_COMPILED_BYTES)
            .build()
            .map_err(|error| SearchError::InvalidPattern(last_line(&error.to_string())))?;
        let (mut by_name, mut by_text) = (Vec::new(), Vec::new());
        for (index, text) in self.index.texts.iter().enumerate() {
            if regex.is_match(self.deferred[index].name()) {
                by_name.push(index);
            } else if regex.is_match(text) {
                by_text.push(index);
            }
        }
        by_name.extend(by_text);
        Ok(by_name)
    }

    /// Tools ranked by BM25 over the query's words; tools sharing none are left out.
    fn by_words(&self, query: &str) -> Vec<usize> {
        let Index { words, lengths, .. } = &*self.index;
        let documents = words.len() as f64;
        let average = (lengths.iter().sum::<usize>() as f64 / documents.max(1.0)).max(1.0);
        let mut query: Vec<String> = tokens(&query.to_lowercase()).collect();
        query.sort();
        query.dedup();
        // Each word's weight: rarer words count for more.
        let weights: Vec<(String, f64)> = query
            .into_iter()
            .map(|word| {
                let holding = words
                    .iter()
                    .filter(|words| words.contains_key(&word))
                    .count() as f64;
                let idf = ((documents - holding + 0.5) / (holding + 0.5) + 1.0).ln();
                (word, idf)
            })
            .collect();
        let mut scored: Vec<(usize, f64)> = Vec::new();
        for (index, words) in words.iter().enumerate() {
            let norm = K1 * (1.0 - B + B * lengths[index] as f64 / average);
            let mut score = 0.0;
            for (word, idf) in &weights {
                if let Some(&count) = words.get(word) {
                    let count = count as f64;
                    score += idf * count * (K1 + 1.0) / (count + norm);
                }
            }
            if score > 0.0 {
                scored.push((index, score));
            }
        }
        // Equal scores keep the request's order.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().map(|(index, _)| index).collect()
    }
}

/// What a search reads of a tool: its name, description, and each parameter's name and
/// description.
fn pieces(tool: &ToolDefinition) -> impl Iterator<Item = &str> {
    let properties = tool
        .function
        .parameters
        .as_ref()
        .and_then(|parameters| parameters.get("properties"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(name, schema)| {
            std::iter::once(name.as_str()).chain(schema.get("description").and_then(Value::as_str))
        });
    std::iter::once(tool.name())
        .chain(tool.function.description.as_deref())
        .chain(properties)
}

/// A tool's searchable text: its pieces, one per line.
fn searchable(tool: &ToolDefinition) -> String {
    pieces(tool).collect::<Vec<_>>().join("\n")
}

/// Whether `text` is `tool`'s searchable text, compared piece by piece in place.
fn text_of(text: &str, tool: &ToolDefinition) -> bool {
    let mut rest = text;
    for (at, piece) in pieces(tool).enumerate() {
        if at > 0 {
            let Some(after) = rest.strip_prefix('\n') else {
                return false;
            };
            rest = after;
        }
        let Some(after) = rest.strip_prefix(piece) else {
            return false;
        };
        rest = after;
    }
    rest.is_empty()
}

/// BM25's words: runs of letters and digits, lowercased, `get_weather` and `getWeather`
/// both split into `get` and `weather`.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .filter(|word| !word.is_empty())
        .map(|word| word.to_lowercase())
}

fn split_camel(word: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut previous_lower = false;
    for (at, c) in word.char_indices() {
        if c.is_uppercase() && previous_lower {
            parts.push(&word[start..at]);
            start = at;
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    parts.push(&word[start..]);
    parts
}

/// The last line of regex's error, which says what is wrong (the lines before it quote the
/// pattern).
fn last_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// What the model reads of a search: the tools found by name with their descriptions, or
/// why the search did not run.
pub fn result_text(found: &Result<Vec<&ToolDefinition>, SearchError>) -> String {
    match found {
        Ok(found) if found.is_empty() => "No deferred tools matched.".to_owned(),
        Ok(found) => {
            let mut text = "Tools found (callable from your next turn):".to_owned();
            for tool in found {
                text.push_str("\n- ");
                text.push_str(tool.name());
                if let Some(description) = &tool.function.description {
                    text.push_str(": ");
                    text.push_str(description);
                }
            }
            text
        }
        Err(error) => format!("Error: invalid_tool_input: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition::function(
            name.to_owned(),
            description.to_owned(),
            json!({"type": "object", "properties": {"city": {"type": "string", "description": "The city to look up"}}}),
        )
    }

    fn names(found: Result<Vec<&ToolDefinition>, SearchError>) -> Vec<String> {
        found
            .unwrap()
            .into_iter()
            .map(|tool| tool.name().to_owned())
            .collect()
    }

    fn tools() -> Vec<ToolDefinition> {
        vec![
            tool("send_email", "Send an email message"),
            tool("get_weather", "Current weather for a city"),
            tool("get_forecast", "Weather forecast for the coming days"),
            tool("createInvoice", "Bill a customer"),
        ]
    }

    #[test]
    fn a_pattern_matches_names_first_then_descriptions_and_parameters() {
        let search = ToolSearch::new("s", SearchMode::Regex, None, tools());
        assert_eq!(
            names(search.run(r#"{"pattern": "WEATHER"}"#)),
            ["get_weather", "get_forecast"]
        );
        assert_eq!(names(search.run(r#"{"pattern": "city to look"}"#)).len(), 4);
        assert!(names(search.run(r#"{"pattern": "^nothing$"}"#)).is_empty());
        let two = ToolSearch::new("s", SearchMode::Regex, Some(2), tools());
        assert_eq!(names(two.run(r#"{"pattern": "."}"#)).len(), 2);
    }

    #[test]
    fn bad_input_is_an_error_for_the_model() {
        let search = ToolSearch::new("s", SearchMode::Regex, None, tools());
        assert!(matches!(
            search.run(r#"{"pattern": "(unclosed"}"#),
            Err(SearchError::InvalidPattern(_))
        ));
        let long = json!({"pattern": "a".repeat(201)}).to_string();
        assert_eq!(search.run(&long), Err(SearchError::TooLong));
        let exactly = json!({"pattern": "a".repeat(200)}).to_string();
        assert!(search.run(&exactly).is_ok());
        assert_eq!(
            search.run(r#"{"pattern": ""}"#),
            Err(SearchError::Empty("pattern"))
        );
        assert_eq!(
            search.run(r#"{"query": "x"}"#),
            Err(SearchError::NotAnObject("pattern"))
        );
        assert!(search.run(r#"{"pattern": "a{1000}{1000}"}"#).is_err());
        assert_eq!(
            result_text(&search.run("{}")),
            "Error: invalid_tool_input: the input must be a JSON object with a string \"pattern\""
        );
    }

    #[test]
    fn words_are_ranked_by_bm25() {
        let search = ToolSearch::new("s", SearchMode::Bm25, None, tools());
        let found = names(search.run(r#"{"query": "weather forecast"}"#));
        assert_eq!(found, ["get_forecast", "get_weather"]);
        assert_eq!(
            names(search.run(r#"{"query": "create invoice"}"#)),
            ["createInvoice"]
        );
        assert!(names(search.run(r#"{"query": "zebra"}"#)).is_empty());
        assert_eq!(
            search.run(r#"{"query": "  "}"#),
            Err(SearchError::Empty("query"))
        );
    }

    #[test]
    fn kept_indexes_stay_within_their_bounds() {
        let kept = || {
            let kept = KEPT
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (kept.indexes.len(), kept.text_bytes)
        };
        // More lists than are kept: the least recently used go.
        for number in 0..KEPT_INDEXES + 10 {
            let list = vec![tool(&format!("tool_{number}"), "a tool of its own list")];
            ToolSearch::new("s", SearchMode::Regex, None, list);
        }
        let (indexes, bytes) = kept();
        assert!(indexes <= KEPT_INDEXES, "{indexes} kept");
        assert!(bytes <= KEPT_TEXT_BYTES, "{bytes} bytes kept");
        // A list whose text is over the bound is indexed for its request alone.
        let huge = vec![tool("huge", &"x".repeat(KEPT_TEXT_BYTES + 1))];
        let first = ToolSearch::new("s", SearchMode::Regex, None, huge.clone());
        let again = ToolSearch::new("s", SearchMode::Regex, None, huge);
        assert!(!Arc::ptr_eq(&first.index, &again.index), "never kept");
        assert!(kept().1 <= KEPT_TEXT_BYTES);
    }

    #[test]
    fn a_kept_index_serves_only_the_same_text() {
        let first = ToolSearch::new("s", SearchMode::Bm25, None, tools());
        let again = ToolSearch::new("other", SearchMode::Bm25, Some(1), tools());
        assert!(Arc::ptr_eq(&first.index, &again.index), "built once");
        let regex = ToolSearch::new("s", SearchMode::Regex, None, tools());
        assert!(!Arc::ptr_eq(&first.index, &regex.index));
        // The same names, described otherwise: an index of their own, and their results.
        let renamed: Vec<_> = tools()
            .iter()
            .map(|tool| self::tool(tool.name(), "Archive old records"))
            .collect();
        let other = ToolSearch::new("s", SearchMode::Bm25, None, renamed);
        assert!(!Arc::ptr_eq(&first.index, &other.index));
        assert_eq!(names(first.run(r#"{"query": "current"}"#)), ["get_weather"]);
        assert!(names(other.run(r#"{"query": "current"}"#)).is_empty());
        assert_eq!(names(other.run(r#"{"query": "archive"}"#)).len(), 4);
        // Text that only hashes alike is never served: the index is checked against it.
        let index = index(SearchMode::Bm25, &tools());
        assert!(index.reads(SearchMode::Bm25, &tools()));
        let mut moved = tools();
        moved.swap(0, 1);
        assert!(!index.reads(SearchMode::Bm25, &moved));
        assert!(!index.reads(SearchMode::Regex, &tools()));
        for tool in tools() {
            assert!(text_of(&searchable(&tool), &tool));
            assert!(!text_of(&format!("{}\n", searchable(&tool)), &tool));
        }
    }

    #[test]
    fn the_model_reads_names_and_descriptions() {
        let search = ToolSearch::new("s", SearchMode::Regex, None, tools());
        assert_eq!(
            result_text(&search.run(r#"{"pattern": "email"}"#)),
            "Tools found (callable from your next turn):\n- send_email: Send an email message"
        );
        assert_eq!(
            result_text(&search.run(r#"{"pattern": "zzz"}"#)),
            "No deferred tools matched."
        );
    }
}

//! Messages nested deeper than rmcp can read (serde_json refuses the 128th level): a tool
//! list with one such tool would cost the whole server its listing, so the tools that nest
//! too deep are cut out of it before rmcp parses it, and the rest are served.
//!
//! All of it is one linear pass over the bytes, without parsing the deep values: a message
//! of megabytes can nest millions of levels, and building (or dropping) a `serde_json`
//! value that deep would overflow the stack.

/// How deep a message may nest: rmcp's parser (serde_json) refuses the 128th level.
pub(crate) const MAX_NESTING: usize = 127;

/// How deep a JSON text nests, outside its strings; fed in pieces.
#[derive(Debug, Default)]
pub(crate) struct Nesting {
    depth: usize,
    pub(crate) deepest: usize,
    in_string: bool,
    escaped: bool,
}

impl Nesting {
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    /// Takes one byte in; whether it is structural (outside a string, and not a string's
    /// opening quote).
    fn step(&mut self, byte: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
            }
            return false;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                return false;
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.deepest = self.deepest.max(self.depth);
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        true
    }
}

/// A tool left out of a listing for nesting too deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dropped {
    /// Its `name`, as written (escapes kept), when its element is an object with a string
    /// `name` at its top level.
    pub name: Option<String>,
    /// Its place in the listing's `tools`, from 0.
    pub index: usize,
    /// How many levels the message nests at its deepest inside it.
    pub deepest: usize,
}

impl Dropped {
    /// The tool as a warning names it.
    pub(crate) fn label(&self) -> String {
        match &self.name {
            Some(name) => format!("\"{name}\""),
            None => format!("at index {}", self.index),
        }
    }

    /// Says in the log that `server`'s tool was left out, and why.
    pub(crate) fn warn(&self, server: &str) {
        tracing::warn!(
            server = %server,
            "left out tool {}: its definition nests {} levels deep, past the {MAX_NESTING} that can be read",
            self.label(),
            self.deepest
        );
    }
}

/// One element of `result.tools` as the scan finds it.
#[derive(Debug)]
struct Element {
    start: usize,
    /// Where the `,` or `]` after it is (the element ends before, less blanks).
    end: usize,
    deepest: usize,
    name: Option<(usize, usize)>,
}

/// Where the scan is, for the levels it follows: 1 (the message), 2 (`result`), 4 (a tool).
#[derive(Debug, Default, Clone, Copy)]
struct Level {
    object: bool,
    /// The next string at this level is a key.
    expect_key: bool,
    /// The last key read at this level.
    key: Option<(usize, usize)>,
}

/// `message` (a JSON-RPC message that nests past `max`) with the elements of its
/// `result.tools` array that nest past `max` cut out, and those tools; `None` when it is
/// not such a response, or when it still nests too deep without them (the nesting is
/// elsewhere), so the caller fails as before.
pub(crate) fn drop_deep_tools(message: &[u8], max: usize) -> Option<(Vec<u8>, Vec<Dropped>)> {
    let mut nesting = Nesting::default();
    let mut levels = [Level::default(); 5];
    let mut string_start = 0usize;
    // The `tools` array: where its `[` is, and its `]` once read.
    let mut open: Option<usize> = None;
    let mut close: Option<usize> = None;
    let mut elements: Vec<Element> = Vec::new();
    let mut current: Option<Element> = None;
    let mut awaiting_element = false;
    // How deep the message nests outside the tools' elements.
    let mut outside = 0usize;
    let key_is = |range: Option<(usize, usize)>, word: &[u8]| {
        range.is_some_and(|(start, end)| &message[start..end] == word)
    };

    for (at, &byte) in message.iter().enumerate() {
        let was_in_string = nesting.in_string;
        let depth_before = nesting.depth;
        let structural = nesting.step(byte);
        let in_tools = open.is_some() && close.is_none();
        if !was_in_string && byte == b'"' {
            string_start = at + 1;
        }
        if was_in_string && !nesting.in_string {
            // A string just ended at this level.
            let level = depth_before;
            if level < levels.len() {
                let range = (string_start, at);
                let slot = &mut levels[level];
                if slot.object && slot.expect_key {
                    slot.key = Some(range);
                } else if level == 4
                    && in_tools
                    && slot.object
                    && key_is(slot.key, b"name")
                    && let Some(element) = current.as_mut()
                {
                    element.name.get_or_insert(range);
                }
            }
        }
        if in_tools && depth_before == 3 && awaiting_element && !byte.is_ascii_whitespace() {
            awaiting_element = false;
            if byte != b']' {
                current = Some(Element {
                    start: at,
                    end: at,
                    deepest: 3,
                    name: None,
                });
            }
        }
        if !structural {
            continue;
        }
        match byte {
            b'{' | b'[' => {
                let level = nesting.depth;
                if level < levels.len() {
                    levels[level] = Level {
                        object: byte == b'{',
                        expect_key: byte == b'{',
                        key: None,
                    };
                }
                if level == 1 && byte != b'{' {
                    // A batch, or not a message: not a tool listing.
                    return None;
                }
                if level == 3
                    && byte == b'['
                    && open.is_none()
                    && levels[2].object
                    && key_is(levels[1].key, b"result")
                    && key_is(levels[2].key, b"tools")
                {
                    open = Some(at);
                    awaiting_element = true;
                } else if let (true, Some(element)) = (in_tools, current.as_mut()) {
                    element.deepest = element.deepest.max(level);
                } else {
                    outside = outside.max(level);
                }
            }
            b']' if in_tools && depth_before == 3 => {
                close = Some(at);
                if let Some(mut element) = current.take() {
                    element.end = at;
                    elements.push(element);
                }
            }
            b',' if in_tools && depth_before == 3 => {
                if let Some(mut element) = current.take() {
                    element.end = at;
                    elements.push(element);
                }
                awaiting_element = true;
            }
            b',' if depth_before < levels.len() && levels[depth_before].object => {
                levels[depth_before].expect_key = true;
            }
            b':' if depth_before < levels.len() => levels[depth_before].expect_key = false,
            _ => {}
        }
    }
    let (open, close) = (open?, close?);
    if outside > max || elements.iter().all(|element| element.deepest <= max) {
        return None;
    }
    let mut kept = Vec::with_capacity(message.len());
    kept.extend_from_slice(&message[..=open]);
    let mut dropped = Vec::new();
    let mut first = true;
    for (index, element) in elements.iter().enumerate() {
        if element.deepest > max {
            dropped.push(Dropped {
                name: element.name.map(|(start, end)| {
                    String::from_utf8_lossy(&message[start..end.min(start + 200)]).into_owned()
                }),
                index,
                deepest: element.deepest,
            });
            continue;
        }
        if !first {
            kept.push(b',');
        }
        first = false;
        kept.extend_from_slice(message[element.start..element.end].trim_ascii_end());
    }
    kept.extend_from_slice(&message[close..]);
    Some((kept, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    fn listing(tools: &[String]) -> String {
        format!(
            r#"{{"jsonrpc": "2.0", "id": 3, "result": {{"tools": [{}], "nextCursor": "x"}}}}"#,
            tools.join(", ")
        )
    }

    fn tool(name: &str, schema: &str) -> String {
        format!(r#"{{"name": "{name}", "inputSchema": {{"type": "object", "x": {schema}}}}}"#)
    }

    fn cut(message: &str) -> Option<(serde_json::Value, Vec<Dropped>)> {
        let (kept, dropped) = drop_deep_tools(message.as_bytes(), MAX_NESTING)?;
        Some((
            serde_json::from_slice(&kept).expect("what is kept parses"),
            dropped,
        ))
    }

    fn names(value: &serde_json::Value) -> Vec<&str> {
        value["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap_or("?"))
            .collect()
    }

    #[test]
    fn the_deep_tool_is_cut_first_middle_or_last() {
        let plain = |name: &str| tool(name, "[1, {\"a\": \"]}[{\"}]");
        let too_deep = |name: &str| tool(name, &deep(200));
        for (tools, left) in [
            (vec![too_deep("d"), plain("a"), plain("b")], vec!["a", "b"]),
            (vec![plain("a"), too_deep("d"), plain("b")], vec!["a", "b"]),
            (vec![plain("a"), plain("b"), too_deep("d")], vec!["a", "b"]),
            (vec![too_deep("d")], vec![]),
        ] {
            let (value, dropped) = cut(&listing(&tools)).unwrap();
            assert_eq!(names(&value), left);
            assert_eq!(value["result"]["nextCursor"], "x");
            assert_eq!(dropped.len(), 1);
            assert_eq!(dropped[0].name.as_deref(), Some("d"));
            assert_eq!(dropped[0].deepest, 205);
        }
    }

    #[test]
    fn strings_with_brackets_quotes_and_escapes_do_not_confuse_it() {
        let tricky = r#"{"name": "a\"]},[{", "description": "\\", "inputSchema": {"k\"": "[[["}}"#;
        let named_late = format!(r#"{{"inputSchema": {}, "name": "late"}}"#, deep(150));
        let nameless = format!(r#"{{"title": {{"name": "inner"}}, "x": {}}}"#, deep(150));
        let message = listing(&[tricky.to_owned(), named_late, nameless, "7".to_owned()]);
        let (value, dropped) = cut(&message).unwrap();
        assert_eq!(names(&value), vec!["a\"]},[{", "?"]);
        let labels: Vec<String> = dropped.iter().map(Dropped::label).collect();
        assert_eq!(labels, vec!["\"late\"", "at index 2"]);
    }

    #[test]
    fn other_deep_messages_are_left_to_fail() {
        // Deep outside the tools.
        let elsewhere = format!(
            r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"tools": [{}], "_meta": {}}}}}"#,
            tool("d", &deep(200)),
            deep(200)
        );
        assert!(cut(&elsewhere).is_none());
        // Not a listing: a call's result, a request, a batch, an empty list.
        let call = format!(
            r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"content": {}}}}}"#,
            deep(200)
        );
        assert!(cut(&call).is_none());
        let nested_tools = format!(
            r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"a": {{"tools": [{}]}}}}}}"#,
            deep(200)
        );
        assert!(cut(&nested_tools).is_none());
        let params = format!(
            r#"{{"jsonrpc": "2.0", "method": "m", "params": {{"tools": [{}]}}}}"#,
            deep(200)
        );
        assert!(cut(&params).is_none());
        assert!(cut(&format!("[{}]", listing(&[tool("d", &deep(200))]))).is_none());
        assert!(cut(&listing(&[])).is_none());
        assert!(cut(r#"{"result": {"tools": [ ]}}"#).is_none());
        // Within the bound: nothing to cut.
        assert!(cut(&listing(&[tool("a", &deep(100))])).is_none());
    }

    #[test]
    fn blanks_and_an_emptied_list_stay_json() {
        let message = format!(
            "{{ \"result\" : {{ \"tools\" : [ \n {} \n , \n {} \n ] }} , \"id\": 1 }}",
            tool("d", &deep(300)),
            tool("e", &deep(300))
        );
        let (value, dropped) = cut(&message).unwrap();
        assert!(names(&value).is_empty());
        assert_eq!(dropped.len(), 2);
        assert_eq!(dropped[1].index, 1);
    }

    #[test]
    fn a_million_levels_cost_no_stack() {
        let message = listing(&[tool("a", "{}"), tool("d", &deep(1_000_000)), tool("b", "1")]);
        let (value, dropped) = cut(&message).unwrap();
        assert_eq!(names(&value), vec!["a", "b"]);
        assert_eq!(dropped[0].deepest, 1_000_005);
        // An unclosed one is not a listing that can be read.
        let unclosed = format!(
            r#"{{"result": {{"tools": [{{"name": "d", "x": {}"#,
            "[".repeat(1_000_000)
        );
        assert!(drop_deep_tools(unclosed.as_bytes(), MAX_NESTING).is_none());
    }
}

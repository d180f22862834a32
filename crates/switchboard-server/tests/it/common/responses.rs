//! Reading the Responses API's answers in tests: its SSE events, the stream's protocol
//! replayed into the response it built, and responses made comparable across two answers.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::is_call_id;
use super::messages::parse_events;

/// SSE events as JSON, checking the framing: an `event:` line naming the data's type (the
/// same framing as the Messages API's).
pub fn events(text: &str) -> Vec<Value> {
    parse_events(text)
        .into_iter()
        .map(|(_, data)| data)
        .collect()
}

/// Checks the stream's protocol and returns the response its terminal event carries,
/// after checking that its output is exactly what the item events built.
pub fn replay(events: &[Value]) -> Value {
    let types: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        &types[..2],
        ["response.created", "response.in_progress"],
        "{types:?}"
    );
    for (number, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], number, "{event}");
    }
    let terminal = [
        "response.completed",
        "response.incomplete",
        "response.failed",
    ];
    let ends: Vec<usize> = (0..types.len())
        .filter(|&at| terminal.contains(&types[at]))
        .collect();
    assert_eq!(
        ends,
        [types.len() - 1],
        "exactly one terminal event, last: {types:?}"
    );
    let id = &events[0]["response"]["id"];
    assert!(id.as_str().unwrap().starts_with("resp_"));
    let mut added: BTreeMap<u64, Value> = BTreeMap::new();
    let mut done: BTreeMap<u64, Value> = BTreeMap::new();
    let mut texts: BTreeMap<(u64, &str), String> = BTreeMap::new();
    for event in events {
        let index = event["output_index"].as_u64();
        match event["type"].as_str().unwrap() {
            "response.output_item.added" => {
                assert!(
                    added
                        .insert(index.unwrap(), event["item"].clone())
                        .is_none(),
                    "{event}"
                );
            }
            "response.output_item.done" => {
                let index = index.unwrap();
                let first = &added[&index];
                assert_eq!(
                    (&first["type"], &first["id"]),
                    (&event["item"]["type"], &event["item"]["id"])
                );
                assert!(
                    done.insert(index, event["item"].clone()).is_none(),
                    "{event}"
                );
            }
            kind if kind.ends_with(".delta") => {
                let delta = event["delta"].as_str().unwrap();
                assert!(
                    !done.contains_key(&index.unwrap()),
                    "a delta after its item is done"
                );
                texts
                    .entry((index.unwrap(), kind.trim_end_matches(".delta")))
                    .or_default()
                    .push_str(delta);
            }
            kind if kind.ends_with(".done")
                && kind != "response.content_part.done"
                && kind != "response.reasoning_summary_part.done" =>
            {
                let whole = ["text", "arguments", "input"]
                    .iter()
                    .find_map(|field| event[field].as_str())
                    .unwrap();
                let streamed = texts
                    .get(&(index.unwrap(), kind.trim_end_matches(".done")))
                    .cloned()
                    .unwrap_or_default();
                assert_eq!(streamed, whole, "deltas add up: {event}");
            }
            _ => {}
        }
    }
    let last = events.last().unwrap();
    let response = last["response"].clone();
    assert_eq!(&response["id"], id);
    // A failed response ends where the error struck, items still open.
    if types.last() != Some(&"response.failed") {
        assert_eq!(
            added.keys().collect::<Vec<_>>(),
            done.keys().collect::<Vec<_>>(),
            "every item added is done"
        );
        assert_eq!(
            response["output"],
            Value::Array(done.into_values().collect()),
            "the output is the items done"
        );
    }
    response
}

/// A response with what two independent answers cannot share (ids, times) blanked.
pub fn comparable(mut response: Value) -> Value {
    response["id"] = json!("resp");
    response["created_at"] = json!(0);
    for item in response["output"].as_array_mut().unwrap() {
        item["id"] = json!("item");
        if let Some(call_id) = item["call_id"].as_str() {
            assert!(is_call_id(call_id), "{item}");
            item["call_id"] = json!("call");
        }
    }
    response
}

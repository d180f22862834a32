//! The request's tools, compiled once per distinct list. Clients send the same tools with
//! every request of a conversation and compiling their schemas is the dearest step of a
//! request (a tenth of the gateway's CPU in the latency benchmark), so lists that compiled
//! are kept, keyed by their shape and JSON text. Every front-end compiles through here.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use serde_json::Value;
use switchboard_tools::{Problems, Profile, Toolset};

/// Distinct tool lists kept compiled; past this many the set starts afresh.
const COMPILED_TOOLS_KEPT: usize = 256;

/// A list of tools in OpenAI's function shape, compiled under the `api` profile. Lists with
/// problems are not kept: they are rare and their report is rebuilt.
pub fn compile_tools(list: &Value) -> Result<Toolset, Problems> {
    compile_converted("openai", list, || list.clone())
}

/// A list of tools in another API's shape (`shape` names it), kept by its own JSON text:
/// `convert` (to OpenAI's function shape) runs only when the list is not kept already.
pub fn compile_converted(
    shape: &'static str,
    original: &Value,
    convert: impl FnOnce() -> Value,
) -> Result<Toolset, Problems> {
    type Kept = HashMap<(&'static str, String), Toolset>;
    static COMPILED: LazyLock<Mutex<Kept>> = LazyLock::new(Default::default);
    // The same text means different tools in different shapes.
    let key = (shape, original.to_string());
    if let Some(toolset) = COMPILED
        .lock()
        .ok()
        .and_then(|kept| kept.get(&key).cloned())
    {
        return Ok(toolset);
    }
    let toolset = Toolset::from_json(&convert(), &Profile::api())?;
    if let Ok(mut kept) = COMPILED.lock() {
        if kept.len() >= COMPILED_TOOLS_KEPT {
            kept.clear();
        }
        kept.insert(key, toolset.clone());
    }
    Ok(toolset)
}

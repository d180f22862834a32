//! The request's tools, compiled once per distinct list. Clients send the same tools with
//! every request of a conversation and compiling their schemas is the dearest step of a
//! request (a tenth of the gateway's CPU in the latency benchmark), so lists that compiled
//! are kept, keyed by their shape and JSON text. Every front-end compiles through here.
//!
//! Two bounds keep this from being turned against the gateway. The kept lists are bounded
//! by the memory they hold, not by their number (one list near the body limit holds about
//! 100 MB compiled), least recently used first out. And a large list compiles off the
//! request-serving threads, one at a time, so it delays neither `/healthz` nor other
//! requests, and a flood of them costs one compile's memory at a time.

use std::sync::{LazyLock, Mutex};

use lru::LruCache;
use serde::Serialize;
use serde_json::Value;
use switchboard_tools::{Problems, Profile, Toolset};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Memory a compiled list holds per byte of its JSON text, rounded up from measurements
/// (RSS growth over source size: 17× for deeply nested schemas, 25× for 10,000 small
/// tools, 44× for 2,000 tools of 20 patterned properties).
const BYTES_PER_SOURCE_BYTE: usize = 48;

/// Estimated memory all kept lists may hold together.
const KEPT_BYTES: usize = 128 * 1024 * 1024;

/// A list estimated above this is compiled for its request and not kept: one huge list must
/// not push out every conversation's tools.
const MAX_KEPT_LIST_BYTES: usize = KEPT_BYTES / 4;

/// Lists up to this size (JSON text) compile in place: handing them off costs more than
/// compiling them.
const INLINE_COMPILE_BYTES: usize = 64 * 1024;

struct ToolListCache {
    lists: LruCache<String, Toolset>,
    /// Estimated bytes held by `lists`.
    held: usize,
}

static KEPT: LazyLock<Mutex<ToolListCache>> = LazyLock::new(|| {
    Mutex::new(ToolListCache {
        lists: LruCache::unbounded(),
        held: 0,
    })
});

/// Held while a large list compiles: large compiles run one at a time.
static LARGE_COMPILE: Mutex<()> = Mutex::new(());

/// A list of tools in OpenAI's function shape, compiled under the `api` profile. Lists with
/// problems are not kept: they are rare and their report is rebuilt.
pub fn compile_tools(list: &Value) -> Result<Toolset, Problems> {
    compile_converted("openai", list, || list.clone())
}

/// A list of tools in another API's shape (`shape` names it), kept by its own JSON text:
/// `convert` (to OpenAI's function shape) runs only when the list is not kept already.
pub fn compile_converted(
    shape: &'static str,
    original: &(impl Serialize + ?Sized),
    convert: impl FnOnce() -> Value,
) -> Result<Toolset, Problems> {
    // The same text means different tools in different shapes.
    let Ok(text) = serde_json::to_string(original) else {
        // Nothing to keep it by (JSON values and our own types always serialise): compiled
        // for this request only.
        return Toolset::from_json(&convert(), &Profile::api());
    };
    let key = format!("{shape}\n{text}");
    if let Some(toolset) = kept(&key) {
        return Ok(toolset);
    }
    let source_bytes = key.len();
    compile_off_serving_threads(source_bytes, || {
        // The same list may have been compiled while this one waited.
        if let Some(toolset) = kept(&key) {
            return Ok(toolset);
        }
        compile_and_keep(&convert(), key)
    })
}

/// Runs `compile`, of tools whose JSON text takes `source_bytes`: in place when small,
/// otherwise off the request-serving threads and one large compile at a time.
pub(crate) fn compile_off_serving_threads<T>(
    source_bytes: usize,
    compile: impl FnOnce() -> T,
) -> T {
    if source_bytes <= INLINE_COMPILE_BYTES {
        return compile();
    }
    let compile = || {
        // A poisoned lock only means another compile panicked; the slot is still usable.
        let _slot = LARGE_COMPILE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let compiling = metrics::gauge!("gateway_tool_lists_compiling");
        compiling.increment(1.0);
        let compiled = compile();
        compiling.decrement(1.0);
        compiled
    };
    match Handle::try_current().map(|runtime| runtime.runtime_flavor()) {
        // The worker hands its other tasks to a fresh thread for the length of the compile.
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(compile),
        _ => compile(),
    }
}

/// Sets the cache's gauges to what it holds now: called once the metrics recorder is
/// installed, so the series exist from the start instead of appearing with the first list.
pub fn report_kept() {
    if let Ok(kept) = KEPT.lock() {
        metrics::gauge!("gateway_tool_lists_kept_bytes").set(kept.held as f64);
    }
    metrics::gauge!("gateway_tool_lists_compiling").increment(0.0);
}

fn kept(key: &str) -> Option<Toolset> {
    KEPT.lock()
        .ok()
        .and_then(|mut kept| kept.lists.get(key).cloned())
}

fn compile_and_keep(list: &Value, key: String) -> Result<Toolset, Problems> {
    let toolset = Toolset::from_json(list, &Profile::api())?;
    let cost = cost(&key);
    if cost <= MAX_KEPT_LIST_BYTES
        && let Ok(mut kept) = KEPT.lock()
    {
        kept.held += cost;
        if let Some((replaced, _)) = kept.lists.push(key, toolset.clone()) {
            kept.held -= self::cost(&replaced);
        }
        while kept.held > KEPT_BYTES {
            match kept.lists.pop_lru() {
                Some((dropped, _)) => kept.held -= self::cost(&dropped),
                None => break,
            }
        }
        metrics::gauge!("gateway_tool_lists_kept_bytes").set(kept.held as f64);
    }
    Ok(toolset)
}

/// The estimated memory of a kept list with this JSON text.
fn cost(key: &str) -> usize {
    key.len().saturating_mul(BYTES_PER_SOURCE_BYTE)
}

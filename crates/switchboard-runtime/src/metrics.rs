//! Per-turn metrics, recorded through the `metrics` facade like the characters' metrics.

use crate::summary::TurnSummary;

pub(crate) fn record_turn(summary: &TurnSummary, ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    metrics::counter!("conversation_turns_total", "outcome" => outcome).increment(1);
    if let Some(first) = summary.time_to_first_token {
        metrics::histogram!("conversation_time_to_first_token_seconds").record(first.as_secs_f64());
    }
    metrics::histogram!("conversation_tool_rounds").record(summary.tool_rounds as f64);
    metrics::counter!("conversation_tool_calls_total").increment(summary.tool_calls as u64);
    metrics::counter!("conversation_tokens_total", "direction" => "in")
        .increment(summary.usage.prompt_tokens);
    metrics::counter!("conversation_tokens_total", "direction" => "out")
        .increment(summary.usage.completion_tokens);
}

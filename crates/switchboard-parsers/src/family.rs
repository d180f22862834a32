//! The model families Switchboard can parse, under the names vLLM and SGLang use, and the
//! table that picks a family from a model name so users need not know family names.

use std::fmt;

/// A tool-call markup family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `<tool_call>{"name":…,"arguments":…}</tool_call>` with `<think>` (Qwen 2.5/3, Hermes).
    Hermes,
    /// `<tool_call><function=NAME><parameter=K>v</parameter></function></tool_call>` (Qwen3-Coder, Qwen3.5+).
    Qwen3Coder,
    /// A bare `{"name":…,"parameters":…}` object, optionally after `<|python_tag|>` (Llama 3.x).
    Llama3Json,
    /// `[f(a=1), g(b="x")]` with Python literals (Llama 3.2/4 and others).
    Pythonic,
    /// `[TOOL_CALLS][{…}]` (v3/v7) and `[TOOL_CALLS]name[CALL_ID]id[ARGS]{…}` (v11+).
    Mistral,
    /// `<｜tool▁calls▁begin｜>…function<｜tool▁sep｜>name` + fenced JSON (DeepSeek V3, R1).
    DeepseekV3,
    /// `<｜tool▁call▁begin｜>name<｜tool▁sep｜>{…}` (DeepSeek V3.1).
    DeepseekV31,
    /// DSML `<｜DSML｜function_calls>` (DeepSeek V3.2).
    DeepseekV32,
    /// DSML `<｜DSML｜tool_calls>` (DeepSeek V4).
    DeepseekV4,
    /// DSML `<｜DSML｜ calls>` with spaced tag names (DeepSeek V4.1).
    DeepseekV41,
    /// Harmony channels and `to=functions.NAME` (gpt-oss).
    GptOss,
    /// `<|tool_calls_section_begin|>…functions.NAME:IDX<|tool_call_argument_begin|>{…}` (Kimi K2.x).
    KimiK2,
    /// XTML `<|open|>call tool="…"<|sep|>…` (Kimi K3).
    KimiK3,
    /// `<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>…` (GLM-4.5/4.6).
    Glm45,
    /// The same without newlines (GLM-4.7, GLM-5.x).
    Glm47,
    /// `<|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>` (Gemma 4).
    Gemma4,
    /// `{"tool_calls":[{"name":…,"arguments":…}]}`, bare or in a ```json block, for prompting
    /// models that have no native format.
    Json,
}

/// Every family, in the order documentation lists them.
pub const ALL_FAMILIES: &[Family] = &[
    Family::Hermes,
    Family::Qwen3Coder,
    Family::Llama3Json,
    Family::Pythonic,
    Family::Mistral,
    Family::DeepseekV3,
    Family::DeepseekV31,
    Family::DeepseekV32,
    Family::DeepseekV4,
    Family::DeepseekV41,
    Family::GptOss,
    Family::KimiK2,
    Family::KimiK3,
    Family::Glm45,
    Family::Glm47,
    Family::Gemma4,
    Family::Json,
];

impl Family {
    /// The canonical (vLLM) name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Hermes => "hermes",
            Family::Qwen3Coder => "qwen3_coder",
            Family::Llama3Json => "llama3_json",
            Family::Pythonic => "pythonic",
            Family::Mistral => "mistral",
            Family::DeepseekV3 => "deepseek_v3",
            Family::DeepseekV31 => "deepseek_v31",
            Family::DeepseekV32 => "deepseek_v32",
            Family::DeepseekV4 => "deepseek_v4",
            Family::DeepseekV41 => "deepseek_v41",
            Family::GptOss => "gpt_oss",
            Family::KimiK2 => "kimi_k2",
            Family::KimiK3 => "kimi_k3",
            Family::Glm45 => "glm45",
            Family::Glm47 => "glm47",
            Family::Gemma4 => "gemma4",
            Family::Json => "json",
        }
    }

    /// Accepts vLLM and SGLang parser names (`-` and `_` alike, any case).
    pub fn from_name(name: &str) -> Option<Family> {
        let name = name.trim().to_ascii_lowercase().replace('-', "_");
        let family = match name.as_str() {
            "hermes" | "qwen" | "qwen25" | "qwen3" => Family::Hermes,
            "qwen3_coder" | "qwen3_xml" | "qwen3coder" | "qwen35" | "qwen3.5" => Family::Qwen3Coder,
            "llama3_json" | "llama4_json" | "llama3" | "llama32" | "llama" => Family::Llama3Json,
            "pythonic" | "llama4_pythonic" => Family::Pythonic,
            "mistral" => Family::Mistral,
            "deepseek_v3" | "deepseekv3" | "deepseek_r1" => Family::DeepseekV3,
            "deepseek_v31" | "deepseekv31" => Family::DeepseekV31,
            "deepseek_v32" | "deepseekv32" => Family::DeepseekV32,
            "deepseek_v4" | "deepseekv4" => Family::DeepseekV4,
            "deepseek_v41" | "deepseekv41" => Family::DeepseekV41,
            "gpt_oss" | "openai" | "harmony" | "gptoss" => Family::GptOss,
            "kimi_k2" | "kimik2" => Family::KimiK2,
            "kimi_k3" | "kimik3" => Family::KimiK3,
            "glm45" | "glm" | "glm4_moe" | "glm4" => Family::Glm45,
            "glm47" | "glm47_moe" | "glm5" => Family::Glm47,
            "gemma4" => Family::Gemma4,
            "json" => Family::Json,
            _ => return None,
        };
        Some(family)
    }

    /// The markers that open and close a reasoning block, for deciding whether a generation
    /// prompt leaves the model inside one.
    fn reasoning_markers(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Family::Mistral => (&["[THINK]", "<think>"], &["[/THINK]", "</think>"]),
            Family::Gemma4 => (&["<|channel>thought"], &["<channel|>"]),
            Family::KimiK3 => (
                &["<|open|>think<|sep|>"],
                &["<|close|>think<|sep|>", "<|open|>response<|sep|>"],
            ),
            Family::GptOss | Family::Llama3Json | Family::Pythonic | Family::Json => (&[], &[]),
            _ => (&["<think>"], &["</think>"]),
        }
    }

    /// Whether the generation prompt (what the chat template appends before the model
    /// writes) leaves the model inside a reasoning block, as Qwen3-Thinking, Qwen3.5+,
    /// GLM-4.7 and Kimi K2.5+ prompts do: the output then starts with reasoning and holds only
    /// the closing marker.
    pub fn prompt_opens_reasoning(self, generation_prompt: &str) -> bool {
        let (opens, closes) = self.reasoning_markers();
        let last = |markers: &[&str]| {
            markers
                .iter()
                .filter_map(|marker| generation_prompt.rfind(marker))
                .max()
        };
        match (last(opens), last(closes)) {
            (Some(open), Some(close)) => open > close,
            (Some(_), None) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Lower-cased name fragments and their family; the longest fragment found in a model name
/// wins, so `qwen3-coder` beats `qwen3` and `deepseek-v3.1` beats `deepseek-v3`.
const MODEL_PATTERNS: &[(&str, Family)] = &[
    ("qwen2.5", Family::Hermes),
    ("qwen2", Family::Hermes),
    ("qwq", Family::Hermes),
    ("qwen3", Family::Hermes),
    ("hermes", Family::Hermes),
    ("qwen3-coder", Family::Qwen3Coder),
    ("qwen3.5", Family::Qwen3Coder),
    ("qwen3.6", Family::Qwen3Coder),
    ("qwen3.8", Family::Qwen3Coder),
    ("llama-3", Family::Llama3Json),
    ("llama3", Family::Llama3Json),
    ("llama-4", Family::Pythonic),
    ("llama4", Family::Pythonic),
    ("gemma-3", Family::Pythonic),
    ("gemma3", Family::Pythonic),
    ("mistral", Family::Mistral),
    ("mixtral", Family::Mistral),
    ("magistral", Family::Mistral),
    ("devstral", Family::Mistral),
    ("ministral", Family::Mistral),
    ("codestral", Family::Mistral),
    ("pixtral", Family::Mistral),
    ("deepseek", Family::Json),
    ("deepseek-v3", Family::DeepseekV3),
    ("deepseek-r1", Family::DeepseekV3),
    ("deepseek-r1-distill-qwen", Family::Hermes),
    ("deepseek-r1-distill-llama", Family::Llama3Json),
    ("deepseek-v3.1", Family::DeepseekV31),
    ("deepseek-v3.2", Family::DeepseekV32),
    ("deepseek-v4", Family::DeepseekV4),
    ("deepseek-v4.1", Family::DeepseekV41),
    ("gpt-oss", Family::GptOss),
    ("kimi-k2", Family::KimiK2),
    ("kimi-k3", Family::KimiK3),
    ("glm-4.5", Family::Glm45),
    ("glm-4.6", Family::Glm45),
    ("glm-4.7", Family::Glm47),
    ("glm-5", Family::Glm47),
    ("gemma-4", Family::Gemma4),
    ("phi-", Family::Json),
    ("deepseek-coder", Family::Json),
];

/// Picks the family from a model name such as `Qwen/Qwen2.5-7B-Instruct` or
/// `gpt-oss-120b`; `None` when no pattern matches.
pub fn family_for_model(model: &str) -> Option<Family> {
    let model = model.to_ascii_lowercase().replace('_', "-");
    MODEL_PATTERNS
        .iter()
        .filter(|(pattern, _)| model.contains(pattern))
        .max_by_key(|(pattern, _)| pattern.len())
        .map(|(_, family)| *family)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_pattern_wins() {
        assert_eq!(
            family_for_model("Qwen/Qwen2.5-7B-Instruct"),
            Some(Family::Hermes)
        );
        assert_eq!(family_for_model("Qwen/Qwen3-8B"), Some(Family::Hermes));
        assert_eq!(family_for_model("qwen3-coder"), Some(Family::Qwen3Coder));
        assert_eq!(
            family_for_model("Qwen/Qwen3.5-9B"),
            Some(Family::Qwen3Coder)
        );
        assert_eq!(family_for_model("gpt-oss-120b"), Some(Family::GptOss));
        assert_eq!(
            family_for_model("deepseek-coder-33b-instruct"),
            Some(Family::Json)
        );
        assert_eq!(
            family_for_model("deepseek-ai/DeepSeek-V3.1"),
            Some(Family::DeepseekV31)
        );
        assert_eq!(
            family_for_model("deepseek-ai/DeepSeek-V4.1-Flash"),
            Some(Family::DeepseekV41)
        );
        assert_eq!(
            family_for_model("meta-llama/Llama-4-Scout-17B-16E-Instruct"),
            Some(Family::Pythonic)
        );
        assert_eq!(family_for_model("zai-org/GLM-5.3"), Some(Family::Glm47));
        assert_eq!(family_for_model("unknown-model"), None);
    }

    #[test]
    fn names_round_trip_and_aliases_resolve() {
        for family in ALL_FAMILIES {
            assert_eq!(Family::from_name(family.name()), Some(*family));
        }
        assert_eq!(Family::from_name("qwen3_xml"), Some(Family::Qwen3Coder));
        assert_eq!(Family::from_name("gpt-oss"), Some(Family::GptOss));
        assert_eq!(Family::from_name("deepseekv31"), Some(Family::DeepseekV31));
        assert_eq!(Family::from_name("nope"), None);
    }

    #[test]
    fn prompts_that_leave_reasoning_open_are_recognised() {
        assert!(Family::Hermes.prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
        assert!(
            !Family::Hermes
                .prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        );
        assert!(!Family::DeepseekV31.prompt_opens_reasoning("<｜Assistant｜></think>"));
        assert!(Family::KimiK3.prompt_opens_reasoning(
            "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>"
        ));
        assert!(
            !Family::Gemma4.prompt_opens_reasoning("<|turn>model\n<|channel>thought\n<channel|>")
        );
    }
}

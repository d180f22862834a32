//! `switchboard parse`: reads raw model output and prints the content, reasoning and tool
//! calls a family's parser finds in it, so users can check a model's output (or a server's
//! missing tool parser) without running the gateway. `--chunk` and `--events` show what a
//! streaming client would receive; the final line is the same whatever the chunking.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};
use switchboard_parsers::{
    Family, ParseEvent, ParseOptions, collect, family_for_model, parser_with,
};
use switchboard_tools::ToolDefinition;

use super::input::{read_json, read_text};

/// Parse tool calls out of raw model output.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("family").required(true).args(["format", "model"])))]
pub struct Args {
    /// Markup family, by its vLLM/SGLang name (hermes, qwen3_coder, llama3_json, pythonic,
    /// mistral, deepseek_v3, deepseek_v31, deepseek_v32, deepseek_v4, deepseek_v41, gpt_oss,
    /// kimi_k2, kimi_k3, glm45, glm47, gemma4, json).
    #[arg(long)]
    format: Option<String>,
    /// Pick the family from a model name instead (e.g. Qwen/Qwen3-8B, gpt-oss-120b).
    #[arg(long)]
    model: Option<String>,
    /// JSON array of the tool definitions offered: names are checked against it and
    /// XML-style values are typed by its schemas.
    #[arg(long)]
    tools: Option<PathBuf>,
    /// Feed the input N characters at a time, as a stream would.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    chunk: Option<u64>,
    /// Also print every parser event as one JSON line, as soon as it is produced.
    #[arg(long)]
    events: bool,
    /// The generation prompt the output followed, when it opened a reasoning block
    /// (e.g. "<|im_start|>assistant\n<think>\n"): the output then starts as reasoning.
    #[arg(long)]
    generation_prompt: Option<String>,
    /// File holding the raw output (`-` for standard input).
    #[arg(default_value = "-")]
    file: PathBuf,
}

fn family(args: &Args) -> anyhow::Result<Family> {
    if let Some(name) = &args.format {
        let names: Vec<&str> = switchboard_parsers::ALL_FAMILIES
            .iter()
            .map(|family| family.name())
            .collect();
        return Family::from_name(name).with_context(|| {
            format!(
                "unknown format {name:?}; known formats: {}",
                names.join(", ")
            )
        });
    }
    let model = args.model.as_deref().unwrap_or_default();
    family_for_model(model)
        .with_context(|| format!("no tool-call format is known for model {model:?}; pass --format"))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let family = family(&args)?;
    let tools: Vec<ToolDefinition> = match &args.tools {
        Some(path) => serde_json::from_value(read_json(path)?).with_context(|| {
            format!("{} is not a JSON array of tool definitions", path.display())
        })?,
        None => Vec::new(),
    };
    let text = read_text(&args.file)?;
    let options = ParseOptions::for_prompt(family, args.generation_prompt.as_deref().unwrap_or(""));
    let mut parser = parser_with(family, &tools, options);
    let mut stdout = std::io::stdout().lock();
    let mut all = Vec::new();
    let mut report =
        |events: Vec<ParseEvent>, stdout: &mut std::io::StdoutLock<'_>| -> anyhow::Result<()> {
            if args.events {
                for event in &events {
                    writeln!(stdout, "{}", serde_json::to_string(event)?)?;
                }
                stdout.flush()?;
            }
            all.extend(events);
            Ok(())
        };
    match args.chunk {
        None => report(parser.feed(&text), &mut stdout)?,
        Some(size) => {
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            let mut chunk = String::new();
            for (count, ch) in text.chars().enumerate() {
                chunk.push(ch);
                if (count + 1) % size == 0 {
                    report(parser.feed(&chunk), &mut stdout)?;
                    chunk.clear();
                }
            }
            if !chunk.is_empty() {
                report(parser.feed(&chunk), &mut stdout)?;
            }
        }
    }
    report(parser.finish(), &mut stdout)?;
    let parsed = collect(all);
    for issue in &parsed.issues {
        eprintln!(
            "warning: {} (not returned as a call): {}",
            issue.reason, issue.text
        );
    }
    for call in parsed.tool_calls.iter().filter(|call| !call.known) {
        eprintln!(
            "warning: call to {}, which is not among the tools offered",
            call.name
        );
    }
    let calls: Vec<Value> = parsed
        .tool_calls
        .iter()
        .map(|call| json!({"name": call.name, "arguments": call.arguments}))
        .collect();
    let line = json!({"content": parsed.content, "reasoning_content": parsed.reasoning_content, "tool_calls": calls});
    writeln!(stdout, "{line}")?;
    Ok(ExitCode::SUCCESS)
}

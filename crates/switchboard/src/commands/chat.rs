//! `switchboard chat`: talk to a character in the terminal, through the pipeline the
//! gateway runs for a `character/<name>` model: a route of one replica made from the flags
//! (its `max_tool_rounds`, retries, call checks) under the gateway's bounds of an answer
//! (`request_timeout_secs`, `max_answer_bytes`, `character_max_tokens`: the configuration
//! file's, else their defaults), so a character behaves as it does behind the gateway. The
//! command keeps only the conversation's history and what it shows: the reply streams as
//! it comes; each tool call shows on standard error with its arguments, result and latency;
//! the tool's own output appears as it happens. With standard input piped, each line is
//! one message and the output is plain.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use switchboard_characters::{Character, CharacterRegistry};
use switchboard_pipeline::ids::CallIdShape;
use switchboard_pipeline::{
    GatewayEvent, GatewayRequest, Output, Pipeline, PipelineError, Target, ToolFilter,
};
use switchboard_runtime::{History, ToolEvent};
use switchboard_server::Config;
use switchboard_tools::{Content, Message, ToolCall, Toolset};
use switchboard_upstream::{ClientHooks, Route, RouteTable};
use switchboard_wire::{ChatRequest, FinishReason, StreamEvent};
use tokio::io::AsyncBufReadExt;

use super::backend::BackendArgs;
use super::check::{CharactersDir, pick_character, runtime};
use super::telemetry::init_character_logs;
use super::tool_servers::{ConfigFile, start_declared};

/// Chat with a character in the terminal.
///
/// Exit status: 0 when the chat ends (end of input, /quit) after at least one reply, or
/// without any message sent; 1 when messages were sent and every one of them failed (no
/// reply came back: the backend or the conversation reported an error; a reply stopped with
/// Ctrl-C counts neither way); 2 when the chat cannot start (unknown character, no backend).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The character: its CHARACTER_NAME or file stem (case-insensitive).
    character: String,
    #[command(flatten)]
    backend: BackendArgs,
    /// Tool rounds per message before the model must answer in words: the route's
    /// `max_tool_rounds` (default: the gateway's, 10).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=100))]
    max_tool_rounds: Option<u16>,
    #[command(flatten)]
    config: ConfigFile,
}

const HELP: &str =
    "commands: /reset (new conversation), /history, /prompt, /quit; Ctrl-C stops a reply";

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    init_character_logs();
    let registry = Arc::new(CharacterRegistry::load(
        characters.path(),
        args.config.load_options()?,
    ));
    let character = pick_character(&registry.current(), characters.path(), &args.character)?;
    let mut route = args.backend.route()?;
    if let Some(rounds) = args.max_tool_rounds {
        route.max_tool_rounds = usize::from(rounds);
    }
    let settings = args
        .config
        .load()?
        .unwrap_or_else(|| Config::from_environment(|_| None))
        .pipeline_settings();
    let env = |name: &str| std::env::var(name).ok();
    let built = Route::from_config(
        &route,
        settings.request_timeout,
        &env,
        &ClientHooks::default(),
    )
    .map_err(anyhow::Error::msg)
    .with_context(|| format!("cannot set up the {} client", route.provider))?;
    let built = Arc::new(built);
    let routes = RouteTable::new(std::slice::from_ref(&route), None, vec![Arc::clone(&built)])
        .map_err(anyhow::Error::msg)?;
    let interactive = std::io::stdin().is_terminal();
    let style = Style {
        colour: interactive && std::io::stderr().is_terminal(),
    };

    runtime()?.block_on(async move {
        let tool_servers = start_declared(&args.config, &character).await?;
        let mut chat = Chat {
            pipeline: Pipeline {
                routes,
                character_route: Some(built),
                characters: registry,
                tool_servers,
                settings,
                hard_stop: Default::default(),
            },
            character,
            history: History::default(),
            prompt: None,
        };
        if interactive {
            eprintln!(
                "{}",
                style.dim(&format!(
                    "chatting with {} through {}; {HELP}",
                    chat.character.name(),
                    route.model
                ))
            );
        }
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let (mut replies, mut failures) = (0_usize, 0_usize);
        loop {
            if interactive {
                eprint!("you> ");
            }
            let line = tokio::select! {
                line = lines.next_line() => line?,
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("\n{}", style.dim("(type /quit or press Ctrl-D to leave)"));
                    continue;
                }
            };
            let Some(line) = line else { break };
            let line = line.trim();
            match line {
                "" => continue,
                "/quit" | "/exit" => break,
                "/reset" => {
                    chat.history = History::default();
                    chat.prompt = None;
                    eprintln!("{}", style.dim("new conversation"));
                    continue;
                }
                "/history" => {
                    print_history(chat.history.messages());
                    continue;
                }
                "/prompt" => {
                    println!("{}", chat.prompt().await?);
                    continue;
                }
                "/help" => {
                    eprintln!("{HELP}");
                    continue;
                }
                _ => {}
            }
            tokio::select! {
                outcome = chat.send(line, style) => {
                    println!();
                    match outcome {
                        Ok(()) => replies += 1,
                        Err(error) => {
                            failures += 1;
                            eprintln!("{}", style.error(&format!("error: {}", describe(&error))));
                        }
                    }
                }
                _ = tokio::signal::ctrl_c() => {
                    println!();
                    eprintln!("{}", style.dim("(reply stopped)"));
                }
            }
        }
        // A script piping lines into a chat must be able to tell that nothing came back.
        anyhow::Ok(if failures > 0 && replies == 0 {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        })
    })
}

/// The conversation with one character: the pipeline that answers, and what the terminal
/// keeps of it.
#[derive(Debug)]
struct Chat {
    pipeline: Pipeline,
    character: Arc<Character>,
    /// The turns so far, each whole with its calls and their results, as the next turn
    /// sends them back; bounded as the gateway bounds a character's conversation.
    history: History,
    /// The system prompt the character built for the last turn.
    prompt: Option<String>,
}

impl Chat {
    /// Sends one message and shows the reply as it comes. The turn joins the history only
    /// once it is complete: a failed or stopped one is left out whole.
    async fn send(&mut self, line: &str, style: Style) -> Result<(), PipelineError> {
        let mut messages = self.history.messages().to_vec();
        messages.push(Message::user(line));
        let target = Target::Character(Arc::clone(&self.character));
        let started = self.pipeline.start(GatewayRequest {
            request: ChatRequest::new(target.label(), messages),
            target,
            tools: Toolset::default(),
            call_ids: CallIdShape::Backend,
            gateway: None,
            tool_filter: ToolFilter::all(),
        })?;
        let mut outputs = started.outputs;
        let mut turn = Transcript::new(line);
        while let Some(output) = outputs.recv().await {
            let output = output?;
            style.show(&output);
            if let Output::Gateway(GatewayEvent::SystemPrompt { content }) = &output {
                self.prompt = Some(content.clone());
            }
            turn.take(output);
        }
        for message in turn.into_messages() {
            self.history.push(message);
        }
        self.history.trim();
        Ok(())
    }

    /// The system prompt of the last turn; before the first, the one the character builds
    /// now.
    async fn prompt(&self) -> anyhow::Result<String> {
        if let Some(prompt) = &self.prompt {
            return Ok(prompt.clone());
        }
        let session = self.character.start_conversation().await?;
        Ok(session.system_prompt().to_owned())
    }
}

/// An error as the chat shows it.
fn describe(error: &PipelineError) -> String {
    match error {
        PipelineError::Backend(error) => format!("the model's backend failed: {error}"),
        error => error.to_string(),
    }
}

/// One turn as the history keeps it, rebuilt from what the pipeline reports: the user's
/// message, then each answer of the model with the calls it made, each followed by their
/// results.
#[derive(Debug)]
struct Transcript {
    messages: Vec<Message>,
    answer: Answer,
    /// The results of the answer's calls, in the order they came.
    results: Vec<Message>,
    /// The answer's calls still running.
    running: usize,
}

/// What the model said in one answer.
#[derive(Debug, Default)]
struct Answer {
    text: String,
    reasoning: String,
    /// Kept with the reasoning so an Anthropic backend accepts the next turn.
    signature: Option<String>,
    calls: Vec<ToolCall>,
}

impl Transcript {
    fn new(line: &str) -> Self {
        Self {
            messages: vec![Message::user(line)],
            answer: Answer::default(),
            results: Vec::new(),
            running: 0,
        }
    }

    fn take(&mut self, output: Output) {
        match output {
            Output::Event(StreamEvent::TextDelta(text)) => {
                self.next_answer();
                self.answer.text.push_str(&text);
            }
            Output::Event(StreamEvent::ReasoningDelta(text)) => {
                self.next_answer();
                self.answer.reasoning.push_str(&text);
            }
            Output::Event(StreamEvent::ReasoningSignature(signature)) => {
                self.answer.signature = Some(signature);
            }
            Output::Gateway(GatewayEvent::Tool {
                event:
                    ToolEvent::ToolStarted {
                        id,
                        name,
                        arguments,
                    },
                ..
            }) => {
                self.next_answer();
                self.answer.calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                });
                self.running += 1;
            }
            Output::Gateway(GatewayEvent::Tool {
                event: ToolEvent::ToolFinished { id, content, .. },
                ..
            }) => {
                self.results.push(Message::tool(id, content));
                self.running = self.running.saturating_sub(1);
            }
            _ => {}
        }
    }

    /// Closes the answer once every call it made has its result: the pipeline asks the
    /// model again only then, so what comes next is the next answer. (A call that returns
    /// before the same answer's next call is complete splits that answer in two, each
    /// still followed by its results.)
    fn next_answer(&mut self) {
        if !self.answer.calls.is_empty() && self.running == 0 {
            self.close();
        }
    }

    fn close(&mut self) {
        let Answer {
            text,
            reasoning,
            signature,
            calls,
        } = std::mem::take(&mut self.answer);
        if text.is_empty() && reasoning.is_empty() && calls.is_empty() {
            return;
        }
        self.messages.push(Message::Assistant {
            content: (!text.is_empty()).then(|| text.into()),
            reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
            reasoning_signature: signature,
            tool_calls: calls,
            name: None,
        });
        self.messages.append(&mut self.results);
    }

    fn into_messages(mut self) -> Vec<Message> {
        self.close();
        self.messages
    }
}

/// Terminal styling: dim tool lines and red errors on a terminal, plain text elsewhere.
#[derive(Debug, Clone, Copy)]
struct Style {
    colour: bool,
}

impl Style {
    fn dim(&self, text: &str) -> String {
        if self.colour {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn error(&self, text: &str) -> String {
        if self.colour {
            format!("\x1b[31m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn show(&self, output: &Output) {
        match output {
            Output::Event(StreamEvent::TextDelta(text)) => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            Output::Event(StreamEvent::Finish(FinishReason::Length)) => {
                eprintln!("\n{}", self.dim("(the reply reached its token limit)"));
            }
            Output::Event(StreamEvent::Finish(FinishReason::ToolLimit)) => {
                eprintln!("\n{}", self.dim("(the reply stopped at its tool limit)"));
            }
            Output::Gateway(GatewayEvent::Tool {
                event:
                    ToolEvent::ToolStarted {
                        name, arguments, ..
                    },
                ..
            }) => {
                eprintln!("{}", self.dim(&format!("[tool] {name} {arguments}")));
            }
            Output::Gateway(GatewayEvent::Tool {
                event:
                    ToolEvent::ToolFinished {
                        name,
                        content,
                        is_error,
                        duration_ms,
                        ..
                    },
                ..
            }) => {
                let outcome = if *is_error { "failed" } else { "returned" };
                let line = format!("[tool] {name} {outcome} in {duration_ms:.1} ms: {content}");
                eprintln!(
                    "{}",
                    if *is_error {
                        self.error(&line)
                    } else {
                        self.dim(&line)
                    }
                );
            }
            _ => {}
        }
    }
}

fn print_history(messages: &[Message]) {
    for message in messages {
        let text = |content: &Content| content.text();
        match message {
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if let Some(content) = content {
                    println!("assistant: {}", text(content));
                }
                for call in tool_calls {
                    println!(
                        "assistant -> {}({}) [{}]",
                        call.name, call.arguments, call.id
                    );
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => println!("tool [{tool_call_id}]: {}", text(content)),
            Message::System { content, .. }
            | Message::Developer { content, .. }
            | Message::User { content, .. } => {
                println!("{}: {}", message.role(), text(content));
            }
        }
    }
}

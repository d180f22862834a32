//! `switchboard chat`: talk to a character in the terminal. The reply streams as it comes;
//! each tool call shows on standard error with its arguments, result and latency; the
//! tool's own output appears as it happens. With standard input piped, each line is one
//! message and the output is plain.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use switchboard_runtime::{Conversation, ConversationOptions, ToolEvent, ToolExecutor, TurnEvent};
use switchboard_server::{CharacterToolbox, ToolFilter};
use switchboard_tools::{Content, Message};
use tokio::io::AsyncBufReadExt;

use super::backend::BackendArgs;
use super::check::{CharactersDir, find_character, runtime};
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
    /// Tool rounds per message before the model must answer in words.
    #[arg(long, default_value_t = 4)]
    max_tool_rounds: usize,
    #[command(flatten)]
    config: ConfigFile,
}

const HELP: &str =
    "commands: /reset (new conversation), /history, /prompt, /quit; Ctrl-C stops a reply";

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    init_character_logs();
    let character = find_character(
        characters.path(),
        &args.character,
        &args.config.load_options()?,
    )?;
    let (backend, model) = args.backend.connect()?;
    let interactive = std::io::stdin().is_terminal();
    let style = Style {
        colour: interactive && std::io::stderr().is_terminal(),
    };
    let options = ConversationOptions {
        max_tool_rounds: args.max_tool_rounds,
        ..ConversationOptions::default()
    };

    runtime()?.block_on(async move {
        let servers = start_declared(&args.config, &character).await?;
        let start = || async {
            let session = character.start_conversation().await?;
            let prompt = session.system_prompt().to_owned();
            let tools: Arc<dyn ToolExecutor> =
                Arc::new(CharacterToolbox::new(session, &servers, &ToolFilter::all()));
            anyhow::Ok(Conversation::new(
                Some(prompt),
                tools,
                Arc::clone(&backend),
                model.clone(),
                options.clone(),
            ))
        };
        let mut conversation = start().await?;
        if interactive {
            eprintln!(
                "{}",
                style.dim(&format!(
                    "chatting with {} through {model}; {HELP}",
                    character.name()
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
                    conversation = start().await?;
                    eprintln!("{}", style.dim("new conversation"));
                    continue;
                }
                "/history" => {
                    print_history(conversation.history().messages());
                    continue;
                }
                "/prompt" => {
                    println!("{}", conversation.system_prompt().unwrap_or_default());
                    continue;
                }
                "/help" => {
                    eprintln!("{HELP}");
                    continue;
                }
                _ => {}
            }
            let mut show = |event: TurnEvent| style.show(event);
            tokio::select! {
                outcome = conversation.send(line, &mut show) => {
                    println!();
                    match outcome {
                        Ok(_) => replies += 1,
                        Err(error) => {
                            failures += 1;
                            eprintln!("{}", style.error(&format!("error: {error}")));
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

    fn show(&self, event: TurnEvent) {
        match event {
            TurnEvent::Text(text) => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            TurnEvent::Tool(ToolEvent::ToolStarted {
                name, arguments, ..
            }) => {
                eprintln!("{}", self.dim(&format!("[tool] {name} {arguments}")));
            }
            TurnEvent::Tool(ToolEvent::ToolFinished {
                name,
                content,
                is_error,
                duration_ms,
                ..
            }) => {
                let outcome = if is_error { "failed" } else { "returned" };
                let line = format!("[tool] {name} {outcome} in {duration_ms:.1} ms: {content}");
                eprintln!(
                    "{}",
                    if is_error {
                        self.error(&line)
                    } else {
                        self.dim(&line)
                    }
                );
            }
            TurnEvent::Reasoning(_) | TurnEvent::Round { .. } => {}
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

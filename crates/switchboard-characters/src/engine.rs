//! The thread that owns one character's JavaScript runtime. Character code runs here and
//! nowhere else, so it never blocks the async runtime's workers and a slow character only
//! ever delays itself. Conversations talk to it through jobs and one-shot replies.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rquickjs::promise::PromiseState;
use rquickjs::{Constructor, Ctx, Function, Module, Object, Persistent, Promise, Value};
use tokio::sync::oneshot;

use crate::exception::{Failure, location, type_name};
use crate::inspect::{Declaration, declared_name, inspect};
use crate::options::LoadOptions;
use crate::rejection::{Location, Problem, kind};
use crate::sandbox::{JS_STACK_BYTES, Sandbox};

/// Native stack of an engine thread: QuickJS's own limit plus room for the Rust around it.
const THREAD_STACK_BYTES: usize = JS_STACK_BYTES + 1024 * 1024;

/// Work for an engine thread.
pub(crate) enum Job {
    /// Construct a `PromptGenerator` for a new conversation and make its system prompt.
    Start {
        session: u64,
        scope: LogScope,
        reply: oneshot::Sender<Result<String, String>>,
    },
    /// Run `handleToolCall` with arguments already validated (JSON text).
    Call {
        session: u64,
        tool: String,
        arguments: String,
        scope: LogScope,
        reply: oneshot::Sender<CallOutcome>,
    },
    /// Forget a conversation's instance.
    End { session: u64 },
}

/// How a call ended inside the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    Returned(String),
    NotAString(&'static str),
    Failed(Failure),
    /// A returned promise that can never settle: nothing is left to run and it is pending.
    NeverSettled,
}

/// What loading a file produced: the name it declares (even when rejected, so duplicates
/// are found) and the declaration or every problem.
pub(crate) struct LoadReport {
    pub name: Option<String>,
    pub result: Result<Declaration, Vec<Problem>>,
}

/// Where the requester's logs go. Character code runs on its own thread; carrying the
/// requester's subscriber and span there puts console output beside the conversation's logs.
#[derive(Debug)]
pub(crate) struct LogScope {
    dispatch: tracing::Dispatch,
    span: tracing::Span,
}

impl LogScope {
    pub fn current() -> Self {
        Self {
            dispatch: tracing::dispatcher::get_default(Clone::clone),
            span: tracing::Span::current(),
        }
    }

    fn run<R>(&self, work: impl FnOnce() -> R) -> R {
        tracing::dispatcher::with_default(&self.dispatch, || self.span.in_scope(work))
    }
}

/// The sending side of an engine; dropping the last one ends the thread.
#[derive(Debug)]
pub(crate) struct EngineHandle {
    jobs: mpsc::Sender<Job>,
}

impl EngineHandle {
    /// Sends a job; `false` when the engine thread is gone.
    pub fn send(&self, job: Job) -> bool {
        self.jobs.send(job).is_ok()
    }
}

/// Starts the thread for `file` (a `*.js` directly in `root`, which is canonical) and
/// returns at once; the load report arrives on the receiver.
pub(crate) fn spawn(
    root: &Path,
    file: &Path,
    options: &LoadOptions,
) -> (EngineHandle, mpsc::Receiver<LoadReport>) {
    let (jobs_tx, jobs_rx) = mpsc::channel();
    let (report_tx, report_rx) = mpsc::sync_channel(1);
    let root = root.to_path_buf();
    let file_name = file
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let options = options.clone();
    let scope = LogScope::current();
    let thread_name = format!("character-{file_name}");
    let spawned = thread::Builder::new()
        .name(thread_name)
        .stack_size(THREAD_STACK_BYTES)
        .spawn({
            let report_tx = report_tx.clone();
            move || run(root, file_name, options, scope, report_tx, jobs_rx)
        });
    if let Err(error) = spawned {
        let problem = Problem::new(
            kind::UNREADABLE,
            format!("cannot start a thread for the character: {error}"),
        );
        let _ = report_tx.send(LoadReport {
            name: None,
            result: Err(vec![problem]),
        });
    }
    (EngineHandle { jobs: jobs_tx }, report_rx)
}

fn run(
    root: PathBuf,
    file_name: String,
    options: LoadOptions,
    scope: LogScope,
    report: mpsc::SyncSender<LoadReport>,
    jobs: mpsc::Receiver<Job>,
) {
    let loaded = scope.run(|| Engine::load(&root, &file_name, &options));
    let mut engine = match loaded {
        Ok((engine, declaration)) => {
            let name = Some(declaration.name.clone());
            if report
                .send(LoadReport {
                    name,
                    result: Ok(declaration),
                })
                .is_err()
            {
                return;
            }
            engine
        }
        Err((name, problems)) => {
            let _ = report.send(LoadReport {
                name,
                result: Err(problems),
            });
            return;
        }
    };
    for job in jobs {
        engine.handle(job);
    }
}

/// A loaded character: its runtime, its class, and one instance per conversation.
struct Engine {
    sessions: HashMap<u64, Persistent<Object<'static>>>,
    class: Persistent<Constructor<'static>>,
    instructions: Persistent<Value<'static>>,
    timeout: Duration,
    name: String,
    // Declared last: the persistent values above must be released before the runtime.
    sandbox: Sandbox,
}

type LoadFailure = (Option<String>, Vec<Problem>);

impl Engine {
    fn load(
        root: &Path,
        file_name: &str,
        options: &LoadOptions,
    ) -> Result<(Self, Declaration), LoadFailure> {
        let source = std::fs::read_to_string(root.join(file_name)).map_err(|error| {
            (
                None,
                vec![Problem::new(
                    kind::UNREADABLE,
                    format!("cannot read the file: {error}"),
                )],
            )
        })?;
        let sandbox =
            Sandbox::new(root, options.memory_limit, file_name.to_owned()).map_err(|error| {
                (
                    None,
                    vec![Problem::new(
                        kind::MODULE_ERROR,
                        format!("cannot create the JavaScript runtime: {error}"),
                    )],
                )
            })?;
        sandbox.clock.start(options.load_timeout);
        let loaded = sandbox.context.with(|ctx| {
            let namespace = evaluate(&ctx, &sandbox, file_name, source, options.load_timeout)?;
            let name = declared_name(&namespace);
            let inspected = inspect(
                &ctx,
                &namespace,
                file_name,
                options.default_timeout,
                options.mcp_servers.as_deref(),
                &sandbox.clock,
            )
            .map_err(|problems| (name, problems))?;
            Ok((
                inspected.declaration,
                Persistent::save(&ctx, inspected.class),
                Persistent::save(&ctx, inspected.instructions),
            ))
        });
        sandbox.clock.stop();
        let (declaration, class, instructions) = loaded?;
        sandbox.label.replace(declaration.name.clone());
        let engine = Engine {
            sessions: HashMap::new(),
            class,
            instructions,
            timeout: declaration.timeout,
            name: declaration.name.clone(),
            sandbox,
        };
        Ok((engine, declaration))
    }

    /// Jobs whose requester is gone (its client left, its deadline passed) are dropped
    /// unrun: one slow call must not be followed by the calls of every client that gave up
    /// waiting behind it. A call already running when its requester leaves runs on to its
    /// end or its deadline; its result is discarded.
    fn handle(&mut self, job: Job) {
        match job {
            Job::Start {
                session,
                scope,
                reply,
            } => {
                if reply.is_closed() {
                    return;
                }
                let started = scope.run(|| self.start(session));
                if reply.send(started).is_err() {
                    // Nobody will hold the session that would end this instance.
                    self.sessions.remove(&session);
                }
            }
            Job::Call {
                session,
                tool,
                arguments,
                scope,
                reply,
            } => {
                if reply.is_closed() {
                    return;
                }
                let outcome = scope.run(|| self.call(session, &tool, &arguments));
                let _ = reply.send(outcome);
            }
            Job::End { session } => {
                self.sessions.remove(&session);
            }
        }
    }

    /// `new PromptGenerator(INSTRUCTIONS)` and its `makeSystemPrompt()`, under the deadline.
    fn start(&mut self, session: u64) -> Result<String, String> {
        let clock = &self.sandbox.clock;
        let timeout = self.timeout;
        clock.start(timeout);
        let started = self.sandbox.context.with(|ctx| {
            let class = self
                .class
                .clone()
                .restore(&ctx)
                .map_err(|error| error.to_string())?;
            let instructions = self
                .instructions
                .clone()
                .restore(&ctx)
                .map_err(|error| error.to_string())?;
            let instance: Object = class.construct((instructions,)).map_err(|error| {
                describe(
                    "new PromptGenerator(INSTRUCTIONS)",
                    Failure::caught(&ctx, error, clock),
                    timeout,
                )
            })?;
            let prompt = match run_method(&ctx, &instance, "makeSystemPrompt", (), clock) {
                CallOutcome::Returned(prompt) => prompt,
                CallOutcome::NotAString(found) => {
                    return Err(format!(
                        "makeSystemPrompt() must return a string, got {found}"
                    ));
                }
                CallOutcome::Failed(failure) => {
                    return Err(describe("makeSystemPrompt()", failure, timeout));
                }
                CallOutcome::NeverSettled => {
                    return Err(
                        "makeSystemPrompt() returned a promise that never settles".to_owned()
                    );
                }
            };
            self.sessions
                .insert(session, Persistent::save(&ctx, instance));
            Ok(prompt)
        });
        self.finish_run(started.is_err());
        started
    }

    /// `instance.handleToolCall(tool, arguments)`, under the deadline.
    fn call(&mut self, session: u64, tool: &str, arguments: &str) -> CallOutcome {
        let Some(instance) = self.sessions.get(&session).cloned() else {
            // Sessions end only when dropped, after their last call; kept as an error, not a panic.
            return CallOutcome::Failed(Failure::Threw {
                name: "InternalError".to_owned(),
                message: "the conversation has ended".to_owned(),
                stack: String::new(),
            });
        };
        let clock = &self.sandbox.clock;
        clock.start(self.timeout);
        let outcome = self.sandbox.context.with(|ctx| {
            let parsed = instance
                .restore(&ctx)
                .and_then(|instance| Ok((instance, ctx.json_parse(arguments)?)));
            match parsed {
                Ok((instance, arguments)) => {
                    run_method(&ctx, &instance, "handleToolCall", (tool, arguments), clock)
                }
                Err(error) => CallOutcome::Failed(Failure::caught(&ctx, error, clock)),
            }
        });
        if let CallOutcome::Failed(failure @ Failure::Threw { stack, .. }) = &outcome {
            tracing::warn!(
                target: "character",
                character = %self.name,
                tool,
                "{}: tool {tool} threw {}\n{stack}",
                self.name,
                failure.summary()
            );
        }
        self.finish_run(matches!(
            outcome,
            CallOutcome::Failed(Failure::TimedOut | Failure::OutOfMemory)
        ));
        outcome
    }

    /// After any run: work the code queued (promise callbacks) may not outlive the run's
    /// deadline, and memory a failed run left behind is reclaimed at once.
    fn finish_run(&self, failed: bool) {
        let clock = &self.sandbox.clock;
        self.sandbox.context.with(|ctx| {
            while !clock.expired() && ctx.execute_pending_job() {}
            if ctx.execute_pending_job() {
                // Past the deadline: QuickJS offers no way to drop queued jobs, so they run
                // with the interrupt raised (a loop stops at QuickJS's next check, every few
                // thousand operations) and console output refused.
                clock.expire();
                for _ in 0..MAX_DISCARDED_JOBS {
                    if !ctx.execute_pending_job() {
                        break;
                    }
                }
            }
            if failed || clock.fired() {
                ctx.run_gc();
            }
        });
        clock.stop();
    }
}

/// Why starting a conversation failed, for the developer (never for the model).
fn describe(what: &str, failure: Failure, timeout: Duration) -> String {
    match failure {
        Failure::TimedOut => format!("{what} timed out (exceeded {}ms)", timeout.as_millis()),
        Failure::OutOfMemory => format!("{what} ran out of memory"),
        Failure::Threw {
            name,
            message,
            stack,
        } => format!("{what} threw {name} - {message}\n{stack}")
            .trim_end()
            .to_owned(),
    }
}

/// Jobs run (each stopped at once) to empty the queue after a timed-out call; a character
/// that queues more than this forever is cut off here rather than hanging its thread.
const MAX_DISCARDED_JOBS: usize = 10_000;

/// Calls `object[method](...args)` and waits for a returned promise, all within the clock's
/// deadline; the result must be a string.
fn run_method<'js, A: rquickjs::function::IntoArgs<'js>>(
    ctx: &Ctx<'js>,
    object: &Object<'js>,
    method: &str,
    args: A,
    clock: &crate::clock::Clock,
) -> CallOutcome {
    let function = match object.get::<_, Value>(method) {
        Ok(value) => match value.as_function() {
            Some(function) => function.clone(),
            None => {
                return CallOutcome::Failed(Failure::Threw {
                    name: "TypeError".to_owned(),
                    message: format!("{method} is not a function (it is {})", type_name(&value)),
                    stack: String::new(),
                });
            }
        },
        Err(error) => return CallOutcome::Failed(Failure::caught(ctx, error, clock)),
    };
    let value = match call_with_this(&function, object, args) {
        Ok(value) => value,
        Err(error) => return CallOutcome::Failed(Failure::caught(ctx, error, clock)),
    };
    let value = match value.as_promise() {
        Some(promise) => match settle(ctx, promise, clock) {
            Ok(value) => value,
            Err(outcome) => return outcome,
        },
        None => value,
    };
    match value.as_string().map(|text| text.to_string()) {
        Some(Ok(text)) => CallOutcome::Returned(text),
        Some(Err(error)) => CallOutcome::Failed(Failure::caught(ctx, error, clock)),
        None => CallOutcome::NotAString(type_name(&value)),
    }
}

fn call_with_this<'js, A: rquickjs::function::IntoArgs<'js>>(
    function: &Function<'js>,
    this: &Object<'js>,
    args: A,
) -> rquickjs::Result<Value<'js>> {
    let mut accumulated = rquickjs::function::Args::new(function.ctx().clone(), args.num_args());
    accumulated.this(this.clone())?;
    args.into_args(&mut accumulated)?;
    function.call_arg(accumulated)
}

/// Runs queued jobs until `promise` settles, the deadline passes, or nothing is left to run.
fn settle<'js>(
    ctx: &Ctx<'js>,
    promise: &Promise<'js>,
    clock: &crate::clock::Clock,
) -> Result<Value<'js>, CallOutcome> {
    loop {
        match promise.state() {
            PromiseState::Resolved => {
                return promise
                    .result::<Value>()
                    .unwrap_or(Ok(Value::new_undefined(ctx.clone())))
                    .map_err(|error| CallOutcome::Failed(Failure::caught(ctx, error, clock)));
            }
            PromiseState::Rejected => {
                let error = promise
                    .result::<Value>()
                    .and_then(Result::err)
                    .unwrap_or(rquickjs::Error::Exception);
                return Err(CallOutcome::Failed(Failure::caught(ctx, error, clock)));
            }
            PromiseState::Pending => {
                if clock.fired() || clock.expired() {
                    return Err(CallOutcome::Failed(Failure::TimedOut));
                }
                if !ctx.execute_pending_job() {
                    return Err(CallOutcome::NeverSettled);
                }
            }
        }
    }
}

/// Declares and evaluates the character module (and what it imports), waiting for
/// top-level `await`s; returns its exports.
fn evaluate<'js>(
    ctx: &Ctx<'js>,
    sandbox: &Sandbox,
    file_name: &str,
    source: String,
    load_timeout: Duration,
) -> Result<Object<'js>, LoadFailure> {
    let clock = &sandbox.clock;
    let failed = |failure: Failure| -> LoadFailure {
        let problem = match failure {
            Failure::TimedOut => Problem::new(
                kind::MODULE_ERROR,
                format!(
                    "top-level code did not finish within {}ms",
                    load_timeout.as_millis()
                ),
            ),
            Failure::OutOfMemory => {
                Problem::new(kind::MODULE_ERROR, "top-level code ran out of memory")
            }
            Failure::Threw {
                name,
                message,
                stack,
            } if name == "SyntaxError" => Problem::new(
                kind::SYNTAX_ERROR,
                syntax_error(file_name, &message, &stack),
            )
            .located(place(&stack)),
            Failure::Threw { message, .. }
                if message.starts_with("Error resolving module")
                    || message.starts_with("Error loading module") =>
            {
                Problem::new(kind::MODULE_ERROR, format!("import refused: {message}"))
            }
            Failure::Threw {
                name,
                message,
                stack,
            } => {
                let at = location(&stack)
                    .map(|(file, line, column)| format!(" (at {file}:{line}:{column})"));
                Problem::new(
                    kind::MODULE_ERROR,
                    format!(
                        "loading the module failed: {name} - {message}{}",
                        at.unwrap_or_default()
                    ),
                )
                .located(place(&stack))
            }
        };
        (None, vec![problem])
    };
    let module = Module::declare(ctx.clone(), file_name, source)
        .map_err(|error| failed(Failure::caught(ctx, error, clock)))?;
    let (module, promise) = module
        .eval()
        .map_err(|error| failed(Failure::caught(ctx, error, clock)))?;
    match settle(ctx, &promise, clock) {
        Ok(_) => {}
        Err(CallOutcome::Failed(failure)) => return Err(failed(failure)),
        Err(_) => {
            return Err((
                None,
                vec![Problem::new(
                    kind::MODULE_ERROR,
                    "top-level await waits for a promise that never settles",
                )],
            ));
        }
    }
    module
        .namespace()
        .map_err(|error| failed(Failure::caught(ctx, error, clock)))
}

/// The first frame of a stack as a [`Location`].
fn place(stack: &str) -> Option<Location> {
    location(stack).map(|(file, line, column)| Location { file, line, column })
}

/// `syntax error at line L, column C: message`, naming the file when it is an imported one.
fn syntax_error(file_name: &str, message: &str, stack: &str) -> String {
    match location(stack) {
        Some((file, line, column)) if file == file_name => {
            format!("syntax error at line {line}, column {column}: {message}")
        }
        Some((file, line, column)) => {
            format!("syntax error in {file} at line {line}, column {column}: {message}")
        }
        None => format!("syntax error: {message}"),
    }
}

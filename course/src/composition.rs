//! Chapter 13: one runtime that commits history before a prompt is done.
//!
//! Chapters 09 to 12 built the parts: an [`Agent`] that keeps a transcript,
//! a session log, a context rebuilt to a budget, resources and extensions.
//! [`create_runtime`] is the *composition root* that wires them once, and
//! the [`Runtime`] owns what no part can own alone:
//!
//! * **Which branch.** An empty session needs no leaf; a non-empty one needs
//!   the caller to name it. The agent starts from that path's messages.
//! * **What the model sees.** Before every request [`ContextProjectingModel`]
//!   attaches the messages not saved yet to the active path, as temporary
//!   entries, and rebuilds the context with chapter 11's `build_context`.
//! * **The instructions.** The wanted state (the base prompt, the resources
//!   in the `pi-resources` section) enters the transcript only as a system
//!   patch before a prompt's user message, and only when the replayed
//!   transcript differs: the base prompt once, later only changed sections.
//!   A resumed transcript's base prompt stands; saved entries never change.
//! * **When a prompt is done.** Only after every new message of its run was
//!   appended, each the child of the one before. One failed append poisons
//!   the runtime: every later call fails with that error, nothing more is
//!   written. After [`Runtime::dispose`] prompts are refused; what was
//!   accepted before still runs.
//!
//! The Rust shape: accepted prompts go through a channel to one worker
//! thread, which runs them in order. A call is accepted or refused at once
//! and answered through a [`Pending`] (the original's promise):
//! `runtime.prompt(text).wait()` blocks until the messages are saved.
//! [`RuntimeControl`] works from any thread meanwhile; it has no `prompt`,
//! so no run can skip the session. A mode ([`run_mode`]) prompts once and
//! only chooses how the answer is written.

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::str::FromStr;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};
use std::thread;

use crate::agent::{
    Agent, AgentError, AgentEvent, AgentOptions, AgentState, PromptOptions, Subscription,
    SystemPatch,
};
use crate::agent_loop::AgentRunResult;
use crate::context::{BuildContextOptions, build_context};
use crate::event_stream::{EventStream, Producer};
use crate::resources::{ExtensionHost, RESOURCE_SECTION, ResourceCatalog, format_resource_context};
use crate::session::{EntryKind, SessionEntry, SessionError, SessionStore, path_to};
use crate::tool::{ToolExecutor, ToolRegistry, execute_tool_call};
use crate::types::{
    AgentContext, AgentMessage, Model, Sections, StreamOptions, current_system_message, text_of,
};

/// How much a request may hold, and how to count a message's tokens.
#[derive(Clone)]
pub struct ContextBudget {
    /// The model's whole window.
    pub total: u64,
    /// Kept free for the answer.
    pub reserved_output: u64,
    /// Kept free for the estimate's error.
    pub safety_margin: u64,
    pub estimate_tokens: Arc<dyn Fn(&AgentMessage) -> u64 + Send + Sync>,
}

/// What the caller decides.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// The leaf to continue: `None` for an empty session only.
    pub active_leaf_id: Option<String>,
    /// The base prompt of a new session.
    pub system_prompt: Option<String>,
    pub max_steps: Option<usize>,
    pub context: ContextBudget,
}

/// A session store the runtime and its caller share.
pub type SharedSession = Arc<Mutex<dyn SessionStore + Send>>;

/// What the runtime is made of. The session, the resources and the
/// extensions stay the caller's too: the runtime hands back these objects.
pub struct RuntimeDeps<M> {
    pub model: M,
    pub tools: ToolRegistry,
    pub session: SharedSession,
    pub resources: Arc<ResourceCatalog>,
    pub extension_host: Option<Arc<ExtensionHost>>,
    /// The id of each new entry.
    pub create_id: Box<dyn FnMut() -> String + Send>,
    /// The timestamp of each new entry.
    pub now: Box<dyn FnMut() -> u64 + Send>,
}

/// What the context projection reads before each request: the saved path
/// and how many of the agent's messages are on it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextProjectionSnapshot {
    pub active_path: Vec<SessionEntry>,
    /// The message entries on `active_path` (metadata and compactions are
    /// not messages).
    pub persisted_message_count: usize,
}

/// How a mode writes its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeMode {
    Interactive,
    Print,
    Json,
}

/// Why a runtime call failed.
#[derive(Debug, Clone)]
pub enum RuntimeError {
    /// Reading the session failed, or an append did: then every later call
    /// returns this same error. Shown as the session error's text.
    Session(SessionError),
    /// The leaf does not fit the session (`空 session 的 activeLeafId 必须是
    /// null`, `非空 session 必须显式提供 activeLeafId`), or the resources
    /// cannot be shown.
    Invalid(String),
    /// A prompt after [`Runtime::dispose`]: `Runtime 已 dispose`.
    Disposed,
    /// Not one of the modes: `未知 runtime mode：<mode>`.
    UnknownMode(String),
    /// The mode's output failed, after the prompt was saved; shown as that
    /// error's text.
    Output(Arc<io::Error>),
    /// The worker thread stopped without answering (a store or an id
    /// function panicked): `Runtime 的工作线程已停止`.
    Stopped,
}

/// A call the runtime accepted, answered once it is done: the original's
/// promise. Clones wait for the same call.
#[derive(Clone)]
pub struct Pending<T>(Arc<Outcome<T>>);

/// Chapter 02's stream, used for its result only: the worker `end`s it with
/// the outcome, or, if it dropped the producer unanswered (it panicked),
/// the stream ends with an error. No event is ever pushed.
type Outcome<T> = EventStream<(), Result<T, RuntimeError>>;
type Answer<T> = Producer<(), Result<T, RuntimeError>>;

impl<T: Clone + Send + 'static> Pending<T> {
    /// A call not answered yet, and the handle that answers it.
    fn new() -> (Self, Answer<T>) {
        let outcome = EventStream::new(|_| false, |_| unreachable!("no event is pushed"));
        let answer = outcome.producer();
        (Pending(Arc::new(outcome)), answer)
    }

    /// A call answered already.
    pub fn ready(result: Result<T, RuntimeError>) -> Self {
        let (pending, answer) = Pending::new();
        let _ = answer.end(result);
        pending
    }

    /// Blocks until the call is done.
    pub fn wait(&self) -> Result<T, RuntimeError> {
        self.0
            .blocking_result()
            .unwrap_or(Err(RuntimeError::Stopped))
    }

    /// Whether the call is done (never blocks).
    pub fn is_finished(&self) -> bool {
        let mut context = Context::from_waker(Waker::noop());
        self.0.poll_result(&mut context).is_ready()
    }
}

/// Two handles are equal when they wait for the same call.
impl<T> PartialEq for Pending<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The agent's controls without `prompt`: every run goes through
/// [`Runtime::prompt`], which saves it.
pub struct RuntimeControl<M> {
    agent: Arc<Agent<ContextProjectingModel<M>>>,
}

impl<M: Model> RuntimeControl<M> {
    pub fn state(&self) -> AgentState {
        self.agent.state()
    }

    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        self.agent.subscribe(listener)
    }

    pub fn unsubscribe(&self, subscription: Subscription) -> bool {
        self.agent.unsubscribe(subscription)
    }

    pub fn steer(&self, text: &str) -> Result<(), AgentError> {
        self.agent.steer(text)
    }

    pub fn follow_up(&self, text: &str) -> Result<(), AgentError> {
        self.agent.follow_up(text)
    }

    pub fn abort(&self) {
        self.agent.abort()
    }
}

/// Session, agent, context, resources and extensions, wired once.
pub struct Runtime<M> {
    control: RuntimeControl<M>,
    session: SharedSession,
    resources: Arc<ResourceCatalog>,
    extensions: Option<Arc<ExtensionHost>>,
    /// The saved path; the worker extends it, the model's projection reads it.
    saved: Arc<Mutex<Saved>>,
    queue: Mutex<Queue>,
}

struct Saved {
    active_path: Vec<SessionEntry>,
    /// The first failed append: set once, for good.
    poison: Option<SessionError>,
}

struct Queue {
    jobs: Sender<Job>,
    /// Set by the first `dispose`, which later ones hand back.
    disposing: Option<Pending<()>>,
}

enum Job {
    Prompt(String, Answer<AgentRunResult>),
    Flush(Answer<()>),
}

impl<M: Model> Runtime<M> {
    pub fn control(&self) -> &RuntimeControl<M> {
        &self.control
    }

    pub fn session(&self) -> &SharedSession {
        &self.session
    }

    pub fn resources(&self) -> &Arc<ResourceCatalog> {
        &self.resources
    }

    pub fn extensions(&self) -> Option<&Arc<ExtensionHost>> {
        self.extensions.as_ref()
    }

    /// The last saved entry of the active path; `None` for a session that
    /// is still empty.
    pub fn active_leaf_id(&self) -> Option<String> {
        let saved = lock(&self.saved);
        saved.active_path.last().map(|entry| entry.id.clone())
    }

    /// Accepts `text`, or refuses it at once after `dispose`. An accepted
    /// prompt runs after those accepted before it (and fails at once if the
    /// runtime is poisoned by then); it is answered once its messages are
    /// saved.
    pub fn prompt(&self, text: &str) -> Pending<AgentRunResult> {
        let queue = lock(&self.queue);
        if queue.disposing.is_some() {
            return Pending::ready(Err(RuntimeError::Disposed));
        }
        let (pending, answer) = Pending::new();
        // A stopped worker drops the job, and with it the answer: `Stopped`.
        let _ = queue.jobs.send(Job::Prompt(text.to_string(), answer));
        pending
    }

    /// Done when every call accepted before it is: the poison, if any.
    pub fn flush(&self) -> Pending<()> {
        enqueue_flush(&lock(&self.queue))
    }

    /// Refuses prompts from now on and waits for the accepted ones. A
    /// second call waits for the same.
    pub fn dispose(&self) -> Pending<()> {
        let mut queue = lock(&self.queue);
        if let Some(disposing) = &queue.disposing {
            return disposing.clone();
        }
        let disposing = enqueue_flush(&queue);
        queue.disposing = Some(disposing.clone());
        disposing
    }
}

fn enqueue_flush(queue: &Queue) -> Pending<()> {
    let (pending, answer) = Pending::new();
    let _ = queue.jobs.send(Job::Flush(answer));
    pending
}

/// The poison, if an append failed.
fn health(saved: &Mutex<Saved>) -> Result<(), RuntimeError> {
    match &lock(saved).poison {
        Some(cause) => Err(RuntimeError::Session(cause.clone())),
        None => Ok(()),
    }
}

/// Reads the session, restores the chosen path into a new agent, and starts
/// the worker that runs and saves prompts. The configured base prompt is not
/// given to the agent: it must be saved with a prompt, so it comes as that
/// prompt's system patch.
pub fn create_runtime<M: Model + Send + Sync + 'static>(
    config: RuntimeConfig,
    deps: RuntimeDeps<M>,
) -> Result<Runtime<M>, RuntimeError> {
    let entries = lock(&deps.session).entries();
    let active_path = select_path(
        &entries.map_err(RuntimeError::Session)?,
        config.active_leaf_id,
    )?;
    let initial_messages = messages_in(&active_path);
    let desired = desired_system(config.system_prompt, &deps.resources)?;
    let saved = Arc::new(Mutex::new(Saved {
        active_path,
        poison: None,
    }));
    let snapshot = {
        let saved = Arc::clone(&saved);
        move || snapshot_of(&lock(&saved).active_path)
    };
    let model = create_context_projecting_model(deps.model, config.context, snapshot);
    // The agent reads the tools' definitions; the executor under the
    // extensions' hooks runs them: one registry for both.
    let tools = Arc::new(deps.tools);
    let core = {
        let tools = Arc::clone(&tools);
        move |call: &_, options| Ok(execute_tool_call(call, &tools, options))
    };
    let executor: Box<ToolExecutor> = match &deps.extension_host {
        Some(host) => host.wrap_executor(core),
        None => Box::new(core),
    };
    let agent = Arc::new(Agent::new(AgentOptions {
        tool_executor: Some(executor),
        initial_messages,
        max_steps: config.max_steps,
        ..AgentOptions::new(model, tools)
    }));
    let (jobs, received) = mpsc::channel();
    let worker = Worker {
        agent: Arc::clone(&agent),
        session: Arc::clone(&deps.session),
        saved: Arc::clone(&saved),
        desired,
        create_id: deps.create_id,
        now: deps.now,
    };
    thread::spawn(move || worker.run(received));
    Ok(Runtime {
        control: RuntimeControl { agent },
        session: deps.session,
        resources: deps.resources,
        extensions: deps.extension_host,
        saved,
        queue: Mutex::new(Queue {
            jobs,
            disposing: None,
        }),
    })
}

/// An empty session takes no leaf; a non-empty one must name one.
fn select_path(
    entries: &[SessionEntry],
    leaf: Option<String>,
) -> Result<Vec<SessionEntry>, RuntimeError> {
    match (entries.is_empty(), leaf) {
        (true, None) => Ok(Vec::new()),
        (true, Some(_)) => Err(invalid("空 session 的 activeLeafId 必须是 null")),
        (false, None) => Err(invalid("非空 session 必须显式提供 activeLeafId")),
        (false, Some(leaf)) => path_to(entries, &leaf).map_err(RuntimeError::Session),
    }
}

/// The messages of a path's message entries.
fn messages_in(entries: &[SessionEntry]) -> Vec<AgentMessage> {
    let messages = entries.iter().filter_map(|entry| match &entry.kind {
        EntryKind::Message { message } => Some(message.clone()),
        _ => None,
    });
    messages.collect()
}

fn snapshot_of(active_path: &[SessionEntry]) -> ContextProjectionSnapshot {
    let messages =
        (active_path.iter()).filter(|entry| matches!(entry.kind, EntryKind::Message { .. }));
    ContextProjectionSnapshot {
        persisted_message_count: messages.count(),
        active_path: active_path.to_vec(),
    }
}

/// The system state wanted now, as the patch that starts a transcript: the
/// base prompt, and the resources in their section when there are any.
fn desired_system(
    configured: Option<String>,
    resources: &ResourceCatalog,
) -> Result<SystemPatch, RuntimeError> {
    let mut sections = None;
    if !resources.keys().is_empty() {
        let text = format_resource_context(resources, &[])
            .map_err(|error| RuntimeError::Invalid(error.to_string()))?;
        sections = Some(Sections::from([(RESOURCE_SECTION, Some(text.as_str()))]));
    }
    let content = configured.unwrap_or_default();
    Ok(SystemPatch { content, sections })
}

/// The patch that turns the transcript's replayed system state into the
/// wanted one, or `None` when they agree. With no system message yet, the
/// whole state (if not empty); after that, only the sections that differ,
/// `None` for those no longer wanted. The base prompt is never patched: a
/// resumed transcript's base prompt stands.
fn system_patch(messages: &[AgentMessage], desired: &SystemPatch) -> Option<SystemPatch> {
    let Some(current) = current_system_message(messages) else {
        let empty = desired.content.is_empty() && desired.sections.is_none();
        return (!empty).then(|| desired.clone());
    };
    let (current, wanted) = (
        current.sections.unwrap_or_default(),
        desired.sections.clone(),
    );
    let wanted = wanted.unwrap_or_default();
    let mut changes = Sections::default();
    for (name, value) in wanted.iter() {
        if section(&current, name) != value {
            changes.insert(name, value);
        }
    }
    for (name, _) in current.iter() {
        if section(&wanted, name).is_none() {
            changes.insert(name, None);
        }
    }
    let sections = Some(changes).filter(|changes| !changes.is_empty());
    sections.map(|sections| SystemPatch {
        content: String::new(),
        sections: Some(sections),
    })
}

fn section<'a>(sections: &'a Sections, name: &str) -> Option<&'a str> {
    let found = sections.iter().find(|(known, _)| *known == name);
    found.and_then(|(_, value)| value)
}

/// A model that sees, before each request, the saved path with the
/// messages not saved yet attached to it, rebuilt to the budget.
pub struct ContextProjectingModel<M> {
    inner: M,
    context: ContextBudget,
    snapshot: Box<dyn Fn() -> ContextProjectionSnapshot + Send + Sync>,
}

/// `inner` behind the projection. `snapshot` is read at every request, so
/// each one starts from the path saved by then.
pub fn create_context_projecting_model<M: Model>(
    inner: M,
    context: ContextBudget,
    snapshot: impl Fn() -> ContextProjectionSnapshot + Send + Sync + 'static,
) -> ContextProjectingModel<M> {
    ContextProjectingModel {
        inner,
        context,
        snapshot: Box::new(snapshot),
    }
}

impl<M: Model> Model for ContextProjectingModel<M> {
    type Stream = M::Stream;

    /// Sends `inner` the projected messages, copies of the tools and the
    /// same options (the same signal). A snapshot that does not fit
    /// `context`, or a path `build_context` refuses, panics, as the
    /// original throws: chapter 09's loop turns that into an error message.
    fn stream(&self, context: &AgentContext, options: StreamOptions) -> M::Stream {
        let entries = temporary_entries((self.snapshot)(), &context.messages);
        let budget = BuildContextOptions {
            max_tokens: self.context.total,
            reserved_output: self.context.reserved_output,
            safety_margin: self.context.safety_margin,
            estimate_tokens: &*self.context.estimate_tokens,
        };
        let projected = build_context(&entries, &budget).unwrap_or_else(|error| panic!("{error}"));
        let request = AgentContext {
            messages: projected.messages,
            tools: context.tools.clone(),
        };
        self.inner.stream(&request, options)
    }
}

/// The saved path, then the messages after the first
/// `persisted_message_count` as entries that live for one request: ids
/// `__runtime_context_N` (prefixed with `_` until unused on the path), each
/// the child of the one before. Never saved, never given ids by the caller.
fn temporary_entries(
    snapshot: ContextProjectionSnapshot,
    messages: &[AgentMessage],
) -> Vec<SessionEntry> {
    let saved = snapshot.persisted_message_count;
    assert!(
        saved <= messages.len(),
        "persistedMessageCount 超出了当前 model context"
    );
    let mut path = snapshot.active_path;
    let mut taken: HashSet<String> = path.iter().map(|entry| entry.id.clone()).collect();
    for (index, message) in messages[saved..].iter().enumerate() {
        let mut id = format!("__runtime_context_{index}");
        while !taken.insert(id.clone()) {
            id.insert(0, '_');
        }
        path.push(SessionEntry {
            parent_id: path.last().map(|entry| entry.id.clone()),
            id,
            timestamp: 0,
            kind: EntryKind::Message {
                message: message.clone(),
            },
        });
    }
    path
}

/// Runs the accepted jobs, one at a time, in the order they came.
struct Worker<M> {
    agent: Arc<Agent<ContextProjectingModel<M>>>,
    session: SharedSession,
    saved: Arc<Mutex<Saved>>,
    desired: SystemPatch,
    create_id: Box<dyn FnMut() -> String + Send>,
    now: Box<dyn FnMut() -> u64 + Send>,
}

impl<M: Model> Worker<M> {
    /// Until the runtime is dropped (its sender with it).
    fn run(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            match job {
                Job::Prompt(text, answer) => {
                    let _ = answer.end(self.prompt(&text));
                }
                Job::Flush(answer) => {
                    let _ = answer.end(health(&self.saved));
                }
            }
        }
    }

    /// The transcript is read when the job starts, not when it was
    /// accepted: by then the prompt before it is saved, its patch included.
    fn prompt(&mut self, text: &str) -> Result<AgentRunResult, RuntimeError> {
        health(&self.saved)?;
        let before = self.agent.state().messages;
        let system = system_patch(&before, &self.desired);
        let result = (self.agent.prompt(text, PromptOptions { system }))
            .expect("only the worker prompts its agent, one run at a time");
        self.persist(&result.messages[before.len()..])?;
        Ok(result)
    }

    /// Appends `messages`, each the child of the one before; the path grows
    /// only after the store took the entry. A failure poisons.
    fn persist(&mut self, messages: &[AgentMessage]) -> Result<(), RuntimeError> {
        for message in messages {
            let parent_id = lock(&self.saved).active_path.last().map(|e| e.id.clone());
            let entry = SessionEntry {
                id: (self.create_id)(),
                parent_id,
                timestamp: (self.now)(),
                kind: EntryKind::Message {
                    message: message.clone(),
                },
            };
            let appended = lock(&self.session).append(&entry);
            let mut saved = lock(&self.saved);
            if let Err(error) = appended {
                saved.poison = Some(error.clone());
                return Err(RuntimeError::Session(error));
            }
            saved.active_path.push(entry);
        }
        Ok(())
    }
}

/// Prompts once and writes the answer: the last assistant message's text
/// (`interactive`, `print`) or the run as one JSON line (`json`). The run is
/// saved before anything is written; an output error is returned as it
/// came and undoes nothing.
pub fn run_mode(
    runtime: &impl Prompter,
    mode: RuntimeMode,
    prompt: &str,
    mut write: impl FnMut(&str) -> io::Result<()>,
) -> Result<AgentRunResult, RuntimeError> {
    let result = runtime.prompt(prompt).wait()?;
    let output = match mode {
        RuntimeMode::Json => {
            let line = serde_json::to_string(&result).expect("a run serializes");
            format!("{line}\n")
        }
        RuntimeMode::Interactive | RuntimeMode::Print => final_assistant_text(&result),
    };
    write(&output).map_err(|error| RuntimeError::Output(Arc::new(error)))?;
    Ok(result)
}

/// What a mode needs of a runtime: a way to prompt it.
pub trait Prompter {
    fn prompt(&self, text: &str) -> Pending<AgentRunResult>;
}

impl<M: Model> Prompter for Runtime<M> {
    fn prompt(&self, text: &str) -> Pending<AgentRunResult> {
        Runtime::prompt(self, text)
    }
}

fn final_assistant_text(result: &AgentRunResult) -> String {
    let mut messages = result.messages.iter().rev();
    let last = messages.find(|message| matches!(message, AgentMessage::Assistant(_)));
    last.map(text_of).unwrap_or_default()
}

impl FromStr for RuntimeMode {
    type Err = RuntimeError;

    fn from_str(mode: &str) -> Result<Self, RuntimeError> {
        match mode {
            "interactive" => Ok(RuntimeMode::Interactive),
            "print" => Ok(RuntimeMode::Print),
            "json" => Ok(RuntimeMode::Json),
            _ => Err(RuntimeError::UnknownMode(mode.to_string())),
        }
    }
}

fn invalid(message: &str) -> RuntimeError {
    RuntimeError::Invalid(message.to_string())
}

/// Locks a mutex of the runtime. A store that panicked in `append` stopped
/// the worker; what it left behind is not read by the runtime again.
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::Session(error) => write!(f, "{error}"),
            RuntimeError::Invalid(message) => f.write_str(message),
            RuntimeError::Disposed => f.write_str("Runtime 已 dispose"),
            RuntimeError::UnknownMode(mode) => write!(f, "未知 runtime mode：{mode}"),
            RuntimeError::Output(error) => write!(f, "{error}"),
            RuntimeError::Stopped => f.write_str("Runtime 的工作线程已停止"),
        }
    }
}

impl std::error::Error for RuntimeError {}

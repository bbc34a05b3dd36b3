//! Chapter 13: one runtime that commits history before a prompt is done.
//!
//! The starter of the chapter: the public types, and the signatures of the
//! runtime, the context projection and the modes. Every body that is the
//! chapter's work is a `todo!` naming its lab (13.1–13.4). The fields of
//! `Runtime` beyond the four given, and every private type and helper, are
//! yours (LEARNING.md names the reference's). Chapter 13 also changes
//! chapter 09's `agent.rs` (a shared registry; the initial messages are
//! chapter 09's already): that change is yours too (LEARNING.md, 第 1 节).

// The projecting model's fields are not read until you write `stream`;
// delete this line once every `todo!` is gone.
#![allow(dead_code)]

use std::fmt;
use std::io;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use crate::agent::{Agent, AgentError, AgentEvent, AgentState, Subscription};
use crate::agent_loop::AgentRunResult;
use crate::event_stream::EventStream;
use crate::resources::{ExtensionHost, ResourceCatalog};
use crate::session::{SessionEntry, SessionError, SessionStore};
use crate::tool::ToolRegistry;
use crate::types::{AgentContext, AgentMessage, Model, StreamOptions};

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

impl<T: Clone + Send + 'static> Pending<T> {
    /// A call answered already.
    pub fn ready(_result: Result<T, RuntimeError>) -> Self {
        todo!("Lab 13.3 Pending::ready 尚未实现")
    }

    /// Blocks until the call is done.
    pub fn wait(&self) -> Result<T, RuntimeError> {
        todo!("Lab 13.3 Pending::wait 尚未实现")
    }

    /// Whether the call is done (never blocks).
    pub fn is_finished(&self) -> bool {
        todo!("Lab 13.3 Pending::is_finished 尚未实现")
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
    // Add what the prompts need (Lab 13.3): the saved path (the model's
    // projection reads it, the worker extends it), the poison, the queue.
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
        todo!("Lab 13.1 Runtime::active_leaf_id 尚未实现")
    }

    /// Accepts `text`, or refuses it at once after `dispose`. An accepted
    /// prompt runs after those accepted before it (and fails at once if the
    /// runtime is poisoned by then); it is answered once its messages are
    /// saved.
    pub fn prompt(&self, _text: &str) -> Pending<AgentRunResult> {
        todo!("Lab 13.3 Runtime::prompt 尚未实现")
    }

    /// Done when every call accepted before it is: the poison, if any.
    pub fn flush(&self) -> Pending<()> {
        todo!("Lab 13.3 Runtime::flush 尚未实现")
    }

    /// Refuses prompts from now on and waits for the accepted ones. A
    /// second call waits for the same.
    pub fn dispose(&self) -> Pending<()> {
        todo!("Lab 13.3 Runtime::dispose 尚未实现")
    }
}

/// Reads the session, restores the chosen path into a new agent, and starts
/// the worker that runs and saves prompts. The configured base prompt is not
/// given to the agent: it must be saved with a prompt, so it comes as that
/// prompt's system patch.
pub fn create_runtime<M: Model + Send + Sync + 'static>(
    _config: RuntimeConfig,
    _deps: RuntimeDeps<M>,
) -> Result<Runtime<M>, RuntimeError> {
    todo!("Lab 13.1 create_runtime 尚未实现")
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
    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> M::Stream {
        todo!("Lab 13.2 ContextProjectingModel::stream 尚未实现")
    }
}

/// Prompts once and writes the answer: the last assistant message's text
/// (`interactive`, `print`) or the run as one JSON line (`json`). The run is
/// saved before anything is written; an output error is returned as it
/// came and undoes nothing.
pub fn run_mode(
    _runtime: &impl Prompter,
    _mode: RuntimeMode,
    _prompt: &str,
    _write: impl FnMut(&str) -> io::Result<()>,
) -> Result<AgentRunResult, RuntimeError> {
    todo!("Lab 13.4 run_mode 尚未实现")
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

impl FromStr for RuntimeMode {
    type Err = RuntimeError;

    fn from_str(_mode: &str) -> Result<Self, RuntimeError> {
        todo!("Lab 13.4 RuntimeMode::from_str 尚未实现")
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!("Lab 13.1 RuntimeError 的 Display 尚未实现")
    }
}

impl std::error::Error for RuntimeError {}

//! Chapter 09: the stateful agent — one transcript across runs.
//!
//! Chapter 07's loop forgets everything when it returns. An [`Agent`] is
//! what a program keeps between prompts: the transcript, its listeners and,
//! while a run is going, that run's signal and queues.
//!
//! * **State is derived** by a pure function, [`reduce_agent_state`]: every
//!   event goes through it *before* any listener hears of the event; events
//!   of a run that is not the current one change nothing.
//! * **One run at a time.** [`Agent::prompt`] refuses while a run is going;
//!   a run frees the agent (only itself: it checks its id) *before* it
//!   announces `run_end`, so a `run_end` listener may start the next run.
//! * **Listeners cannot break a run.** A panic in one becomes a line in
//!   `diagnostics`. Every listener hears every event in the same order: an
//!   event emitted while another is being delivered waits its turn.
//! * **A run owns its controls**: a new signal and two new queues per
//!   prompt; what a run left queued dies with it. Steering goes in after a
//!   batch of tools or after a text answer, follow-ups only after a text
//!   answer with no steering waiting. Which one, and whether the run stops
//!   taking input, is decided in one step under the lock: a message is
//!   either refused or read, never accepted and lost.
//!
//! The Rust shape: `prompt` blocks its thread until the run ends; every
//! method takes `&self`, so other threads and listeners can abort, steer,
//! read the state and subscribe meanwhile. What changes sits in one
//! `Mutex`, never held while a listener, the model or a tool runs, so a
//! listener that calls back into the agent cannot deadlock it. A listener
//! gets `&AgentEvent`, `state` and `prompt` give owned copies: nobody can
//! change what another holds. For `&Agent` to cross threads, the model must
//! be `Sync`.

use std::fmt;
use std::marker::PhantomData;

use crate::agent_loop::{AgentRunResult, LoopEvent, RunReason};
use crate::tool::{ToolExecutor, ToolRegistry};
use crate::types::{AgentMessage, Model, Sections, SystemMessage, UserMessage};

/// What an agent is made of.
pub struct AgentOptions<M> {
    pub model: M,
    pub tools: ToolRegistry,
    /// Runs each call instead of chapter 06's executor.
    pub tool_executor: Option<Box<ToolExecutor>>,
    /// When not empty, the transcript's leading system message.
    pub system_prompt: Option<String>,
    /// The transcript to go on from (after the system prompt's message),
    /// e.g. the path of a saved session (chapter 10's `agent` example).
    pub initial_messages: Vec<AgentMessage>,
    pub max_steps: Option<usize>,
}

impl<M> AgentOptions<M> {
    /// `model` and `tools`, nothing else.
    pub fn new(_model: M, _tools: ToolRegistry) -> Self {
        todo!("Lab 9.2 AgentOptions::new 尚未实现")
    }
}

/// A change to the instructions, given with one prompt. The agent appends it
/// as a system message just before the prompt's user message: instructions
/// change only between runs, never inside one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemPatch {
    /// Text to append (may be empty).
    pub content: String,
    /// Sections to set; `None` deletes one.
    pub sections: Option<Sections>,
}

/// The options of one prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptOptions {
    pub system: Option<SystemPatch>,
}

/// Whether a run is going, and which.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AgentStatus {
    #[default]
    Idle,
    Running {
        run_id: u64,
    },
}

/// What a screen shows of an agent at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentState {
    pub status: AgentStatus,
    /// The transcript: the last run's result, or, while a run is going, what
    /// it started from.
    pub messages: Vec<AgentMessage>,
    /// How the last run ended; `None` before the first and during a run.
    pub last_reason: Option<RunReason>,
    /// The text of the model call in progress.
    pub streaming_text: String,
    /// Calls that started and have no result yet.
    pub pending_tool_call_ids: Vec<String>,
    /// What went wrong outside a run, e.g. a listener that panicked.
    pub diagnostics: Vec<String>,
}

/// What an agent tells its listeners.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A run began with `message`, after `system` if the prompt patched it.
    RunStart {
        run_id: u64,
        message: UserMessage,
        system: Option<SystemMessage>,
    },
    /// An event of the run's loop.
    Loop { run_id: u64, event: LoopEvent },
    /// The run ended: exactly once per run, last.
    RunEnd { run_id: u64, result: AgentRunResult },
}

/// Why the agent refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentError {
    /// `prompt` while a run is going.
    Busy,
    /// `steer` with no run that still takes input.
    SteerWithoutRun,
    /// `follow_up` with no run that still takes input.
    FollowUpWithoutRun,
}

/// The original's texts: `Agent is busy`,
/// `steering 只在当前 run 尚未结束时有意义`, `follow-up 只在当前 run 尚未结束时排队`.
impl fmt::Display for AgentError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!("Lab 9.2 AgentError 的文字尚未实现")
    }
}

impl std::error::Error for AgentError {}

/// Names a listener, to remove it with [`Agent::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscription(u64);

/// The state after `event`. Pure: `state` goes in, the new state comes out.
pub fn reduce_agent_state(_state: AgentState, _event: &AgentEvent) -> AgentState {
    todo!("Lab 9.1 reducer 尚未实现")
}

/// An agent: a model, its tools and one transcript, kept across runs.
pub struct Agent<M> {
    // Lab 9.2: what the agent keeps is yours to decide (LEARNING.md).
    // Replace this placeholder with your fields.
    _model: PhantomData<M>,
}

impl<M: Model> Agent<M> {
    /// An idle agent. A non-empty `system_prompt` becomes the first message,
    /// `initial_messages` follow it.
    pub fn new(_options: AgentOptions<M>) -> Self {
        todo!("Lab 9.2 Agent::new 尚未实现")
    }

    /// The model this agent calls.
    pub fn model(&self) -> &M {
        todo!("Lab 9.2 model 尚未实现")
    }

    /// A copy of the state now.
    pub fn state(&self) -> AgentState {
        todo!("Lab 9.2 state 尚未实现")
    }

    /// The instructions now: every system message of the transcript, replayed.
    pub fn system_prompt(&self) -> Option<String> {
        todo!("Lab 9.2 system_prompt 尚未实现")
    }

    /// Calls `listener` with every event from now on, on the thread that
    /// delivers it.
    pub fn subscribe(
        &self,
        _listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        todo!("Lab 9.2 subscribe 尚未实现")
    }

    /// Removes one listener; `false` if it was already gone.
    pub fn unsubscribe(&self, _subscription: Subscription) -> bool {
        todo!("Lab 9.3 unsubscribe 尚未实现")
    }

    /// Sets the current run's signal, which its model and tools see. No run,
    /// no effect: the next prompt gets a new signal.
    pub fn abort(&self) {
        todo!("Lab 9.4 abort 尚未实现")
    }

    /// Queues a message for the current run's next request: after the tools
    /// running now have all answered, or after the text the model is
    /// writing now.
    pub fn steer(&self, _text: &str) -> Result<(), AgentError> {
        todo!("Lab 9.5 steer 尚未实现")
    }

    /// Queues a message for when the current run would stop with an answer.
    pub fn follow_up(&self, _text: &str) -> Result<(), AgentError> {
        todo!("Lab 9.5 follow_up 尚未实现")
    }

    /// Runs the loop over the transcript plus `text` (after the system patch,
    /// if any), blocking until the run ends; the transcript becomes the
    /// run's messages. Refused while another run is going.
    pub fn prompt(
        &self,
        _text: &str,
        _options: PromptOptions,
    ) -> Result<AgentRunResult, AgentError> {
        todo!("Lab 9.2 prompt 尚未实现")
    }
}

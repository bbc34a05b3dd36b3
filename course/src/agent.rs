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

use std::collections::VecDeque;
use std::fmt;
use std::mem;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::agent_loop::{
    AgentLoopOptions, AgentRunResult, LoopEvent, Queues, RunReason, run_agent_loop_with_queues,
};
use crate::tool::{ToolExecutor, ToolRegistry, catch_failure};
use crate::types::{
    AgentContext, AgentMessage, AssistantMessage, Model, ModelEvent, Sections, StopReason,
    SystemMessage, UserMessage, assistant_message, current_system_prompt, user_message,
};

/// What an agent is made of.
pub struct AgentOptions<M> {
    pub model: M,
    /// Shared (chapter 13): an executor that outlives this borrow, such as
    /// one wrapped in extension hooks, may run the same tools.
    pub tools: Arc<ToolRegistry>,
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
    /// `model` and `tools` (a registry, or one already shared), nothing else.
    pub fn new(model: M, tools: impl Into<Arc<ToolRegistry>>) -> Self {
        AgentOptions {
            model,
            tools: tools.into(),
            tool_executor: None,
            system_prompt: None,
            initial_messages: Vec::new(),
            max_steps: None,
        }
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

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AgentError::Busy => "Agent is busy",
            AgentError::SteerWithoutRun => "steering 只在当前 run 尚未结束时有意义",
            AgentError::FollowUpWithoutRun => "follow-up 只在当前 run 尚未结束时排队",
        })
    }
}

impl std::error::Error for AgentError {}

/// Names a listener, to remove it with [`Agent::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscription(u64);

/// The state after `event`. Pure: `state` goes in, the new state comes out.
pub fn reduce_agent_state(state: AgentState, event: &AgentEvent) -> AgentState {
    match event {
        AgentEvent::RunStart {
            run_id,
            message,
            system,
        } => {
            let mut messages = state.messages;
            messages.extend(system.clone().map(AgentMessage::System));
            messages.push(AgentMessage::User(message.clone()));
            AgentState {
                status: AgentStatus::Running { run_id: *run_id },
                messages,
                diagnostics: state.diagnostics,
                ..AgentState::default()
            }
        }
        // A late event of another run changes nothing.
        AgentEvent::Loop { run_id, .. } | AgentEvent::RunEnd { run_id, .. }
            if state.status != (AgentStatus::Running { run_id: *run_id }) =>
        {
            state
        }
        AgentEvent::Loop { event, .. } => reduce_loop_event(state, event),
        AgentEvent::RunEnd { result, .. } => AgentState {
            messages: result.messages.clone(),
            last_reason: Some(result.reason),
            diagnostics: state.diagnostics,
            ..AgentState::default()
        },
    }
}

/// The streaming text and the pending calls follow the run's loop.
fn reduce_loop_event(mut state: AgentState, event: &LoopEvent) -> AgentState {
    match event {
        LoopEvent::ModelEvent {
            event: ModelEvent::TextDelta { delta, .. },
        } => state.streaming_text.push_str(delta),
        LoopEvent::AssistantMessage { .. } => state.streaming_text.clear(),
        LoopEvent::ToolStart { call } => state.pending_tool_call_ids.push(call.id.clone()),
        LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => state
            .pending_tool_call_ids
            .retain(|id| *id != result.tool_call_id),
        _ => {}
    }
    state
}

type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// An agent: a model, its tools and one transcript, kept across runs.
pub struct Agent<M> {
    options: AgentOptions<M>,
    shared: Mutex<Shared>,
}

/// Everything that changes, behind the agent's one lock.
#[derive(Default)]
struct Shared {
    state: AgentState,
    listeners: Vec<(Subscription, Listener)>,
    next_subscription: u64,
    /// Events reduced into `state`, not yet delivered; oldest first.
    undelivered: VecDeque<AgentEvent>,
    /// Some thread is delivering `undelivered`.
    delivering: bool,
    active: Option<ActiveRun>,
    next_run_id: u64,
}

/// The controls of the run that is going; dropped when it ends.
#[derive(Default)]
struct ActiveRun {
    id: u64,
    signal: Arc<AtomicBool>,
    steering: Vec<UserMessage>,
    follow_ups: Vec<UserMessage>,
    /// Set once the run will not read its queues any more.
    input_closed: bool,
}

impl<M: Model> Agent<M> {
    /// An idle agent. A non-empty `system_prompt` becomes the first message,
    /// `initial_messages` follow it.
    pub fn new(mut options: AgentOptions<M>) -> Self {
        let base = options.system_prompt.as_deref().filter(|p| !p.is_empty());
        let base = base.map(|content| {
            AgentMessage::System(SystemMessage {
                content: content.to_string(),
                sections: None,
                timestamp: 0,
            })
        });
        let mut messages: Vec<AgentMessage> = base.into_iter().collect();
        messages.append(&mut options.initial_messages);
        let state = AgentState {
            messages,
            ..AgentState::default()
        };
        let shared = Mutex::new(Shared {
            state,
            next_run_id: 1,
            ..Shared::default()
        });
        Agent { options, shared }
    }

    /// The model this agent calls.
    pub fn model(&self) -> &M {
        &self.options.model
    }

    /// A copy of the state now.
    pub fn state(&self) -> AgentState {
        self.lock().state.clone()
    }

    /// The instructions now: every system message of the transcript, replayed.
    pub fn system_prompt(&self) -> Option<String> {
        current_system_prompt(&self.lock().state.messages)
    }

    /// Calls `listener` with every event from now on, on the thread that
    /// delivers it.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        let mut shared = self.lock();
        let subscription = Subscription(shared.next_subscription);
        shared.next_subscription += 1;
        shared.listeners.push((subscription, Arc::new(listener)));
        subscription
    }

    /// Removes one listener; `false` if it was already gone.
    pub fn unsubscribe(&self, subscription: Subscription) -> bool {
        let mut shared = self.lock();
        let before = shared.listeners.len();
        shared.listeners.retain(|(id, _)| *id != subscription);
        shared.listeners.len() < before
    }

    /// Sets the current run's signal, which its model and tools see. No run,
    /// no effect: the next prompt gets a new signal.
    pub fn abort(&self) {
        if let Some(run) = &self.lock().active {
            run.signal.store(true, Ordering::SeqCst);
        }
    }

    /// Queues a message for the current run's next request: after the tools
    /// running now have all answered, or after the text the model is
    /// writing now.
    pub fn steer(&self, text: &str) -> Result<(), AgentError> {
        let mut shared = self.lock();
        let run = shared.active.as_mut().filter(|run| !run.input_closed);
        let run = run.ok_or(AgentError::SteerWithoutRun)?;
        run.steering.push(user_message(text));
        Ok(())
    }

    /// Queues a message for when the current run would stop with an answer.
    pub fn follow_up(&self, text: &str) -> Result<(), AgentError> {
        let mut shared = self.lock();
        let run = shared.active.as_mut().filter(|run| !run.input_closed);
        let run = run.ok_or(AgentError::FollowUpWithoutRun)?;
        run.follow_ups.push(user_message(text));
        Ok(())
    }

    /// Runs the loop over the transcript plus `text` (after the system patch,
    /// if any), blocking until the run ends; the transcript becomes the
    /// run's messages. Refused while another run is going.
    pub fn prompt(&self, text: &str, options: PromptOptions) -> Result<AgentRunResult, AgentError> {
        let message = user_message(text);
        let system = options.system.map(|patch| SystemMessage {
            content: patch.content,
            sections: patch.sections,
            timestamp: message.timestamp,
        });
        let mut shared = self.lock();
        if shared.active.is_some() {
            return Err(AgentError::Busy);
        }
        let run = ActiveRun {
            id: shared.next_run_id,
            ..ActiveRun::default()
        };
        let (run_id, signal) = (run.id, Arc::clone(&run.signal));
        shared.next_run_id += 1;
        shared.active = Some(run);
        // The run starts from a copy taken now, whatever listeners do later.
        let mut messages = shared.state.messages.clone();
        messages.extend(system.clone().map(AgentMessage::System));
        messages.push(AgentMessage::User(message.clone()));
        let start = AgentEvent::RunStart {
            run_id,
            message,
            system,
        };
        self.publish(shared, start);

        let result = self.run(run_id, signal, messages);

        // Free the agent and record the transcript in one step, then announce
        // it: a `run_end` listener may start the next run from it.
        let mut shared = self.lock();
        if shared.active.as_ref().is_some_and(|run| run.id == run_id) {
            shared.active = None;
        }
        let end = AgentEvent::RunEnd {
            run_id,
            result: result.clone(),
        };
        self.publish(shared, end);
        Ok(result)
    }

    /// The loop of run `run_id`. Whatever panics out of it (the loop itself
    /// already turns a panicking model or tool into messages) ends the run
    /// in `error`, with the run's input and the panic's message.
    fn run(
        &self,
        run_id: u64,
        signal: Arc<AtomicBool>,
        messages: Vec<AgentMessage>,
    ) -> AgentRunResult {
        let context = AgentContext {
            messages,
            tools: None,
        };
        let options = AgentLoopOptions {
            signal: Some(signal),
            max_steps: self.options.max_steps,
            execute_tool_call: self.options.tool_executor.as_deref(),
        };
        let after_tools = || self.with_run(run_id, |run| mem::take(&mut run.steering));
        let after_answer = || self.with_run(run_id, Self::after_answer);
        let queues = Queues {
            after_tools: &after_tools,
            after_answer: &after_answer,
        };
        let on_event = |event: LoopEvent| {
            // The run has ended: `steer` and `follow_up` refuse from now on.
            if let LoopEvent::TurnEnd { .. } = event {
                self.with_run(run_id, |run| run.input_closed = true);
            }
            self.emit(AgentEvent::Loop { run_id, event });
        };
        let looped = catch_failure(|| {
            Ok(run_agent_loop_with_queues(
                &self.options.model,
                &self.options.tools,
                &context,
                options,
                queues,
                on_event,
            ))
        });
        looped.unwrap_or_else(|message| {
            let failed = AssistantMessage {
                error_message: Some(message),
                ..assistant_message(Vec::new(), StopReason::Error)
            };
            let mut messages = context.messages;
            messages.push(AgentMessage::Assistant(failed));
            let (reason, steps) = (RunReason::Error, 0);
            AgentRunResult {
                reason,
                steps,
                messages,
            }
        })
    }

    /// `change` on the controls of run `run_id`, if it is still the current
    /// run: a run never touches another's.
    fn with_run<T: Default>(&self, run_id: u64, change: impl FnOnce(&mut ActiveRun) -> T) -> T {
        let mut shared = self.lock();
        let run = shared.active.as_mut().filter(|run| run.id == run_id);
        run.map(change).unwrap_or_default()
    }

    /// What goes in after a text answer: the steering messages, else the
    /// follow-ups. With neither, the run stops, so it takes no more input:
    /// decided in the same step as the look, so no message is accepted and
    /// then lost.
    fn after_answer(run: &mut ActiveRun) -> Vec<UserMessage> {
        let mut next = mem::take(&mut run.steering);
        if next.is_empty() {
            next = mem::take(&mut run.follow_ups);
        }
        run.input_closed = next.is_empty();
        next
    }

    fn emit(&self, event: AgentEvent) {
        self.publish(self.lock(), event);
    }

    /// Reduces `event` into the state, then delivers it to every listener,
    /// outside the lock. If another call is delivering already (a listener
    /// emitted, or another thread), the event waits in line and that call
    /// delivers it: every listener hears every event in the same order.
    fn publish<'a>(&'a self, mut shared: MutexGuard<'a, Shared>, event: AgentEvent) {
        shared.state = reduce_agent_state(mem::take(&mut shared.state), &event);
        shared.undelivered.push_back(event);
        if shared.delivering {
            return;
        }
        shared.delivering = true;
        while let Some(event) = shared.undelivered.pop_front() {
            let listeners: Vec<Listener> =
                shared.listeners.iter().map(|(_, l)| l.clone()).collect();
            drop(shared);
            for listener in listeners {
                let heard = catch_failure(|| {
                    listener(&event);
                    Ok(())
                });
                if let Err(message) = heard {
                    let diagnostic = format!("subscriber: {message}");
                    self.lock().state.diagnostics.push(diagnostic);
                }
            }
            shared = self.lock();
        }
        shared.delivering = false;
    }

    /// The one lock. Never poisoned: nothing that can panic (a listener, the
    /// model, a tool) runs while it is held.
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().expect("never poisoned")
    }
}

//! Chapter 07's starter: the public types with their fields and derives,
//! the constants, and the signature of [`run_agent_loop`], whose body is a
//! `todo!("Lab 7.1 … 尚未实现")` for you to write. The loop's private parts
//! (one model call, one batch of tools, one call on its thread, skipped
//! results) are yours to name and shape; LEARNING.md says what they must do.
//! The four `as_…` functions at the end only give the events their JSON
//! shape (the transcript's tags), for the `agent` example's `--json`.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::{Serialize, Serializer};

use crate::tool::{ToolExecutor, ToolRegistry};
use crate::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, Model, ModelEvent,
    TextContent, ToolCall, ToolResultMessage,
};

/// How many model calls a run makes at most, unless the caller says.
/// A guard of this course against a script that never stops, not a rule of
/// agents in general.
pub const DEFAULT_MAX_STEPS: usize = 32;

/// How many calls of one batch run at once, at most; the others wait for a
/// place. A bound keeps a model that asks for a thousand calls from asking
/// the system for a thousand threads.
pub const MAX_PARALLEL_TOOLS: usize = 8;

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunReason {
    /// The model answered without asking for tools.
    Stop,
    /// The model's answer was cut off.
    Length,
    /// The model call failed, or the model broke the protocol.
    Error,
    /// The signal was set.
    Aborted,
    /// `max_steps` model calls were made.
    MaxSteps,
}

/// What happened, as it happened: for a screen or a log. The transcript is
/// in the run's messages; events show the way there.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum LoopEvent {
    /// An event of the model call in progress.
    ModelEvent { event: ModelEvent },
    /// A model call's final message, now in the transcript.
    AssistantMessage {
        #[serde(serialize_with = "as_assistant")]
        message: AssistantMessage,
    },
    /// A call is about to run.
    ToolStart {
        #[serde(serialize_with = "as_tool_call")]
        call: ToolCall,
    },
    /// A running call reported progress.
    ToolProgress {
        call_id: String,
        #[serde(serialize_with = "as_text_blocks")]
        content: Vec<TextContent>,
    },
    /// A call ended (in the order calls end, not the order they were asked).
    ToolEnd {
        #[serde(serialize_with = "as_tool_result")]
        result: ToolResultMessage,
    },
    /// A call was not run; its result says why.
    ToolSkipped {
        #[serde(serialize_with = "as_tool_result")]
        result: ToolResultMessage,
    },
    /// The run ended: exactly once, last.
    TurnEnd { reason: RunReason },
}

/// What a run gives back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentRunResult {
    pub reason: RunReason,
    /// How many model calls were made.
    pub steps: usize,
    /// The caller's messages, then what the run appended.
    pub messages: Vec<AgentMessage>,
}

/// The optional parts of a run. `AgentLoopOptions::default()` is: no signal,
/// [`DEFAULT_MAX_STEPS`], calls run by chapter 06's `execute_tool_call`.
#[derive(Clone, Default)]
pub struct AgentLoopOptions<'a> {
    /// Set to `true` to cancel the run.
    pub signal: Option<Arc<AtomicBool>>,
    pub max_steps: Option<usize>,
    /// Runs each call instead of [`execute_tool_call`].
    pub execute_tool_call: Option<&'a ToolExecutor>,
}

/// Runs the loop over `context` until the model answers, something fails,
/// the signal is set or `max_steps` calls were made. `on_event` is called
/// on this thread only, also for events of tools running on other threads.
/// The caller's `context` is only read.
pub fn run_agent_loop(
    _model: &impl Model,
    _tools: &ToolRegistry,
    _context: &AgentContext,
    _options: AgentLoopOptions<'_>,
    _on_event: impl FnMut(LoopEvent),
) -> AgentRunResult {
    todo!("Lab 7.1 run_agent_loop 尚未实现")
}

// Events carry messages, calls and text blocks with their tags, as the
// transcript does.

fn as_assistant<S: Serializer>(message: &AssistantMessage, s: S) -> Result<S::Ok, S::Error> {
    AgentMessage::Assistant(message.clone()).serialize(s)
}

fn as_tool_call<S: Serializer>(call: &ToolCall, s: S) -> Result<S::Ok, S::Error> {
    AssistantContent::ToolCall(call.clone()).serialize(s)
}

fn as_text_blocks<S: Serializer>(content: &[TextContent], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(content.iter().cloned().map(AssistantContent::Text))
}

fn as_tool_result<S: Serializer>(result: &ToolResultMessage, s: S) -> Result<S::Ok, S::Error> {
    AgentMessage::ToolResult(result.clone()).serialize(s)
}

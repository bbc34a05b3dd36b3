//! Chapter 07: the agent loop — model, tools, model again, until an answer.
//!
//! One question may take several model calls: the first answer asks for a
//! tool, the tool's result goes into the transcript, and the next call reads
//! it. [`run_agent_loop`] closes that circle:
//!
//! * **The transcript only grows.** The loop works on its own copy of the
//!   caller's messages and appends assistant messages and tool results,
//!   nothing else: the caller's messages, system messages included, stay the
//!   unchanged prefix of every request and of the run.
//! * **Every call gets a result before the model is asked again.** Calls of
//!   a `toolUse` message run at once, each on its own thread (at most
//!   [`MAX_PARALLEL_TOOLS`], 8, at a time); their events reach the caller as
//!   they happen, but the results go into the transcript in call order. A
//!   message that must not run its calls (`length`, `error`, `aborted`, or
//!   `stop` carrying calls) still pairs each with a skipped result.
//! * **One end.** Every way out returns its reason to one place, which
//!   emits the single `turn_end`.
//!
//! Cancellation is cooperative: the signal stops the loop from *starting*
//! work (it is checked before each model call and after each batch of
//! tools) and is handed to the model and the tools, which have to look at
//! it themselves. A running thread cannot be stopped from outside.

use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread;

use serde::{Serialize, Serializer};
use serde_json::json;

use crate::block_on;
use crate::tool::{
    ToolCallOptions, ToolExecutor, ToolRegistry, catch_failure, execute_tool_call, failed_result,
};
use crate::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, Model, ModelEvent, ModelStream,
    StopReason, StreamOptions, TextContent, ToolCall, ToolResultMessage, text,
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
/// [`DEFAULT_MAX_STEPS`], calls run by chapter 06's [`execute_tool_call`].
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
    model: &impl Model,
    tools: &ToolRegistry,
    context: &AgentContext,
    options: AgentLoopOptions<'_>,
    mut on_event: impl FnMut(LoopEvent),
) -> AgentRunResult {
    let mut messages = context.messages.clone();
    let (reason, steps) = run_steps(model, tools, &options, &mut messages, &mut on_event);
    on_event(LoopEvent::TurnEnd { reason });
    AgentRunResult {
        reason,
        steps,
        messages,
    }
}

/// The loop itself. Every way out returns why and how many model calls were
/// made; the caller emits `turn_end`, so there is exactly one.
fn run_steps(
    model: &impl Model,
    tools: &ToolRegistry,
    options: &AgentLoopOptions<'_>,
    messages: &mut Vec<AgentMessage>,
    on_event: &mut dyn FnMut(LoopEvent),
) -> (RunReason, usize) {
    let max_steps = options.max_steps.unwrap_or(DEFAULT_MAX_STEPS);
    for step in 1..=max_steps {
        // `step - 1` model calls are done; the `step`th has not started.
        if is_set(&options.signal) {
            return (RunReason::Aborted, step - 1);
        }
        let Some(assistant) = request(model, tools, messages, &options.signal, on_event) else {
            return (RunReason::Error, step);
        };
        messages.push(AgentMessage::Assistant(assistant.clone()));
        on_event(LoopEvent::AssistantMessage {
            message: assistant.clone(),
        });
        let calls = tool_calls(&assistant);
        let skip = match (assistant.stop_reason, calls.is_empty()) {
            (StopReason::ToolUse, false) => None,
            (StopReason::Stop, true) => return (RunReason::Stop, step),
            (StopReason::ToolUse, true) => return (RunReason::Error, step),
            (StopReason::Stop, false) => Some(("unexpected-stop", RunReason::Error)),
            (StopReason::Length, _) => Some(("length", RunReason::Length)),
            (StopReason::Error, _) => Some(("error", RunReason::Error)),
            (StopReason::Aborted, _) => Some(("aborted", RunReason::Aborted)),
        };
        if let Some((skipped, reason)) = skip {
            for call in &calls {
                let result = skipped_call(call, skipped);
                messages.push(AgentMessage::ToolResult(result.clone()));
                on_event(LoopEvent::ToolSkipped { result });
            }
            return (reason, step);
        }
        let results = run_tools(&calls, tools, options, on_event);
        messages.extend(results.into_iter().map(AgentMessage::ToolResult));
        if is_set(&options.signal) {
            return (RunReason::Aborted, step);
        }
    }
    (RunReason::MaxSteps, max_steps)
}

/// One model call over the transcript so far and the registry's tools
/// (never the caller's stale `tools`). Forwards its events and returns its
/// final message; `None` if the stream ended without one, which is the
/// model's protocol error.
fn request(
    model: &impl Model,
    tools: &ToolRegistry,
    messages: &[AgentMessage],
    signal: &Option<Arc<AtomicBool>>,
    on_event: &mut dyn FnMut(LoopEvent),
) -> Option<AssistantMessage> {
    let context = AgentContext {
        messages: messages.to_vec(),
        tools: Some(tools.definitions()),
    };
    let stream = model.stream(
        &context,
        StreamOptions {
            signal: signal.clone(),
        },
    );
    while let Some(event) = block_on(poll_fn(|cx| stream.poll_next(cx))) {
        on_event(LoopEvent::ModelEvent { event });
    }
    block_on(poll_fn(|cx| stream.poll_result(cx))).ok()
}

/// Runs the calls, each on its own thread, at most [`MAX_PARALLEL_TOOLS`]
/// at once, and returns their results in call order.
///
/// Two timelines: the tool threads run and finish in any order; this thread
/// forwards their events (`tool_progress`, `tool_end`) to `on_event` as they
/// arrive through a channel, so `on_event` never leaves this thread, and
/// starts the next call whenever one ends. It stops forwarding once every
/// call has sent its `tool_end`. The scope then joins the threads in call
/// order: that order, not the order they ended in, is the transcript's. A
/// thread that cannot be started (the system is out of threads) gives its
/// call a failed result, like any other failure.
fn run_tools(
    calls: &[ToolCall],
    tools: &ToolRegistry,
    options: &AgentLoopOptions<'_>,
    on_event: &mut dyn FnMut(LoopEvent),
) -> Vec<ToolResultMessage> {
    for call in calls {
        on_event(LoopEvent::ToolStart { call: call.clone() });
    }
    let (events, arrived) = mpsc::channel();
    thread::scope(|scope| {
        let mut started = Vec::with_capacity(calls.len());
        let (mut running, mut ended) = (0, 0);
        while ended < calls.len() {
            while running < MAX_PARALLEL_TOOLS && started.len() < calls.len() {
                let call = &calls[started.len()];
                let events = events.clone();
                let thread = thread::Builder::new()
                    .spawn_scoped(scope, move || run_tool(call, tools, options, events))
                    .map_err(|error| {
                        failed_result(call, &format!("could not start a thread: {error}"))
                    });
                match &thread {
                    Ok(_) => running += 1,
                    Err(result) => {
                        on_event(LoopEvent::ToolEnd {
                            result: result.clone(),
                        });
                        ended += 1;
                    }
                }
                started.push(thread);
            }
            if running == 0 {
                continue; // every call left failed to start
            }
            let Ok(event) = arrived.recv() else { break };
            if matches!(event, LoopEvent::ToolEnd { .. }) {
                (running, ended) = (running - 1, ended + 1);
            }
            on_event(event);
        }
        started
            .into_iter()
            .map(|thread| match thread {
                Ok(thread) => thread.join().expect("run_tool catches every panic"),
                Err(failed) => failed,
            })
            .collect()
    })
}

/// One call, on its own thread: progress and the end go to `events`.
/// Chapter 06's executor answers every outcome with a result; an injected
/// one may fail or panic, which gives a failed result with its message.
fn run_tool(
    call: &ToolCall,
    tools: &ToolRegistry,
    options: &AgentLoopOptions<'_>,
    events: Sender<LoopEvent>,
) -> ToolResultMessage {
    let progress = events.clone();
    let call_id = call.id.clone();
    let call_options = ToolCallOptions {
        signal: options.signal.clone(),
        report_progress: Some(Arc::new(move |content| {
            // The run may be over if the tool reports late; nobody listens then.
            let _ = progress.send(LoopEvent::ToolProgress {
                call_id: call_id.clone(),
                content,
            });
        })),
    };
    let result = match options.execute_tool_call {
        None => execute_tool_call(call, tools, call_options),
        Some(executor) => match catch_failure(|| executor(call, call_options)) {
            Ok(result) => result,
            Err(message) => failed_result(call, &message),
        },
    };
    let _ = events.send(LoopEvent::ToolEnd {
        result: result.clone(),
    });
    result
}

/// The calls of a message, in order.
fn tool_calls(message: &AssistantMessage) -> Vec<ToolCall> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call.clone()),
            AssistantContent::Text(_) => None,
        })
        .collect()
}

/// The result of a call that was not run, and why: `length` (its arguments
/// may be cut off), `error` or `aborted` (the model call failed), or
/// `unexpected-stop` (the model said it was done and asked for a tool).
fn skipped_call(call: &ToolCall, reason: &str) -> ToolResultMessage {
    let explanation = match reason {
        "length" => "the model response was truncated".to_string(),
        "unexpected-stop" => "the model returned stop with a tool call".to_string(),
        other => format!("the model turn ended with {other}"),
    };
    ToolResultMessage {
        content: vec![text(format!(
            "Tool call was not executed because {explanation}."
        ))],
        details: Some(json!({ "skipped": true, "reason": reason })),
        ..failed_result(call, reason)
    }
}

fn is_set(signal: &Option<Arc<AtomicBool>>) -> bool {
    signal
        .as_ref()
        .is_some_and(|signal| signal.load(Ordering::SeqCst))
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

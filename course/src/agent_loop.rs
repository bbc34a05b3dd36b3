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
//!   [`MAX_PARALLEL_TOOLS`], 8, at a time), except calls whose tools name
//!   the same serial key (chapter 08: edits of one file), which run one
//!   after another in call order; events reach the caller as they happen,
//!   but the results go into the transcript in call order. A message that
//!   must not run its calls (`length`, `error`, `aborted`, or `stop`
//!   carrying calls) still pairs each with a skipped result.
//! * **One end.** Every way out returns its reason to one place, which
//!   emits the single `turn_end`.
//!
//! Cancellation is cooperative: the signal stops the loop from *starting*
//! work (it is checked before each model call, after each batch of tools
//! and after a text answer) and is handed to the model and the tools, which
//! have to look at it themselves. A running thread cannot be stopped from
//! outside.
//!
//! Chapter 09 makes the loop a part of a longer-lived agent:
//!
//! * **A failed model call is a message.** A model whose `stream` panics
//!   gives an `error` (or `aborted`) assistant message inside the loop, so
//!   the results of tools that already ran stay in the transcript.
//! * **A result answers its call.** An injected executor's result that names
//!   another call becomes a failed result paired with this one.
//! * **Two boundaries** ([`Queues`]) where messages a user added while the
//!   run goes may enter the transcript: after a fully paired batch of tools,
//!   and after a text answer, which then is not the end. A signal set
//!   meanwhile wins: the run ends `aborted` and nothing queued goes in.

use std::collections::HashMap;
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
    StopReason, StreamOptions, TextContent, ToolCall, ToolResultMessage, UserMessage,
    assistant_message, text,
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

/// Where a run takes the messages a user adds while it runs: at the two
/// boundaries where a message cannot split a call from its result. Each
/// function hands over what goes in now (chapter 09's agent decides which
/// of its queues that is).
#[derive(Clone, Copy)]
pub struct Queues<'a> {
    /// After a fully paired batch of tools.
    pub after_tools: &'a dyn Fn() -> Vec<UserMessage>,
    /// After a text answer; nothing means the run stops.
    pub after_answer: &'a dyn Fn() -> Vec<UserMessage>,
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
    on_event: impl FnMut(LoopEvent),
) -> AgentRunResult {
    let nothing = Vec::new;
    let queues = Queues {
        after_tools: &nothing,
        after_answer: &nothing,
    };
    run_agent_loop_with_queues(model, tools, context, options, queues, on_event)
}

/// [`run_agent_loop`], taking messages from `queues` at the boundaries
/// where a message may enter the transcript: never between a call and its
/// result. (A new function, not new fields of [`AgentLoopOptions`]: a field
/// more would break every literal that names all of them, chapter 07's
/// tests among them.)
pub fn run_agent_loop_with_queues(
    model: &impl Model,
    tools: &ToolRegistry,
    context: &AgentContext,
    options: AgentLoopOptions<'_>,
    queues: Queues<'_>,
    mut on_event: impl FnMut(LoopEvent),
) -> AgentRunResult {
    let mut messages = context.messages.clone();
    let (reason, steps) = run_steps(model, tools, &options, queues, &mut messages, &mut on_event);
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
    queues: Queues<'_>,
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
            (StopReason::Stop, true) => {
                // A model may ignore the signal and answer anyway.
                if is_set(&options.signal) {
                    return (RunReason::Aborted, step);
                }
                let next = (queues.after_answer)();
                if next.is_empty() {
                    return (RunReason::Stop, step);
                }
                append(messages, next);
                continue;
            }
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
        // Every call has its result: a message cannot split a pair now.
        append(messages, (queues.after_tools)());
    }
    (RunReason::MaxSteps, max_steps)
}

fn append(messages: &mut Vec<AgentMessage>, users: Vec<UserMessage>) {
    messages.extend(users.into_iter().map(AgentMessage::User));
}

/// One model call over the transcript so far and the registry's tools
/// (never the caller's stale `tools`). Forwards its events and returns its
/// final message; `None` if the stream ended without one, which is the
/// model's protocol error. A model whose `stream` panics failed before it
/// could answer: that is a failed message, not the end of the loop.
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
    let options = StreamOptions {
        signal: signal.clone(),
    };
    let stream = match catch_failure(|| Ok(model.stream(&context, options))) {
        Ok(stream) => stream,
        Err(message) => return Some(failed_call(&message, signal)),
    };
    while let Some(event) = block_on(poll_fn(|cx| stream.poll_next(cx))) {
        on_event(LoopEvent::ModelEvent { event });
    }
    block_on(poll_fn(|cx| stream.poll_result(cx))).ok()
}

/// The message of a model call that failed with `message`: `aborted` if the
/// signal was set by then, `error` otherwise.
fn failed_call(message: &str, signal: &Option<Arc<AtomicBool>>) -> AssistantMessage {
    let reason = if is_set(signal) {
        StopReason::Aborted
    } else {
        StopReason::Error
    };
    AssistantMessage {
        error_message: Some(message.to_string()),
        ..assistant_message(Vec::new(), reason)
    }
}

/// Runs the calls on threads and returns their results in call order.
///
/// Calls whose tools name the same serial key (chapter 08: a write and an
/// edit of one file) are one job: one thread runs them one after another,
/// in call order, so the second edit sees the first one's file. Every other
/// call is a job of its own. At most [`MAX_PARALLEL_TOOLS`] jobs run at
/// once; the end of a job's last call starts the next job.
///
/// Two timelines: the jobs run and finish in any order; this thread
/// forwards their events (`tool_progress`, `tool_end`) to `on_event` as they
/// arrive through a channel, so `on_event` never leaves this thread. Each
/// event carries its call's index, and `tool_end` puts the result in that
/// call's place: the transcript's order is the calls' order, not the order
/// they ended in. A thread that cannot be started (the system is out of
/// threads) gives each of its calls a failed result, like any other failure.
fn run_tools(
    calls: &[ToolCall],
    tools: &ToolRegistry,
    options: &AgentLoopOptions<'_>,
    on_event: &mut dyn FnMut(LoopEvent),
) -> Vec<ToolResultMessage> {
    for call in calls {
        on_event(LoopEvent::ToolStart { call: call.clone() });
    }
    let (jobs, job_of) = jobs(calls, tools);
    let mut left: Vec<usize> = jobs.iter().map(Vec::len).collect();
    let mut results = vec![None; calls.len()];
    let (events, arrived) = mpsc::channel();
    thread::scope(|scope| {
        let (mut started, mut running, mut ended) = (0, 0, 0);
        while ended < calls.len() {
            while running < MAX_PARALLEL_TOOLS && started < jobs.len() {
                let job = &jobs[started];
                let sender = events.clone();
                let spawned = thread::Builder::new().spawn_scoped(scope, move || {
                    for &index in job {
                        run_tool(index, &calls[index], tools, options, &sender);
                    }
                });
                if let Err(error) = spawned {
                    for &index in job {
                        let message = format!("could not start a thread: {error}");
                        let result = failed_result(&calls[index], &message);
                        let _ = events.send((index, LoopEvent::ToolEnd { result }));
                    }
                }
                (started, running) = (started + 1, running + 1);
            }
            let (index, event) = arrived.recv().expect("this thread holds a sender");
            if let LoopEvent::ToolEnd { result } = &event {
                results[index] = Some(result.clone());
                ended += 1;
                left[job_of[index]] -= 1;
                if left[job_of[index]] == 0 {
                    running -= 1;
                }
            }
            on_event(event);
        }
    });
    results
        .into_iter()
        .map(|result| result.expect("every call ended"))
        .collect()
}

/// The jobs of a batch, numbered in the order of their first call: the
/// calls of each job, and the job of each call. Calls whose tools name the
/// same serial key share a job; an unknown tool or arguments that do not
/// parse name no key (the call fails on its own).
fn jobs(calls: &[ToolCall], tools: &ToolRegistry) -> (Vec<Vec<usize>>, Vec<usize>) {
    let (mut jobs, mut job_of) = (Vec::<Vec<usize>>::new(), Vec::new());
    let mut keyed = HashMap::new();
    for (index, call) in calls.iter().enumerate() {
        let key = tools
            .get(&call.name)
            .and_then(|tool| tool.serial_key(&call.arguments));
        let job = key.map_or(jobs.len(), |key| *keyed.entry(key).or_insert(jobs.len()));
        if job == jobs.len() {
            jobs.push(Vec::new());
        }
        jobs[job].push(index);
        job_of.push(job);
    }
    (jobs, job_of)
}

/// Call `index`, on its job's thread: progress and the end go to `events`.
/// Chapter 06's executor answers every outcome with a result; an injected
/// one may fail or panic, which gives a failed result with its message, or
/// answer another call, which gives a failed result paired with this one.
fn run_tool(
    index: usize,
    call: &ToolCall,
    tools: &ToolRegistry,
    options: &AgentLoopOptions<'_>,
    events: &Sender<(usize, LoopEvent)>,
) {
    let progress = events.clone();
    let call_id = call.id.clone();
    let call_options = ToolCallOptions {
        signal: options.signal.clone(),
        report_progress: Some(Arc::new(move |content| {
            // The run may be over if the tool reports late; nobody listens then.
            let event = LoopEvent::ToolProgress {
                call_id: call_id.clone(),
                content,
            };
            let _ = progress.send((index, event));
        })),
    };
    let result = match options.execute_tool_call {
        None => execute_tool_call(call, tools, call_options),
        Some(executor) => match catch_failure(|| executor(call, call_options)) {
            Ok(result) if result.tool_call_id == call.id => result,
            Ok(_) => failed_result(call, "tool result is not paired with this call"),
            Err(message) => failed_result(call, &message),
        },
    };
    let _ = events.send((index, LoopEvent::ToolEnd { result }));
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

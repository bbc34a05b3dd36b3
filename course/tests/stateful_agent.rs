//! Chapter 09's focused test: the stateful agent, twelve tests ported one
//! for one from the original course.
//!
//! Steps filter them by lab: `lab9_1` (2 tests), `lab9_2` (3), `lab9_3` (2),
//! `lab9_4` (2), `lab9_5` (3); no filter runs all 12.
//!
//! `prompt` blocks its thread, so a run that the test must act on while it
//! goes is started on a helper thread and must end within three seconds: an
//! agent that hangs fails its test instead of the whole run. Where the
//! original lets a run start synchronously and act on it next, a channel (a
//! gate) tells the test the run has got that far; nothing sleeps.
//!
//! The original builds its agents with chapter 08's coding tools over a
//! temporary folder; no assertion depends on those tools (every call here is
//! answered by an injected executor), so the agents here get an empty
//! registry.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use course::agent::{
    Agent, AgentError, AgentEvent, AgentOptions, AgentState, AgentStatus, PromptOptions,
    SystemPatch, reduce_agent_state,
};
use course::agent_loop::{AgentRunResult, LoopEvent, RunReason};
use course::assistant_stream::AssistantMessageEventStream;
use course::event_stream::Producer;
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::tool::{ToolExecutor, ToolRegistry};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, DoneReason, ErrorReason, Model,
    ModelEvent, Sections, StopReason, StreamOptions, SystemMessage, ToolCall, ToolResultMessage,
    assistant_message, current_system_prompt, text, text_of, user_message,
};
use serde_json::json;

const PATIENCE: Duration = Duration::from_secs(3);

fn probe(id: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: "probe".to_string(),
        arguments: json!({}),
        raw_arguments: None,
    }
}

fn result_for(call: &ToolCall, value: &str, is_error: bool) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![text(value)],
        details: None,
        is_error,
        timestamp: 1,
    }
}

fn answer(value: &str) -> AssistantMessage {
    assistant_message(vec![text(value).into()], StopReason::Stop)
}

fn tool_use(calls: &[ToolCall]) -> ScriptedTurn {
    let content = calls.iter().cloned().map(AssistantContent::from).collect();
    assistant_message(content, StopReason::ToolUse).into()
}

fn initial_state(messages: Vec<AgentMessage>) -> AgentState {
    AgentState {
        messages,
        ..AgentState::default()
    }
}

fn loop_event(run_id: u64, event: LoopEvent) -> AgentEvent {
    AgentEvent::Loop { run_id, event }
}

fn roles(messages: &[AgentMessage]) -> Vec<&'static str> {
    messages
        .iter()
        .map(|message| match message {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
        })
        .collect()
}

fn all_text(messages: &[AgentMessage]) -> String {
    messages.iter().map(text_of).collect::<Vec<_>>().join("\n")
}

fn system_count(messages: &[AgentMessage]) -> usize {
    roles(messages)
        .iter()
        .filter(|role| **role == "system")
        .count()
}

/// Chapter 04's scripted model counts its calls in a `Cell`, for one thread.
/// An agent is shared between threads, so its model must be `Sync`: the
/// tests hand it the scripted model behind a mutex, locked for the
/// synchronous part of each call only.
struct Scripted(Mutex<ScriptedModel>);

impl Scripted {
    fn new(turns: Vec<ScriptedTurn>) -> Self {
        Scripted(Mutex::new(ScriptedModel::new(turns)))
    }

    fn answers(values: &[&str]) -> Self {
        Scripted::new(values.iter().map(|value| answer(value).into()).collect())
    }

    fn requests(&self) -> Vec<AgentContext> {
        self.0.lock().unwrap().requests()
    }
}

impl Model for Scripted {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        self.0.lock().unwrap().stream(context, options)
    }
}

/// A model whose calls the test completes by hand, each when it chooses.
/// (The original's manual model can also answer an abort; it is handed one
/// only where no test aborts it, so this one leaves the signal alone.)
#[derive(Default)]
struct ManualModel {
    calls: Mutex<ManualCalls>,
    called: Condvar,
}

#[derive(Default)]
struct ManualCalls {
    requests: Vec<AgentContext>,
    producers: Vec<Option<Producer<ModelEvent, AssistantMessage>>>,
    /// Completions asked for before their call was made.
    early: Vec<(usize, AssistantMessage)>,
}

impl Model for ManualModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        let mut calls = self.calls.lock().unwrap();
        let index = calls.requests.len();
        calls.requests.push(context.clone());
        match calls.early.iter().position(|(early, _)| *early == index) {
            Some(position) => {
                let (_, message) = calls.early.remove(position);
                play(&stream.producer(), message);
                calls.producers.push(None);
            }
            None => calls.producers.push(Some(stream.producer())),
        }
        self.called.notify_all();
        stream
    }
}

impl ManualModel {
    /// Plays `message` as the answer of call `index`: now, or as soon as
    /// that call is made.
    fn complete(&self, index: usize, message: AssistantMessage) {
        let mut calls = self.calls.lock().unwrap();
        match calls.producers.get_mut(index).and_then(Option::take) {
            Some(producer) => play(&producer, message),
            None => calls.early.push((index, message)),
        }
    }

    /// Waits until `count` calls were made.
    fn wait_for_calls(&self, count: usize) {
        let calls = self.calls.lock().unwrap();
        let (_calls, waited) = self
            .called
            .wait_timeout_while(calls, PATIENCE, |calls| calls.requests.len() < count)
            .unwrap();
        assert!(!waited.timed_out(), "三秒内模型没有收到第 {count} 次请求");
    }

    fn requests(&self) -> Vec<AgentContext> {
        self.calls.lock().unwrap().requests.clone()
    }
}

/// `start`, a `text_delta` per text block, then `done` or `error`.
fn play(producer: &Producer<ModelEvent, AssistantMessage>, message: AssistantMessage) {
    let mut partial = AssistantMessage {
        content: Vec::new(),
        stop_reason: StopReason::Stop,
        ..message.clone()
    };
    let _ = producer.push(ModelEvent::Start {
        partial: partial.clone(),
    });
    for (content_index, block) in message.content.iter().enumerate() {
        if let AssistantContent::Text(block) = block {
            partial.content.push(block.clone().into());
            let _ = producer.push(ModelEvent::TextDelta {
                content_index,
                delta: block.text.clone(),
                partial: partial.clone(),
            });
        }
    }
    let terminal = match message.stop_reason {
        StopReason::Error => ModelEvent::Error {
            reason: ErrorReason::Error,
            error: message,
        },
        StopReason::Aborted => ModelEvent::Error {
            reason: ErrorReason::Aborted,
            error: message,
        },
        StopReason::Stop => ModelEvent::Done {
            reason: DoneReason::Stop,
            message,
        },
        StopReason::Length => ModelEvent::Done {
            reason: DoneReason::Length,
            message,
        },
        StopReason::ToolUse => ModelEvent::Done {
            reason: DoneReason::ToolUse,
            message,
        },
    };
    let _ = producer.push(terminal);
}

/// Records the signal of each call, then lets the scripted model answer.
struct SignalCapturingModel {
    inner: Scripted,
    signals: Mutex<Vec<Option<Arc<AtomicBool>>>>,
}

impl Model for SignalCapturingModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        self.signals.lock().unwrap().push(options.signal.clone());
        self.inner.stream(context, options)
    }
}

/// A model whose second call fails before it answers: its `stream` panics,
/// as the original's throws.
struct PanicOnSecondRequestModel {
    requests: Mutex<Vec<AgentContext>>,
    scripted: Scripted,
}

impl PanicOnSecondRequestModel {
    fn new(call: ToolCall) -> Self {
        PanicOnSecondRequestModel {
            requests: Mutex::default(),
            scripted: Scripted::new(vec![tool_use(&[call]), answer("clean retry").into()]),
        }
    }
}

impl Model for PanicOnSecondRequestModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        let count = {
            let mut requests = self.requests.lock().unwrap();
            requests.push(context.clone());
            requests.len()
        };
        if count == 2 {
            panic!("provider stream failed");
        }
        self.scripted.stream(context, options)
    }
}

fn new_agent<M: Model>(model: M) -> Arc<Agent<M>> {
    Arc::new(Agent::new(AgentOptions::new(model, ToolRegistry::new())))
}

fn agent_with_executor<M: Model>(model: M, executor: Box<ToolExecutor>) -> Arc<Agent<M>> {
    Arc::new(Agent::new(AgentOptions {
        tool_executor: Some(executor),
        ..AgentOptions::new(model, ToolRegistry::new())
    }))
}

fn plain() -> PromptOptions {
    PromptOptions::default()
}

/// A prompt running on a helper thread: the original's pending promise.
struct Pending(Receiver<Result<AgentRunResult, AgentError>>);

fn start<M: Model + Send + Sync + 'static>(agent: &Arc<Agent<M>>, value: &str) -> Pending {
    let (report, outcome) = mpsc::channel();
    let (agent, value) = (Arc::clone(agent), value.to_string());
    thread::spawn(move || {
        let _ = report.send(agent.prompt(&value, plain()));
    });
    Pending(outcome)
}

impl Pending {
    fn finish(self) -> Result<AgentRunResult, AgentError> {
        match self.0.recv_timeout(PATIENCE) {
            Ok(outcome) => outcome,
            Err(RecvTimeoutError::Timeout) => {
                panic!("prompt 三秒内没有结束：是不是在等一个永远不会来的事件？")
            }
            Err(RecvTimeoutError::Disconnected) => panic!("prompt panic 了（见上面的输出）"),
        }
    }
}

fn wait_for(signal: &Receiver<()>, what: &str) {
    signal
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("三秒内没有等到：{what}"));
}

/// Waits for a gate the test opens, at most three seconds.
fn pass(gate: &Mutex<Receiver<()>>) {
    gate.lock()
        .unwrap()
        .recv_timeout(PATIENCE)
        .expect("测试没有打开这道门");
}

#[test]
fn lab9_1_the_reducer_derives_streaming_text_pending_tools_and_the_end_state() {
    let mut previous_message = user_message("history");
    let original = initial_state(vec![AgentMessage::User(previous_message.clone())]);
    let original_snapshot = original.clone();
    let mut first_message = user_message("start");
    let running = reduce_agent_state(
        original.clone(),
        &AgentEvent::RunStart {
            run_id: 1,
            message: first_message.clone(),
            system: None,
        },
    );
    assert_eq!(running.status, AgentStatus::Running { run_id: 1 });
    assert_eq!(
        running.messages,
        [
            AgentMessage::User(previous_message.clone()),
            AgentMessage::User(first_message.clone()),
        ]
    );
    // The reducer owns what it returns and only reads the event, so these
    // hold by its signature in Rust; kept from the original.
    assert_eq!(original, original_snapshot);
    previous_message.content[0].text = "mutated old history".to_string();
    first_message.content[0].text = "mutated after reduce".to_string();
    assert_eq!(text_of(&running.messages[0]), "history");
    assert_eq!(text_of(&running.messages[1]), "start");

    let partial = answer("hel");
    let streamed = reduce_agent_state(
        running,
        &loop_event(
            1,
            LoopEvent::ModelEvent {
                event: ModelEvent::TextDelta {
                    content_index: 0,
                    delta: "hel".to_string(),
                    partial,
                },
            },
        ),
    );
    assert_eq!(streamed.streaming_text, "hel");

    let call = probe("call-1");
    let started = reduce_agent_state(
        streamed.clone(),
        &loop_event(1, LoopEvent::ToolStart { call: call.clone() }),
    );
    assert_eq!(started.pending_tool_call_ids, ["call-1"]);
    assert!(streamed.pending_tool_call_ids.is_empty());
    let ended = reduce_agent_state(
        started,
        &loop_event(
            1,
            LoopEvent::ToolEnd {
                result: result_for(&call, "done", false),
            },
        ),
    );
    assert!(ended.pending_tool_call_ids.is_empty());
    let assistant_ended = reduce_agent_state(
        ended,
        &loop_event(
            1,
            LoopEvent::AssistantMessage {
                message: answer("hello"),
            },
        ),
    );
    assert_eq!(assistant_ended.streaming_text, "");

    let mut final_messages = vec![
        AgentMessage::User(user_message("start")),
        AgentMessage::Assistant(answer("hello")),
    ];
    let idle = reduce_agent_state(
        assistant_ended,
        &AgentEvent::RunEnd {
            run_id: 1,
            result: AgentRunResult {
                reason: RunReason::Stop,
                messages: final_messages.clone(),
                steps: 1,
            },
        },
    );
    assert_eq!(idle.status, AgentStatus::Idle, "idle，没有当前 run");
    assert_eq!(idle.last_reason, Some(RunReason::Stop));
    assert_eq!(idle.messages, final_messages);
    if let AgentMessage::User(input) = &mut final_messages[0] {
        input.content[0].text = "mutated final input".to_string();
    }
    assert_eq!(text_of(&idle.messages[0]), "start");
}

#[test]
fn lab9_1_the_reducer_ignores_late_events_of_another_run() {
    let current = reduce_agent_state(
        initial_state(Vec::new()),
        &AgentEvent::RunStart {
            run_id: 2,
            message: user_message("current"),
            system: None,
        },
    );
    let stale_loop = reduce_agent_state(
        current.clone(),
        &loop_event(
            1,
            LoopEvent::ModelEvent {
                event: ModelEvent::TextDelta {
                    content_index: 0,
                    delta: "STALE".to_string(),
                    partial: answer("STALE"),
                },
            },
        ),
    );
    let stale_end = reduce_agent_state(
        current.clone(),
        &AgentEvent::RunEnd {
            run_id: 1,
            result: AgentRunResult {
                reason: RunReason::Stop,
                messages: vec![AgentMessage::User(user_message("stale"))],
                steps: 1,
            },
        },
    );

    assert_eq!(stale_loop, current);
    assert_eq!(stale_end, current);
    assert_eq!(current.streaming_text, "");
    assert_eq!(current.status, AgentStatus::Running { run_id: 2 });
}

#[test]
fn lab9_2_the_busy_guard_refuses_a_parallel_prompt_and_runs_in_turn_share_the_transcript() {
    let agent = new_agent(Scripted::answers(&["first", "second"]));
    // Holds run 1 at its start while the test tries a second prompt.
    let (started, run_started) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    let gate = Mutex::new(gate);
    agent.subscribe(move |event| {
        if let AgentEvent::RunStart { run_id: 1, .. } = event {
            let _ = started.send(());
            pass(&gate);
        }
    });

    let first = start(&agent, "one");
    wait_for(&run_started, "run 1 开始");
    let parallel = agent.prompt("parallel", plain());
    assert_eq!(parallel, Err(AgentError::Busy));
    assert!(parallel.unwrap_err().to_string().contains("Agent is busy"));
    open.send(()).unwrap();
    assert_eq!(first.finish().unwrap().reason, RunReason::Stop);
    assert_eq!(
        agent.prompt("two", plain()).unwrap().reason,
        RunReason::Stop
    );

    let requests = agent.model().requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(roles(&requests[1].messages), ["user", "assistant", "user"]);
    assert_eq!(
        roles(&agent.state().messages),
        ["user", "assistant", "user", "assistant"]
    );
    assert_eq!(agent.state().status, AgentStatus::Idle);
    assert_eq!(agent.state().last_reason, Some(RunReason::Stop));

    let call = probe("write-before-provider-error");
    let side_effects = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&side_effects);
    let recovering = agent_with_executor(
        PanicOnSecondRequestModel::new(call),
        Box::new(move |call, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(result_for(call, "write committed", false))
        }),
    );
    let run_ends = Arc::new(Mutex::new(Vec::new()));
    let ends = Arc::clone(&run_ends);
    recovering.subscribe(move |event| {
        if let AgentEvent::RunEnd { run_id, .. } = event {
            ends.lock().unwrap().push(*run_id);
        }
    });

    let failed = recovering.prompt("change a file", plain()).unwrap();
    assert_eq!(failed.reason, RunReason::Error);
    assert_eq!(side_effects.load(Ordering::SeqCst), 1);
    assert_eq!(
        roles(&failed.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert!(text_of(&failed.messages[2]).contains("write committed"));
    let Some(AgentMessage::Assistant(failure)) = failed.messages.last() else {
        panic!("最后一条是失败的 assistant");
    };
    assert!(
        failure
            .error_message
            .as_deref()
            .unwrap_or_default()
            .contains("provider stream failed")
    );
    assert_eq!(recovering.state().status, AgentStatus::Idle);
    assert_eq!(*run_ends.lock().unwrap(), [1]);
    assert_eq!(
        recovering.prompt("retry", plain()).unwrap().reason,
        RunReason::Stop
    );
    assert_eq!(*run_ends.lock().unwrap(), [1, 2]);
}

#[test]
fn lab9_2_a_run_started_by_a_run_end_listener_is_not_touched_by_the_old_cleanup() {
    let agent = new_agent(ManualModel::default());
    let (report_second, second) = mpsc::channel();
    let handle = Arc::downgrade(&agent);
    agent.subscribe(move |event| {
        if let AgentEvent::RunEnd { run_id: 1, .. } = event {
            let agent = handle.upgrade().expect("agent 还在");
            // Rust's prompt blocks, so the listener starts it on a thread of
            // its own and returns once the run is going: the original's
            // prompt has started its run when it hands back the promise.
            let _ = report_second.send(start(&agent, "second"));
            agent.model().wait_for_calls(2);
        }
    });
    let lifecycle = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&lifecycle);
    agent.subscribe(move |event| match event {
        AgentEvent::RunStart { run_id, .. } => {
            seen.lock().unwrap().push(format!("run_start:{run_id}"))
        }
        AgentEvent::RunEnd { run_id, .. } => seen.lock().unwrap().push(format!("run_end:{run_id}")),
        AgentEvent::Loop { .. } => {}
    });

    let first_prompt = start(&agent, "first");
    agent.model().complete(0, answer("first done"));
    assert_eq!(first_prompt.finish().unwrap().reason, RunReason::Stop);
    let second_prompt = second
        .recv_timeout(PATIENCE)
        .expect("run_end listener 启动了第二次 prompt");
    agent.model().wait_for_calls(2);
    let requests = agent.model().requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(roles(&requests[1].messages), ["user", "assistant", "user"]);
    assert_eq!(text_of(requests[1].messages.last().unwrap()), "second");

    // Should the third prompt be wrongly admitted, its call is answered
    // rather than left waiting.
    agent.model().complete(2, answer("wrongly admitted"));
    let third = agent.prompt("parallel third", plain());
    assert_eq!(
        third,
        Err(AgentError::Busy),
        "run 2 还在运行，第三次 prompt 必须被拒绝"
    );
    assert!(third.unwrap_err().to_string().contains("Agent is busy"));

    agent.model().complete(1, answer("second done"));
    assert_eq!(second_prompt.finish().unwrap().reason, RunReason::Stop);
    assert_eq!(agent.state().status, AgentStatus::Idle);
    assert_eq!(
        *lifecycle.lock().unwrap(),
        ["run_start:1", "run_end:1", "run_start:2", "run_end:2"]
    );
}

#[test]
fn lab9_2_system_prompt_leads_the_transcript_and_a_prompt_patch_lands_before_the_user_message() {
    let agent = Arc::new(Agent::new(AgentOptions {
        system_prompt: Some("BASE".to_string()),
        ..AgentOptions::new(
            Scripted::answers(&["first", "second", "third"]),
            ToolRegistry::new(),
        )
    }));
    assert_eq!(
        agent.state().messages,
        [AgentMessage::System(SystemMessage {
            content: "BASE".to_string(),
            sections: None,
            timestamp: 0,
        })]
    );
    assert_eq!(agent.system_prompt().as_deref(), Some("BASE"));
    let starts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&starts);
    agent.subscribe(move |event| {
        if let AgentEvent::RunStart { .. } = event {
            seen.lock().unwrap().push(event.clone());
        }
    });

    let plain_run = agent.prompt("one", plain()).unwrap();
    assert_eq!(roles(&plain_run.messages), ["system", "user", "assistant"]);
    let requests = agent.model().requests();
    assert_eq!(
        current_system_prompt(&requests[0].messages).as_deref(),
        Some("BASE")
    );
    let request = serde_json::to_value(&requests[0]).unwrap();
    let keys: Vec<&String> = request.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["messages", "tools"], "请求里没有单独的 systemPrompt");

    let patched = agent
        .prompt(
            "two",
            PromptOptions {
                system: Some(SystemPatch {
                    content: String::new(),
                    sections: Some(Sections::from([("rules", Some("RULE v1"))])),
                }),
            },
        )
        .unwrap();
    assert_eq!(
        roles(&patched.messages),
        ["system", "user", "assistant", "system", "user", "assistant"]
    );
    let AgentMessage::System(patch) = &patched.messages[3] else {
        panic!("第四条是 system 补丁");
    };
    assert_eq!(patch.content, "");
    assert_eq!(
        patch.sections,
        Some(Sections::from([("rules", Some("RULE v1"))]))
    );
    assert_eq!(agent.system_prompt().as_deref(), Some("BASE\n\nRULE v1"));
    let requests = agent.model().requests();
    assert_eq!(
        current_system_prompt(&requests[1].messages).as_deref(),
        Some("BASE\n\nRULE v1")
    );
    assert_eq!(
        system_count(&requests[1].messages),
        2,
        "补丁留在 transcript 原位，不折叠、不改写开头 system message"
    );
    assert_eq!(
        agent.state().messages[..3],
        plain_run.messages[..],
        "已有前缀不被改写"
    );
    let second_start = starts.lock().unwrap()[1].clone();
    let AgentEvent::RunStart { system, .. } = &second_start else {
        panic!("第二个 run_start");
    };
    assert_eq!(
        system.as_ref().and_then(|system| system.sections.clone()),
        Some(Sections::from([("rules", Some("RULE v1"))]))
    );
    assert_eq!(
        roles(&reduce_agent_state(initial_state(Vec::new()), &second_start).messages),
        ["system", "user"],
        "reducer 把 system 补丁放在用户消息之前"
    );

    let removed = agent
        .prompt(
            "three",
            PromptOptions {
                system: Some(SystemPatch {
                    content: "Prefer small diffs.".to_string(),
                    sections: Some(Sections::from([("rules", None)])),
                }),
            },
        )
        .unwrap();
    assert_eq!(
        agent.system_prompt().as_deref(),
        Some("BASE\n\nPrefer small diffs.")
    );
    assert_eq!(system_count(&removed.messages), 3);
    assert_eq!(
        current_system_prompt(&agent.model().requests()[2].messages).as_deref(),
        Some("BASE\n\nPrefer small diffs.")
    );

    let bare = agent_with_system(None);
    assert_eq!(bare.state().messages, []);
    assert_eq!(bare.system_prompt(), None);
    let empty = agent_with_system(Some(""));
    assert_eq!(empty.state().messages, []);
}

fn agent_with_system(system_prompt: Option<&str>) -> Agent<Scripted> {
    Agent::new(AgentOptions {
        system_prompt: system_prompt.map(str::to_string),
        ..AgentOptions::new(Scripted::new(Vec::new()), ToolRegistry::new())
    })
}

#[test]
fn lab9_3_state_is_updated_before_listeners_hear_and_a_broken_or_removed_listener_harms_no_other() {
    let agent = new_agent(Scripted::answers(&["first", "second", "third"]));
    let broken = agent.subscribe(|event| {
        if let AgentEvent::RunStart { .. } = event {
            panic!("broken renderer");
        }
    });
    // What the observer saw at each run_start: the event's run, and the
    // state's status at that moment.
    let observed = Arc::new(Mutex::new(Vec::new()));
    let (seen, handle) = (Arc::clone(&observed), Arc::downgrade(&agent));
    let observer = agent.subscribe(move |event| {
        if let AgentEvent::RunStart { run_id, .. } = event {
            let status = handle.upgrade().expect("agent 还在").state().status;
            seen.lock().unwrap().push((*run_id, status));
        }
    });
    let observed_starts = || observed.lock().unwrap().len();

    assert_eq!(
        agent.prompt("one", plain()).unwrap().reason,
        RunReason::Stop
    );
    assert_eq!(observed_starts(), 1);
    for (run_id, status) in observed.lock().unwrap().iter() {
        assert_eq!(
            *status,
            AgentStatus::Running { run_id: *run_id },
            "run_start 送达时 state 已经是 running，且是这个 run"
        );
    }
    assert!(agent.state().diagnostics[0].contains("broken renderer"));
    assert!(agent.unsubscribe(broken));

    assert_eq!(
        agent.prompt("two", plain()).unwrap().reason,
        RunReason::Stop
    );
    assert_eq!(observed_starts(), 2);
    assert_eq!(agent.state().diagnostics.len(), 1);
    assert!(agent.unsubscribe(observer));

    assert_eq!(
        agent.prompt("three", plain()).unwrap().reason,
        RunReason::Stop
    );
    assert_eq!(observed_starts(), 2);
    assert_eq!(agent.state().diagnostics.len(), 1);
}

#[test]
fn lab9_3_state_events_and_results_share_nothing_mutable() {
    let agent = new_agent(Scripted::answers(&["answer"]));
    // A listener only borrows the event: to change it, it has to change a
    // copy of its own, which no other listener sees. So the assertions on
    // the second listener hold by the signature in Rust; kept from the
    // original, like those on the caller's copies below.
    agent.subscribe(|event| {
        let AgentEvent::RunEnd { result, .. } = event else {
            return;
        };
        let mut mine = result.clone();
        mine.messages
            .push(AgentMessage::User(user_message("subscriber mutation")));
        if let AgentMessage::User(first) = &mut mine.messages[0] {
            first.content[0].text = "subscriber changed".to_string();
        }
    });
    let second_listener = Arc::new(Mutex::new((usize::MAX, String::new())));
    let seen = Arc::clone(&second_listener);
    agent.subscribe(move |event| {
        if let AgentEvent::RunEnd { result, .. } = event {
            *seen.lock().unwrap() = (result.messages.len(), text_of(&result.messages[0]));
        }
    });

    let mut result = agent.prompt("question", plain()).unwrap();
    assert_eq!(result.messages.len(), 2);
    assert_eq!(text_of(&result.messages[0]), "question");
    assert_eq!(
        *second_listener.lock().unwrap(),
        (2, "question".to_string())
    );

    result
        .messages
        .push(AgentMessage::User(user_message("caller mutation")));
    let mut snapshot = agent.state();
    snapshot
        .messages
        .push(AgentMessage::User(user_message("snapshot mutation")));
    if let AgentMessage::User(first) = &mut snapshot.messages[0] {
        first.content[0].text = "changed".to_string();
    }

    let internal = agent.state();
    assert_eq!(internal.messages.len(), 2);
    assert_eq!(text_of(&internal.messages[0]), "question");

    // Rust's results cannot hold anything a copy cannot copy (the original's
    // case: a function in `details`); what an injected executor can get
    // wrong is the pairing: a result that answers another call.
    let malformed_call = probe("mispaired-result");
    let malformed = agent_with_executor(
        Scripted::new(vec![
            tool_use(&[malformed_call]),
            answer("recovered from malformed result").into(),
        ]),
        Box::new(|call, _| {
            Ok(ToolResultMessage {
                tool_call_id: "another-call".to_string(),
                ..result_for(call, "raw result", false)
            })
        }),
    );
    let normalized = malformed.prompt("run malformed tool", plain()).unwrap();
    assert_eq!(normalized.reason, RunReason::Stop);
    let normalized_result = normalized
        .messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .expect("有一条工具结果");
    assert!(normalized_result.is_error);
    assert!(
        text_of(&AgentMessage::ToolResult(normalized_result.clone())).contains("not paired"),
        "不配对的结果变成标准错误结果"
    );
    assert_eq!(malformed.state().status, AgentStatus::Idle);
}

#[test]
fn lab9_4_an_abort_before_the_first_request_gives_one_run_end_and_the_next_run_a_new_signal() {
    let agent = new_agent(Scripted::answers(&["reachable on second run"]));
    let run_ends = Arc::new(Mutex::new(Vec::new()));
    let (ends, handle) = (Arc::clone(&run_ends), Arc::downgrade(&agent));
    agent.subscribe(move |event| match event {
        AgentEvent::RunStart { run_id: 1, .. } => {
            let agent = handle.upgrade().expect("agent 还在");
            agent.abort();
            agent.abort();
        }
        AgentEvent::RunEnd { run_id, .. } => ends.lock().unwrap().push(*run_id),
        _ => {}
    });

    let cancelled = agent.prompt("cancel", plain()).unwrap();
    assert_eq!(cancelled.reason, RunReason::Aborted);
    assert_eq!(agent.model().requests().len(), 0);
    assert_eq!(*run_ends.lock().unwrap(), [1]);
    assert_eq!(agent.state().status, AgentStatus::Idle);

    let second = agent.prompt("continue", plain()).unwrap();
    assert_eq!(second.reason, RunReason::Stop);
    assert_eq!(agent.model().requests().len(), 1);
    assert_eq!(*run_ends.lock().unwrap(), [1, 2]);
}

#[test]
fn lab9_4_an_abort_during_a_run_reaches_model_and_tool_with_one_signal() {
    let call = probe("slow-tool");
    let model = SignalCapturingModel {
        inner: Scripted::new(vec![tool_use(&[call]), answer("new run").into()]),
        signals: Mutex::default(),
    };
    let tool_signal: Arc<Mutex<Option<Arc<AtomicBool>>>> = Arc::default();
    let seen = Arc::clone(&tool_signal);
    let (started, tool_started) = mpsc::channel();
    let (aborted, abort_done) = mpsc::channel();
    let abort_done = Mutex::new(abort_done);
    // The tool reports that it runs, then looks at its signal once the test
    // has aborted: a flag has no listeners, a tool has to look.
    let agent = agent_with_executor(
        model,
        Box::new(move |call, options| {
            *seen.lock().unwrap() = options.signal.clone();
            let _ = started.send(());
            pass(&abort_done);
            let cancelled = options
                .signal
                .as_ref()
                .is_some_and(|signal| signal.load(Ordering::SeqCst));
            Ok(result_for(call, "cancelled", cancelled))
        }),
    );

    let running = start(&agent, "run tool");
    wait_for(&tool_started, "工具开始");
    agent.abort();
    agent.abort();
    aborted.send(()).unwrap();
    let cancelled = running.finish().unwrap();
    assert_eq!(cancelled.reason, RunReason::Aborted);
    assert_eq!(agent.model().inner.requests().len(), 1);
    let signals = agent.model().signals.lock().unwrap().clone();
    let tool_signal = tool_signal
        .lock()
        .unwrap()
        .clone()
        .expect("工具收到 signal");
    assert!(
        Arc::ptr_eq(signals[0].as_ref().unwrap(), &tool_signal),
        "model 与 tool 收到同一个 signal"
    );
    assert!(tool_signal.load(Ordering::SeqCst));
    assert_eq!(
        roles(&cancelled.messages),
        ["user", "assistant", "toolResult"]
    );

    let old_signal = signals[0].clone().unwrap();
    assert_eq!(
        agent.prompt("new run", plain()).unwrap().reason,
        RunReason::Stop
    );
    let signals = agent.model().signals.lock().unwrap().clone();
    let new_signal = signals[1].clone().unwrap();
    assert!(
        !Arc::ptr_eq(&new_signal, &old_signal),
        "新的运行有新的 signal"
    );
    assert!(!new_signal.load(Ordering::SeqCst));

    let text_agent = new_agent(ManualModel::default());
    let text_run = start(&text_agent, "cancel text");
    text_agent.model().wait_for_calls(1);
    text_agent.abort();
    text_agent.model().complete(0, answer("late text"));
    let cancelled_text = text_run.finish().unwrap();
    assert_eq!(cancelled_text.reason, RunReason::Aborted);
    assert_eq!(text_agent.model().requests().len(), 1);
}

#[test]
fn lab9_5_steering_enters_the_next_request_in_fifo_order_after_a_fully_paired_batch() {
    let (slow, fast) = (probe("slow"), probe("fast"));
    let model = Scripted::new(vec![
        tool_use(&[slow, fast]),
        answer("steering applied").into(),
    ]);
    let (started, starts) = mpsc::channel();
    let (release_slow, slow_gate) = mpsc::channel();
    let (release_fast, fast_gate) = mpsc::channel();
    let gates = [
        ("slow", Mutex::new(slow_gate)),
        ("fast", Mutex::new(fast_gate)),
    ];
    let agent = agent_with_executor(
        model,
        Box::new(move |call, _| {
            let _ = started.send(());
            let (_, gate) = gates.iter().find(|(id, _)| *id == call.id).unwrap();
            pass(gate);
            Ok(result_for(call, &format!("{} done", call.id), false))
        }),
    );
    let (fast_ended, fast_has_ended) = mpsc::channel();
    agent.subscribe(move |event| {
        if let AgentEvent::Loop {
            event: LoopEvent::ToolEnd { result },
            ..
        } = event
            && result.tool_call_id == "fast"
        {
            let _ = fast_ended.send(());
        }
    });

    let running = start(&agent, "start batch");
    wait_for(&starts, "一个工具开始");
    wait_for(&starts, "两个工具都开始");
    agent.steer("先检查测试").unwrap();
    agent.steer("再更新说明").unwrap();
    release_fast.send(()).unwrap();
    wait_for(&fast_has_ended, "fast 结束");
    release_slow.send(()).unwrap();

    let result = running.finish().unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    let requests = agent.model().requests();
    assert_eq!(requests.len(), 2);
    let second_request = &requests[1].messages;
    assert_eq!(
        roles(second_request),
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "user"
        ]
    );
    let last_two: Vec<String> = second_request[4..].iter().map(text_of).collect();
    assert_eq!(last_two, ["先检查测试", "再更新说明"]);
    let result_ids: Vec<&str> = second_request
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(result_ids, ["slow", "fast"]);
}

#[test]
fn lab9_5_steering_during_a_text_stop_opens_one_more_request() {
    let agent = new_agent(ManualModel::default());

    let running = start(&agent, "start");
    agent.model().wait_for_calls(1);
    agent.steer("回答前补充检查").unwrap();
    agent.model().complete(0, answer("draft"));
    agent.model().wait_for_calls(2);
    agent.model().complete(1, answer("final"));

    let result = running.finish().unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    let requests = agent.model().requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(roles(&requests[1].messages), ["user", "assistant", "user"]);
    assert_eq!(
        text_of(requests[1].messages.last().unwrap()),
        "回答前补充检查"
    );

    let abort_agent = new_agent(ManualModel::default());
    let cancelled_run = start(&abort_agent, "cancel before text stop");
    abort_agent.model().wait_for_calls(1);
    abort_agent.steer("must not consume before abort").unwrap();
    abort_agent.abort();
    abort_agent.model().complete(0, answer("late draft"));
    let cancelled = cancelled_run.finish().unwrap();
    assert_eq!(cancelled.reason, RunReason::Aborted);
    assert!(!all_text(&cancelled.messages).contains("must not consume"));

    let clean_run = start(&abort_agent, "clean retry");
    abort_agent.model().complete(1, answer("clean"));
    assert_eq!(clean_run.finish().unwrap().reason, RunReason::Stop);
    assert!(!all_text(&abort_agent.model().requests()[1].messages).contains("must not consume"));
}

#[test]
fn lab9_5_follow_ups_wait_for_a_natural_stop_and_a_failed_run_s_queues_never_leak() {
    let natural = new_agent(Scripted::answers(&["first", "after follow-up"]));
    let idle_steer = natural.steer("idle").unwrap_err();
    assert!(idle_steer.to_string().contains("只在当前 run"));
    let idle_follow_up = natural.follow_up("idle").unwrap_err();
    assert!(idle_follow_up.to_string().contains("只在当前 run"));
    // What steer and follow_up answered at turn_end.
    let terminal = Arc::new(Mutex::new(Vec::new()));
    let (answers, handle) = (Arc::clone(&terminal), Arc::downgrade(&natural));
    natural.subscribe(move |event| {
        let agent = handle.upgrade().expect("agent 还在");
        match event {
            AgentEvent::RunStart { .. } => {
                agent.follow_up("先总结").unwrap();
                agent.follow_up("再列风险").unwrap();
            }
            AgentEvent::Loop {
                event: LoopEvent::TurnEnd { .. },
                ..
            } => {
                let mut answers = answers.lock().unwrap();
                answers.push(agent.steer("too late"));
                answers.push(agent.follow_up("too late"));
            }
            _ => {}
        }
    });
    let natural_result = natural.prompt("start", plain()).unwrap();
    assert_eq!(natural_result.reason, RunReason::Stop);
    let terminal = terminal.lock().unwrap().clone();
    assert_eq!(terminal.len(), 2);
    let (accepted_terminal_steering, accepted_terminal_follow_up) =
        (terminal[0].is_ok(), terminal[1].is_ok());
    assert!(!accepted_terminal_steering);
    assert!(!accepted_terminal_follow_up);
    for refused in &terminal {
        assert!(refused.unwrap_err().to_string().contains("尚未结束"));
    }
    let requests = natural.model().requests();
    assert_eq!(
        roles(&requests[1].messages),
        ["user", "assistant", "user", "user"]
    );
    let last_two: Vec<String> = requests[1].messages[2..].iter().map(text_of).collect();
    assert_eq!(last_two, ["先总结", "再列风险"]);

    let error_model = Scripted::new(vec![
        ScriptedTurn::Error {
            stop_reason: ErrorReason::Error,
            error_message: "provider failed".to_string(),
            partial_text: None,
        },
        answer("clean next run").into(),
    ]);
    let after_error = new_agent(error_model);
    let handle = Arc::downgrade(&after_error);
    after_error.subscribe(move |event| {
        if let AgentEvent::RunStart { run_id: 1, .. } = event {
            let agent = handle.upgrade().expect("agent 还在");
            agent.steer("must not leak steering").unwrap();
            agent.follow_up("must not leak follow-up").unwrap();
        }
    });
    assert_eq!(
        after_error.prompt("fail", plain()).unwrap().reason,
        RunReason::Error
    );
    assert_eq!(
        after_error.prompt("retry", plain()).unwrap().reason,
        RunReason::Stop
    );
    let requests = after_error.model().requests();
    assert_eq!(requests.len(), 2);
    assert!(!all_text(&requests[1].messages).contains("must not leak"));

    let abort_call = probe("abort-queue");
    let (started, tool_started) = mpsc::channel();
    let (aborted, abort_done) = mpsc::channel();
    let abort_done = Mutex::new(abort_done);
    let abort_agent = agent_with_executor(
        Scripted::new(vec![
            tool_use(&[abort_call]),
            answer("clean after abort").into(),
        ]),
        Box::new(move |call, _| {
            let _ = started.send(());
            pass(&abort_done);
            Ok(result_for(call, "cancelled", true))
        }),
    );
    let abort_run = start(&abort_agent, "cancel tool");
    wait_for(&tool_started, "工具开始");
    abort_agent.steer("must not consume after tool").unwrap();
    abort_agent.abort();
    aborted.send(()).unwrap();
    let aborted = abort_run.finish().unwrap();
    assert_eq!(aborted.reason, RunReason::Aborted);
    assert!(!all_text(&aborted.messages).contains("must not consume"));
    assert_eq!(
        abort_agent
            .prompt("retry after abort", plain())
            .unwrap()
            .reason,
        RunReason::Stop
    );
    assert!(!all_text(&abort_agent.model().requests()[1].messages).contains("must not consume"));
}

//! Chapter 09's contract beyond the twelve focused tests: a model, a model
//! stream, a tool or a listener that panics; a second prompt from another
//! thread; abort while idle and during a whole batch; a `run_end` listener
//! that calls `prompt` itself; what the state shows while a run goes; the
//! two queues' order, also after a batch bigger than the loop's bound with
//! calls on one file; queues of failed runs; a steer racing the end of a
//! run; and the loop's chapter 09 changes called directly.
//!
//! Concurrency is gated with channels; nothing sleeps.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use course::agent::{
    Agent, AgentError, AgentEvent, AgentOptions, AgentStatus, PromptOptions, reduce_agent_state,
};
use course::agent_loop::{
    AgentLoopOptions, AgentRunResult, LoopEvent, MAX_PARALLEL_TOOLS, Queues, RunReason,
    run_agent_loop_with_queues,
};
use course::assistant_stream::AssistantMessageEventStream;
use course::coding_tools::{CodingToolsOptions, Containment, create_coding_tools};
use course::event_stream::{Producer, StreamError};
use course::provider_adapter::OpenAiCompatibleModel;
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::tool::{
    DynTool, ObjectSchema, Tool, ToolContext, ToolError, ToolExecutor, ToolOutput, ToolRegistry,
    object_schema, string_value,
};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, Model, ModelEvent, ModelStream,
    StopReason, StreamOptions, ToolCall, ToolResultMessage, assistant_message, text, text_of,
    user_message,
};
use serde::Deserialize;
use serde_json::json;

const PATIENCE: Duration = Duration::from_secs(3);

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: json!({ "value": id }),
        raw_arguments: None,
    }
}

fn answer(value: &str) -> ScriptedTurn {
    assistant_message(vec![text(value).into()], StopReason::Stop).into()
}

fn tool_use(calls: &[ToolCall]) -> ScriptedTurn {
    let content = calls.iter().cloned().map(AssistantContent::from).collect();
    assistant_message(content, StopReason::ToolUse).into()
}

fn result_for(call: &ToolCall, value: &str) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![text(value)],
        details: None,
        is_error: false,
        timestamp: 1,
    }
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

fn tool_results(messages: &[AgentMessage]) -> Vec<&ToolResultMessage> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect()
}

fn all_text(messages: &[AgentMessage]) -> String {
    messages.iter().map(text_of).collect::<Vec<_>>().join("\n")
}

/// The scripted model behind a mutex, so an agent can be shared.
struct Scripted(Mutex<ScriptedModel>);

impl Scripted {
    fn new(turns: Vec<ScriptedTurn>) -> Self {
        Scripted(Mutex::new(ScriptedModel::new(turns)))
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

fn agent<M: Model>(model: M) -> Arc<Agent<M>> {
    Arc::new(Agent::new(AgentOptions::new(model, ToolRegistry::new())))
}

fn agent_with_executor<M: Model>(model: M, executor: Box<ToolExecutor>) -> Arc<Agent<M>> {
    Arc::new(Agent::new(AgentOptions {
        tool_executor: Some(executor),
        ..AgentOptions::new(model, ToolRegistry::new())
    }))
}

fn prompt<M: Model>(agent: &Agent<M>, value: &str) -> AgentRunResult {
    agent
        .prompt(value, PromptOptions::default())
        .expect("agent 空闲")
}

/// Starts a prompt on a helper thread; `finish` waits at most three seconds.
struct Pending(Receiver<Result<AgentRunResult, AgentError>>);

fn start<M: Model + Send + Sync + 'static>(agent: &Arc<Agent<M>>, value: &str) -> Pending {
    let (report, outcome) = mpsc::channel();
    let (agent, value) = (Arc::clone(agent), value.to_string());
    thread::spawn(move || {
        let _ = report.send(agent.prompt(&value, PromptOptions::default()));
    });
    Pending(outcome)
}

impl Pending {
    fn finish(self) -> AgentRunResult {
        self.0
            .recv_timeout(PATIENCE)
            .expect("prompt 三秒内结束")
            .expect("agent 空闲")
    }
}

fn wait_for(signal: &Receiver<()>, what: &str) {
    signal
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("三秒内没有等到：{what}"));
}

fn pass(gate: &Mutex<Receiver<()>>) {
    gate.lock()
        .unwrap()
        .recv_timeout(PATIENCE)
        .expect("测试没有打开这道门");
}

/// A listener that writes down `run_start:N`, `run_end:N` and each loop
/// event's kind.
fn recorder<M: Model>(agent: &Agent<M>) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    agent.subscribe(move |event| {
        let line = match event {
            AgentEvent::RunStart { run_id, .. } => format!("run_start:{run_id}"),
            AgentEvent::RunEnd { run_id, .. } => format!("run_end:{run_id}"),
            AgentEvent::Loop { event, .. } => {
                let value = serde_json::to_value(event).unwrap();
                value["type"].as_str().unwrap().to_string()
            }
        };
        record.lock().unwrap().push(line);
    });
    seen
}

/// A model whose every call panics before it answers.
struct PanickingModel;

impl Model for PanickingModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        panic!("model exploded");
    }
}

/// Panics on the first call, then plays the script.
struct FirstCallPanics {
    called: AtomicBool,
    then: Scripted,
}

impl Model for FirstCallPanics {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        if !self.called.swap(true, Ordering::SeqCst) {
            panic!("first call exploded");
        }
        self.then.stream(context, options)
    }
}

#[test]
fn a_model_that_panics_ends_the_run_in_error_with_its_message_and_the_agent_takes_the_next_prompt()
{
    let agent = agent(FirstCallPanics {
        called: AtomicBool::new(false),
        then: Scripted::new(vec![answer("back")]),
    });
    let seen = recorder(&agent);

    let failed = prompt(&agent, "first");
    assert_eq!(failed.reason, RunReason::Error);
    assert_eq!(roles(&failed.messages), ["user", "assistant"]);
    let AgentMessage::Assistant(message) = &failed.messages[1] else {
        panic!("失败的模型调用是一条 assistant message");
    };
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("first call exploded")
    );
    assert_eq!(agent.state().status, AgentStatus::Idle);

    let next = prompt(&agent, "second");
    assert_eq!(next.reason, RunReason::Stop);
    assert_eq!(
        roles(&next.messages),
        ["user", "assistant", "user", "assistant"],
        "下一次运行接着失败运行的 transcript"
    );
    let ends = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("run_end"))
        .count();
    assert_eq!(ends, 2, "每次运行恰好一个 run_end");
}

/// A stream that panics when it is read.
struct PanickingStream;

impl ModelStream for PanickingStream {
    fn poll_next(&self, _cx: &mut Context<'_>) -> Poll<Option<ModelEvent>> {
        panic!("stream exploded while read");
    }

    fn poll_result(&self, _cx: &mut Context<'_>) -> Poll<Result<AssistantMessage, StreamError>> {
        panic!("stream exploded while read");
    }
}

struct PanickingStreamModel;

impl Model for PanickingStreamModel {
    type Stream = PanickingStream;

    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        PanickingStream
    }
}

#[test]
fn a_stream_that_panics_while_read_ends_the_run_in_error_and_frees_the_agent() {
    let agent = agent(PanickingStreamModel);
    let seen = recorder(&agent);

    let failed = prompt(&agent, "first");
    assert_eq!(failed.reason, RunReason::Error);
    assert_eq!(roles(&failed.messages), ["user", "assistant"]);
    assert!(all_text(&failed.messages).contains("first"));
    let AgentMessage::Assistant(message) = &failed.messages[1] else {
        panic!("一条失败的 assistant message");
    };
    assert_eq!(
        message.error_message.as_deref(),
        Some("stream exploded while read")
    );
    assert_eq!(agent.state().status, AgentStatus::Idle);
    assert_eq!(agent.state().messages, failed.messages);
    assert_eq!(
        prompt(&agent, "again").reason,
        RunReason::Error,
        "agent 接受下一次 prompt"
    );
    let lifecycle: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("run_"))
        .cloned()
        .collect();
    assert_eq!(
        lifecycle,
        ["run_start:1", "run_end:1", "run_start:2", "run_end:2"]
    );
}

#[derive(Debug, Deserialize)]
struct ValueInput {
    value: String,
}

struct Exploding;

impl Tool for Exploding {
    type Input = ValueInput;

    fn name(&self) -> &str {
        "explode"
    }

    fn description(&self) -> &str {
        "panics"
    }

    fn schema(&self) -> ObjectSchema<ValueInput> {
        object_schema(vec![("value", string_value())])
    }

    fn execute(&self, input: ValueInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("tool exploded on {}", input.value);
    }
}

#[test]
fn a_tool_or_an_executor_that_panics_gives_a_paired_error_and_the_run_goes_on() {
    let tools = ToolRegistry::with_tools(vec![Box::new(Exploding) as Box<dyn DynTool>]).unwrap();
    let exploding = call("boom", "explode");
    let agent = Agent::new(AgentOptions::new(
        Scripted::new(vec![tool_use(&[exploding]), answer("handled")]),
        tools,
    ));
    let run = prompt(&agent, "run");
    assert_eq!(run.reason, RunReason::Stop);
    let results = tool_results(&run.messages);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].tool_call_id, "boom");
    assert!(results[0].is_error);
    assert!(text_of(&run.messages[2]).contains("tool exploded on boom"));

    let panicking = call("panics", "anything");
    let agent = agent_with_executor(
        Scripted::new(vec![tool_use(&[panicking]), answer("handled")]),
        Box::new(|_, _| panic!("executor exploded")),
    );
    let run = prompt(&agent, "run");
    assert_eq!(run.reason, RunReason::Stop);
    let results = tool_results(&run.messages);
    assert_eq!(results[0].tool_call_id, "panics");
    assert!(results[0].is_error);
    assert!(text_of(&run.messages[2]).contains("executor exploded"));
    assert_eq!(agent.state().status, AgentStatus::Idle);
}

#[test]
fn a_listener_that_panics_at_every_event_harms_no_other_listener_and_no_run() {
    let quiet = agent(Scripted::new(vec![answer("same")]));
    let expected = recorder(&quiet);
    prompt(&quiet, "hi");

    let noisy = agent(Scripted::new(vec![answer("same")]));
    noisy.subscribe(|_| panic!("bad listener"));
    let seen = recorder(&noisy);
    noisy.subscribe(|_| panic!("another bad listener"));
    let run = prompt(&noisy, "hi");

    assert_eq!(run.reason, RunReason::Stop);
    assert_eq!(*seen.lock().unwrap(), *expected.lock().unwrap());
    let events = expected.lock().unwrap().len();
    let diagnostics = noisy.state().diagnostics;
    assert_eq!(diagnostics.len(), 2 * events, "每次 panic 一条诊断");
    assert_eq!(diagnostics[0], "subscriber: bad listener");
    assert_eq!(diagnostics[1], "subscriber: another bad listener");
}

#[test]
fn a_second_prompt_from_another_thread_while_busy_is_refused_and_the_run_goes_on() {
    let (started, tool_started) = mpsc::channel();
    let (release, gate) = mpsc::channel();
    let gate = Mutex::new(gate);
    let slow = call("slow", "probe");
    let agent = agent_with_executor(
        Scripted::new(vec![tool_use(&[slow]), answer("done"), answer("spare")]),
        Box::new(move |call, _| {
            let _ = started.send(());
            pass(&gate);
            Ok(result_for(call, "slow done"))
        }),
    );
    let seen = recorder(&agent);

    let running = start(&agent, "first");
    wait_for(&tool_started, "工具开始");
    let (report, refused) = mpsc::channel();
    let other = Arc::clone(&agent);
    thread::spawn(move || {
        let _ = report.send(other.prompt("second", PromptOptions::default()));
    });
    let refused = refused
        .recv_timeout(PATIENCE)
        .expect("第二次 prompt 立刻返回");
    assert_eq!(refused, Err(AgentError::Busy));
    assert_eq!(refused.unwrap_err().to_string(), "Agent is busy");
    release.send(()).unwrap();

    let run = running.finish();
    assert_eq!(run.reason, RunReason::Stop);
    assert_eq!(
        roles(&run.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert!(!all_text(&run.messages).contains("second"));
    assert_eq!(agent.model().requests().len(), 2);
    let lifecycle: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("run_"))
        .cloned()
        .collect();
    assert_eq!(lifecycle, ["run_start:1", "run_end:1"]);
}

#[test]
fn an_abort_during_a_batch_waits_for_every_call_and_keeps_every_paired_result() {
    let calls = [call("a", "probe"), call("b", "probe"), call("c", "probe")];
    let (started, tool_started) = mpsc::channel();
    let (release, gate) = mpsc::channel();
    let gate = Mutex::new(gate);
    let agent = agent_with_executor(
        Scripted::new(vec![tool_use(&calls), answer("never requested")]),
        Box::new(move |call, options| {
            let _ = started.send(());
            pass(&gate);
            let saw = options.signal.unwrap().load(Ordering::SeqCst);
            Ok(result_for(
                call,
                &format!("{} saw the signal: {saw}", call.id),
            ))
        }),
    );

    let running = start(&agent, "run three");
    for _ in &calls {
        wait_for(&tool_started, "三个工具都在运行");
    }
    agent.abort();
    for _ in &calls {
        release.send(()).unwrap();
    }
    let run = running.finish();

    assert_eq!(run.reason, RunReason::Aborted);
    assert_eq!(run.steps, 1);
    assert_eq!(agent.model().requests().len(), 1, "取消以后不再请求模型");
    let kept: Vec<String> = tool_results(&run.messages)
        .iter()
        .map(|result| text_of(&AgentMessage::ToolResult((*result).clone())))
        .collect();
    assert_eq!(
        kept,
        [
            "a saw the signal: true",
            "b saw the signal: true",
            "c saw the signal: true"
        ],
        "每个调用的结果都按调用顺序保留"
    );
    assert_eq!(agent.state().messages, run.messages);
    assert!(agent.state().pending_tool_call_ids.is_empty());
}

#[test]
fn abort_while_idle_does_nothing_and_the_next_run_gets_a_fresh_signal() {
    let agent = agent(Scripted::new(vec![answer("fine")]));
    let seen = recorder(&agent);
    agent.abort();
    assert!(seen.lock().unwrap().is_empty(), "空闲时 abort 不发任何事件");
    let run = prompt(&agent, "go");
    assert_eq!(run.reason, RunReason::Stop);
    let lifecycle: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("run_"))
        .cloned()
        .collect();
    assert_eq!(lifecycle, ["run_start:1", "run_end:1"]);
}

#[test]
fn a_run_end_listener_may_call_prompt_itself_without_deadlock() {
    let agent = agent(Scripted::new(vec![answer("first"), answer("second")]));
    let nested = Arc::new(Mutex::new(None));
    let (keep, handle) = (Arc::clone(&nested), Arc::downgrade(&agent));
    agent.subscribe(move |event| {
        if let AgentEvent::RunEnd { run_id: 1, .. } = event {
            let agent = handle.upgrade().unwrap();
            *keep.lock().unwrap() = Some(agent.prompt("again", PromptOptions::default()));
        }
    });
    let first_listener = recorder(&agent);
    let second_listener = recorder(&agent);

    let first = start(&agent, "hello").finish();

    assert_eq!(first.reason, RunReason::Stop);
    assert_eq!(roles(&first.messages), ["user", "assistant"]);
    let second = nested
        .lock()
        .unwrap()
        .take()
        .expect("listener 运行了第二次 prompt");
    let second = second.expect("run_end 之前 agent 已经空闲");
    assert_eq!(second.reason, RunReason::Stop);
    assert_eq!(
        roles(&second.messages),
        ["user", "assistant", "user", "assistant"],
        "第二次运行从第一次的 transcript 开始"
    );
    let lifecycle = |seen: &Mutex<Vec<String>>| -> Vec<String> {
        let seen = seen.lock().unwrap();
        seen.iter()
            .filter(|line| line.starts_with("run_"))
            .cloned()
            .collect()
    };
    assert_eq!(
        lifecycle(&first_listener),
        ["run_start:1", "run_end:1", "run_start:2", "run_end:2"]
    );
    assert_eq!(
        *first_listener.lock().unwrap(),
        *second_listener.lock().unwrap(),
        "每个 listener 听到同样的顺序"
    );
    assert_eq!(agent.state().status, AgentStatus::Idle);
    assert_eq!(agent.state().messages, second.messages);
}

#[test]
fn a_prompt_from_a_listener_during_a_run_is_refused_without_deadlock() {
    let agent = agent(Scripted::new(vec![answer("only")]));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let (keep, handle) = (Arc::clone(&answers), Arc::downgrade(&agent));
    agent.subscribe(move |event| {
        if let AgentEvent::Loop {
            event: LoopEvent::AssistantMessage { .. },
            ..
        } = event
        {
            let agent = handle.upgrade().unwrap();
            let refused = agent.prompt("inside", PromptOptions::default());
            keep.lock().unwrap().push(refused.map(|run| run.reason));
        }
    });
    assert_eq!(prompt(&agent, "outside").reason, RunReason::Stop);
    assert_eq!(*answers.lock().unwrap(), [Err(AgentError::Busy)]);
}

/// A model that streams what the test pushes: each call hands the test
/// its producer.
struct Hand(mpsc::Sender<Producer<ModelEvent, AssistantMessage>>);

impl Model for Hand {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        let _ = self.0.send(stream.producer());
        stream
    }
}

#[test]
fn the_state_shows_streaming_text_and_pending_tools_while_a_run_goes() {
    // Streaming text: the test plays the model by hand.
    let (hand, calls) = mpsc::channel();
    let agent = agent(Hand(hand));
    let (delta_heard, heard) = mpsc::channel();
    agent.subscribe(move |event| {
        if let AgentEvent::Loop {
            event:
                LoopEvent::ModelEvent {
                    event: ModelEvent::TextDelta { .. },
                },
            ..
        } = event
        {
            let _ = delta_heard.send(());
        }
    });
    let running = start(&agent, "stream");
    let producer = calls.recv_timeout(PATIENCE).expect("模型被调用");
    let mut partial = assistant_message(Vec::new(), StopReason::Stop);
    producer
        .push(ModelEvent::Start {
            partial: partial.clone(),
        })
        .unwrap();
    partial.content.push(text("hel").into());
    producer
        .push(ModelEvent::TextDelta {
            content_index: 0,
            delta: "hel".to_string(),
            partial: partial.clone(),
        })
        .unwrap();
    wait_for(&heard, "text_delta 送达");
    let state = agent.state();
    assert_eq!(state.status, AgentStatus::Running { run_id: 1 });
    assert_eq!(state.streaming_text, "hel");
    assert_eq!(roles(&state.messages), ["user"]);
    producer
        .push(ModelEvent::Done {
            reason: course::types::DoneReason::Stop,
            message: partial,
        })
        .unwrap();
    assert_eq!(running.finish().reason, RunReason::Stop);
    assert_eq!(agent.state().streaming_text, "");

    // Pending tools: a tool that waits for the test.
    let (started, tool_started) = mpsc::channel();
    let (release, gate) = mpsc::channel();
    let gate = Mutex::new(gate);
    let agent = agent_with_executor(
        Scripted::new(vec![tool_use(&[call("t1", "probe")]), answer("done")]),
        Box::new(move |call, _| {
            let _ = started.send(());
            pass(&gate);
            Ok(result_for(call, "ok"))
        }),
    );
    let running = start(&agent, "tool");
    wait_for(&tool_started, "工具开始");
    let state = agent.state();
    assert_eq!(state.status, AgentStatus::Running { run_id: 1 });
    assert_eq!(state.pending_tool_call_ids, ["t1"]);
    release.send(()).unwrap();
    assert_eq!(running.finish().reason, RunReason::Stop);
    let state = agent.state();
    assert_eq!(state.status, AgentStatus::Idle);
    assert!(state.pending_tool_call_ids.is_empty());
    assert_eq!(state.last_reason, Some(RunReason::Stop));
}

#[test]
fn steering_goes_in_after_a_batch_and_follow_ups_wait_for_a_text_answer() {
    let agent = agent_with_executor(
        Scripted::new(vec![
            tool_use(&[call("t1", "probe")]),
            answer("after steering"),
            answer("after follow-up"),
        ]),
        Box::new(|call, _| Ok(result_for(call, "ok"))),
    );
    let handle = Arc::downgrade(&agent);
    agent.subscribe(move |event| {
        if let AgentEvent::RunStart { .. } = event {
            let agent = handle.upgrade().unwrap();
            agent.follow_up("follow-up").unwrap();
            agent.steer("steer").unwrap();
        }
    });
    let run = prompt(&agent, "go");
    assert_eq!(run.reason, RunReason::Stop);
    let requests = agent.model().requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        roles(&requests[1].messages),
        ["user", "assistant", "toolResult", "user"],
        "工具批次以后只进 steering"
    );
    assert_eq!(text_of(requests[1].messages.last().unwrap()), "steer");
    assert_eq!(
        text_of(requests[2].messages.last().unwrap()),
        "follow-up",
        "follow-up 等到文本回答以后"
    );
    assert_eq!(
        roles(&run.messages),
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

#[test]
fn steering_waits_for_a_batch_bigger_than_the_bound_whose_edits_of_one_file_run_in_call_order() {
    let root = std::env::temp_dir().join(format!("pi-agent-batch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir(&root).unwrap();
    // One job of eleven calls on list.txt (a write, then ten edits that each
    // need the one before), and ten writes of other files: eleven jobs.
    let mut calls = vec![ToolCall {
        arguments: json!({ "path": "list.txt", "content": "<end>" }),
        ..call("w", "write")
    }];
    calls.extend((0..10).map(|index| ToolCall {
        arguments: json!({ "path": "list.txt", "oldText": "<end>", "newText": format!("{index} <end>") }),
        ..call(&format!("e{index}"), "edit")
    }));
    calls.extend((0..10).map(|index| ToolCall {
        arguments: json!({ "path": format!("other-{index}.txt"), "content": "x" }),
        ..call(&format!("o{index}"), "write")
    }));
    assert!(
        calls.len() - 10 > MAX_PARALLEL_TOOLS,
        "more jobs than run at once"
    );
    let tools = create_coding_tools(CodingToolsOptions::new(&root, Containment::Workspace));
    let agent = Arc::new(Agent::new(AgentOptions::new(
        Scripted::new(vec![tool_use(&calls), answer("done")]),
        tools,
    )));
    let handle = Arc::downgrade(&agent);
    agent.subscribe(move |event| {
        if let AgentEvent::Loop {
            event: LoopEvent::ToolStart { call },
            ..
        } = event
        {
            if call.id == "w" {
                handle.upgrade().unwrap().steer("steer").unwrap();
            }
        }
    });

    let run = prompt(&agent, "tidy");
    let list = std::fs::read_to_string(root.join("list.txt")).unwrap();
    let _ = std::fs::remove_dir_all(&root);

    assert_eq!(run.reason, RunReason::Stop);
    assert_eq!(
        list, "0 1 2 3 4 5 6 7 8 9 <end>",
        "one file's edits in call order"
    );
    let second = &agent.model().requests()[1].messages;
    let mut expected = vec!["user", "assistant"];
    expected.extend(calls.iter().map(|_| "toolResult"));
    expected.push("user");
    assert_eq!(roles(second), expected, "steering after the whole batch");
    let ids: Vec<&str> = tool_results(second)
        .iter()
        .map(|result| result.tool_call_id.as_str())
        .collect();
    let called: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, called, "results in call order");
    assert!(tool_results(second).iter().all(|result| !result.is_error));
    assert_eq!(text_of(second.last().unwrap()), "steer");
}

#[test]
fn queues_of_a_failed_or_cut_off_run_never_reach_the_next_run() {
    let cut_off: ScriptedTurn =
        assistant_message(vec![text("cut").into()], StopReason::Length).into();
    for first_turn in [None, Some(cut_off)] {
        // `None`: the model panics; otherwise it plays `first_turn`.
        let model = match &first_turn {
            None => FirstCallPanics {
                called: AtomicBool::new(false),
                then: Scripted::new(vec![answer("clean")]),
            },
            Some(turn) => FirstCallPanics {
                called: AtomicBool::new(true),
                then: Scripted::new(vec![turn.clone(), answer("clean")]),
            },
        };
        let agent = agent(model);
        let handle = Arc::downgrade(&agent);
        agent.subscribe(move |event| {
            if let AgentEvent::RunStart { run_id: 1, .. } = event {
                let agent = handle.upgrade().unwrap();
                agent.steer("leaked steering").unwrap();
                agent.follow_up("leaked follow-up").unwrap();
            }
        });
        let failed = prompt(&agent, "first");
        assert_ne!(failed.reason, RunReason::Stop);
        assert!(!all_text(&failed.messages).contains("leaked"));
        let next = prompt(&agent, "second");
        assert_eq!(next.reason, RunReason::Stop);
        assert!(!all_text(&next.messages).contains("leaked"));
    }
}

#[test]
fn input_closes_at_turn_end_also_when_the_run_fails() {
    let agent = agent(Scripted::new(vec![ScriptedTurn::Error {
        stop_reason: course::types::ErrorReason::Error,
        error_message: "provider failed".to_string(),
        partial_text: None,
    }]));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let (keep, handle) = (Arc::clone(&answers), Arc::downgrade(&agent));
    agent.subscribe(move |event| {
        if let AgentEvent::Loop {
            event: LoopEvent::TurnEnd { .. },
            ..
        } = event
        {
            let agent = handle.upgrade().unwrap();
            let mut answers = keep.lock().unwrap();
            answers.push(agent.steer("late"));
            answers.push(agent.follow_up("late"));
        }
    });
    assert_eq!(prompt(&agent, "fail").reason, RunReason::Error);
    assert_eq!(
        *answers.lock().unwrap(),
        [
            Err(AgentError::SteerWithoutRun),
            Err(AgentError::FollowUpWithoutRun)
        ]
    );
}

#[test]
fn steer_and_follow_up_outside_a_run_are_refused_with_the_original_texts() {
    let agent = agent(Scripted::new(Vec::new()));
    assert_eq!(
        agent.steer("x").unwrap_err().to_string(),
        "steering 只在当前 run 尚未结束时有意义"
    );
    assert_eq!(
        agent.follow_up("x").unwrap_err().to_string(),
        "follow-up 只在当前 run 尚未结束时排队"
    );
}

#[test]
fn a_steer_sent_as_a_run_ends_is_either_refused_or_read_never_lost() {
    // After each text answer another thread steers at once, racing the loop
    // as it takes its queues and ends the run. Whichever wins, no
    // interleaving may accept a steer that the run then never reads.
    for _ in 0..400 {
        let turns = (0..30).map(|i| answer(&format!("answer {i}"))).collect();
        let agent = agent(Scripted::new(turns));
        let (answered, answers) = mpsc::channel::<()>();
        agent.subscribe(move |event| {
            if let AgentEvent::Loop {
                event: LoopEvent::AssistantMessage { .. },
                ..
            } = event
            {
                let _ = answered.send(());
            }
        });
        let running = start(&agent, "race");
        let mut accepted = Vec::new();
        for i in 0..20 {
            wait_for(&answers, "一个回答");
            let message = format!("steer {i}");
            if agent.steer(&message).is_err() {
                break;
            }
            accepted.push(message);
        }
        let run = running.finish();
        assert_eq!(run.reason, RunReason::Stop);
        let read: Vec<String> = run.messages[1..]
            .iter()
            .filter(|message| matches!(message, AgentMessage::User(_)))
            .map(text_of)
            .collect();
        assert_eq!(read, accepted, "接受了的 steering 都按顺序进入 transcript");
    }
}

#[test]
fn unsubscribing_works_once_and_from_inside_a_listener() {
    let agent = agent(Scripted::new(vec![answer("one"), answer("two")]));
    let heard = Arc::new(Mutex::new(0));
    let (count, handle) = (Arc::clone(&heard), Arc::downgrade(&agent));
    let me = Arc::new(Mutex::new(None));
    let mine = Arc::clone(&me);
    let subscription = agent.subscribe(move |_| {
        *count.lock().unwrap() += 1;
        if let Some(subscription) = mine.lock().unwrap().take() {
            handle.upgrade().unwrap().unsubscribe(subscription);
        }
    });
    *me.lock().unwrap() = Some(subscription);
    prompt(&agent, "first");
    assert_eq!(*heard.lock().unwrap(), 1, "退订从下一个事件起生效");
    assert!(!agent.unsubscribe(subscription), "已经退订");
    prompt(&agent, "second");
    assert_eq!(*heard.lock().unwrap(), 1);
}

#[test]
fn initial_messages_follow_the_system_prompt_and_reach_the_first_request() {
    // A saved conversation the agent goes on from (chapter 10's `--session`).
    let saved = vec![
        AgentMessage::User(user_message("earlier question")),
        AgentMessage::Assistant(assistant_message(
            vec![text("earlier answer").into()],
            StopReason::Stop,
        )),
    ];
    let agent = Agent::new(AgentOptions {
        system_prompt: Some("BASE".to_string()),
        initial_messages: saved.clone(),
        ..AgentOptions::new(
            Scripted::new(vec![answer("next answer")]),
            ToolRegistry::new(),
        )
    });
    assert_eq!(
        roles(&agent.state().messages),
        ["system", "user", "assistant"]
    );
    assert_eq!(agent.state().messages[1..], saved[..]);
    let run = prompt(&agent, "next question");
    let request = &agent.model().requests()[0];
    assert_eq!(
        roles(&request.messages),
        ["system", "user", "assistant", "user"]
    );
    assert_eq!(request.messages[1..3], saved[..]);
    assert_eq!(text_of(request.messages.last().unwrap()), "next question");
    assert_eq!(run.messages[..3], request.messages[..3]);
}

#[test]
fn max_steps_reaches_the_loop() {
    let agent = Agent::new(AgentOptions {
        max_steps: Some(1),
        tool_executor: Some(Box::new(|call: &ToolCall, _| Ok(result_for(call, "ok")))),
        ..AgentOptions::new(
            Scripted::new(vec![tool_use(&[call("t1", "probe")]), answer("never")]),
            ToolRegistry::new(),
        )
    });
    let run = prompt(&agent, "go");
    assert_eq!(run.reason, RunReason::MaxSteps);
    assert_eq!(agent.model().requests().len(), 1);
    assert_eq!(agent.state().last_reason, Some(RunReason::MaxSteps));
}

#[test]
fn the_reducer_keeps_diagnostics_across_runs() {
    let state = course::agent::AgentState {
        diagnostics: vec!["subscriber: old".to_string()],
        ..Default::default()
    };
    let started = reduce_agent_state(
        state,
        &AgentEvent::RunStart {
            run_id: 1,
            message: user_message("x"),
            system: None,
        },
    );
    let ended = reduce_agent_state(
        started,
        &AgentEvent::RunEnd {
            run_id: 1,
            result: AgentRunResult {
                reason: RunReason::Stop,
                steps: 1,
                messages: Vec::new(),
            },
        },
    );
    assert_eq!(ended.diagnostics, ["subscriber: old"]);
}

#[test]
fn an_agent_over_a_sync_model_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Agent<OpenAiCompatibleModel>>();
}

// The loop's chapter 09 changes, called directly.

fn run_with_queues(
    turns: Vec<ScriptedTurn>,
    executor: Option<&ToolExecutor>,
    signal: Option<Arc<AtomicBool>>,
    after_tools_queue: &RefCell<Vec<Vec<&str>>>,
    after_answer_queue: &RefCell<Vec<Vec<&str>>>,
) -> (AgentRunResult, Vec<AgentContext>) {
    let model = ScriptedModel::new(turns);
    let take = |queue: &RefCell<Vec<Vec<&str>>>| {
        let mut queue = queue.borrow_mut();
        match queue.is_empty() {
            true => Vec::new(),
            false => queue.remove(0).into_iter().map(user_message).collect(),
        }
    };
    let after_tools = || take(after_tools_queue);
    let after_answer = || take(after_answer_queue);
    let run = run_agent_loop_with_queues(
        &model,
        &ToolRegistry::new(),
        &AgentContext {
            messages: vec![AgentMessage::User(user_message("go"))],
            tools: None,
        },
        AgentLoopOptions {
            signal,
            execute_tool_call: executor,
            ..AgentLoopOptions::default()
        },
        Queues {
            after_tools: &after_tools,
            after_answer: &after_answer,
        },
        |_| {},
    );
    (run, model.requests())
}

#[test]
fn the_loop_asks_for_messages_at_its_two_boundaries_only() {
    let executor: Box<ToolExecutor> = Box::new(|call, _| Ok(result_for(call, "ok")));
    // One look after the batch; one after each text answer, until one
    // hands over nothing.
    let after_tools = RefCell::new(vec![vec!["s1", "s2"]]);
    let after_answer = RefCell::new(vec![vec!["f1"], vec![]]);
    let (run, requests) = run_with_queues(
        vec![
            tool_use(&[call("t1", "probe")]),
            answer("first"),
            answer("second"),
        ],
        Some(executor.as_ref()),
        None,
        &after_tools,
        &after_answer,
    );
    assert_eq!(run.reason, RunReason::Stop);
    assert_eq!(requests.len(), 3);
    let tail: Vec<String> = requests[1].messages[3..].iter().map(text_of).collect();
    assert_eq!(tail, ["s1", "s2"]);
    assert_eq!(text_of(requests[2].messages.last().unwrap()), "f1");
    assert!(after_tools.borrow().is_empty() && after_answer.borrow().is_empty());

    // A signal set by the time of a text answer ends the run aborted: no
    // more looks.
    let signal = Arc::new(AtomicBool::new(false));
    let setter = Arc::clone(&signal);
    let abort_in_tool: Box<ToolExecutor> = Box::new(move |call, _| {
        setter.store(true, Ordering::SeqCst);
        Ok(result_for(call, "ok"))
    });
    let after_tools = RefCell::new(vec![vec!["never"]]);
    let after_answer = RefCell::new(vec![vec!["never"]]);
    let (run, requests) = run_with_queues(
        vec![tool_use(&[call("t1", "probe")]), answer("unreached")],
        Some(abort_in_tool.as_ref()),
        Some(signal),
        &after_tools,
        &after_answer,
    );
    assert_eq!(run.reason, RunReason::Aborted);
    assert_eq!(requests.len(), 1);
    assert_eq!(after_tools.borrow().len(), 1, "取消以后不再取");
    assert_eq!(after_answer.borrow().len(), 1);
}

#[test]
fn the_loop_pairs_a_result_that_answers_another_call_with_an_error() {
    let executor: Box<ToolExecutor> = Box::new(|call, _| {
        Ok(ToolResultMessage {
            tool_call_id: "someone-else".to_string(),
            ..result_for(call, "stale")
        })
    });
    let empty = RefCell::new(Vec::new());
    let (run, _) = run_with_queues(
        vec![tool_use(&[call("mine", "probe")]), answer("ok")],
        Some(executor.as_ref()),
        None,
        &empty,
        &empty,
    );
    let results = tool_results(&run.messages);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].tool_call_id, "mine", "结果和 call 配对");
    assert!(results[0].is_error);
    assert_eq!(
        results[0].details,
        Some(json!({ "error": "tool result is not paired with this call" }))
    );
}

/// Sets the signal, then panics: a model call that fails as it is aborted.
struct AbortedWhilePanicking(Arc<AtomicBool>);

impl Model for AbortedWhilePanicking {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        self.0.store(true, Ordering::SeqCst);
        panic!("connection dropped");
    }
}

#[test]
fn the_loop_turns_a_panicking_model_into_an_error_or_aborted_message() {
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message("go"))],
        tools: None,
    };
    let mut events = Vec::new();
    let run = course::agent_loop::run_agent_loop(
        &PanickingModel,
        &ToolRegistry::new(),
        &context,
        AgentLoopOptions::default(),
        |event| events.push(event),
    );
    assert_eq!((run.reason, run.steps), (RunReason::Error, 1));
    let Some(AgentMessage::Assistant(failed)) = run.messages.last() else {
        panic!("失败的调用是一条 assistant message");
    };
    assert_eq!(failed.stop_reason, StopReason::Error);
    assert_eq!(failed.error_message.as_deref(), Some("model exploded"));
    assert!(matches!(events[0], LoopEvent::AssistantMessage { .. }));

    let signal = Arc::new(AtomicBool::new(false));
    let run = course::agent_loop::run_agent_loop(
        &AbortedWhilePanicking(Arc::clone(&signal)),
        &ToolRegistry::new(),
        &context,
        AgentLoopOptions {
            signal: Some(signal),
            ..AgentLoopOptions::default()
        },
        |_| {},
    );
    assert_eq!(run.reason, RunReason::Aborted);
    let Some(AgentMessage::Assistant(failed)) = run.messages.last() else {
        panic!("失败的调用是一条 assistant message");
    };
    assert_eq!(failed.stop_reason, StopReason::Aborted);
}

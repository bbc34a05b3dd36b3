//! Chapter 07's contract beyond the ten focused tests: panics in tools and
//! in an injected executor, progress from several threads, a slow tool while
//! the signal is set, a stream that ends without a message, the step limit,
//! and the JSON shape of loop events and of a run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use course::agent_loop::{
    AgentLoopOptions, AgentRunResult, DEFAULT_MAX_STEPS, LoopEvent, MAX_PARALLEL_TOOLS, RunReason,
    run_agent_loop,
};
use course::assistant_stream::AssistantMessageEventStream;
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::tool::{
    DynTool, ObjectSchema, Tool, ToolContext, ToolError, ToolExecutor, ToolOutput, ToolRegistry,
    object_schema, string_value,
};
use course::types::{
    AgentContext, AgentMessage, AssistantMessage, ErrorReason, Model, StopReason, StreamOptions,
    ToolCall, ToolResultMessage, assistant_message, text, user_message,
};
use serde::Deserialize;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(3);

fn call(id: &str, name: &str, value: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: json!({ "value": value }),
        raw_arguments: None,
    }
}

fn tool_use(calls: Vec<ToolCall>) -> ScriptedTurn {
    assistant_message(
        calls.into_iter().map(Into::into).collect(),
        StopReason::ToolUse,
    )
    .into()
}

fn answer(value: &str) -> ScriptedTurn {
    assistant_message(vec![text(value).into()], StopReason::Stop).into()
}

fn context() -> AgentContext {
    AgentContext {
        messages: vec![AgentMessage::User(user_message("run"))],
        tools: None,
    }
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

#[derive(Debug, Deserialize)]
struct ValueInput {
    value: String,
}

struct FnTool<F> {
    name: &'static str,
    run: F,
}

impl<F> Tool for FnTool<F>
where
    F: Fn(ValueInput, &ToolContext) -> Result<ToolOutput, ToolError> + Send + Sync,
{
    type Input = ValueInput;

    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.name
    }

    fn schema(&self) -> ObjectSchema<ValueInput> {
        object_schema(vec![("value", string_value())])
    }

    fn execute(&self, input: ValueInput, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.run)(input, context)
    }
}

fn tool<F>(name: &'static str, run: F) -> Box<dyn DynTool>
where
    F: Fn(ValueInput, &ToolContext) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
{
    Box::new(FnTool { name, run })
}

fn says(value: impl Into<String>) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput {
        content: vec![text(value)],
        ..ToolOutput::default()
    })
}

/// What a run on the helper thread left behind.
struct Finished {
    run: AgentRunResult,
    /// Each event with the thread `on_event` was called on.
    events: Vec<(ThreadId, LoopEvent)>,
    loop_thread: ThreadId,
    requests: usize,
}

impl Finished {
    fn events(&self) -> Vec<&LoopEvent> {
        self.events.iter().map(|(_, event)| event).collect()
    }
}

/// Runs the loop over a scripted model on a helper thread.
fn start(
    turns: Vec<ScriptedTurn>,
    tools: ToolRegistry,
    signal: Option<Arc<AtomicBool>>,
    executor: Option<Box<ToolExecutor>>,
) -> Receiver<Finished> {
    let (report, finished) = mpsc::channel();
    thread::spawn(move || {
        let model = ScriptedModel::new(turns);
        let mut events = Vec::new();
        let options = AgentLoopOptions {
            signal,
            max_steps: None,
            execute_tool_call: executor.as_deref(),
        };
        let run = run_agent_loop(&model, &tools, &context(), options, |event| {
            events.push((thread::current().id(), event));
        });
        let _ = report.send(Finished {
            run,
            events,
            loop_thread: thread::current().id(),
            requests: model.requests().len(),
        });
    });
    finished
}

fn finish(running: Receiver<Finished>) -> Finished {
    running
        .recv_timeout(PATIENCE)
        .expect("run_agent_loop 三秒内没有结束，或者 panic 了")
}

fn wait_for(signal: &Receiver<()>, what: &str) {
    signal
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("三秒内没有等到：{what}"));
}

#[test]
fn a_tool_that_panics_becomes_an_error_result_and_its_batch_goes_on() {
    let tools = ToolRegistry::with_tools(vec![
        tool("boom", |input, _| panic!("kaboom {}", input.value)),
        tool("echo", |input, _| says(input.value)),
    ])
    .unwrap();

    let finished = finish(start(
        vec![
            tool_use(vec![
                call("b", "boom", "x"),
                call("e", "echo", "still here"),
            ]),
            answer("done"),
        ],
        tools,
        None,
        None,
    ));

    assert_eq!(finished.run.reason, RunReason::Stop, "panic 不会结束运行");
    let results = tool_results(&finished.run.messages);
    assert_eq!(results.len(), 2);
    assert_eq!(
        (results[0].tool_call_id.as_str(), results[0].is_error),
        ("b", true)
    );
    assert_eq!(results[0].content, [text("Tool boom failed: kaboom x")]);
    assert_eq!(
        (results[1].is_error, results[1].content.clone()),
        (false, vec![text("still here")]),
        "同批的另一个工具照常给出结果"
    );
}

#[test]
fn an_injected_executor_that_panics_becomes_an_error_result_with_its_message() {
    let executor: Box<ToolExecutor> = Box::new(|call, _| {
        if call.id == "bad" {
            panic!("executor panicked on {}", call.id);
        }
        Ok(ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![text("fine")],
            details: None,
            is_error: false,
            timestamp: 1,
        })
    });

    let finished = finish(start(
        vec![
            tool_use(vec![call("bad", "x", "1"), call("good", "y", "2")]),
            answer("done"),
        ],
        ToolRegistry::new(),
        None,
        Some(executor),
    ));

    assert_eq!(finished.run.reason, RunReason::Stop);
    let results = tool_results(&finished.run.messages);
    assert_eq!(
        results[0].content,
        [text("Tool x failed: executor panicked on bad")]
    );
    assert_eq!(
        results[0].details,
        Some(json!({ "error": "executor panicked on bad" }))
    );
    let written = serde_json::to_string(results[0]).unwrap();
    assert!(
        !written.contains("panicked at") && !written.contains("backtrace"),
        "结果里没有 panic 的位置和回溯：{written}"
    );
    assert_eq!(results[1].content, [text("fine")]);
}

#[test]
fn progress_from_several_threads_reaches_the_callback_on_the_loop_thread() {
    let (started, both_started) = mpsc::channel::<()>();
    let (go, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let started_too = started.clone();
    let tools = ToolRegistry::with_tools(vec![
        tool("direct", move |input, context| {
            let _ = started.send(());
            if let Some(report) = &context.report_progress {
                report(vec![text(format!("direct {}", input.value))]);
            }
            says("direct done")
        }),
        tool("spawner", move |input, context| {
            let _ = started_too.send(());
            gate.lock().unwrap().recv_timeout(PATIENCE)?;
            let report = context.report_progress.clone();
            thread::spawn(move || {
                if let Some(report) = report {
                    report(vec![text(format!("from inside {}", input.value))]);
                }
            })
            .join()
            .map_err(|_| "the tool's own thread panicked")?;
            says("spawner done")
        }),
    ])
    .unwrap();

    let running = start(
        vec![
            tool_use(vec![call("d", "direct", "1"), call("s", "spawner", "2")]),
            answer("done"),
        ],
        tools,
        None,
        None,
    );
    wait_for(&both_started, "第一个工具开始");
    wait_for(&both_started, "第二个工具开始");
    go.send(()).unwrap();
    let finished = finish(running);

    assert!(
        finished
            .events
            .iter()
            .all(|(thread, _)| *thread == finished.loop_thread),
        "on_event 只在调用 run_agent_loop 的线程上被调用"
    );
    let progress: Vec<(&str, &str)> = finished
        .events()
        .into_iter()
        .filter_map(|event| match event {
            LoopEvent::ToolProgress { call_id, content } => {
                Some((call_id.as_str(), content[0].text.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 2, "两个工具的进度都到达：{progress:?}");
    assert!(progress.contains(&("d", "direct 1")));
    assert!(
        progress.contains(&("s", "from inside 2")),
        "工具自己开的线程报告的进度也到达，带着它的 call id"
    );
    for id in ["d", "s"] {
        let position = |wanted: &str| {
            finished.events().iter().position(|event| match event {
                LoopEvent::ToolProgress { call_id, .. } => wanted == "progress" && call_id == id,
                LoopEvent::ToolEnd { result } => wanted == "end" && result.tool_call_id == id,
                _ => false,
            })
        };
        assert!(
            position("progress") < position("end"),
            "{id} 的进度在它的 tool_end 之前"
        );
    }
}

#[test]
fn every_tool_start_comes_before_any_tool_runs() {
    let tools = ToolRegistry::with_tools(vec![tool("echo", |input, _| says(input.value))]).unwrap();
    let finished = finish(start(
        vec![
            tool_use(vec![
                call("1", "echo", "a"),
                call("2", "echo", "b"),
                call("3", "echo", "c"),
            ]),
            answer("done"),
        ],
        tools,
        None,
        None,
    ));
    let kinds: Vec<&str> = finished
        .events()
        .into_iter()
        .filter_map(|event| match event {
            LoopEvent::ToolStart { .. } => Some("start"),
            LoopEvent::ToolEnd { .. } => Some("end"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["start", "start", "start", "end", "end", "end"]);
}

#[test]
fn a_slow_tool_while_the_signal_is_set_keeps_its_result_and_nothing_more_is_requested() {
    let signal = Arc::new(AtomicBool::new(false));
    let (started, has_started): (Sender<()>, Receiver<()>) = mpsc::channel();
    let (go, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let tools = ToolRegistry::with_tools(vec![tool("slow", move |_, context| {
        let _ = started.send(());
        gate.lock().unwrap().recv_timeout(PATIENCE)?;
        let cancelled = context
            .signal
            .as_ref()
            .is_some_and(|signal| signal.load(Ordering::SeqCst));
        says(format!("saw the signal: {cancelled}"))
    })])
    .unwrap();

    let running = start(
        vec![
            tool_use(vec![call("slow-1", "slow", "x")]),
            answer("must not be requested"),
        ],
        tools,
        Some(Arc::clone(&signal)),
        None,
    );
    wait_for(&has_started, "slow 开始");
    signal.store(true, Ordering::SeqCst);
    go.send(()).unwrap();
    let finished = finish(running);

    assert_eq!(finished.run.reason, RunReason::Aborted);
    assert_eq!(finished.run.steps, 1);
    assert_eq!(finished.requests, 1, "取消以后不再请求模型");
    let results = tool_results(&finished.run.messages);
    assert_eq!(
        results[0].content,
        [text("saw the signal: true")],
        "loop 等正在运行的工具结束，保留它的结果；工具自己能看到 signal"
    );
}

/// A model whose stream ends without a final message.
struct Broken;

impl Model for Broken {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        drop(stream.producer());
        stream
    }
}

#[test]
fn a_stream_without_a_final_message_ends_the_run_in_error() {
    let mut events = Vec::new();
    let context = context();
    let run = run_agent_loop(
        &Broken,
        &ToolRegistry::new(),
        &context,
        AgentLoopOptions::default(),
        |event| events.push(event),
    );
    assert_eq!((run.reason, run.steps), (RunReason::Error, 1));
    assert_eq!(run.messages, context.messages, "没有消息可以追加");
    assert_eq!(
        events,
        [LoopEvent::TurnEnd {
            reason: RunReason::Error
        }]
    );
}

#[test]
fn a_failed_model_call_keeps_its_message_and_ends_in_error() {
    let model = ScriptedModel::new(vec![ScriptedTurn::Error {
        stop_reason: ErrorReason::Error,
        error_message: "rate limited".to_string(),
        partial_text: Some("正在".to_string()),
    }]);
    let run = run_agent_loop(
        &model,
        &ToolRegistry::new(),
        &context(),
        AgentLoopOptions::default(),
        |_| {},
    );
    assert_eq!(run.reason, RunReason::Error);
    let Some(AgentMessage::Assistant(message)) = run.messages.last() else {
        panic!("失败的 assistant message 也进入 transcript");
    };
    assert_eq!(message.error_message.as_deref(), Some("rate limited"));
}

#[test]
fn the_step_limit_defaults_to_32_and_zero_requests_nothing() {
    let tools =
        || ToolRegistry::with_tools(vec![tool("echo", |input, _| says(input.value))]).unwrap();
    let forever: Vec<ScriptedTurn> = (0..40)
        .map(|step| tool_use(vec![call(&format!("c{step}"), "echo", "again")]))
        .collect();
    let model = ScriptedModel::new(forever.clone());
    let run = run_agent_loop(
        &model,
        &tools(),
        &context(),
        AgentLoopOptions::default(),
        |_| {},
    );
    assert_eq!(DEFAULT_MAX_STEPS, 32);
    assert_eq!((run.reason, run.steps), (RunReason::MaxSteps, 32));
    assert_eq!(model.requests().len(), 32);
    assert_eq!(tool_results(&run.messages).len(), 32);

    let model = ScriptedModel::new(forever);
    let mut events = Vec::new();
    let run = run_agent_loop(
        &model,
        &tools(),
        &context(),
        AgentLoopOptions {
            max_steps: Some(0),
            ..AgentLoopOptions::default()
        },
        |event| events.push(event),
    );
    assert_eq!((run.reason, run.steps), (RunReason::MaxSteps, 0));
    assert!(model.requests().is_empty());
    assert_eq!(
        events,
        [LoopEvent::TurnEnd {
            reason: RunReason::MaxSteps
        }]
    );
}

fn assistant(stop_reason: StopReason, content: Vec<ToolCall>) -> AssistantMessage {
    AssistantMessage {
        timestamp: 7,
        ..assistant_message(content.into_iter().map(Into::into).collect(), stop_reason)
    }
}

#[test]
fn loop_events_have_the_original_json_shape() {
    let read = call("c1", "read", "README.md");
    let result = ToolResultMessage {
        tool_call_id: "c1".to_string(),
        tool_name: "read".to_string(),
        content: vec![text("tiny-pi")],
        details: None,
        is_error: false,
        timestamp: 8,
    };
    let cases: Vec<(LoopEvent, &str)> = vec![
        (
            LoopEvent::AssistantMessage {
                message: assistant(StopReason::ToolUse, vec![read.clone()]),
            },
            r#"{"type":"assistant_message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"value":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"toolUse","timestamp":7}}"#,
        ),
        (
            LoopEvent::ToolStart { call: read },
            r#"{"type":"tool_start","call":{"type":"toolCall","id":"c1","name":"read","arguments":{"value":"README.md"}}}"#,
        ),
        (
            LoopEvent::ToolProgress {
                call_id: "c1".to_string(),
                content: vec![text("halfway")],
            },
            r#"{"type":"tool_progress","callId":"c1","content":[{"type":"text","text":"halfway"}]}"#,
        ),
        (
            LoopEvent::ToolEnd {
                result: result.clone(),
            },
            r#"{"type":"tool_end","result":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"tiny-pi"}],"isError":false,"timestamp":8}}"#,
        ),
        (
            LoopEvent::ToolSkipped { result },
            r#"{"type":"tool_skipped","result":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"tiny-pi"}],"isError":false,"timestamp":8}}"#,
        ),
        (
            LoopEvent::TurnEnd {
                reason: RunReason::MaxSteps,
            },
            r#"{"type":"turn_end","reason":"maxSteps"}"#,
        ),
    ];
    for (event, expected) in cases {
        assert_eq!(serde_json::to_string(&event).unwrap(), expected);
    }
    let model_event = finish(start(vec![answer("hi")], ToolRegistry::new(), None, None));
    let first: Value = serde_json::to_value(model_event.events()[0]).unwrap();
    assert_eq!(first["type"], "model_event");
    assert_eq!(
        first["event"]["type"], "start",
        "model_event 里是第 03 章的事件"
    );
}

#[test]
fn a_run_serializes_as_reason_steps_then_messages() {
    let run = AgentRunResult {
        reason: RunReason::Stop,
        steps: 1,
        messages: vec![AgentMessage::Assistant(assistant(StopReason::Stop, vec![]))],
    };
    assert_eq!(
        serde_json::to_string(&run).unwrap(),
        r#"{"reason":"stop","steps":1,"messages":[{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":7}]}"#
    );
}

#[test]
fn skipped_results_say_why_the_call_was_not_run() {
    for (stop_reason, expected) in [
        (StopReason::Length, "the model response was truncated"),
        (StopReason::Error, "the model turn ended with error"),
        (StopReason::Aborted, "the model turn ended with aborted"),
        (StopReason::Stop, "the model returned stop with a tool call"),
    ] {
        let model = ScriptedModel::new(vec![
            assistant_message(vec![call("c", "echo", "x").into()], stop_reason).into(),
        ]);
        let run = run_agent_loop(
            &model,
            &ToolRegistry::new(),
            &context(),
            AgentLoopOptions::default(),
            |_| {},
        );
        let results = tool_results(&run.messages);
        assert_eq!(
            (
                results.len(),
                results[0].tool_call_id.as_str(),
                results[0].tool_name.as_str()
            ),
            (1, "c", "echo")
        );
        assert!(results[0].is_error);
        assert_eq!(
            results[0].content,
            [text(format!(
                "Tool call was not executed because {expected}."
            ))],
            "{stop_reason:?} 的跳过说明"
        );
    }
}

#[test]
fn a_tool_that_keeps_its_progress_callback_does_not_hold_up_the_loop() {
    let kept: Arc<Mutex<Option<course::tool::ProgressCallback>>> = Arc::default();
    let slot = Arc::clone(&kept);
    let tools = ToolRegistry::with_tools(vec![tool("keeper", move |input, context| {
        *slot.lock().unwrap() = context.report_progress.clone();
        says(input.value)
    })])
    .unwrap();

    let finished = finish(start(
        vec![tool_use(vec![call("k", "keeper", "kept")]), answer("done")],
        tools,
        None,
        None,
    ));

    assert_eq!(
        finished.run.reason,
        RunReason::Stop,
        "工具留着进度回调，循环也照常结束：它等的是每个调用的 tool_end"
    );
    let late = kept.lock().unwrap().clone().expect("工具留下了回调");
    late(vec![text("too late")]); // nobody listens any more: ignored, no panic
}

#[test]
fn at_most_max_parallel_tools_calls_run_at_once_and_results_keep_call_order() {
    assert_eq!(MAX_PARALLEL_TOOLS, 8, "the docs and README state 8");
    let calls: Vec<ToolCall> = (0..20)
        .map(|i| call(&format!("c{i}"), "gated", &i.to_string()))
        .collect();
    let running = Arc::new(Mutex::new((0usize, 0usize))); // (now, most at once)
    let (started, has_started) = mpsc::channel::<()>();
    let (go, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let counter = Arc::clone(&running);
    let tools = ToolRegistry::with_tools(vec![tool("gated", move |input, _| {
        {
            let mut running = counter.lock().unwrap();
            running.0 += 1;
            running.1 = running.1.max(running.0);
        }
        let _ = started.send(());
        gate.lock().unwrap().recv_timeout(PATIENCE)?;
        counter.lock().unwrap().0 -= 1;
        says(input.value)
    })])
    .unwrap();

    let run = start(
        vec![tool_use(calls.clone()), answer("done")],
        tools,
        None,
        None,
    );
    // Eight start; each one let go makes room for exactly one more.
    for _ in 0..MAX_PARALLEL_TOOLS {
        wait_for(&has_started, "a tool starts");
    }
    assert_eq!(running.lock().unwrap().0, MAX_PARALLEL_TOOLS);
    for _ in MAX_PARALLEL_TOOLS..calls.len() {
        go.send(()).unwrap();
        wait_for(&has_started, "the next tool starts once one ends");
    }
    for _ in 0..MAX_PARALLEL_TOOLS {
        go.send(()).unwrap();
    }
    let finished = finish(run);

    assert_eq!(finished.run.reason, RunReason::Stop);
    assert_eq!(
        running.lock().unwrap().1,
        MAX_PARALLEL_TOOLS,
        "never more than the bound at once"
    );
    let ids: Vec<&str> = tool_results(&finished.run.messages)
        .iter()
        .map(|result| result.tool_call_id.as_str())
        .collect();
    let expected: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
    assert_eq!(ids, expected, "results in call order");
}

/// A model that answers on the caller's thread (no thread of its own): a
/// batch of `gated` calls, then a text.
struct Inline {
    calls: usize,
    asked: Mutex<usize>,
}

impl Model for Inline {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        let mut asked = self.asked.lock().unwrap();
        *asked += 1;
        let message = if *asked == 1 {
            let calls = (0..self.calls).map(|i| call(&format!("c{i}"), "gated", "x").into());
            assistant_message(calls.collect(), StopReason::ToolUse)
        } else {
            assistant_message(vec![text("done").into()], StopReason::Stop)
        };
        let reason = match message.stop_reason {
            StopReason::ToolUse => course::types::DoneReason::ToolUse,
            _ => course::types::DoneReason::Stop,
        };
        let _ = stream.push(course::types::ModelEvent::Done { reason, message });
        stream
    }
}

/// Set in the child process of the test below.
const SPAWN_CHILD: &str = "COURSE_AGENT_LOOP_SPAWN_CHILD";

#[test]
fn a_call_whose_thread_cannot_start_gets_an_error_result_and_the_batch_goes_on() {
    if std::env::var_os(SPAWN_CHILD).is_some() {
        // The child: every thread spawn fails (a 1 TiB stack cannot be
        // reserved), so the loop must answer each call itself.
        let tools = ToolRegistry::with_tools(vec![tool("gated", |_, _| says("ran"))]).unwrap();
        let model = Inline {
            calls: 3,
            asked: Mutex::new(0),
        };
        let mut ends = 0;
        let run = run_agent_loop(
            &model,
            &tools,
            &context(),
            AgentLoopOptions::default(),
            |event| {
                ends += usize::from(matches!(event, LoopEvent::ToolEnd { .. }));
            },
        );
        let line = json!({ "run": run, "ends": ends });
        println!("\nCHILD-RESULT {line}");
        return;
    }
    // The parent runs this very test again in a child process whose threads
    // all fail to start; libtest then runs the test on its main thread.
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_call_whose_thread_cannot_start_gets_an_error_result_and_the_batch_goes_on",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(SPAWN_CHILD, "1")
        .env("RUST_MIN_STACK", (1u64 << 40).to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("CHILD-RESULT "))
        .unwrap_or_else(|| {
            panic!(
                "the child printed no result: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let child: Value = serde_json::from_str(line).unwrap();
    assert_eq!(child["run"]["reason"], "stop", "{child}");
    assert_eq!(child["ends"], 3, "one tool_end per call");
    let results: Vec<(&str, bool, &str)> = child["run"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "toolResult")
        .map(|result| {
            (
                result["toolCallId"].as_str().unwrap(),
                result["isError"].as_bool().unwrap(),
                result["content"][0]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(results.len(), 3, "{child}");
    for (i, (id, is_error, text)) in results.into_iter().enumerate() {
        assert_eq!(id, format!("c{i}"), "call order");
        assert!(is_error);
        assert!(
            text.starts_with("Tool gated failed: could not start a thread: "),
            "{text}"
        );
    }
}

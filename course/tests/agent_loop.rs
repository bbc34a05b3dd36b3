//! Chapter 07's focused test: the agent loop, ten tests ported one for one
//! from the original course.
//!
//! Steps filter them by lab: `lab7_1` (1 test), `lab7_2` (2), `lab7_3` (2),
//! `lab7_4` (2), `lab7_5` (3); no filter runs all 10.
//!
//! Each run happens on a helper thread and must end within three seconds,
//! so a loop that hangs fails its test instead of the whole run. Concurrency
//! is made deterministic with gates (channels), never with sleeps.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use course::agent_loop::{AgentLoopOptions, AgentRunResult, LoopEvent, RunReason, run_agent_loop};
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::tool::{
    DynTool, ObjectSchema, Tool, ToolContext, ToolError, ToolExecutor, ToolOutput, ToolRegistry,
    object_schema, string_value,
};
use course::types::{
    AgentContext, AgentMessage, AssistantMessage, Sections, StopReason, SystemMessage, ToolCall,
    ToolDefinition, ToolResultMessage, assistant_message, current_system_prompt, text,
    user_message,
};
use serde::Deserialize;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(3);

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
        raw_arguments: None,
    }
}

fn user(value: &str) -> AgentMessage {
    AgentMessage::User(user_message(value))
}

fn system(content: &str, sections: Option<Sections>, timestamp: u64) -> AgentMessage {
    AgentMessage::System(SystemMessage {
        content: content.to_string(),
        sections,
        timestamp,
    })
}

fn turn(content: Vec<ToolCall>, stop_reason: StopReason) -> ScriptedTurn {
    assistant_message(content.into_iter().map(Into::into).collect(), stop_reason).into()
}

fn text_turn(value: &str, stop_reason: StopReason) -> ScriptedTurn {
    assistant_message(vec![text(value).into()], stop_reason).into()
}

fn context(messages: Vec<AgentMessage>) -> AgentContext {
    AgentContext {
        messages,
        tools: None,
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

fn tool_results(messages: &[AgentMessage]) -> Vec<&ToolResultMessage> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect()
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

/// The wire name of an event.
fn kind(event: &LoopEvent) -> &'static str {
    match event {
        LoopEvent::ModelEvent { .. } => "model_event",
        LoopEvent::AssistantMessage { .. } => "assistant_message",
        LoopEvent::ToolStart { .. } => "tool_start",
        LoopEvent::ToolProgress { .. } => "tool_progress",
        LoopEvent::ToolEnd { .. } => "tool_end",
        LoopEvent::ToolSkipped { .. } => "tool_skipped",
        LoopEvent::TurnEnd { .. } => "turn_end",
    }
}

fn count(events: &[LoopEvent], wanted: &str) -> usize {
    events.iter().filter(|event| kind(event) == wanted).count()
}

fn ended_ids(events: &[LoopEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            LoopEvent::ToolEnd { result } => Some(result.tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

fn assert_single_end(events: &[LoopEvent], reason: RunReason) {
    let ends: Vec<&LoopEvent> = events
        .iter()
        .filter(|event| kind(event) == "turn_end")
        .collect();
    assert_eq!(
        ends,
        [&LoopEvent::TurnEnd { reason }],
        "一次运行只有一个 turn_end，reason 是 {reason:?}"
    );
    assert_eq!(
        events.last().map(kind),
        Some("turn_end"),
        "turn_end 是最后一个事件"
    );
}

#[derive(Debug, Deserialize)]
struct ValueInput {
    value: String,
}

/// A tool whose input is `{ value: string }`, made of a function.
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

fn echo_tool() -> Box<dyn DynTool> {
    tool("echo", |input, _| says(input.value))
}

fn registry(tools: Vec<Box<dyn DynTool>>) -> ToolRegistry {
    ToolRegistry::with_tools(tools).expect("测试里的工具不重名")
}

/// The optional parts of a run, owned, so the run can move to a thread.
#[derive(Default)]
struct Setup {
    signal: Option<Arc<AtomicBool>>,
    max_steps: Option<usize>,
    executor: Option<Box<ToolExecutor>>,
}

/// What a finished run left behind.
struct Finished {
    run: AgentRunResult,
    events: Vec<LoopEvent>,
    requests: Vec<AgentContext>,
    context: AgentContext,
}

/// A run in progress on its helper thread.
struct Running(Receiver<Finished>);

impl Running {
    fn finish(self) -> Finished {
        match self.0.recv_timeout(PATIENCE) {
            Ok(finished) => finished,
            Err(RecvTimeoutError::Timeout) => {
                panic!("run_agent_loop 三秒内没有结束：是不是在等一个永远不会来的事件？")
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("run_agent_loop panic 了（见上面的输出）")
            }
        }
    }
}

/// Starts `run_agent_loop` over a scripted model on a helper thread;
/// `watch` sees each event as the loop emits it.
fn start(
    turns: Vec<ScriptedTurn>,
    tools: ToolRegistry,
    context: AgentContext,
    setup: Setup,
    mut watch: impl FnMut(&LoopEvent) + Send + 'static,
) -> Running {
    let (report, finished) = mpsc::channel();
    thread::spawn(move || {
        let model = ScriptedModel::new(turns);
        let mut events = Vec::new();
        let options = AgentLoopOptions {
            signal: setup.signal,
            max_steps: setup.max_steps,
            execute_tool_call: setup.executor.as_deref(),
        };
        let run = run_agent_loop(&model, &tools, &context, options, |event| {
            watch(&event);
            events.push(event);
        });
        let _ = report.send(Finished {
            run,
            events,
            requests: model.requests(),
            context,
        });
    });
    Running(finished)
}

fn run(
    turns: Vec<ScriptedTurn>,
    tools: ToolRegistry,
    context: AgentContext,
    setup: Setup,
) -> Finished {
    start(turns, tools, context, setup, |_| {}).finish()
}

/// Waits for a gate to open, at most three seconds.
fn pass(gate: &Mutex<Receiver<()>>) {
    gate.lock()
        .unwrap()
        .recv_timeout(PATIENCE)
        .expect("测试没有打开这道门");
}

fn wait_for(signal: &Receiver<()>, what: &str) {
    signal
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("三秒内没有等到：{what}"));
}

#[test]
fn lab7_1_plain_stop_keeps_the_input_and_sends_the_whole_context() {
    let tools = registry(vec![echo_tool()]);
    let definitions = tools.definitions();
    let context = AgentContext {
        messages: vec![system("You are Pi.", None, 0), user("explain the loop")],
        tools: Some(vec![ToolDefinition {
            name: "stale-definition".to_string(),
            description: "must not reach the model".to_string(),
            parameters: json!({ "type": "object" }),
        }]),
    };
    let before = context.clone();

    let Finished {
        run,
        events,
        requests,
        context,
    } = run(
        vec![text_turn("A loop closes over evidence.", StopReason::Stop)],
        tools,
        context,
        Setup::default(),
    );

    // The loop only borrows the context, so this holds by its signature;
    // kept from the original.
    assert_eq!(context, before);
    assert_eq!(
        roles(&run.messages),
        ["system", "user", "assistant"],
        "运行的 messages 是调用方的两条加上一条 assistant"
    );
    assert_eq!(requests.len(), 1, "模型只被请求一次");
    assert_eq!(
        current_system_prompt(&requests[0].messages).as_deref(),
        Some("You are Pi."),
        "system prompt 就在请求的 messages 里"
    );
    let request = serde_json::to_value(&requests[0]).unwrap();
    let keys: Vec<&String> = request.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["messages", "tools"],
        "请求只由 messages 和 tools 组成，没有单独的 systemPrompt"
    );
    assert_eq!(
        requests[0].messages, before.messages,
        "请求的 messages 就是调用方的 messages"
    );
    assert_eq!(
        requests[0].tools.as_ref(),
        Some(&definitions),
        "请求带的是 registry 的 definitions，不是 context 里过时的 tools"
    );
    assert_eq!(run.reason, RunReason::Stop);
    assert_eq!(run.steps, 1);
    assert_single_end(&events, RunReason::Stop);
}

#[test]
fn lab7_2_the_loop_never_writes_system_messages_and_only_appends() {
    let tools = registry(vec![echo_tool()]);
    let context = context(vec![
        system(
            "BASE",
            Some(Sections::from([("rules", Some("RULE v1"))])),
            0,
        ),
        user("first"),
        AgentMessage::Assistant(assistant_message(vec![text("ok").into()], StopReason::Stop)),
        system("", Some(Sections::from([("rules", Some("RULE v2"))])), 2),
        user("second"),
    ]);
    let before = context.clone();
    let prefix = before.messages.len();

    let Finished {
        run,
        requests,
        context,
        ..
    } = run(
        vec![
            turn(
                vec![call("echo-1", "echo", json!({ "value": "hi" }))],
                StopReason::ToolUse,
            ),
            text_turn("done", StopReason::Stop),
        ],
        tools,
        context,
        Setup::default(),
    );

    assert_eq!(run.reason, RunReason::Stop);
    assert_eq!(
        run.messages[..prefix],
        before.messages[..],
        "调用方给的 messages（含 system message）是不变前缀"
    );
    assert_eq!(
        roles(&run.messages[prefix..]),
        ["assistant", "toolResult", "assistant"],
        "loop 只追加 assistant 与 toolResult"
    );
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.messages[..prefix],
            before.messages[..],
            "每个请求都以调用方的 messages 开头"
        );
        assert_eq!(
            roles(&request.messages)
                .iter()
                .filter(|role| **role == "system")
                .count(),
            2,
            "system message 留在 transcript 原位，折叠是第 05 章 adapter 的事"
        );
        assert_eq!(
            current_system_prompt(&request.messages).as_deref(),
            Some("BASE\n\nRULE v2")
        );
    }
    assert_eq!(context, before);
}

/// What the probe saw of its context.
struct Seen {
    call_id: String,
    signal: Option<Arc<AtomicBool>>,
}

#[test]
fn lab7_2_one_tool_round_trip_hands_signal_and_progress_and_fills_the_next_request() {
    let controller = Arc::new(AtomicBool::new(false));
    let progress = vec![text("halfway")];
    let executions = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let (counter, sightings, reported) =
        (Arc::clone(&executions), Arc::clone(&seen), progress.clone());
    let tools = registry(vec![tool("probe", move |input, context| {
        counter.fetch_add(1, Ordering::SeqCst);
        sightings.lock().unwrap().push(Seen {
            call_id: context.call_id.clone(),
            signal: context.signal.clone(),
        });
        if let Some(report) = &context.report_progress {
            report(reported.clone());
        }
        Ok(ToolOutput {
            content: vec![text(format!("observed:{}", input.value))],
            details: Some(json!({ "source": "probe" })),
            is_error: false,
        })
    })]);
    let definitions = tools.definitions();
    let context = context(vec![user("inspect")]);
    let before = context.clone();
    let tool_call = call("probe-1", "probe", json!({ "value": "signal" }));

    let Finished {
        run,
        events,
        requests,
        context,
    } = run(
        vec![
            turn(vec![tool_call.clone()], StopReason::ToolUse),
            text_turn("done", StopReason::Stop),
        ],
        tools,
        context,
        Setup {
            signal: Some(Arc::clone(&controller)),
            ..Setup::default()
        },
    );

    assert_eq!(executions.load(Ordering::SeqCst), 1, "probe 执行一次");
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].call_id, "probe-1", "工具收到这次调用的 id");
    assert!(
        seen[0]
            .signal
            .as_ref()
            .is_some_and(|signal| Arc::ptr_eq(signal, &controller)),
        "工具收到的是调用方的同一个 signal"
    );
    assert_eq!(context, before);
    assert_eq!(requests.len(), 2, "工具结果回填以后再请求一次模型");
    assert_eq!(
        roles(&requests[1].messages),
        ["user", "assistant", "toolResult"],
        "第二次请求看到 user、assistant 和工具结果"
    );
    assert_eq!(requests[1].tools.as_ref(), Some(&definitions));
    assert_eq!(
        roles(&run.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    let stop_reasons: Vec<StopReason> = events
        .iter()
        .filter_map(|event| match event {
            LoopEvent::AssistantMessage { message } => Some(message.stop_reason),
            _ => None,
        })
        .collect();
    assert_eq!(stop_reasons, [StopReason::ToolUse, StopReason::Stop]);
    let paired = tool_results(&run.messages);
    assert_eq!(paired.len(), 1);
    assert_eq!(paired[0].tool_call_id, tool_call.id);
    assert_eq!(paired[0].tool_name, tool_call.name);
    assert_eq!(paired[0].content, [text("observed:signal")]);
    assert_eq!(paired[0].details, Some(json!({ "source": "probe" })));
    let progress_events: Vec<&LoopEvent> = events
        .iter()
        .filter(|event| kind(event) == "tool_progress")
        .collect();
    assert_eq!(
        progress_events,
        [&LoopEvent::ToolProgress {
            call_id: "probe-1".to_string(),
            content: progress,
        }],
        "进度事件带着 call id"
    );
    let tool_events: Vec<&str> = events
        .iter()
        .map(kind)
        .filter(|kind| kind.starts_with("tool_"))
        .collect();
    assert_eq!(tool_events, ["tool_start", "tool_progress", "tool_end"]);
    assert_eq!(count(&events, "tool_start"), 1);
    assert_eq!(count(&events, "tool_end"), 1);
    assert_eq!(run.reason, RunReason::Stop);
    assert_single_end(&events, RunReason::Stop);
}

#[test]
fn lab7_3_length_error_and_aborted_skip_every_call_and_pair_it() {
    for (stop_reason, reason, name) in [
        (StopReason::Length, RunReason::Length, "length"),
        (StopReason::Error, RunReason::Error, "error"),
        (StopReason::Aborted, RunReason::Aborted, "aborted"),
    ] {
        let executions = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&executions);
        let tools = registry(vec![tool("echo", move |input, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            says(input.value)
        })]);
        let calls = [
            call(&format!("{name}-1"), "echo", json!({ "value": "first" })),
            call(&format!("{name}-2"), "echo", json!({ "value": "second" })),
        ];
        let message = AssistantMessage {
            error_message: (stop_reason == StopReason::Error)
                .then(|| "provider failed".to_string()),
            ..assistant_message(calls.iter().cloned().map(Into::into).collect(), stop_reason)
        };

        let Finished { run, events, .. } = run(
            vec![message.into()],
            tools,
            context(vec![user("run")]),
            Setup::default(),
        );

        assert_eq!(executions.load(Ordering::SeqCst), 0, "{name} 绝不执行工具");
        assert_eq!(run.reason, reason);
        let paired: Vec<Value> = tool_results(&run.messages)
            .iter()
            .map(|result| {
                json!({
                    "id": result.tool_call_id,
                    "name": result.tool_name,
                    "error": result.is_error,
                    "details": result.details,
                })
            })
            .collect();
        let expected: Vec<Value> = calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "name": call.name,
                    "error": true,
                    "details": { "skipped": true, "reason": name },
                })
            })
            .collect();
        assert_eq!(paired, expected, "{name}：每个 call 都有一条跳过的配对结果");
        assert_eq!(count(&events, "tool_start"), 0, "{name}：没有 tool_start");
        assert_eq!(
            count(&events, "tool_skipped"),
            2,
            "{name}：两个 tool_skipped"
        );
        assert_single_end(&events, reason);
    }
}

#[test]
fn lab7_3_stop_with_calls_and_tool_use_without_calls_end_in_a_protocol_error() {
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executions);
    let tools = registry(vec![tool("echo", move |input, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        says(input.value)
    })]);
    let malformed_call = call("stop-call", "echo", json!({ "value": "never" }));

    let malformed_stop = run(
        vec![turn(vec![malformed_call.clone()], StopReason::Stop)],
        tools,
        context(vec![user("run")]),
        Setup::default(),
    );

    assert_eq!(
        executions.load(Ordering::SeqCst),
        0,
        "stop 里的 call 不执行"
    );
    assert_eq!(malformed_stop.run.reason, RunReason::Error);
    let paired: Vec<Value> = tool_results(&malformed_stop.run.messages)
        .iter()
        .map(|result| {
            json!({
                "id": result.tool_call_id,
                "name": result.tool_name,
                "isError": result.is_error,
                "details": result.details,
            })
        })
        .collect();
    assert_eq!(
        paired,
        [json!({
            "id": malformed_call.id,
            "name": malformed_call.name,
            "isError": true,
            "details": { "skipped": true, "reason": "unexpected-stop" },
        })]
    );
    assert_single_end(&malformed_stop.events, RunReason::Error);

    let empty_tool_use = run(
        vec![text_turn("missing call", StopReason::ToolUse)],
        registry(vec![echo_tool()]),
        context(vec![user("run")]),
        Setup::default(),
    );

    assert_eq!(empty_tool_use.run.reason, RunReason::Error);
    assert_eq!(tool_results(&empty_tool_use.run.messages).len(), 0);
    assert_single_end(&empty_tool_use.events, RunReason::Error);
}

/// A tool that says it started, then waits for its gate.
fn gated(name: &'static str, gate: Receiver<()>, started: Sender<()>) -> Box<dyn DynTool> {
    let gate = Mutex::new(gate);
    tool(name, move |input, _| {
        let _ = started.send(());
        pass(&gate);
        says(input.value)
    })
}

#[test]
fn lab7_4_concurrent_tools_end_in_completion_order_but_results_keep_call_order() {
    let (open_slow, slow_gate) = mpsc::channel();
    let (open_fast, fast_gate) = mpsc::channel();
    let (started, both_started) = mpsc::channel();
    let (fast_ended, fast_has_ended) = mpsc::channel();
    let tools = registry(vec![
        gated("slow", slow_gate, started.clone()),
        gated("fast", fast_gate, started),
    ]);
    let calls = vec![
        call("slow-call", "slow", json!({ "value": "S" })),
        call("fast-call", "fast", json!({ "value": "F" })),
    ];

    let running = start(
        vec![
            turn(calls, StopReason::ToolUse),
            text_turn("done", StopReason::Stop),
        ],
        tools,
        context(vec![user("run")]),
        Setup::default(),
        move |event| match event {
            LoopEvent::ToolEnd { result } if result.tool_call_id == "fast-call" => {
                let _ = fast_ended.send(());
            }
            _ => {}
        },
    );
    wait_for(&both_started, "第一个工具开始");
    wait_for(&both_started, "第二个工具开始：两个工具应该同时在运行");
    open_fast.send(()).unwrap();
    wait_for(&fast_has_ended, "fast 的 tool_end");
    open_slow.send(()).unwrap();
    let Finished {
        run,
        events,
        requests,
        ..
    } = running.finish();

    assert_eq!(
        ended_ids(&events),
        ["fast-call", "slow-call"],
        "tool_end 按真实完成顺序"
    );
    let ids = |messages: &[AgentMessage]| -> Vec<String> {
        tool_results(messages)
            .iter()
            .map(|result| result.tool_call_id.clone())
            .collect()
    };
    assert_eq!(
        ids(&run.messages),
        ["slow-call", "fast-call"],
        "transcript 按 call 顺序"
    );
    assert_eq!(
        ids(&requests[1].messages),
        ["slow-call", "fast-call"],
        "下一次请求也按 call 顺序"
    );
    let names: Vec<&str> = tool_results(&run.messages)
        .iter()
        .map(|result| result.tool_name.as_str())
        .collect();
    assert_eq!(names, ["slow", "fast"]);
    assert_single_end(&events, RunReason::Stop);
}

/// An error whose `Debug` form carries a stack, like a JavaScript `Error`.
struct Exploded;

impl fmt::Debug for Exploded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Exploded { stack: \"STACK_SECRET\" }")
    }
}

impl fmt::Display for Exploded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("executor exploded")
    }
}

impl std::error::Error for Exploded {}

#[test]
fn lab7_4_concurrent_tools_a_failing_injected_executor_does_not_stop_the_batch() {
    let (good_started, good_has_started) = mpsc::channel::<()>();
    let (release_good, release) = mpsc::channel::<()>();
    let release = Mutex::new(release);
    let executor: Box<ToolExecutor> = Box::new(move |call, options| {
        if call.id == "bad-call" {
            return Err(Box::new(Exploded));
        }
        let _ = good_started.send(());
        pass(&release);
        if let Some(report) = &options.report_progress {
            report(vec![text("good still running")]);
        }
        Ok(result_for(call, "good result", false))
    });
    let calls = vec![
        call("bad-call", "bad", json!({})),
        call("good-call", "good", json!({})),
    ];

    let running = start(
        vec![
            turn(calls, StopReason::ToolUse),
            text_turn("done", StopReason::Stop),
        ],
        ToolRegistry::new(),
        context(vec![user("run")]),
        Setup {
            executor: Some(executor),
            ..Setup::default()
        },
        |_| {},
    );
    wait_for(&good_has_started, "good 开始");
    release_good.send(()).unwrap();
    let Finished { run, events, .. } = running.finish();

    assert_eq!(run.reason, RunReason::Stop);
    let results = tool_results(&run.messages);
    let ids: Vec<&str> = results.iter().map(|r| r.tool_call_id.as_str()).collect();
    assert_eq!(ids, ["bad-call", "good-call"]);
    let names: Vec<&str> = results.iter().map(|r| r.tool_name.as_str()).collect();
    assert_eq!(names, ["bad", "good"]);
    assert!(results[0].is_error, "失败的执行器给出错误结果");
    assert!(!results[1].is_error, "同批的正常结果保留");
    let written = serde_json::to_string(results[0]).unwrap();
    assert!(
        written.contains("executor exploded"),
        "错误结果写出执行器的信息：{written}"
    );
    assert!(
        !written.contains("STACK_SECRET") && !written.to_lowercase().contains("stack"),
        "错误结果里没有 stack：{written}"
    );
    let mut ended = ended_ids(&events);
    ended.sort();
    assert_eq!(ended, ["bad-call", "good-call"]);
    assert!(
        events.iter().any(|event| matches!(
            event,
            LoopEvent::ToolProgress { call_id, .. } if call_id == "good-call"
        )),
        "good 的进度事件到达"
    );
    assert_single_end(&events, RunReason::Stop);
}

#[test]
fn lab7_5_a_signal_set_before_the_start_requests_nothing() {
    let controller = Arc::new(AtomicBool::new(true));
    let initial = user("do not start");

    let Finished {
        run,
        events,
        requests,
        ..
    } = run(
        vec![text_turn("unreachable", StopReason::Stop)],
        ToolRegistry::new(),
        context(vec![initial.clone()]),
        Setup {
            signal: Some(controller),
            ..Setup::default()
        },
    );

    assert_eq!(run.reason, RunReason::Aborted);
    assert_eq!(run.steps, 0, "一次模型请求都没有完成");
    assert_eq!(run.messages, [initial], "只有调用方的消息");
    assert_eq!(requests.len(), 0, "预取消不请求模型");
    assert_single_end(&events, RunReason::Aborted);
}

#[test]
fn lab7_5_a_signal_set_during_tools_keeps_their_results_and_requests_no_more() {
    let controller = Arc::new(AtomicBool::new(false));
    let seen_signal: Arc<Mutex<Option<Arc<AtomicBool>>>> = Arc::default();
    let (cancel, seen) = (Arc::clone(&controller), Arc::clone(&seen_signal));
    let tools = registry(vec![tool("cancel-after", move |input, context| {
        *seen.lock().unwrap() = context.signal.clone();
        cancel.store(true, Ordering::SeqCst);
        says(input.value)
    })]);
    let current_call = call("cancel-call", "cancel-after", json!({ "value": "kept" }));

    let Finished {
        run,
        events,
        requests,
        ..
    } = run(
        vec![
            turn(vec![current_call.clone()], StopReason::ToolUse),
            text_turn("must not be requested", StopReason::Stop),
        ],
        tools,
        context(vec![user("run")]),
        Setup {
            signal: Some(Arc::clone(&controller)),
            ..Setup::default()
        },
    );

    assert!(
        seen_signal
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|signal| Arc::ptr_eq(signal, &controller)),
        "工具收到的是同一个 signal"
    );
    assert_eq!(run.reason, RunReason::Aborted);
    assert_eq!(run.steps, 1);
    assert_eq!(requests.len(), 1, "取消以后不再请求模型");
    let kept: Vec<(&str, &str, &[_])> = tool_results(&run.messages)
        .iter()
        .map(|result| {
            (
                result.tool_call_id.as_str(),
                result.tool_name.as_str(),
                result.content.as_slice(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        [(
            current_call.id.as_str(),
            current_call.name.as_str(),
            &[text("kept")][..]
        )],
        "取消之前形成的工具结果保留"
    );
    assert_eq!(count(&events, "tool_end"), 1);
    assert_single_end(&events, RunReason::Aborted);
}

#[test]
fn lab7_5_max_steps_keeps_the_last_batch_of_results() {
    let current_call = call("last-call", "echo", json!({ "value": "kept" }));

    let Finished {
        run,
        events,
        requests,
        ..
    } = run(
        vec![
            turn(vec![current_call.clone()], StopReason::ToolUse),
            text_turn("must not be requested", StopReason::Stop),
        ],
        registry(vec![echo_tool()]),
        context(vec![user("run")]),
        Setup {
            max_steps: Some(1),
            ..Setup::default()
        },
    );

    assert_eq!(run.reason, RunReason::MaxSteps);
    assert_eq!(run.steps, 1);
    assert_eq!(requests.len(), 1, "达到上限以后不再请求模型");
    let kept: Vec<(&str, &str, &[_])> = tool_results(&run.messages)
        .iter()
        .map(|result| {
            (
                result.tool_call_id.as_str(),
                result.tool_name.as_str(),
                result.content.as_slice(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        [(
            current_call.id.as_str(),
            current_call.name.as_str(),
            &[text("kept")][..]
        )],
        "最后一批工具结果保留"
    );
    assert_single_end(&events, RunReason::MaxSteps);
}

//! Chapter 06's contract beyond the four focused tests and the edges step
//! (`tool_contract_edges.rs`): which field a refusal is about, a tool that
//! panics, progress reported from a thread the tool started, and the rest.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use course::tool::{
    DynTool, ObjectSchema, ParseError, ProgressCallback, Tool, ToolCallOptions, ToolContext,
    ToolError, ToolOutput, ToolRegistry, execute_tool_call, object_schema,
    optional_positive_integer, optional_string, string_value,
};
use course::types::{TextContent, ToolCall, text};
use serde::Deserialize;
use serde_json::{Value, json};

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
        raw_arguments: None,
    }
}

#[derive(Debug, PartialEq, Deserialize)]
struct Request {
    value: String,
    label: Option<String>,
    limit: Option<u64>,
}

fn request_schema() -> ObjectSchema<Request> {
    object_schema(vec![
        ("value", string_value()),
        ("label", optional_string()),
        ("limit", optional_positive_integer()),
    ])
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
        "a test tool"
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

fn echo() -> Box<dyn DynTool> {
    tool("echo", |input, _| {
        Ok(ToolOutput {
            content: vec![text(input.value)],
            ..ToolOutput::default()
        })
    })
}

fn refusal(value: Value) -> ParseError {
    match request_schema().parse(&value) {
        Ok(parsed) => panic!("{value} 应该被拒绝，却解析成了 {parsed:?}"),
        Err(error) => error,
    }
}

#[test]
fn definitions_have_the_original_bytes() {
    let tools = ToolRegistry::with_tools(vec![echo()]).unwrap();
    assert_eq!(
        serde_json::to_string(&tools.definitions()).unwrap(),
        r#"[{"name":"echo","description":"a test tool","parameters":{"type":"object","properties":{"value":{"type":"string"}},"required":["value"],"additionalProperties":false}}]"#,
        "definitions() 的字节"
    );
}

#[test]
fn a_refusal_names_its_field_and_keeps_the_original_text() {
    let error = refusal(json!({ "value": "Pi", "label": 3 }));
    assert_eq!(
        (error.field, error.message.as_str()),
        (Some("label"), "必须是 string"),
        "label 错了：错误指向 label，文本仍是原版的"
    );
    let error = refusal(json!({ "value": "Pi", "limit": -1 }));
    assert_eq!(
        (error.field, error.message.as_str()),
        (Some("limit"), "必须是正整数")
    );
    let error = refusal(json!({ "label": "answer" }));
    assert_eq!(
        (error.field, error.message.as_str()),
        (Some("value"), "必须是 string"),
        "缺少必填字段，就是这个字段不是 string"
    );
    let error = refusal(json!({ "value": 1, "limit": 0 }));
    assert_eq!(
        error.field,
        Some("value"),
        "按声明顺序检查，报告第一个错的字段"
    );
    assert_eq!(
        error.to_string(),
        "必须是 string",
        "Display 只给原版文本，不加字段名"
    );
}

#[test]
fn a_schema_that_does_not_match_its_input_type_is_refused_not_a_panic() {
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Wrong {
        value: u32,
    }
    let schema: ObjectSchema<Wrong> = object_schema(vec![("value", string_value())]);
    let error = schema
        .parse(&json!({ "value": "Pi" }))
        .expect_err("声明是 string，类型却是 u32：这是工具自己的错");
    assert_eq!(error.field, None);
}

#[test]
fn a_tool_that_panics_is_a_failed_result_and_the_registry_keeps_working() {
    let mut tools = ToolRegistry::with_tools(vec![echo()]).unwrap();
    tools
        .register(tool("boom", |input, _| panic!("kaboom {}", input.value)))
        .unwrap();
    tools
        .register(tool("crash", |_, _| panic!("static crash")))
        .unwrap();

    let boom = execute_tool_call(
        &call("b", "boom", json!({ "value": "x" })),
        &tools,
        ToolCallOptions::default(),
    );
    let crash = execute_tool_call(
        &call("c", "crash", json!({ "value": "x" })),
        &tools,
        ToolCallOptions::default(),
    );
    let after = execute_tool_call(
        &call("e", "echo", json!({ "value": "still here" })),
        &tools,
        ToolCallOptions::default(),
    );

    assert_eq!(
        (boom.tool_call_id.as_str(), boom.tool_name.as_str()),
        ("b", "boom")
    );
    assert!(boom.is_error, "panic 是失败");
    assert_eq!(
        boom.content,
        vec![text("Tool boom failed: kaboom x")],
        "结果里是 panic 的信息（format! 出来的 String）"
    );
    assert_eq!(boom.details, Some(json!({ "error": "kaboom x" })));
    assert_eq!(
        crash.content,
        vec![text("Tool crash failed: static crash")],
        "结果里是 panic 的信息（&str）"
    );
    let written = serde_json::to_string(&boom).unwrap();
    assert!(
        !written.contains("panicked at") && !written.contains("backtrace"),
        "结果里没有 panic 的位置和回溯：{written}"
    );
    assert_eq!(
        (after.is_error, after.content),
        (false, vec![text("still here")]),
        "panic 之后同一个 registry 照常工作"
    );
}

/// An error whose `Debug` form holds what must not reach the model.
struct Leaky;

impl fmt::Debug for Leaky {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Leaky { stack: \"STACK_SECRET\" }")
    }
}

impl fmt::Display for Leaky {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("disk full")
    }
}

impl std::error::Error for Leaky {}

#[test]
fn a_failed_result_holds_the_error_message_only() {
    let tools = ToolRegistry::with_tools(vec![tool("leaky", |_, _| Err(Box::new(Leaky)))]).unwrap();
    let result = execute_tool_call(
        &call("l", "leaky", json!({ "value": "x" })),
        &tools,
        ToolCallOptions::default(),
    );
    assert_eq!(result.content, vec![text("Tool leaky failed: disk full")]);
    assert!(
        !serde_json::to_string(&result)
            .unwrap()
            .contains("STACK_SECRET"),
        "只写 Display 的信息，不写 Debug"
    );
}

/// One progress report: the thread it came from, and what it said.
type Reported = (thread::ThreadId, Vec<TextContent>);

#[test]
fn progress_reported_from_a_thread_the_tool_started_reaches_the_caller() {
    let tools = ToolRegistry::with_tools(vec![tool("worker", |input, context| {
        let report = context.report_progress.clone();
        let worker = thread::spawn(move || {
            if let Some(report) = report {
                report(vec![text(format!("working on {}", input.value))]);
            }
            input.value.len()
        });
        let length = worker.join().map_err(|_| "worker panicked")?;
        Ok(ToolOutput {
            content: vec![text(length.to_string())],
            ..ToolOutput::default()
        })
    })])
    .unwrap();
    let progress: Arc<Mutex<Vec<Reported>>> = Arc::default();
    let sink = Arc::clone(&progress);
    let report_progress: ProgressCallback =
        Arc::new(move |content| sink.lock().unwrap().push((thread::current().id(), content)));

    let result = execute_tool_call(
        &call("w", "worker", json!({ "value": "Pi" })),
        &tools,
        ToolCallOptions {
            signal: None,
            report_progress: Some(report_progress),
        },
    );

    assert_eq!(result.content, vec![text("2")]);
    let progress = progress.lock().unwrap();
    assert_eq!(progress.len(), 1, "进度到达了一次");
    assert_eq!(progress[0].1, vec![text("working on Pi")]);
    assert_ne!(
        progress[0].0,
        thread::current().id(),
        "进度是从工具自己开的线程报告的"
    );
}

#[test]
fn an_unknown_tool_runs_nothing_and_duplicates_are_refused_at_construction() {
    let executed = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executed);
    let tools = ToolRegistry::with_tools(vec![tool("echo", move |input, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput {
            content: vec![text(input.value)],
            ..ToolOutput::default()
        })
    })])
    .unwrap();
    let result = execute_tool_call(
        &call("x", "Echo", json!({ "value": "Pi" })),
        &tools,
        ToolCallOptions::default(),
    );
    assert_eq!(
        (result.tool_name.as_str(), result.is_error),
        ("Echo", true),
        "名字区分大小写；结果保留模型请求的名字"
    );
    assert_eq!(executed.load(Ordering::SeqCst), 0);
    assert!(tools.get("Echo").is_none());

    let duplicate = ToolRegistry::with_tools(vec![echo(), echo()])
        .err()
        .expect("初始工具里的重名也被拒绝");
    assert_eq!(duplicate.to_string(), "Tool 已存在：echo");
    assert!(ToolRegistry::new().definitions().is_empty());
}

/// Milliseconds since the Unix epoch, as the results are stamped.
fn now_ms() -> u64 {
    std::time::UNIX_EPOCH.elapsed().unwrap().as_millis() as u64
}

#[test]
fn every_result_is_stamped_with_the_time_it_was_made() {
    let tools = ToolRegistry::with_tools(vec![echo()]).unwrap();
    let before = now_ms();
    let results = [
        execute_tool_call(
            &call("ok", "echo", json!({ "value": "Pi" })),
            &tools,
            ToolCallOptions::default(),
        ),
        execute_tool_call(
            &call("m", "missing", json!({})),
            &tools,
            ToolCallOptions::default(),
        ),
    ];
    let after = now_ms();
    for result in results {
        assert!(
            (before..=after).contains(&result.timestamp),
            "结果 {} 的时间戳 {} 应该在 {before} 和 {after} 之间",
            result.tool_call_id,
            result.timestamp
        );
    }
}

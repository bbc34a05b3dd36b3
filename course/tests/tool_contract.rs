//! Chapter 06's focused test: the tool contract, four tests ported one for
//! one from the original course.
//!
//! Steps filter them by name: `validator` (step 6.1, 1 test), `registry`
//! (step 6.2, 1 test), no filter (step 6.3, all 4; `executor` selects its 2).
//!
//! JSON values are compared as values here, like the original's
//! `deepEqual`: key order does not count. The schema's bytes, order
//! included, are checked by the edges step 6.4
//! (`course/tests/tool_contract_edges.rs`, which the lab has too).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use course::tool::{
    DynTool, ObjectSchema, ProgressCallback, Tool, ToolCallOptions, ToolContext, ToolError,
    ToolOutput, ToolRegistry, execute_tool_call, object_schema, optional_positive_integer,
    optional_string, string_value,
};
use course::types::{TextContent, ToolCall, ToolResultMessage, text};
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

/// The result with its timestamp, which changes every run, set to 0.
fn without_timestamp(result: &ToolResultMessage) -> ToolResultMessage {
    ToolResultMessage {
        timestamp: 0,
        ..result.clone()
    }
}

/// The input of every tool here: one string.
#[derive(Debug, Deserialize)]
struct ValueInput {
    value: String,
}

fn value_schema() -> ObjectSchema<ValueInput> {
    object_schema(vec![("value", string_value())])
}

/// A tool made of a name, a description and a function of its input.
struct FnTool<F> {
    name: &'static str,
    description: &'static str,
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
        self.description
    }

    fn schema(&self) -> ObjectSchema<ValueInput> {
        value_schema()
    }

    fn execute(&self, input: ValueInput, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.run)(input, context)
    }
}

fn tool<F>(name: &'static str, description: &'static str, run: F) -> Box<dyn DynTool>
where
    F: Fn(ValueInput, &ToolContext) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
{
    Box::new(FnTool {
        name,
        description,
        run,
    })
}

#[derive(Debug, PartialEq, Deserialize)]
struct Request {
    value: String,
    label: Option<String>,
    limit: Option<u64>,
}

#[test]
fn lab6_1_validator_narrows_a_value_and_describes_the_exact_json_schema() {
    let schema: ObjectSchema<Request> = object_schema(vec![
        ("value", string_value()),
        ("label", optional_string()),
        ("limit", optional_positive_integer()),
    ]);

    assert_eq!(
        schema.json_schema(),
        json!({
            "type": "object",
            "properties": {
                "value": { "type": "string" },
                "label": { "type": "string" },
                "limit": { "type": "integer", "minimum": 1 },
            },
            "required": ["value"],
            "additionalProperties": false,
        }),
        "JSON Schema 应该列出三个字段，只有 value 是必填，并且 additionalProperties 为 false"
    );
    assert_eq!(
        schema
            .parse(&json!({
                "value": "Pi",
                "label": "answer",
                "limit": 2,
                "ignored": "drop me",
            }))
            .expect("合法参数应该解析成功"),
        Request {
            value: "Pi".to_string(),
            label: Some("answer".to_string()),
            limit: Some(2),
        },
        "只保留声明过的字段，ignored 被丢掉"
    );
    assert_eq!(
        schema
            .parse(&json!({ "value": "Pi" }))
            .expect("省略可选字段也应该解析成功"),
        Request {
            value: "Pi".to_string(),
            label: None,
            limit: None,
        },
        "省略的可选字段是 None"
    );
    let refusal = |value: Value| match schema.parse(&value) {
        Ok(parsed) => panic!("{value} 应该被拒绝，却解析成了 {parsed:?}"),
        Err(error) => error.to_string(),
    };
    assert!(
        refusal(Value::Null).contains("参数必须是 object"),
        "null 不是 object"
    );
    assert!(
        refusal(json!({ "value": 1 })).contains("必须是 string"),
        "value: 1 不是 string"
    );
    assert!(
        refusal(json!({ "value": "Pi", "limit": 0 })).contains("必须是正整数"),
        "limit: 0 不是正整数"
    );
}

#[test]
fn lab6_2_registry_takes_initial_tools_refuses_duplicates_and_exposes_definitions() {
    let echo = || {
        tool("echo", "Echo one value", |input, _| {
            Ok(ToolOutput {
                content: vec![text(input.value)],
                ..ToolOutput::default()
            })
        })
    };
    let upper = tool("upper", "Uppercase one value", |input, _| {
        Ok(ToolOutput {
            content: vec![text(input.value.to_uppercase())],
            ..ToolOutput::default()
        })
    });
    let mut tools = ToolRegistry::with_tools(vec![echo(), upper]).expect("两个不同名的工具");

    let listed: Vec<(&str, &str)> = tools
        .list()
        .iter()
        .map(|tool| (tool.name(), tool.description()))
        .collect();
    assert_eq!(
        listed,
        [("echo", "Echo one value"), ("upper", "Uppercase one value")],
        "list() 按注册顺序交回这两个工具"
    );
    assert_eq!(
        serde_json::to_value(tools.definitions()).unwrap(),
        json!([
            {
                "name": "echo",
                "description": "Echo one value",
                "parameters": {
                    "type": "object",
                    "properties": { "value": { "type": "string" } },
                    "required": ["value"],
                    "additionalProperties": false,
                },
            },
            {
                "name": "upper",
                "description": "Uppercase one value",
                "parameters": {
                    "type": "object",
                    "properties": { "value": { "type": "string" } },
                    "required": ["value"],
                    "additionalProperties": false,
                },
            },
        ]),
        "definitions() 只交出 name、description 和 parameters"
    );
    let duplicate = tools.register(echo()).expect_err("第二个 echo 应该被拒绝");
    assert!(
        duplicate.to_string().contains("Tool 已存在：echo"),
        "重名的错误信息是 `Tool 已存在：echo`，实际是 `{duplicate}`"
    );
}

#[test]
fn lab6_3_executor_pairs_success_and_three_failures() {
    let execution_count = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    let counter = Arc::clone(&execution_count);
    tools
        .register(tool("echo", "echo", move |input, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput {
                content: vec![text(input.value)],
                details: Some(json!({ "source": "echo" })),
                ..ToolOutput::default()
            })
        }))
        .unwrap();
    tools
        .register(tool("boom", "throw", |_, _| Err("exploded".into())))
        .unwrap();

    let success = execute_tool_call(
        &call("ok", "echo", json!({ "value": "Pi" })),
        &tools,
        ToolCallOptions::default(),
    );
    let missing = execute_tool_call(
        &call("m", "missing", json!({})),
        &tools,
        ToolCallOptions::default(),
    );
    let invalid = execute_tool_call(
        &call("i", "echo", json!({ "value": 1 })),
        &tools,
        ToolCallOptions::default(),
    );
    let thrown = execute_tool_call(
        &call("t", "boom", json!({ "value": "x" })),
        &tools,
        ToolCallOptions::default(),
    );

    assert_eq!(
        execution_count.load(Ordering::SeqCst),
        1,
        "echo 只应该执行一次：非法参数不能进入工具"
    );
    assert_eq!(
        without_timestamp(&success),
        ToolResultMessage {
            tool_call_id: "ok".to_string(),
            tool_name: "echo".to_string(),
            content: vec![text("Pi")],
            details: Some(json!({ "source": "echo" })),
            is_error: false,
            timestamp: 0,
        },
        "成功的结果保留 content 和 details"
    );
    assert_eq!(
        without_timestamp(&missing),
        ToolResultMessage {
            tool_call_id: "m".to_string(),
            tool_name: "missing".to_string(),
            content: vec![text("Tool missing failed: 未知工具")],
            details: Some(json!({ "error": "未知工具" })),
            is_error: true,
            timestamp: 0,
        },
        "未知工具的结果仍然配对原来的 id 和 name"
    );
    assert_eq!(
        without_timestamp(&invalid),
        ToolResultMessage {
            tool_call_id: "i".to_string(),
            tool_name: "echo".to_string(),
            content: vec![text("Tool echo failed: 必须是 string")],
            details: Some(json!({ "error": "必须是 string" })),
            is_error: true,
            timestamp: 0,
        },
        "参数错误停在 parse，结果写出错误文本"
    );
    assert_eq!(
        without_timestamp(&thrown),
        ToolResultMessage {
            tool_call_id: "t".to_string(),
            tool_name: "boom".to_string(),
            content: vec![text("Tool boom failed: exploded")],
            details: Some(json!({ "error": "exploded" })),
            is_error: true,
            timestamp: 0,
        },
        "工具返回的错误变成配对的失败结果"
    );
    for result in [&success, &missing, &invalid, &thrown] {
        assert!(
            result.timestamp > 0,
            "结果 {} 应该带上当前时间",
            result.tool_call_id
        );
    }
}

/// What the `inspect` tool saw of its context.
struct Seen {
    call_id: String,
    signal: Option<Arc<AtomicBool>>,
    report_progress: Option<ProgressCallback>,
}

#[test]
fn lab6_3_executor_hands_call_id_signal_and_progress_to_the_tool_and_keeps_output() {
    let signal = Arc::new(AtomicBool::new(false));
    let progress: Arc<Mutex<Vec<Vec<TextContent>>>> = Arc::default();
    let sink = Arc::clone(&progress);
    let report_progress: ProgressCallback =
        Arc::new(move |content| sink.lock().unwrap().push(content));
    let seen_context: Arc<Mutex<Option<Seen>>> = Arc::default();
    let seen = Arc::clone(&seen_context);
    let mut tools = ToolRegistry::new();
    tools
        .register(tool("inspect", "inspect context", move |input, context| {
            *seen.lock().unwrap() = Some(Seen {
                call_id: context.call_id.clone(),
                signal: context.signal.clone(),
                report_progress: context.report_progress.clone(),
            });
            if let Some(report) = &context.report_progress {
                report(vec![text(format!("progress:{}", input.value))]);
            }
            Ok(ToolOutput {
                content: vec![text(format!("done:{}", input.value))],
                details: Some(json!({ "phase": "domain-error" })),
                is_error: true,
            })
        }))
        .unwrap();

    let result = execute_tool_call(
        &call("ctx", "inspect", json!({ "value": "Pi" })),
        &tools,
        ToolCallOptions {
            signal: Some(Arc::clone(&signal)),
            report_progress: Some(Arc::clone(&report_progress)),
        },
    );

    let seen = seen_context.lock().unwrap();
    let seen = seen.as_ref().expect("工具应该被执行");
    assert_eq!(seen.call_id, "ctx", "工具收到的 call_id 来自 call");
    assert!(
        seen.signal
            .as_ref()
            .is_some_and(|seen| Arc::ptr_eq(seen, &signal)),
        "工具收到的是调用者的同一个 signal"
    );
    assert!(
        seen.report_progress
            .as_ref()
            .is_some_and(|seen| Arc::ptr_eq(seen, &report_progress)),
        "工具收到的是调用者的同一个 progress 回调"
    );
    assert_eq!(
        *progress.lock().unwrap(),
        vec![vec![text("progress:Pi")]],
        "工具报告的进度到达调用者"
    );
    assert_eq!(
        without_timestamp(&result),
        ToolResultMessage {
            tool_call_id: "ctx".to_string(),
            tool_name: "inspect".to_string(),
            content: vec![text("done:Pi")],
            details: Some(json!({ "phase": "domain-error" })),
            is_error: true,
            timestamp: 0,
        },
        "工具自己报告的领域错误连同 output 一起保留"
    );
}

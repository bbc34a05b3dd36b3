//! Chapter 07's cancellation step 7.6, handed to the lab: the loop looks at
//! the signal a second time, right after a batch of tools, not only before
//! the next model call.
//!
//! The focused test cannot tell the two checks apart: with more steps left,
//! the next turn's first check gives the same `aborted` and `steps: 1`. On
//! the last step the loop allows, there is no next turn: without the second
//! check a run cancelled during its tools ends as `maxSteps`, as if nobody
//! had asked it to stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use course::agent_loop::{AgentLoopOptions, LoopEvent, RunReason, run_agent_loop};
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::tool::{ObjectSchema, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use course::tool::{object_schema, string_value};
use course::types::{
    AgentContext, AgentMessage, StopReason, ToolCall, assistant_message, text, user_message,
};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Input {
    value: String,
}

/// A tool that sets the run's signal while it runs, then answers.
struct Cancels(Arc<AtomicBool>);

impl Tool for Cancels {
    type Input = Input;

    fn name(&self) -> &str {
        "cancels"
    }

    fn description(&self) -> &str {
        "sets the signal"
    }

    fn schema(&self) -> ObjectSchema<Input> {
        object_schema(vec![("value", string_value())])
    }

    fn execute(&self, input: Input, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.store(true, Ordering::SeqCst);
        Ok(ToolOutput {
            content: vec![text(input.value)],
            ..ToolOutput::default()
        })
    }
}

#[test]
fn lab7_6_a_signal_set_during_the_last_allowed_batch_ends_aborted_not_max_steps() {
    let signal = Arc::new(AtomicBool::new(false));
    let tools = ToolRegistry::with_tools(vec![Box::new(Cancels(Arc::clone(&signal)))]).unwrap();
    let call = ToolCall {
        id: "cancel-call".to_string(),
        name: "cancels".to_string(),
        arguments: json!({ "value": "kept" }),
        raw_arguments: None,
    };
    let turns: Vec<ScriptedTurn> = vec![
        assistant_message(vec![call.into()], StopReason::ToolUse).into(),
        assistant_message(vec![text("never asked").into()], StopReason::Stop).into(),
    ];
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message("run"))],
        ..AgentContext::default()
    };

    let (report, finished) = mpsc::channel();
    thread::spawn(move || {
        let model = ScriptedModel::new(turns);
        let options = AgentLoopOptions {
            signal: Some(signal),
            max_steps: Some(1),
            execute_tool_call: None,
        };
        let mut ends = Vec::new();
        let run = run_agent_loop(&model, &tools, &context, options, |event| {
            if let LoopEvent::TurnEnd { reason } = event {
                ends.push(reason);
            }
        });
        let _ = report.send((run, ends, model.requests().len()));
    });
    let (run, ends, requests) = finished
        .recv_timeout(Duration::from_secs(3))
        .expect("run_agent_loop 三秒内没有结束，或者 panic 了");

    assert_eq!(
        run.reason,
        RunReason::Aborted,
        "工具运行期间 signal 被设置：这一批结束后就以 aborted 结束，即使这已是允许的最后一步"
    );
    assert_eq!(run.steps, 1);
    assert_eq!(requests, 1, "取消以后不再请求模型");
    let kept = run.messages.iter().any(|message| {
        matches!(message, AgentMessage::ToolResult(result) if result.content == [text("kept")])
    });
    assert!(kept, "这一批的工具结果保留在 transcript 里");
    assert_eq!(
        ends,
        [RunReason::Aborted],
        "恰好一个 turn_end，原因是 aborted"
    );
}

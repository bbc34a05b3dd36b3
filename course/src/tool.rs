//! Chapter 06: the tool contract — how one tool call becomes one paired result.
//!
//! A model only *asks* for a tool: a [`ToolCall`] holds a name and untyped
//! JSON arguments. Three parts stand between that request and the
//! [`ToolResultMessage`] that answers it:
//!
//! * **The schema** ([`ObjectSchema`]) is declared once and does two jobs:
//!   [`json_schema`](ObjectSchema::json_schema) tells the model what to
//!   produce, [`parse`](ObjectSchema::parse) checks what it produced and
//!   narrows the `Value` into the tool's own input type. The model saw the
//!   schema, but its output still comes from outside the program, so it is
//!   checked every time, before the tool runs.
//! * **The registry** ([`ToolRegistry`]) holds the tools this run may use,
//!   in order. The model sees their [`definitions`](ToolRegistry::definitions);
//!   the executor finds their code in the same table.
//! * **The executor** ([`execute_tool_call`]) goes lookup → parse → execute
//!   → result. Whatever happens — success, an unknown tool, invalid
//!   arguments, a tool that fails or panics — it answers with one result
//!   carrying the call's id and name, never an `Err`.
//!
//! The Rust shape: a tool is written against the typed trait [`Tool`], whose
//! `execute` receives its own `Input` type. One registry holds tools of
//! different input types, so it stores them as trait objects of
//! [`DynTool`], which takes `&Value` arguments and is implemented for every
//! `Tool` by parsing first. That blanket impl is the one place where the
//! untyped arguments become typed.

use std::any::Any;
use std::error::Error;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::UNIX_EPOCH;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::types::{TextContent, ToolCall, ToolDefinition, ToolResultMessage, text};

/// What checks one field of the arguments, and how the model is told about
/// it. `parse` gets the field's value (`None` when the key is absent) and
/// gives the value to keep (`None`: leave the key out) or the error text.
#[derive(Debug, Clone)]
pub struct Validator {
    /// The field's JSON Schema, e.g. `{"type":"string"}`.
    pub json_schema: Value,
    /// An optional field is left out of `required`.
    pub optional: bool,
    pub parse: fn(Option<&Value>) -> Result<Option<Value>, &'static str>,
}

/// A required string.
pub fn string_value() -> Validator {
    Validator {
        json_schema: json!({ "type": "string" }),
        optional: false,
        parse: check_string,
    }
}

/// A string, or nothing.
pub fn optional_string() -> Validator {
    Validator {
        json_schema: json!({ "type": "string" }),
        optional: true,
        parse: |value| match value {
            None => Ok(None),
            Some(_) => check_string(value),
        },
    }
}

/// An integer of at least 1, or nothing.
pub fn optional_positive_integer() -> Validator {
    Validator {
        json_schema: json!({ "type": "integer", "minimum": 1 }),
        optional: true,
        parse: |value| match value {
            None => Ok(None),
            Some(value) => match positive_integer(value) {
                Some(number) => Ok(Some(Value::from(number))),
                None => Err("必须是正整数"),
            },
        },
    }
}

fn check_string(value: Option<&Value>) -> Result<Option<Value>, &'static str> {
    match value {
        Some(Value::String(text)) => Ok(Some(Value::String(text.clone()))),
        _ => Err("必须是 string"),
    }
}

/// `2` and `2.0` are the same number in JSON; `0`, `-1` and `1.5` are not
/// positive integers, and neither is `1e30`: it does not fit a `u64`.
fn positive_integer(value: &Value) -> Option<u64> {
    if let Some(number) = value.as_u64() {
        return Some(number).filter(|&number| number >= 1);
    }
    let number = value.as_f64()?;
    // `u64::MAX as f64` rounds up to 2^64, the first float too big for a u64.
    if number.fract() == 0.0 && (1.0..u64::MAX as f64).contains(&number) {
        Some(number as u64)
    } else {
        None
    }
}

/// Why arguments were refused. `message` is what the model reads (the
/// chapter's text, e.g. `必须是 string`); `field` says where, for the
/// program: `None` when the arguments as a whole were wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub field: Option<&'static str>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for ParseError {}

/// The arguments of a tool: a JSON object with these fields, in this order.
/// `T` is the Rust type the arguments narrow into; serde fills it from the
/// checked fields, so its field names are the declared ones.
pub struct ObjectSchema<T> {
    fields: Vec<(&'static str, Validator)>,
    input: PhantomData<fn() -> T>,
}

/// Declares an object's fields once: the same list gives the JSON Schema and
/// the checks of [`ObjectSchema::parse`].
pub fn object_schema<T>(fields: Vec<(&'static str, Validator)>) -> ObjectSchema<T> {
    ObjectSchema {
        fields,
        input: PhantomData,
    }
}

impl<T> ObjectSchema<T> {
    /// What the model is told: `type`, `properties` in declaration order,
    /// the `required` fields, and `additionalProperties: false`.
    pub fn json_schema(&self) -> Value {
        let properties: Map<String, Value> = self
            .fields
            .iter()
            .map(|(name, validator)| (name.to_string(), validator.json_schema.clone()))
            .collect();
        let required: Vec<&str> = self
            .fields
            .iter()
            .filter(|(_, validator)| !validator.optional)
            .map(|(name, _)| *name)
            .collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }
}

impl<T: DeserializeOwned> ObjectSchema<T> {
    /// Checks `value` field by field and narrows it into a new `T`: only
    /// declared fields are read (unknown keys are dropped), an absent
    /// optional field stays absent, `value` itself is not changed.
    pub fn parse(&self, value: &Value) -> Result<T, ParseError> {
        let Value::Object(arguments) = value else {
            return Err(ParseError {
                field: None,
                message: "参数必须是 object".to_string(),
            });
        };
        let mut checked = Map::new();
        for (name, validator) in &self.fields {
            let kept = (validator.parse)(arguments.get(*name)).map_err(|message| ParseError {
                field: Some(name),
                message: message.to_string(),
            })?;
            if let Some(kept) = kept {
                checked.insert(name.to_string(), kept);
            }
        }
        // Only fails when `T` does not match the declaration: a bug in the
        // tool, reported like any other refusal.
        serde_json::from_value(Value::Object(checked)).map_err(|error| ParseError {
            field: None,
            message: error.to_string(),
        })
    }
}

/// A tool's way to report progress while it runs. It is shared and
/// thread-safe, so a tool may call it from any thread it starts.
pub type ProgressCallback = Arc<dyn Fn(Vec<TextContent>) + Send + Sync>;

/// Why a tool failed: any error, with its message (`"exploded".into()`,
/// or `?` on an `io::Error`).
pub type ToolError = Box<dyn Error + Send + Sync>;

/// What a tool gets besides its input: which call this is, and the
/// caller's controls.
#[derive(Clone)]
pub struct ToolContext {
    /// The id of the call being answered; the executor sets it from the call.
    pub call_id: String,
    /// Set when the caller cancels. A tool has to look at it to stop early.
    pub signal: Option<Arc<AtomicBool>>,
    pub report_progress: Option<ProgressCallback>,
}

/// The controls a caller hands to [`execute_tool_call`]: a [`ToolContext`]
/// without the call id, which comes from the call and cannot be overridden.
#[derive(Clone, Default)]
pub struct ToolCallOptions {
    pub signal: Option<Arc<AtomicBool>>,
    pub report_progress: Option<ProgressCallback>,
}

/// How the agent loop (chapter 07) runs one call, when the caller injects
/// its own way instead of [`execute_tool_call`]. Unlike that function, an
/// injected executor may fail (or panic): the loop turns that into a failed
/// result.
pub type ToolExecutor =
    dyn Fn(&ToolCall, ToolCallOptions) -> Result<ToolResultMessage, ToolError> + Send + Sync;

/// What a tool returns: `content` for the model, `details` for the
/// program. `is_error: true` reports a failure in the tool's own terms,
/// with its output kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<TextContent>,
    pub details: Option<Value>,
    pub is_error: bool,
}

/// A tool, written against its own input type.
///
/// `Send + Sync`: the agent loop (chapter 07) runs several calls at once,
/// each on a thread that borrows the registry.
pub trait Tool: Send + Sync {
    /// What `execute` receives once the arguments passed [`Tool::schema`].
    type Input: DeserializeOwned;

    fn name(&self) -> &str;
    /// For the model: what the tool does.
    fn description(&self) -> &str;
    fn schema(&self) -> ObjectSchema<Self::Input>;
    fn execute(&self, input: Self::Input, context: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Calls of one turn whose tools name the same key run one after
    /// another, in call order, instead of side by side (chapter 08: a write
    /// and an edit of one file name that file). `None`, the default: the
    /// call may run beside any other.
    fn serial_key(&self, _input: &Self::Input) -> Option<String> {
        None
    }
}

/// Any tool, whatever its input type: what a registry stores.
///
/// `dyn Tool` cannot be one type for tools of different inputs (its `Input`
/// would have to be named), so this trait takes the arguments as they come,
/// untyped, and every [`Tool`] implements it by parsing first.
pub trait DynTool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// The JSON Schema of the arguments.
    fn parameters(&self) -> Value;
    /// Parses `arguments`, then executes; a refusal is the parse error.
    fn run(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError>;
    /// The [`Tool::serial_key`] of these arguments; `None` when they do not parse.
    fn serial_key(&self, arguments: &Value) -> Option<String>;
}

impl<T: Tool> DynTool for T {
    fn name(&self) -> &str {
        Tool::name(self)
    }

    fn description(&self) -> &str {
        Tool::description(self)
    }

    fn parameters(&self) -> Value {
        self.schema().json_schema()
    }

    fn run(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = self.schema().parse(arguments)?;
        self.execute(input, context)
    }

    fn serial_key(&self, arguments: &Value) -> Option<String> {
        let input = self.schema().parse(arguments).ok()?;
        Tool::serial_key(self, &input)
    }
}

/// A second tool with a name already taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateTool {
    pub name: String,
}

impl fmt::Display for DuplicateTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tool 已存在：{}", self.name)
    }
}

impl Error for DuplicateTool {}

/// The tools one run may use, in the order they were registered. Each
/// registry has its own; nothing is global.
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<Box<dyn DynTool>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// A registry holding `tools`, registered in order.
    pub fn with_tools(tools: Vec<Box<dyn DynTool>>) -> Result<Self, DuplicateTool> {
        let mut registry = ToolRegistry::new();
        for tool in tools {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Adds `tool`, unless its name is taken: replacing a tool silently would
    /// run other code than the definition the model was shown.
    pub fn register(&mut self, tool: Box<dyn DynTool>) -> Result<(), DuplicateTool> {
        if self.get(tool.name()).is_some() {
            return Err(DuplicateTool {
                name: tool.name().to_string(),
            });
        }
        self.tools.push(tool);
        Ok(())
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&dyn DynTool> {
        self.tools
            .iter()
            .find(|tool| tool.name() == name)
            .map(|tool| tool.as_ref())
    }

    /// Every tool, in registration order.
    pub fn list(&self) -> Vec<&dyn DynTool> {
        self.tools.iter().map(|tool| tool.as_ref()).collect()
    }

    /// What the model sees of each tool: name, description, parameters.
    /// Never the code.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|tool| ToolDefinition {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                parameters: tool.parameters(),
            })
            .collect()
    }
}

/// Runs one call: lookup → parse → execute → result. Always answers with
/// one result paired to the call by its id and name (the name as asked,
/// even when unknown); failures are results with `is_error: true`.
pub fn execute_tool_call(
    call: &ToolCall,
    registry: &ToolRegistry,
    options: ToolCallOptions,
) -> ToolResultMessage {
    let Some(tool) = registry.get(&call.name) else {
        return failed_result(call, "未知工具");
    };
    let context = ToolContext {
        call_id: call.id.clone(),
        signal: options.signal,
        report_progress: options.report_progress,
    };
    match catch_failure(|| tool.run(&call.arguments, &context)) {
        Ok(output) => ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content,
            details: output.details,
            is_error: output.is_error,
            timestamp: now_ms(),
        },
        Err(message) => failed_result(call, &message),
    }
}

/// The result of a call that failed with `message`:
/// `Tool <name> failed: <message>`, the message again in `details.error`.
/// Only the message: no backtrace, no `Debug` form of the error.
pub fn failed_result(call: &ToolCall, message: &str) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![text(format!("Tool {} failed: {message}", call.name))],
        details: Some(json!({ "error": message })),
        is_error: true,
        timestamp: now_ms(),
    }
}

/// Runs `work`; an error or a panic becomes its message.
///
/// A panic unwinds out of `work` and stops here, so the caller goes on.
/// `AssertUnwindSafe` is honest: nothing `work` may have left half-done is
/// read afterwards (the registry holds no lock a panic could poison).
pub fn catch_failure<T>(work: impl FnOnce() -> Result<T, ToolError>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(error.to_string()),
        Err(panic) => Err(panic_message(panic.as_ref())),
    }
}

/// What `panic!` was given: a `&str` or a `String`, almost always.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        message.to_string()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "panicked".to_string()
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    UNIX_EPOCH.elapsed().unwrap_or_default().as_millis() as u64
}

//! Chapter 06's starter: the public types with their fields and derives,
//! and the signatures of the public functions, methods and trait impls,
//! each body a `todo!("Lab 6.x … 尚未实现")` for you to write. Private
//! helpers (a string check, a positive-integer check, a panic's message,
//! the time) are yours to add; LEARNING.md says what every part must do.

use std::error::Error;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::types::{TextContent, ToolCall, ToolDefinition, ToolResultMessage};

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
    todo!("Lab 6.1 string_value 尚未实现")
}

/// A string, or nothing.
pub fn optional_string() -> Validator {
    todo!("Lab 6.1 optional_string 尚未实现")
}

/// An integer of at least 1, or nothing.
pub fn optional_positive_integer() -> Validator {
    todo!("Lab 6.1 optional_positive_integer 尚未实现")
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
    /// The message, as the model reads it.
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!("Lab 6.1 ParseError 的 Display 尚未实现")
    }
}

impl Error for ParseError {}

/// The arguments of a tool: a JSON object with these fields, in this order.
/// `T` is the Rust type the arguments narrow into.
pub struct ObjectSchema<T> {
    // Your fields: the declared fields with their validators. `T` appears
    // in no field's value, so a marker keeps it:
    input: PhantomData<fn() -> T>,
}

/// Declares an object's fields once: the same list gives the JSON Schema and
/// the checks of [`ObjectSchema::parse`].
pub fn object_schema<T>(_fields: Vec<(&'static str, Validator)>) -> ObjectSchema<T> {
    todo!("Lab 6.1 object_schema 尚未实现")
}

impl<T> ObjectSchema<T> {
    /// What the model is told: `type`, `properties` in declaration order,
    /// the `required` fields, and `additionalProperties: false`.
    pub fn json_schema(&self) -> Value {
        let _ = &self.input;
        todo!("Lab 6.1 json_schema 尚未实现")
    }
}

impl<T: DeserializeOwned> ObjectSchema<T> {
    /// Checks `value` field by field and narrows it into a new `T`: only
    /// declared fields are read (unknown keys are dropped), an absent
    /// optional field stays absent, `value` itself is not changed.
    pub fn parse(&self, _value: &Value) -> Result<T, ParseError> {
        todo!("Lab 6.1 parse 尚未实现")
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
/// its own way instead of [`execute_tool_call`]. An injected executor may
/// fail (or panic): the loop turns that into a failed result.
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
}

/// Any tool, whatever its input type: what a registry stores. It takes the
/// arguments untyped, and every [`Tool`] implements it by parsing first.
pub trait DynTool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// The JSON Schema of the arguments.
    fn parameters(&self) -> Value;
    /// Parses `arguments`, then executes; a refusal is the parse error.
    fn run(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError>;
}

impl<T: Tool> DynTool for T {
    fn name(&self) -> &str {
        Tool::name(self)
    }

    fn description(&self) -> &str {
        Tool::description(self)
    }

    fn parameters(&self) -> Value {
        todo!("Lab 6.2 DynTool::parameters 尚未实现")
    }

    fn run(&self, _arguments: &Value, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        todo!("Lab 6.3 DynTool::run 尚未实现")
    }
}

/// A second tool with a name already taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateTool {
    pub name: String,
}

impl fmt::Display for DuplicateTool {
    /// `Tool 已存在：<name>`, the original's text.
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!("Lab 6.2 DuplicateTool 的 Display 尚未实现")
    }
}

impl Error for DuplicateTool {}

/// The tools one run may use, in the order they were registered. Each
/// registry has its own; nothing is global.
#[derive(Default)]
pub struct ToolRegistry {
    // Your fields: the tools, in order, as `Box<dyn DynTool>`.
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// A registry holding `tools`, registered in order.
    pub fn with_tools(_tools: Vec<Box<dyn DynTool>>) -> Result<Self, DuplicateTool> {
        todo!("Lab 6.2 ToolRegistry::with_tools 尚未实现")
    }

    /// Adds `tool`, unless its name is taken.
    pub fn register(&mut self, _tool: Box<dyn DynTool>) -> Result<(), DuplicateTool> {
        todo!("Lab 6.2 ToolRegistry::register 尚未实现")
    }

    /// The tool called `name`.
    pub fn get(&self, _name: &str) -> Option<&dyn DynTool> {
        todo!("Lab 6.2 ToolRegistry::get 尚未实现")
    }

    /// Every tool, in registration order.
    pub fn list(&self) -> Vec<&dyn DynTool> {
        todo!("Lab 6.2 ToolRegistry::list 尚未实现")
    }

    /// What the model sees of each tool: name, description, parameters.
    /// Never the code.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        todo!("Lab 6.2 ToolRegistry::definitions 尚未实现")
    }
}

/// Runs one call: lookup → parse → execute → result. Always answers with
/// one result paired to the call by its id and name (the name as asked,
/// even when unknown); failures are results with `is_error: true`.
pub fn execute_tool_call(
    _call: &ToolCall,
    _registry: &ToolRegistry,
    _options: ToolCallOptions,
) -> ToolResultMessage {
    todo!("Lab 6.3 execute_tool_call 尚未实现")
}

/// The result of a call that failed with `message`:
/// `Tool <name> failed: <message>`, the message again in `details.error`.
pub fn failed_result(_call: &ToolCall, _message: &str) -> ToolResultMessage {
    todo!("Lab 6.3 failed_result 尚未实现")
}

/// Runs `work`; an error or a panic becomes its message (only the
/// message: no backtrace).
pub fn catch_failure<T>(_work: impl FnOnce() -> Result<T, ToolError>) -> Result<T, String> {
    todo!("Lab 6.3 catch_failure 尚未实现")
}

//! Chapter 08: coding tools — read, write, edit and bash over one workspace.
//!
//! The starter of the chapter: the public types, the four tools' names,
//! descriptions and schemas, and the registry that holds them. Every body
//! that is the chapter's work is a `todo!` naming its lab (8.1–8.5); 8.6
//! writes no new code, it runs the four tools through chapter 07's loop;
//! 8.7 changes chapter 06's `Tool` and chapter 07's loop (LEARNING.md, 第 7 节).
//! Add the private helpers you need (LEARNING.md names the reference's).

// The inputs and options are not read until you write the bodies; delete
// this line once every `todo!` is gone.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool::{
    ObjectSchema, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, Validator, object_schema,
    optional_positive_integer, optional_string, string_value,
};

/// The most bytes one `read` returns, hint included.
pub const DEFAULT_MAX_READ_BYTES: usize = 48_000;
/// The most lines one `read` returns.
pub const DEFAULT_MAX_READ_LINES: usize = 240;
/// The most bytes of output one `bash` call returns, note included.
pub const DEFAULT_MAX_BASH_OUTPUT_BYTES: usize = 96_000;
/// How long one `bash` call may run.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_millis(30_000);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Containment {
    /// read, write and edit stay inside `cwd`; bash refuses a command that
    /// names an absolute, `~/` or `../` path.
    Workspace,
    /// No checks: paths resolve against `cwd`, wherever they lead.
    Unrestricted,
}

/// How far the tools may reach, and their limits.
#[derive(Debug, Clone)]
pub struct CodingToolsOptions {
    /// The workspace: relative paths and commands start here.
    pub cwd: PathBuf,
    pub containment: Containment,
    pub max_read_bytes: usize,
    pub max_read_lines: usize,
    pub max_bash_output_bytes: usize,
    pub bash_timeout: Duration,
}

impl CodingToolsOptions {
    /// `cwd` with the course's default limits; change one with struct-update
    /// syntax: `CodingToolsOptions { max_read_lines: 2, ..CodingToolsOptions::new(dir, Containment::Workspace) }`.
    pub fn new(cwd: impl Into<PathBuf>, containment: Containment) -> Self {
        CodingToolsOptions {
            cwd: cwd.into(),
            containment,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            max_read_lines: DEFAULT_MAX_READ_LINES,
            max_bash_output_bytes: DEFAULT_MAX_BASH_OUTPUT_BYTES,
            bash_timeout: DEFAULT_BASH_TIMEOUT,
        }
    }
}

/// `read`'s details: the whole file (`bytes`, `lines`) and the window shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDetails {
    pub path: String,
    pub bytes: u64,
    pub lines: usize,
    pub start_line: usize,
    pub end_line: usize,
    /// Lines follow the window.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteDetails {
    pub path: String,
    pub bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditDetails {
    pub path: String,
    pub old_bytes: usize,
    pub new_bytes: usize,
    pub edits: usize,
}

/// `bash`'s details; `exit_code` is `None` (`null`) when the shell ended by
/// a signal or never started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashDetails {
    pub command: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub aborted: bool,
    pub truncated: bool,
}

/// Turns per key: operations with one key run one at a time, in the order
/// they called [`run`](MutationQueue::run); other keys do not wait.
pub struct MutationQueue {
    // Lab 8.3: the fields are yours.
}

impl MutationQueue {
    pub fn new() -> Self {
        todo!("Lab 8.3 修改队列 尚未实现")
    }

    /// The queue every coding tool uses, whichever registry it is in.
    pub fn shared() -> &'static MutationQueue {
        todo!("Lab 8.3 修改队列 尚未实现")
    }

    /// Runs `operation` once every earlier caller with `key` is done.
    pub fn run<T>(&self, _key: &Path, _operation: impl FnOnce() -> T) -> T {
        todo!("Lab 8.3 修改队列 尚未实现")
    }
}

/// A registry of `read`, `write`, `edit` and `bash` over `options.cwd`.
pub fn create_coding_tools(options: CodingToolsOptions) -> ToolRegistry {
    ToolRegistry::with_tools(vec![
        Box::new(ReadTool(options.clone())),
        Box::new(WriteTool(options.clone())),
        Box::new(EditTool(options.clone())),
        Box::new(BashTool(options)),
    ])
    .expect("four tools, four names")
}

/// The path a file tool works on; in workspace mode it must stay inside
/// `cwd`, by its text and by its real location. Lab 8.1's read may start
/// with a plain `cwd.join(path)` and switch to this in Lab 8.2.
fn resolve_path(_options: &CodingToolsOptions, _candidate: &str) -> Result<PathBuf, ToolError> {
    todo!("Lab 8.2 路径边界 尚未实现")
}

#[derive(Deserialize)]
struct ReadInput {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

struct ReadTool(CodingToolsOptions);

impl Tool for ReadTool {
    type Input = ReadInput;
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "按行数和字节上限读取 UTF-8 文件"
    }
    fn schema(&self) -> ObjectSchema<ReadInput> {
        object_schema(vec![
            ("path", string_value()),
            ("offset", optional_positive_integer()),
            ("limit", optional_positive_integer()),
        ])
    }

    fn execute(&self, _input: ReadInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        todo!("Lab 8.1 read 尚未实现")
    }
}

#[derive(Deserialize)]
struct WriteInput {
    path: String,
    content: String,
}

struct WriteTool(CodingToolsOptions);

impl Tool for WriteTool {
    type Input = WriteInput;
    fn name(&self) -> &str {
        "write"
    }
    fn description(&self) -> &str {
        "显式创建或完整覆盖一个 UTF-8 文件"
    }
    fn schema(&self) -> ObjectSchema<WriteInput> {
        object_schema(vec![("path", string_value()), ("content", string_value())])
    }

    fn execute(&self, input: WriteInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        // Once Lab 8.2 is done, a path that leaves the workspace stops here.
        let _file = resolve_path(&self.0, &input.path)?;
        todo!("Lab 8.3 write 尚未实现")
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditInput {
    path: String,
    old_text: Option<String>,
    new_text: Option<String>,
    edits: Option<Vec<ExactEdit>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExactEdit {
    old_text: String,
    new_text: String,
}

struct EditTool(CodingToolsOptions);

impl Tool for EditTool {
    type Input = EditInput;
    fn name(&self) -> &str {
        "edit"
    }
    fn description(&self) -> &str {
        "先验证一批唯一精确匹配，再一次写回文件"
    }
    /// `{path, oldText, newText}` or `{path, edits: [{oldText, newText}, …]}`;
    /// `edits`, when given, is a non-empty array of such pairs.
    fn schema(&self) -> ObjectSchema<EditInput> {
        let pair = json!({ "type": "object",
            "properties": { "oldText": { "type": "string" }, "newText": { "type": "string" } },
            "required": ["oldText", "newText"], "additionalProperties": false });
        let json_schema = json!({ "type": "array", "items": pair });
        let edits = Validator {
            json_schema,
            optional: true,
            parse: check_edits,
        };
        object_schema(vec![
            ("path", string_value()),
            ("oldText", optional_string()),
            ("newText", optional_string()),
            ("edits", edits),
        ])
    }

    fn execute(&self, input: EditInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        // Once Lab 8.2 is done, a path that leaves the workspace stops here.
        let _file = resolve_path(&self.0, &input.path)?;
        todo!("Lab 8.4 edit 尚未实现")
    }
}

/// `edits` as the model sent it (`None`: absent): what to keep, or the
/// refusal (`edits 不能为空`, `每个 edit 必须是 object`, …).
fn check_edits(_value: Option<&Value>) -> Result<Option<Value>, &'static str> {
    todo!("Lab 8.4 edits 参数 尚未实现")
}

#[derive(Deserialize)]
struct BashInput {
    command: String,
}

struct BashTool(CodingToolsOptions);

impl Tool for BashTool {
    type Input = BashInput;
    fn name(&self) -> &str {
        "bash"
    }
    fn description(&self) -> &str {
        "在指定 cwd 启动可取消、有超时和输出上限的子进程"
    }
    fn schema(&self) -> ObjectSchema<BashInput> {
        object_schema(vec![("command", string_value())])
    }

    fn execute(&self, _input: BashInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        todo!("Lab 8.5 bash 尚未实现")
    }
}

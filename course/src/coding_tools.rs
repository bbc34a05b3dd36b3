//! Chapter 08: coding tools — read, write, edit and bash over one workspace.
//!
//! [`create_coding_tools`] fills a chapter 06 [`ToolRegistry`] with four
//! tools whose results are evidence about a real folder and real processes:
//! read shows whole lines and where to go on; write and edit replace a file
//! in one step or not at all, one at a time per path, in call order within
//! a turn; bash says how its command ended, within a time and output budget.
//!
//! [`Containment::Workspace`] keeps the paths of read, write and edit inside
//! `cwd`, by their text and by their real location; for bash it only checks
//! the command's text. A teaching guardrail against slips, not a sandbox: a
//! shell reaches whatever its user can. Unix only (process groups, signals).

use std::collections::HashMap;
use std::env;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, Write};
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{self, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool::{
    ObjectSchema, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, Validator, object_schema,
    optional_positive_integer, optional_string, string_value,
};
use crate::types::text;

/// The most bytes one `read` returns, hint included.
pub const DEFAULT_MAX_READ_BYTES: usize = 48_000;
/// The most lines one `read` returns.
pub const DEFAULT_MAX_READ_LINES: usize = 240;
/// The most bytes of output one `bash` call returns, note included.
pub const DEFAULT_MAX_BASH_OUTPUT_BYTES: usize = 96_000;
/// How long one `bash` call may run.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_millis(30_000);

/// How long a process group gets between SIGTERM and SIGKILL, and how often
/// a running command is checked for its end, its timeout and the signal.
const KILL_DELAY: Duration = Duration::from_millis(100);
const POLL: Duration = Duration::from_millis(10);

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
/// they called [`run`](MutationQueue::run); other keys do not wait. A chain,
/// like the original's promises: each caller leaves a receiver as its key's
/// tail and waits on the one before, which wakes when that caller's sender
/// is dropped, its operation done or panicked: a failure never blocks a key.
#[derive(Default)]
pub struct MutationQueue {
    tails: Mutex<HashMap<PathBuf, Receiver<()>>>,
}

impl MutationQueue {
    pub fn new() -> Self {
        MutationQueue::default()
    }

    /// The queue every coding tool uses, whichever registry it is in.
    pub fn shared() -> &'static MutationQueue {
        static SHARED: OnceLock<MutationQueue> = OnceLock::new();
        SHARED.get_or_init(MutationQueue::new)
    }

    /// Runs `operation` once every earlier caller with `key` is done.
    pub fn run<T>(&self, key: &Path, operation: impl FnOnce() -> T) -> T {
        let (_done, tail) = mpsc::channel::<()>();
        let previous = self.tails.lock().unwrap().insert(key.to_path_buf(), tail);
        if let Some(previous) = previous {
            let _ = previous.recv(); // an error: its sender is gone
        }
        operation()
    }
}

/// A registry of `read`, `write`, `edit` and `bash` over `options.cwd`.
pub fn create_coding_tools(options: CodingToolsOptions) -> ToolRegistry {
    let cwd = lexical_join(&env::current_dir().unwrap_or_default(), &options.cwd);
    let options = CodingToolsOptions { cwd, ..options };
    ToolRegistry::with_tools(vec![
        Box::new(ReadTool(options.clone())),
        Box::new(WriteTool(options.clone())),
        Box::new(EditTool(options.clone())),
        Box::new(BashTool(options)),
    ])
    .expect("four tools, four names")
}

/// `candidate` resolved against `root` by its text alone, as Node's
/// `path.resolve` does: an absolute candidate replaces `root`, `.` is
/// dropped, `..` removes the name before it. Nothing is looked up on disk.
fn lexical_join(root: &Path, candidate: impl AsRef<Path>) -> PathBuf {
    let mut resolved = PathBuf::new();
    for part in root.join(candidate).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            other => resolved.push(other),
        }
    }
    resolved
}

/// The path a file tool works on. In workspace mode it must stay inside
/// `cwd` by its text and by the real location of its nearest existing
/// ancestor (itself, if it exists), so a new file cannot land outside either.
fn resolve_path(options: &CodingToolsOptions, candidate: &str) -> Result<PathBuf, ToolError> {
    let resolved = lexical_join(&options.cwd, candidate);
    if options.containment == Containment::Unrestricted {
        return Ok(resolved);
    }
    if !resolved.starts_with(&options.cwd) {
        return Err(format!("路径越过教学 workspace：{candidate}").into());
    }
    let real_root = fs::canonicalize(&options.cwd).map_err(|error| failed(&options.cwd, error))?;
    let real = resolved.ancestors().flat_map(fs::canonicalize).next();
    if !real.is_some_and(|real| real.starts_with(real_root)) {
        return Err(format!("符号链接越过教学 workspace：{candidate}").into());
    }
    Ok(resolved)
}

/// An I/O error with the path it happened on.
fn failed(path: &Path, error: io::Error) -> ToolError {
    format!("{}：{error}", path.display()).into()
}

/// Opens a regular file. Anything else is refused before it is opened:
/// opening a FIFO waits for a writer, a device may never end.
fn open_regular(file: &Path) -> Result<File, ToolError> {
    let metadata = fs::metadata(file).map_err(|error| failed(file, error))?;
    if !metadata.is_file() {
        return Err(format!("不是普通文件：{}", file.display()).into());
    }
    File::open(file).map_err(|error| failed(file, error))
}

/// Bytes that are not text are refused (the original shows them as `�`).
fn utf8(bytes: Vec<u8>, file: &Path) -> Result<String, ToolError> {
    String::from_utf8(bytes).map_err(|_| format!("不是 UTF-8 文本：{}", file.display()).into())
}

fn output(message: String, details: impl Serialize, is_error: bool) -> ToolOutput {
    ToolOutput {
        content: vec![text(message)],
        details: Some(json!(details)),
        is_error,
    }
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

    fn execute(&self, input: ReadInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (file, max_bytes) = (resolve_path(&self.0, &input.path)?, self.0.max_read_bytes);
        let io_failed = |error| failed(&file, error);
        let start = input.offset.unwrap_or(1) - 1;
        let wanted = input.limit.unwrap_or(self.0.max_read_lines);
        let last = start + wanted.min(self.0.max_read_lines);
        let mut reader = BufReader::new(open_regular(&file)?);
        let (bytes, lines) = count(&mut reader).map_err(io_failed)?;
        if start >= lines {
            return Err(format!("offset={} 超出文件范围；文件共 {lines} 行", start + 1).into());
        }
        reader.rewind().map_err(io_failed)?;
        let window = window(&mut reader, (start, last.min(lines), lines), max_bytes);
        let Some((shown, end_line)) = window.map_err(io_failed)? else {
            let first = start + 1;
            let why = format!(
                "maxReadBytes={max_bytes} 太小，无法返回从第 {first} 行开始的完整可续读结果"
            );
            return Err(why.into());
        };
        let details = ReadDetails {
            path: file.display().to_string(),
            bytes,
            lines,
            start_line: start + 1,
            end_line,
            truncated: end_line < lines,
        };
        let shown = utf8(shown, &file)? + &hint(start, end_line, lines);
        Ok(output(shown, details, false))
    }
}

/// The file's bytes and lines, in one pass over its buffers. Lines are what
/// splitting at `\n` gives: `"a\n"` has two, the second empty.
fn count(reader: &mut impl BufRead) -> io::Result<(u64, usize)> {
    let (mut bytes, mut lines) = (0, 1);
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok((bytes, lines));
        }
        lines += chunk.iter().filter(|&&byte| byte == b'\n').count();
        let length = chunk.len();
        bytes += length as u64;
        reader.consume(length);
    }
}

/// Lines `start + 1 ..= last` as `{number:>4}│ {line}`, as many as fit in
/// `max_bytes` with their hint (measured whole: its numbers change with the
/// run), and the last one's number (`None`: not even one fits). A line is read only as far as it could
/// fit (one may be 2 GB), so memory stays bounded.
fn window(
    reader: &mut impl BufRead,
    (start, last, lines): (usize, usize, usize),
    max_bytes: usize,
) -> io::Result<Option<(Vec<u8>, usize)>> {
    for _ in 0..start {
        reader.skip_until(b'\n')?;
    }
    let (mut body, mut best) = (Vec::new(), None);
    for number in start + 1..=last {
        let separator = if number == start + 1 { "" } else { "\n" };
        body.extend_from_slice(format!("{separator}{number:>4}│ ").as_bytes());
        let room = max_bytes.saturating_sub(body.len()) as u64 + 1; // a `\n`, or a byte too many
        reader.take(room).read_until(b'\n', &mut body)?;
        body.pop_if(|byte| *byte == b'\n');
        if body.len() > max_bytes {
            break;
        }
        if body.len() + hint(start, number, lines).len() <= max_bytes {
            best = Some((body.len(), number));
        }
    }
    Ok(best.map(|(length, end)| (body[..length].to_vec(), end)))
}

/// Where to go on after showing lines `start + 1 ..= end`; nothing after the last line.
fn hint(start: usize, end: usize, lines: usize) -> String {
    if end == lines {
        return String::new();
    }
    let (first, next) = (start + 1, end + 1);
    format!("\n\n[已显示第 {first}-{end} 行，共 {lines} 行；继续读取：offset={next}]")
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
        let file = resolve_path(&self.0, &input.path)?;
        let written = MutationQueue::shared().run(&file, || atomic_write(&file, &input.content));
        written.map_err(|error| failed(&file, error))?;
        let (path, bytes) = (file.display().to_string(), input.content.len());
        let message = format!("已写入 {bytes} bytes");
        Ok(output(message, WriteDetails { path, bytes }, false))
    }

    /// Its file, as the queue names it: one turn's writes and edits of a
    /// file run in call order.
    fn serial_key(&self, input: &WriteInput) -> Option<String> {
        Some(lexical_join(&self.0.cwd, &input.path).display().to_string())
    }
}

/// Replaces `file` with `content` in one step: the bytes go to a new file
/// beside it (same file system; the queue keeps its name unique), renamed
/// over it with the old permission bits (an edited script stays runnable).
/// A rename never puts a file over a folder. On an error the new file is
/// removed. No `fsync`: power cuts are not this chapter's subject.
fn atomic_write(file: &Path, content: &str) -> io::Result<()> {
    if let Some(parent) = file.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut temporary = file.as_os_str().to_owned();
    temporary.push(format!(".pi-tmp-{}", process::id()));
    let mut new_file = File::create_new(&temporary)?;
    let written = fs::metadata(file)
        .map_or(Ok(()), |old| new_file.set_permissions(old.permissions()))
        .and_then(|()| new_file.write_all(content.as_bytes()))
        .and_then(|()| fs::rename(&temporary, file));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
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
        let edits = match (input.edits, input.old_text, input.new_text) {
            (Some(edits), _, _) => edits,
            (None, Some(old_text), Some(new_text)) => vec![ExactEdit { old_text, new_text }],
            _ => return Err("oldText 和 newText 必须是 string（或者给出 edits）".into()),
        };
        let file = resolve_path(&self.0, &input.path)?;
        MutationQueue::shared().run(&file, || {
            let mut bytes = Vec::new();
            let read = open_regular(&file)?.read_to_end(&mut bytes);
            read.map_err(|error| failed(&file, error))?;
            let current = utf8(bytes, &file)?;
            let next = apply_edits(&current, &edits)?;
            atomic_write(&file, &next).map_err(|error| failed(&file, error))?;
            let details = EditDetails {
                path: file.display().to_string(),
                old_bytes: current.len(),
                new_bytes: next.len(),
                edits: edits.len(),
            };
            let message = format!("已完成 {} 处精确替换", edits.len());
            Ok(output(message, details, false))
        })
    }

    fn serial_key(&self, input: &EditInput) -> Option<String> {
        Some(lexical_join(&self.0.cwd, &input.path).display().to_string())
    }
}

fn check_edits(value: Option<&Value>) -> Result<Option<Value>, &'static str> {
    let strings = |edit: &Value| edit["oldText"].is_string() && edit["newText"].is_string();
    match value {
        None => Ok(None),
        Some(Value::Array(edits)) if edits.is_empty() => Err("edits 不能为空"),
        Some(Value::Array(edits)) if !edits.iter().all(Value::is_object) => {
            Err("每个 edit 必须是 object")
        }
        Some(Value::Array(edits)) if !edits.iter().all(strings) => Err("必须是 string"),
        Some(Value::Array(_)) => Ok(value.cloned()),
        Some(_) => Err("edits 必须是 array"),
    }
}

/// Applies the edits in order, each to the text the ones before it left.
/// Every `oldText` must be non-empty and occur exactly once: none means the
/// file is not what the model saw, two that its context was not precise.
fn apply_edits(text: &str, edits: &[ExactEdit]) -> Result<String, String> {
    let mut next = text.to_string();
    for (index, edit) in edits.iter().enumerate() {
        if edit.old_text.is_empty() {
            return Err(format!("edits[{index}].oldText 不能为空"));
        }
        let Some(first) = next.find(&edit.old_text) else {
            return Err(format!("edits[{index}] 没有匹配"));
        };
        let end = first + edit.old_text.len();
        if next[end..].contains(&edit.old_text) {
            return Err(format!("edits[{index}] 匹配多次；请提供更精确的上下文"));
        }
        next.replace_range(first..end, &edit.new_text);
    }
    Ok(next)
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

    fn execute(&self, input: BashInput, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (options, signal) = (&self.0, context.signal.as_deref());
        if options.containment == Containment::Workspace && names_outside_path(&input.command) {
            return Err("教学 guardrail 不允许命令中显式出现绝对路径或 ../".into());
        }
        let mut details = BashDetails {
            command: input.command,
            exit_code: None,
            timed_out: false,
            aborted: is_set(signal),
            truncated: false,
        };
        if details.aborted {
            let never = "运行已经取消，因此命令没有启动。".to_string();
            return Ok(output(never, details, true));
        }
        // stdout and stderr share one pipe: the output keeps the order of the writes.
        let (pipe, writer) = io::pipe()?;
        let mut child = Command::new("sh")
            .args(["-c", &details.command])
            .current_dir(&options.cwd)
            .stdin(Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .process_group(0)
            .spawn()?;
        let budget = options.max_bash_output_bytes;
        let captured = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&captured);
        let reader = thread::spawn(move || drain(pipe, &shared, budget));
        let deadline = Instant::now() + options.bash_timeout;
        let mut stopped: Option<Instant> = None;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                // Done once the output has ended too. After a stop, a process
                // that left the group may hold the pipe open: not waited for.
                if reader.is_finished() || stopped.is_some_and(|at| at.elapsed() >= KILL_DELAY) {
                    break status;
                }
            }
            if stopped.is_none() && (is_set(signal) || Instant::now() >= deadline) {
                details.aborted = is_set(signal);
                details.timed_out = !details.aborted;
                terminate(child.id());
                stopped = Some(Instant::now());
            } else {
                thread::sleep(POLL);
            }
        };
        details.exit_code = status.code();
        let mut shown = String::from_utf8_lossy(&captured.lock().unwrap()).into_owned();
        details.truncated = shown.len() > budget;
        if details.truncated {
            // The note counts inside the budget; the text is cut between characters.
            let note = utf8_prefix("\n… [输出已截断]", budget);
            shown = format!("{}{note}", utf8_prefix(&shown, budget - note.len()));
        }
        let exit = details
            .exit_code
            .map_or("signal".to_string(), |code| code.to_string());
        if shown.is_empty() {
            shown = format!("(exit {exit})");
        }
        let is_error = details.exit_code != Some(0) || details.timed_out || details.aborted;
        Ok(output(shown, details, is_error))
    }
}

/// The original's check, on the command's text: a word that starts with
/// `/`, `~/` or `../`, words being split at whitespace, `;`, `&` and `|`.
/// It stops the plain slip, nothing more (`cd ..; cat x` and `$HOME/x` pass).
fn names_outside_path(command: &str) -> bool {
    let mut words = command.split(|c: char| c.is_whitespace() || ";&|".contains(c));
    words.any(|word| ["/", "~/", "../"].iter().any(|path| word.starts_with(path)))
}

/// Reads the pipe as bytes arrive, keeping `budget + 1` at most (one more
/// tells cut output) and reading on past them: a full pipe stops the writer.
fn drain(mut pipe: impl Read, captured: &Mutex<Vec<u8>>, budget: usize) {
    let mut buffer = [0; 8192];
    loop {
        let count = match pipe.read(&mut buffer) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Ok(0) | Err(_) => return,
            Ok(count) => count,
        };
        let mut captured = captured.lock().unwrap();
        let room = (budget + 1).saturating_sub(captured.len()).min(count);
        captured.extend_from_slice(&buffer[..room]);
    }
}

/// Ends a command's process group: SIGTERM so it may clean up, then SIGKILL
/// for whatever is left (a process that ignores SIGTERM, a child it
/// started). std signals one process, not a group, hence `libc`.
fn terminate(group: u32) {
    let group = -(group as libc::pid_t);
    // SAFETY: kill(2) takes two integers and touches no memory of ours; a
    // negative pid names a process group. ESRCH (nobody left) is fine.
    unsafe { libc::kill(group, libc::SIGTERM) };
    thread::sleep(KILL_DELAY);
    unsafe { libc::kill(group, libc::SIGKILL) };
}

/// The longest prefix of `text` of at most `max` bytes that ends between characters.
fn utf8_prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn is_set(signal: Option<&AtomicBool>) -> bool {
    signal.is_some_and(|signal| signal.load(Ordering::SeqCst))
}

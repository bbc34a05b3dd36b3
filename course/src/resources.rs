//! Chapter 12: knowledge enters the context on demand; code passes a trust
//! gate first.
//!
//! Four kinds of things in a workspace change what an agent does, and they
//! are kept apart:
//!
//! * **Resources are data.** [`discover_resources`] reads resource roots,
//!   in precedence order, for three kinds: a root's `AGENTS.md` (project
//!   instructions), `skills/*/SKILL.md` (a method the model may use, with a
//!   front matter naming and describing it) and `templates/*.md` (a prompt
//!   with `{{name}}` placeholders). A resource is known by its kind and
//!   name; for one identity the first root that has it wins. The catalog
//!   lists the winners sorted by kind and name, never by where they lie on
//!   disk, so the same roots give the same catalog on any machine.
//! * **A skill's body is read when it is activated** ([`activate_skill`]),
//!   not when it is discovered: the catalog tells the model a skill exists
//!   (name and description), the body is sent only when this turn needs it.
//!   Activation reads through the real path and refuses anything outside
//!   the skill's folder: `../`, an absolute path, a symlink leading out.
//! * **Text reaches the model through the existing doors.** A template
//!   becomes a user message ([`render_template`]); the instructions, the
//!   skill list and the active skills become one named section of a system
//!   message ([`format_resource_context`], section [`RESOURCE_SECTION`]),
//!   which chapter 11's `build_context` counts like any other system text.
//! * **Extensions are code.** An extension registers tools and hooks
//!   around tool calls. The original imports a module, and importing runs
//!   its code, so it asks "trusted?" before the import. Rust has no dynamic
//!   import: an extension is a factory compiled into the program, known by
//!   its [`ExtensionSource`], and [`load_extension`] asks the trust policy
//!   before the factory is called. The factory only writes to a staging
//!   [`ExtensionContext`]; when it returns, everything it registered is
//!   committed at once (tools to a chapter 06 registry, hooks to an
//!   [`ExtensionHost`]), or nothing is.
//!
//! The host wraps a chapter 06 executor
//! ([`ExtensionHost::wrap_executor`]): `before_tool_call` hooks are a policy
//! gate in front of the tool (a denial, a failure or a missed deadline all
//! stop it: fail closed), `after_tool_result` hooks observe a result that
//! already happened and cannot replace it. Each hook call runs on a thread
//! of its own with a deadline. A thread cannot be killed: a hook that never
//! returns keeps its thread (and what it holds) for as long as the process
//! lives; the host stops waiting, reports a timeout and ignores its late
//! answer.
//!
//! Files are read defensively: a missing root, a file that cannot be read,
//! text that is not UTF-8 or a file over [`MAX_RESOURCE_BYTES`] is an
//! [`ResourceError`] naming the file, and no read goes further than that
//! bound (a skill's front matter: [`MAX_FRONT_MATTER_BYTES`]). None of this
//! is a sandbox: a trusted extension runs with the program's rights.

use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::fmt;
use std::fs::{self, File, FileType};
use std::io::{self, BufRead, BufReader, ErrorKind, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use serde_json::json;

use crate::tool::{
    DuplicateTool, DynTool, ToolCallOptions, ToolError, ToolExecutor, ToolRegistry, catch_failure,
    failed_result,
};
use crate::types::{ToolCall, ToolResultMessage, UserMessage, text, user_message};

/// The system message section that holds the resource text. A section is
/// replaced by name, so a change of resources is one system message
/// holding only this section, and the base prompt stays as it was.
pub const RESOURCE_SECTION: &str = "pi-resources";

/// The most bytes of one resource file read whole (`AGENTS.md`, a
/// template, a skill at activation, a skill's file): 256 KiB. A larger
/// file is refused after reading one byte past the bound.
pub const MAX_RESOURCE_BYTES: u64 = 256 * 1024;

/// The most bytes discovery reads of a `SKILL.md` to find the end of its
/// front matter (the original's 64 KiB).
pub const MAX_FRONT_MATTER_BYTES: u64 = 64 * 1024;

/// Why a resource or an extension was refused; the text names the file or
/// the extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceError(pub String);

impl fmt::Display for ResourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for ResourceError {}

/// A root's `AGENTS.md`: instructions for every request. `name` is
/// `AGENTS`; `source` is the file's real path, `root` the root's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionResource {
    pub name: String,
    pub source: PathBuf,
    pub root: PathBuf,
    pub body: String,
}

/// A skill as the catalog knows it: what it is called and what it is for.
/// No body: that is read by [`activate_skill`]. `root` is the skill's
/// folder (real path), `source` its `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillResource {
    pub name: String,
    pub description: String,
    pub source: PathBuf,
    pub root: PathBuf,
}

/// A prompt template, body included: it is rendered when the user gives
/// its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateResource {
    pub name: String,
    pub description: String,
    pub source: PathBuf,
    pub root: PathBuf,
    pub body: String,
}

/// What the roots hold: for each kind and name the first root's version,
/// each list sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceCatalog {
    pub instructions: Option<InstructionResource>,
    pub skills: Vec<SkillResource>,
    pub templates: Vec<TemplateResource>,
}

/// A file of a skill read at activation: the path as asked, its real path,
/// its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivatedSkillFile {
    pub request: String,
    pub source: PathBuf,
    pub content: String,
}

/// A skill this turn uses: the catalog's skill, with its body and the files
/// asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivatedSkill {
    pub name: String,
    pub description: String,
    pub source: PathBuf,
    pub root: PathBuf,
    pub body: String,
    pub resources: Vec<ActivatedSkillFile>,
}

impl ResourceCatalog {
    /// Every resource's identity, `kind:name`, in catalog order
    /// (instructions, skills, templates).
    pub fn keys(&self) -> Vec<String> {
        let instructions = self
            .instructions
            .iter()
            .map(|i| format!("instructions:{}", i.name));
        let skills = self.skills.iter().map(|s| format!("skill:{}", s.name));
        let templates = self
            .templates
            .iter()
            .map(|t| format!("template:{}", t.name));
        instructions.chain(skills).chain(templates).collect()
    }
}

/// Reads `roots`, the first one winning for each kind and name. A missing
/// `AGENTS.md`, `skills/` or `templates/` is no resource of that kind; any
/// other problem (a missing root, an unreadable file, a front matter that
/// does not parse, two resources of one identity in one root) is an error,
/// never an empty catalog.
pub fn discover_resources(roots: &[impl AsRef<Path>]) -> Result<ResourceCatalog, ResourceError> {
    let mut instructions = None;
    let mut skills = BTreeMap::new();
    let mut templates = BTreeMap::new();
    for root in roots {
        let found = discover_root(root.as_ref())?;
        instructions = instructions.or(found.instructions);
        for skill in found.skills {
            skills.entry(skill.name.clone()).or_insert(skill);
        }
        for template in found.templates {
            templates.entry(template.name.clone()).or_insert(template);
        }
    }
    // A BTreeMap iterates by key: the lists come out sorted by name.
    Ok(ResourceCatalog {
        instructions,
        skills: skills.into_values().collect(),
        templates: templates.into_values().collect(),
    })
}

/// One root's resources, in the order of their files.
fn discover_root(configured: &Path) -> Result<ResourceCatalog, ResourceError> {
    let root = fs::canonicalize(configured).map_err(|error| io_error(configured, error))?;
    let agents = root.join("AGENTS.md");
    let instructions = if fs::exists(&agents).map_err(|error| io_error(&agents, error))? {
        let source = real_path_inside(&root, &agents, "AGENTS.md")?;
        Some(InstructionResource {
            name: "AGENTS".to_string(),
            body: read_text(&source)?.trim().to_string(),
            source,
            root: root.clone(),
        })
    } else {
        None
    };
    let mut templates = Vec::new();
    for file in entries(&root.join("templates"), FileType::is_file)? {
        if file_name(&file).ends_with(".md") {
            templates.push(read_template(&root, &file)?);
        }
    }
    let mut skills = Vec::new();
    for folder in entries(&root.join("skills"), FileType::is_dir)? {
        skills.push(read_skill(&root, &folder)?);
    }
    refuse_duplicates("template", templates.iter().map(|t| (&t.name, &t.source)))?;
    refuse_duplicates("skill", skills.iter().map(|s| (&s.name, &s.source)))?;
    Ok(ResourceCatalog {
        instructions,
        skills,
        templates,
    })
}

fn read_template(root: &Path, file: &Path) -> Result<TemplateResource, ResourceError> {
    let file_name = file_name(file);
    let source = real_path_inside(root, file, &format!("template {file_name}"))?;
    let front = parse_front_matter(&read_text(&source)?, &source)?;
    let fallback = file_name.strip_suffix(".md").unwrap_or(&file_name);
    Ok(TemplateResource {
        name: named(front.name, fallback, "template", &source)?,
        description: front.description.unwrap_or_default(),
        root: root.to_path_buf(),
        source,
        body: front.body,
    })
}

/// A skill's metadata. Only the front matter is read, never the body.
fn read_skill(root: &Path, folder: &Path) -> Result<SkillResource, ResourceError> {
    let folder_name = file_name(folder);
    let skill_root = real_path_inside(root, folder, &format!("skill {folder_name}"))?;
    let label = format!("skill {folder_name} SKILL.md");
    let source = real_path_inside(&skill_root, &skill_root.join("SKILL.md"), &label)?;
    let front = read_front_matter(&source)?;
    Ok(SkillResource {
        name: named(front.name, &folder_name, "skill", &source)?,
        description: front.description.unwrap_or_default(),
        source,
        root: skill_root,
    })
}

/// The front matter's name, or the file's; blank is refused.
fn named(
    name: Option<String>,
    fallback: &str,
    kind: &str,
    source: &Path,
) -> Result<String, ResourceError> {
    let name = name.unwrap_or_else(|| fallback.to_string());
    if name.trim().is_empty() {
        return Err(ResourceError(format!(
            "{kind} {} 的 name 不能为空",
            source.display()
        )));
    }
    Ok(name)
}

/// Within one root the precedence of roots cannot decide: a second
/// resource of the same kind and name is refused.
fn refuse_duplicates<'a>(
    kind: &str,
    found: impl Iterator<Item = (&'a String, &'a PathBuf)>,
) -> Result<(), ResourceError> {
    let mut seen = HashMap::new();
    for (name, source) in found {
        if let Some(previous) = seen.insert(name, source) {
            return Err(ResourceError(format!(
                "同一 resource root 内 {kind}:{name} 重复：{} 与 {}",
                previous.display(),
                source.display()
            )));
        }
    }
    Ok(())
}

/// Reads a skill's body now: through the real path of its `SKILL.md`
/// (still inside its folder, still of the same name), and each file of
/// `resources` once, each inside the skill's folder. The catalog is only
/// read.
pub fn activate_skill(
    catalog: &ResourceCatalog,
    name: &str,
    resources: &[&str],
) -> Result<ActivatedSkill, ResourceError> {
    let skill = (catalog.skills.iter())
        .find(|skill| skill.name == name)
        .ok_or_else(|| ResourceError(format!("skill 不存在：{name}")))?;
    let source = real_path_inside(&skill.root, &skill.source, &format!("skill {name}"))?;
    let front = parse_front_matter(&read_text(&source)?, &source)?;
    let current = front.name.unwrap_or_else(|| file_name(&skill.root));
    if current != skill.name {
        return Err(ResourceError(format!(
            "skill {name} 激活时身份变成了 {current}"
        )));
    }
    let mut files: Vec<ActivatedSkillFile> = Vec::new();
    for &request in resources {
        if files.iter().any(|file| file.request == request) {
            continue;
        }
        let source = resolve_inside(&skill.root, request)?;
        let content = read_text(&source)?;
        let request = request.to_string();
        files.push(ActivatedSkillFile {
            request,
            source,
            content,
        });
    }
    Ok(ActivatedSkill {
        name: skill.name.clone(),
        description: skill.description.clone(),
        source,
        root: skill.root.clone(),
        body: front.body,
        resources: files,
    })
}

/// A path asked for inside `root`, checked twice: as written (no absolute
/// path, no `..` above the root) and as it really is on disk (a symlink
/// inside may lead out).
fn resolve_inside(root: &Path, request: &str) -> Result<PathBuf, ResourceError> {
    let label = format!("skill resource {request}");
    let escape = || ResourceError(format!("{label} 逃出了声明 root"));
    if request.trim().is_empty() {
        return Err(escape());
    }
    let mut lexical = root.to_path_buf();
    for component in Path::new(request).components() {
        match component {
            Component::Normal(part) => lexical.push(part),
            Component::CurDir => {}
            Component::ParentDir if lexical != root => {
                lexical.pop();
            }
            // `/`, a Windows prefix, or `..` at the root itself.
            _ => return Err(escape()),
        }
    }
    real_path_inside(root, &lexical, &label)
}

/// `path`'s real path, refused unless it lies in `root` (a real path):
/// whole components, so `/work/review-old` is not inside `/work/review`.
fn real_path_inside(root: &Path, path: &Path, label: &str) -> Result<PathBuf, ResourceError> {
    let real = fs::canonicalize(path).map_err(|error| io_error(path, error))?;
    if !real.starts_with(root) {
        return Err(ResourceError(format!("{label} 逃出了声明 root")));
    }
    Ok(real)
}

/// Renders `template`: each `{{name}}` (a letter or `_`, then letters,
/// digits or `_`) becomes its argument; other braces stay as written; a
/// missing argument is an error, an extra one is ignored. The text becomes
/// a user message, stamped now.
pub fn render_template(
    template: &TemplateResource,
    args: &HashMap<&str, &str>,
) -> Result<UserMessage, ResourceError> {
    let mut rendered = String::new();
    let mut rest = template.body.as_str();
    while let Some(start) = rest.find("{{") {
        rendered.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(key) = placeholder(after) else {
            // Not a placeholder here; one may start at the next brace.
            rendered.push('{');
            rest = &rest[start + 1..];
            continue;
        };
        let value = args
            .get(key)
            .ok_or_else(|| ResourceError(format!("template {} 缺少参数 {key}", template.name)))?;
        rendered.push_str(value);
        rest = &after[key.len() + 2..];
    }
    rendered.push_str(rest);
    Ok(user_message(rendered))
}

/// The name at the start of `after` (the text behind `{{`) when `}}`
/// closes it.
fn placeholder(after: &str) -> Option<&str> {
    let end =
        (after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))).unwrap_or(after.len());
    let key = &after[..end];
    let starts_well = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    (starts_well && after[end..].starts_with("}}")).then_some(key)
}

/// The text of the resource section: the instructions, every skill's name
/// and description, then the body and files of each activated skill
/// (sorted by name). A skill activated twice, or one not from this catalog,
/// is refused. Inactive skills contribute their description only.
pub fn format_resource_context(
    catalog: &ResourceCatalog,
    activated: &[ActivatedSkill],
) -> Result<String, ResourceError> {
    let mut lines = vec!["# Pi resources".to_string()];
    if let Some(instructions) = &catalog.instructions {
        lines.push("## AGENTS instructions".to_string());
        lines.push(instructions.body.clone());
    }
    if !catalog.skills.is_empty() {
        lines.push("## 可用 skills".to_string());
        let listed = catalog.skills.iter();
        lines.extend(listed.map(|skill| format!("- {}: {}", skill.name, skill.description)));
    }
    let mut active = BTreeMap::new();
    for skill in activated {
        if active.contains_key(&skill.name) {
            return Err(ResourceError(format!("skill 重复激活：{}", skill.name)));
        }
        let known = (catalog.skills.iter())
            .any(|known| known.name == skill.name && known.source == skill.source);
        if !known {
            return Err(ResourceError(format!(
                "activated skill 不属于当前 catalog：{}",
                skill.name
            )));
        }
        active.insert(&skill.name, skill);
    }
    for skill in active.values() {
        lines.push(format!("## 已激活 skill：{}", skill.name));
        lines.push(skill.body.clone());
        for file in &skill.resources {
            lines.push(format!("### skill 文件：{}", file.request));
            lines.push(file.content.clone());
        }
    }
    Ok(lines.join("\n\n"))
}

/// What a front matter says, and the text after it.
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    body: String,
}

/// `---`, lines of `key: value`, `---`, then the body (trimmed). Line
/// ends may be CRLF. Keys other than `name` and `description` are allowed
/// and ignored; a line that is not `key: value` is refused.
fn parse_front_matter(text: &str, source: &Path) -> Result<FrontMatter, ResourceError> {
    let fail = |why: String| ResourceError(format!("{} {why}", source.display()));
    let text = text.replace("\r\n", "\n");
    let rest = (text.strip_prefix("---\n")).ok_or_else(|| fail("缺少 YAML frontmatter".into()))?;
    let end = (rest.find("\n---\n")).ok_or_else(|| fail("的 YAML frontmatter 没有结束".into()))?;
    let mut front = FrontMatter {
        name: None,
        description: None,
        body: rest[end + 5..].trim().to_string(),
    };
    for line in rest[..end]
        .split('\n')
        .filter(|line| !line.trim().is_empty())
    {
        let (key, value) =
            attribute(line).ok_or_else(|| fail(format!("的 frontmatter 行无法解析：{line}")))?;
        match key {
            "name" => front.name = Some(value),
            "description" => front.description = Some(value),
            _ => {}
        }
    }
    Ok(front)
}

/// `key: value`: the key a letter, then letters, digits, `_` or `-`; the
/// value trimmed, without one pair of matching quotes around it.
fn attribute(line: &str) -> Option<(&str, String)> {
    let (key, value) = line.split_once(':')?;
    let key_ok = key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !key_ok {
        return None;
    }
    let value = value.trim();
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|&quote| value.strip_prefix(quote)?.strip_suffix(quote));
    Some((key, unquoted.unwrap_or(value).to_string()))
}

/// Reads a skill's front matter line by line and stops at its closing
/// `---`: the body is never part of the catalog. At most
/// [`MAX_FRONT_MATTER_BYTES`] are read.
fn read_front_matter(file: &Path) -> Result<FrontMatter, ResourceError> {
    let mut reader = BufReader::new(open_file(file)?.take(MAX_FRONT_MATTER_BYTES));
    let mut text = String::new();
    loop {
        let start = text.len();
        let read = (reader.read_line(&mut text)).map_err(|error| io_error(file, error))?;
        if read == 0 || (start > 0 && text[start..].trim_end_matches(['\r', '\n']) == "---") {
            break;
        }
    }
    parse_front_matter(&text, file)
}

/// A whole resource file as UTF-8 text, refused past
/// [`MAX_RESOURCE_BYTES`] (one byte more is read to tell).
fn read_text(file: &Path) -> Result<String, ResourceError> {
    let mut bytes = Vec::new();
    let read = open_file(file)?
        .take(MAX_RESOURCE_BYTES + 1)
        .read_to_end(&mut bytes);
    read.map_err(|error| io_error(file, error))?;
    if bytes.len() as u64 > MAX_RESOURCE_BYTES {
        return Err(ResourceError(format!(
            "{} 超过 {MAX_RESOURCE_BYTES} 字节，resource 文件不能更大",
            file.display()
        )));
    }
    String::from_utf8(bytes).map_err(|_| io_error(file, ErrorKind::InvalidData.into()))
}

/// Opens a regular file. Anything else is refused before opening: a
/// folder cannot be read as text, and opening a FIFO would wait for a
/// writer forever.
fn open_file(file: &Path) -> Result<File, ResourceError> {
    let metadata = fs::metadata(file).map_err(|error| io_error(file, error))?;
    if !metadata.is_file() {
        return Err(ResourceError(format!("{} 不是普通文件", file.display())));
    }
    File::open(file).map_err(|error| io_error(file, error))
}

/// The entries of `folder` whose own type `keep` accepts (a symlink is
/// neither a file nor a folder here), sorted by name. A missing folder
/// has none.
fn entries(folder: &Path, keep: fn(&FileType) -> bool) -> Result<Vec<PathBuf>, ResourceError> {
    let listing = match fs::read_dir(folder) {
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        listing => listing.map_err(|error| io_error(folder, error))?,
    };
    let mut found = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|error| io_error(folder, error))?;
        let kind = entry
            .file_type()
            .map_err(|error| io_error(&entry.path(), error))?;
        if keep(&kind) {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

/// The last component of `path` as text (a name that is not UTF-8 shows
/// `�` where its bad bytes were).
fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn io_error(path: &Path, error: io::Error) -> ResourceError {
    let why = match error.kind() {
        ErrorKind::InvalidData => "不是 UTF-8 文本".to_string(),
        _ => format!("无法读取：{error}"),
    };
    ResourceError(format!("{} {why}", path.display()))
}

// ---- Extensions ----------------------------------------------------------

/// Where an extension comes from, for the trust policy to judge: its id
/// (unique in a host) and the path it was declared at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionSource {
    pub id: String,
    pub path: String,
}

/// What [`load_extension`] did with a source it was allowed to look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionStatus {
    /// Its factory ran and everything it registered is committed.
    Active,
    /// The trust policy said no: the factory was never called.
    SkippedUntrusted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadExtensionResult {
    pub id: String,
    pub status: ExtensionStatus,
}

/// A `before_tool_call` hook's answer. A denial's reason goes into the
/// blocked result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeToolDecision {
    Allow,
    Deny { reason: String },
}

/// The two places a hook can sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionHook {
    BeforeToolCall,
    AfterToolResult,
}

/// How a hook failed: it returned an error or panicked, or it missed its
/// deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    Error,
    Timeout,
}

/// A hook that failed, for the program's log. A denial is a decision, not
/// a failure: it has no diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionDiagnostic {
    pub extension_id: String,
    pub hook: ExtensionHook,
    pub kind: DiagnosticKind,
    pub message: String,
}

/// How long one hook call may take, and who hears of failed hooks.
#[derive(Clone)]
pub struct ExtensionHostOptions {
    /// Each hook call's deadline. A hook past it is given up on (its
    /// thread is left running, its answer ignored). Zero is allowed and
    /// fails (closed) nearly every hook: no hook answers in no time.
    pub hook_timeout: Duration,
    /// Told of every failed hook. If it panics, the result is unchanged.
    pub on_diagnostic: Option<Arc<dyn Fn(ExtensionDiagnostic) + Send + Sync>>,
}

type BeforeHook = Arc<dyn Fn(&ToolCall) -> Result<BeforeToolDecision, ToolError> + Send + Sync>;
type AfterHook = Arc<dyn Fn(&ToolResultMessage) -> Result<(), ToolError> + Send + Sync>;

/// What a factory registers into: a staging area that becomes visible only
/// when the factory has returned `Ok`. An extension never gets the host
/// itself.
#[derive(Default)]
pub struct ExtensionContext {
    tools: Vec<Box<dyn DynTool>>,
    before_hooks: Vec<BeforeHook>,
    after_hooks: Vec<AfterHook>,
}

impl ExtensionContext {
    /// Stages a tool; a second tool of the same name is refused here, one
    /// the registry already has when committing.
    pub fn register_tool(&mut self, tool: Box<dyn DynTool>) -> Result<(), DuplicateTool> {
        if self.tools.iter().any(|staged| staged.name() == tool.name()) {
            let name = tool.name().to_string();
            return Err(DuplicateTool { name });
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Stages a hook that sees each call before it runs and may deny it.
    pub fn on_before_tool_call(
        &mut self,
        hook: impl Fn(&ToolCall) -> Result<BeforeToolDecision, ToolError> + Send + Sync + 'static,
    ) {
        self.before_hooks.push(Arc::new(hook));
    }

    /// Stages a hook that sees each result of the core executor.
    pub fn on_after_tool_result(
        &mut self,
        hook: impl Fn(&ToolResultMessage) -> Result<(), ToolError> + Send + Sync + 'static,
    ) {
        self.after_hooks.push(Arc::new(hook));
    }
}

/// The hooks of the extensions loaded so far. Their tools are in the
/// registry they were loaded into. Cloning a host copies its lists; the
/// hooks themselves are shared.
#[derive(Clone)]
pub struct ExtensionHost {
    options: ExtensionHostOptions,
    extension_ids: Vec<String>,
    before_hooks: Vec<(String, BeforeHook)>,
    after_hooks: Vec<(String, AfterHook)>,
}

impl ExtensionHost {
    /// A host with no extension yet.
    pub fn new(options: ExtensionHostOptions) -> Self {
        ExtensionHost {
            options,
            extension_ids: Vec::new(),
            before_hooks: Vec::new(),
            after_hooks: Vec::new(),
        }
    }

    /// `core` with the hooks around it: the `before_tool_call` hooks in
    /// the order they were registered, the first that denies, fails or
    /// misses its deadline answering instead of the tool (a paired error
    /// result; `core` never runs, no after hook runs); otherwise `core` once,
    /// then every `after_tool_result` hook on its result, which is returned
    /// as it was, whatever the hooks did. An `Err` of `core` is returned
    /// as it is. Hooks get copies.
    ///
    /// The executor owns a copy of the host (chapter 07's loop takes a
    /// `'static` executor): it runs the extensions loaded so far, not those
    /// loaded after it was made.
    pub fn wrap_executor(
        &self,
        core: impl Fn(&ToolCall, ToolCallOptions) -> Result<ToolResultMessage, ToolError>
        + Send
        + Sync
        + 'static,
    ) -> Box<ToolExecutor> {
        let host = self.clone();
        Box::new(move |call: &ToolCall, options: ToolCallOptions| {
            if let Some(blocked) = host.before(call) {
                return Ok(blocked);
            }
            let result = core(call, options)?;
            host.after(&result);
            Ok(result)
        })
    }

    /// The blocked result, if a before hook stops `call`.
    fn before(&self, call: &ToolCall) -> Option<ToolResultMessage> {
        for (id, hook) in &self.before_hooks {
            let (hook, copy) = (Arc::clone(hook), call.clone());
            let decision = self.run_hook(id, ExtensionHook::BeforeToolCall, move || hook(&copy));
            let (kind, reason) = match decision {
                Ok(BeforeToolDecision::Allow) => continue,
                Ok(BeforeToolDecision::Deny { reason }) => ("deny", reason),
                Err((DiagnosticKind::Error, message)) => ("error", message),
                Err((DiagnosticKind::Timeout, message)) => ("timeout", message),
            };
            return Some(blocked_result(call, id, kind, &reason));
        }
        None
    }

    /// Every after hook observes `result`; a failure is only reported.
    fn after(&self, result: &ToolResultMessage) {
        for (id, hook) in &self.after_hooks {
            let (hook, copy) = (Arc::clone(hook), result.clone());
            let _ = self.run_hook(id, ExtensionHook::AfterToolResult, move || hook(&copy));
        }
    }

    /// Runs one hook call on a thread of its own and waits for it until the
    /// deadline. A failure is reported to `on_diagnostic` and returned.
    /// A thread past its deadline is left behind: nothing can stop it, and
    /// its answer goes to a channel nobody reads any more.
    fn run_hook<T: Send + 'static>(
        &self,
        extension_id: &str,
        hook: ExtensionHook,
        work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, (DiagnosticKind, String)> {
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || sender.send(catch_failure(work)));
        let (kind, message) = match receiver.recv_timeout(self.options.hook_timeout) {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(message)) => (DiagnosticKind::Error, message),
            Err(_) => (
                DiagnosticKind::Timeout,
                format!("{}:{extension_id} timed out", hook.name()),
            ),
        };
        if let Some(on_diagnostic) = &self.options.on_diagnostic {
            let diagnostic = ExtensionDiagnostic {
                extension_id: extension_id.to_string(),
                hook,
                kind,
                message: message.clone(),
            };
            // An observer that panics changes nothing about the call.
            let _ = catch_failure(|| {
                on_diagnostic(diagnostic);
                Ok(())
            });
        }
        Err((kind, message))
    }
}

impl ExtensionHook {
    /// The hook's name in messages, as the original spells it.
    fn name(self) -> &'static str {
        match self {
            ExtensionHook::BeforeToolCall => "beforeToolCall",
            ExtensionHook::AfterToolResult => "afterToolResult",
        }
    }
}

/// The answer to a call a before hook stopped: chapter 06's failed
/// result (paired with the call, `is_error`), saying which extension
/// stopped it and why.
fn blocked_result(
    call: &ToolCall,
    extension_id: &str,
    kind: &str,
    reason: &str,
) -> ToolResultMessage {
    let said = format!("Tool {} blocked by {extension_id}: {reason}", call.name);
    let details = json!({ "blockedByExtension": extension_id, "kind": kind, "reason": reason });
    ToolResultMessage {
        content: vec![text(said)],
        details: Some(details),
        ..failed_result(call, reason)
    }
}

/// Loads one extension: the trust policy first, the factory only if it
/// says yes. The factory registers into a staging context; only when it
/// returns `Ok` are its tools committed to `registry` and its hooks to
/// `host`, all together, after checking that no tool name is taken. A
/// factory that fails or panics, or a taken name, leaves both as they were.
pub fn load_extension(
    source: &ExtensionSource,
    is_trusted: impl FnOnce(&ExtensionSource) -> bool,
    factory: impl FnOnce(&mut ExtensionContext) -> Result<(), ToolError>,
    host: &mut ExtensionHost,
    registry: &mut ToolRegistry,
) -> Result<LoadExtensionResult, ResourceError> {
    if source.id.trim().is_empty() || source.path.trim().is_empty() {
        return Err(ResourceError(
            "extension source 缺少 id 或 path".to_string(),
        ));
    }
    let id = source.id.clone();
    if !is_trusted(source) {
        let status = ExtensionStatus::SkippedUntrusted;
        return Ok(LoadExtensionResult { id, status });
    }
    if host.extension_ids.contains(&id) {
        return Err(ResourceError(format!("extension id 无效或重复：{id}")));
    }
    let failed = |why: String| ResourceError(format!("extension {id} 注册失败：{why}"));
    let mut staged = ExtensionContext::default();
    catch_failure(|| factory(&mut staged)).map_err(failed)?;
    // Commit: check everything first, then change the registry and the host.
    if let Some(taken) = (staged.tools.iter()).find(|tool| registry.get(tool.name()).is_some()) {
        let name = taken.name().to_string();
        return Err(failed(DuplicateTool { name }.to_string()));
    }
    for tool in staged.tools {
        registry
            .register(tool)
            .map_err(|error| failed(error.to_string()))?;
    }
    for hook in staged.before_hooks {
        host.before_hooks.push((id.clone(), hook));
    }
    for hook in staged.after_hooks {
        host.after_hooks.push((id.clone(), hook));
    }
    host.extension_ids.push(id.clone());
    let status = ExtensionStatus::Active;
    Ok(LoadExtensionResult { id, status })
}

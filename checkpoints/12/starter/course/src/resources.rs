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

use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::tool::{DuplicateTool, DynTool, ToolCallOptions, ToolError, ToolExecutor, ToolRegistry};
use crate::types::{ToolCall, ToolResultMessage, UserMessage};

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
        todo!("Lab 12.1 ResourceCatalog::keys 尚未实现")
    }
}

/// Reads `roots`, the first one winning for each kind and name. A missing
/// `AGENTS.md`, `skills/` or `templates/` is no resource of that kind; any
/// other problem (a missing root, an unreadable file, a front matter that
/// does not parse, two resources of one identity in one root) is an error,
/// never an empty catalog.
pub fn discover_resources(_roots: &[impl AsRef<Path>]) -> Result<ResourceCatalog, ResourceError> {
    todo!("Lab 12.1 discover_resources 尚未实现")
}

/// Reads a skill's body now: through the real path of its `SKILL.md`
/// (still inside its folder, still of the same name), and each file of
/// `resources` once, each inside the skill's folder. The catalog is only
/// read.
pub fn activate_skill(
    _catalog: &ResourceCatalog,
    _name: &str,
    _resources: &[&str],
) -> Result<ActivatedSkill, ResourceError> {
    todo!("Lab 12.2 activate_skill 尚未实现")
}

/// Renders `template`: each `{{name}}` (a letter or `_`, then letters,
/// digits or `_`) becomes its argument; other braces stay as written; a
/// missing argument is an error, an extra one is ignored. The text becomes
/// a user message, stamped now.
pub fn render_template(
    _template: &TemplateResource,
    _args: &HashMap<&str, &str>,
) -> Result<UserMessage, ResourceError> {
    todo!("Lab 12.3 render_template 尚未实现")
}

/// The text of the resource section: the instructions, every skill's name
/// and description, then the body and files of each activated skill
/// (sorted by name). A skill activated twice, or one not from this catalog,
/// is refused. Inactive skills contribute their description only.
pub fn format_resource_context(
    _catalog: &ResourceCatalog,
    _activated: &[ActivatedSkill],
) -> Result<String, ResourceError> {
    todo!("Lab 12.3 format_resource_context 尚未实现")
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

/// What a factory registers into: a staging area that becomes visible only
/// when the factory has returned `Ok`. An extension never gets the host
/// itself.
#[derive(Default)]
pub struct ExtensionContext {
    // The fields are yours to choose: the staged tools and hooks (a hook
    // is called from other threads: `Arc<dyn Fn(…) + Send + Sync>`).
}

impl ExtensionContext {
    /// Stages a tool; a second tool of the same name is refused here, one
    /// the registry already has when committing.
    pub fn register_tool(&mut self, _tool: Box<dyn DynTool>) -> Result<(), DuplicateTool> {
        todo!("Lab 12.4 ExtensionContext::register_tool 尚未实现")
    }

    /// Stages a hook that sees each call before it runs and may deny it.
    pub fn on_before_tool_call(
        &mut self,
        _hook: impl Fn(&ToolCall) -> Result<BeforeToolDecision, ToolError> + Send + Sync + 'static,
    ) {
        todo!("Lab 12.4 ExtensionContext::on_before_tool_call 尚未实现")
    }

    /// Stages a hook that sees each result of the core executor.
    pub fn on_after_tool_result(
        &mut self,
        _hook: impl Fn(&ToolResultMessage) -> Result<(), ToolError> + Send + Sync + 'static,
    ) {
        todo!("Lab 12.4 ExtensionContext::on_after_tool_result 尚未实现")
    }
}

/// The hooks of the extensions loaded so far. Their tools are in the
/// registry they were loaded into. Cloning a host copies its lists; the
/// hooks themselves are shared.
#[derive(Clone)]
pub struct ExtensionHost {
    // The fields are yours to choose: the options, the ids already taken,
    // and the committed hooks, each with its extension's id.
}

impl ExtensionHost {
    /// A host with no extension yet.
    pub fn new(_options: ExtensionHostOptions) -> Self {
        todo!("Lab 12.4 ExtensionHost::new 尚未实现")
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
        _core: impl Fn(&ToolCall, ToolCallOptions) -> Result<ToolResultMessage, ToolError>
        + Send
        + Sync
        + 'static,
    ) -> Box<ToolExecutor> {
        todo!("Lab 12.5 wrap_executor 尚未实现")
    }
}

/// Loads one extension: the trust policy first, the factory only if it
/// says yes. The factory registers into a staging context; only when it
/// returns `Ok` are its tools committed to `registry` and its hooks to
/// `host`, all together, after checking that no tool name is taken. A
/// factory that fails or panics, or a taken name, leaves both as they were.
pub fn load_extension(
    _source: &ExtensionSource,
    _is_trusted: impl FnOnce(&ExtensionSource) -> bool,
    _factory: impl FnOnce(&mut ExtensionContext) -> Result<(), ToolError>,
    _host: &mut ExtensionHost,
    _registry: &mut ToolRegistry,
) -> Result<LoadExtensionResult, ResourceError> {
    todo!("Lab 12.4 load_extension 尚未实现")
}

//! Chapter 12's contract tests: what the focused test leaves out.
//!
//! * The original's own results: `fixtures/resources/cases.json` holds 62
//!   cases (templates, front matter, discovery, activation, the resource
//!   section) with what the original's `resources.ts` returned or threw for
//!   each, run under node on the same folders (paths written relative to
//!   the case's folder, `<CASE>`). Errors from the operating system are
//!   left out: node's and Rust's words for them differ.
//! * Files met in the wild: a missing root, files that cannot be read, text
//!   that is not UTF-8, files far over the bound (sparse, so they cost no
//!   disk), a catalog that is the same however the folders were made.
//! * Hooks and staging: panics, deadlines (the only time here is a deadline
//!   a test sets itself; a hook that must miss it waits on a channel),
//!   the order of hooks, results the after hooks cannot change, and the
//!   host's executor inside chapter 07's loop.

use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use course::agent_loop::{AgentLoopOptions, RunReason, run_agent_loop};
use course::resources::{
    ActivatedSkill, BeforeToolDecision, DiagnosticKind, ExtensionContext, ExtensionDiagnostic,
    ExtensionHook, ExtensionHost, ExtensionHostOptions, ExtensionSource, ExtensionStatus,
    MAX_FRONT_MATTER_BYTES, MAX_RESOURCE_BYTES, ResourceCatalog, TemplateResource, activate_skill,
    discover_resources, format_resource_context, load_extension, render_template,
};
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::tool::{
    DynTool, ObjectSchema, Tool, ToolCallOptions, ToolContext, ToolError, ToolOutput, ToolRegistry,
    execute_tool_call, object_schema,
};
use course::types::{
    AgentContext, AgentMessage, StopReason, ToolCall, ToolResultMessage, assistant_message, text,
    user_message,
};
use serde::Deserialize;
use serde_json::{Value, json};

const GENEROUS: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_millis(500);

/// A fresh folder under `base`, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        TempDir::under(&std::env::temp_dir(), name)
    }

    fn under(base: &Path, name: &str) -> Self {
        let path = base.join(format!(
            "course-resources-contract-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn write(file: &Path, content: impl AsRef<[u8]>) {
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(file, content).unwrap();
}

fn front_matter(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}")
}

fn error_text<T: std::fmt::Debug>(result: Result<T, impl std::fmt::Display>) -> String {
    result.unwrap_err().to_string()
}

// ---- The original's cases -----------------------------------------------

/// Makes a case's folders, files and symlinks under `dir`.
fn materialize(dir: &Path, tree: &Value) {
    for folder in tree["dirs"].as_array().into_iter().flatten() {
        fs::create_dir_all(dir.join(folder.as_str().unwrap())).unwrap();
    }
    for (file, content) in tree["files"].as_object().into_iter().flatten() {
        write(&dir.join(file), content.as_str().unwrap());
    }
    for (link, target) in tree["links"].as_object().into_iter().flatten() {
        let link = dir.join(link);
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(target.as_str().unwrap(), link).unwrap();
    }
}

fn catalog_view(catalog: &ResourceCatalog) -> Value {
    json!({
        "keys": catalog.keys(),
        "instructions": catalog.instructions.as_ref().map(|i| json!({
            "kind": "instructions", "name": i.name, "source": i.source,
            "root": i.root, "body": i.body,
        })),
        "skills": catalog.skills.iter().map(|s| json!({
            "kind": "skill", "name": s.name, "description": s.description,
            "source": s.source, "root": s.root,
        })).collect::<Vec<_>>(),
        "templates": catalog.templates.iter().map(|t| json!({
            "kind": "template", "name": t.name, "description": t.description,
            "source": t.source, "root": t.root, "body": t.body,
        })).collect::<Vec<_>>(),
    })
}

fn activated_view(skill: &ActivatedSkill) -> Value {
    json!({
        "kind": "skill", "name": skill.name, "description": skill.description,
        "source": skill.source, "root": skill.root, "body": skill.body,
        "resources": skill.resources.iter().map(|file| json!({
            "request": file.request, "source": file.source, "content": file.content,
        })).collect::<Vec<_>>(),
    })
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

/// What the port gives for one case, in the fixture's shape.
fn run_case(case: &Value, dir: &Path) -> Result<Value, String> {
    materialize(dir, &case["tree"]);
    let roots: Vec<PathBuf> = (case["roots"].as_array().into_iter().flatten())
        .map(|root| dir.join(root.as_str().unwrap()))
        .collect();
    let discover = |roots: &[PathBuf]| discover_resources(roots).map_err(|e| e.to_string());
    match case["op"].as_str().unwrap() {
        "render" => {
            let template = TemplateResource {
                name: "t".to_string(),
                description: String::new(),
                source: PathBuf::new(),
                root: PathBuf::new(),
                body: case["body"].as_str().unwrap().to_string(),
            };
            let args: HashMap<&str, &str> = (case["args"].as_object().unwrap().iter())
                .map(|(key, value)| (key.as_str(), value.as_str().unwrap()))
                .collect();
            let message = render_template(&template, &args).map_err(|e| e.to_string())?;
            Ok(json!({ "text": message.content[0].text }))
        }
        "discover" => Ok(json!({ "catalog": catalog_view(&discover(&roots)?) })),
        "activate" => {
            let catalog = discover(&roots)?;
            materialize(dir, &case["then"]);
            let requests = case["resources"]
                .as_array()
                .map(|_| strings(&case["resources"]));
            let skill = case["skill"].as_str().unwrap();
            let activated = activate_skill(&catalog, skill, &requests.unwrap_or_default())
                .map_err(|e| e.to_string())?;
            Ok(json!({ "activated": activated_view(&activated) }))
        }
        "format" => {
            let catalog = discover(&roots)?;
            let from = match case["activateFrom"].as_array() {
                Some(others) => discover(
                    &(others.iter())
                        .map(|root| dir.join(root.as_str().unwrap()))
                        .collect::<Vec<_>>(),
                )?,
                None => catalog.clone(),
            };
            let mut activated = Vec::new();
            for pair in case["activate"].as_array().into_iter().flatten() {
                let requests = strings(&pair[1]);
                let skill = activate_skill(&from, pair[0].as_str().unwrap(), &requests);
                activated.push(skill.map_err(|e| e.to_string())?);
            }
            let text = format_resource_context(&catalog, &activated).map_err(|e| e.to_string())?;
            Ok(json!({ "text": text }))
        }
        op => panic!("unknown op {op}"),
    }
}

#[test]
fn the_original_s_cases_give_the_original_s_results() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("fixtures/resources/cases.json")).unwrap();
    assert_eq!(cases.len(), 62);
    let mut differences = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let temporary = TempDir::new(&format!("case-{index}"));
        let base = fs::canonicalize(&temporary.0).unwrap();
        let base = base.to_str().unwrap();
        let got = match run_case(case, &temporary.0) {
            Ok(value) => value,
            Err(message) => json!({ "error": message }),
        };
        let got: Value = serde_json::from_str(&got.to_string().replace(base, "<CASE>")).unwrap();
        if got != case["expected"] {
            differences.push(format!(
                "{}:\n  expected {}\n  got      {}",
                case["name"], case["expected"], got
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

// ---- Files met in the wild ----------------------------------------------

#[test]
fn a_missing_root_is_an_error_naming_it() {
    let temporary = TempDir::new("missing-root");
    let missing = temporary.0.join("no-such-root");
    let refused = error_text(discover_resources(&[&missing]));
    assert!(refused.contains(missing.to_str().unwrap()), "{refused}");
    assert!(refused.contains("无法读取"), "{refused}");
}

#[test]
fn a_file_that_cannot_be_read_is_an_error_naming_it_never_a_panic_or_a_wait() {
    // Root may read any file, so unreadable here means what no permission
    // lifts: a symlink loop, a folder, a FIFO (opening one would wait for a
    // writer forever).
    let temporary = TempDir::new("unreadable");
    let looped = temporary.0.join("loop");
    fs::create_dir_all(&looped).unwrap();
    symlink("AGENTS.md", looped.join("AGENTS.md")).unwrap();
    let refused = error_text(discover_resources(&[&looped]));
    assert!(refused.contains("AGENTS.md 无法读取"), "{refused}");

    let folder = temporary.0.join("folder");
    fs::create_dir_all(folder.join("AGENTS.md")).unwrap();
    let refused = error_text(discover_resources(&[&folder]));
    assert!(refused.ends_with("AGENTS.md 不是普通文件"), "{refused}");

    let fifo = temporary.0.join("fifo");
    fs::create_dir_all(fifo.join("skills/s")).unwrap();
    let made = Command::new("mkfifo")
        .arg(fifo.join("skills/s/SKILL.md"))
        .status();
    assert!(made.unwrap().success());
    let refused = error_text(discover_resources(&[&fifo]));
    assert!(refused.ends_with("SKILL.md 不是普通文件"), "{refused}");

    let no_skill_file = temporary.0.join("no-skill-file");
    fs::create_dir_all(no_skill_file.join("skills/empty")).unwrap();
    let refused = error_text(discover_resources(&[&no_skill_file]));
    assert!(
        refused.contains("skills/empty/SKILL.md 无法读取"),
        "{refused}"
    );
}

#[test]
fn text_that_is_not_utf8_is_an_error_where_it_is_read() {
    let temporary = TempDir::new("utf8");
    let root = temporary.0.join("root");
    // A body that is not UTF-8: discovery reads only the front matter.
    let mut skill = b"---\nname: latin\ndescription: fine\n---\n".to_vec();
    skill.extend_from_slice(b"caf\xe9\n");
    write(&root.join("skills/latin/SKILL.md"), &skill);
    let catalog = discover_resources(&[&root]).unwrap();
    assert_eq!(catalog.keys(), ["skill:latin"]);
    let refused = error_text(activate_skill(&catalog, "latin", &[]));
    assert!(refused.ends_with("SKILL.md 不是 UTF-8 文本"), "{refused}");

    // A front matter that is not UTF-8 stops discovery.
    write(
        &root.join("skills/bad/SKILL.md"),
        b"---\nname: caf\xe9\n---\n",
    );
    let refused = error_text(discover_resources(&[&root]));
    assert!(
        refused.ends_with("bad/SKILL.md 不是 UTF-8 文本"),
        "{refused}"
    );
    fs::remove_dir_all(root.join("skills/bad")).unwrap();

    // A skill's file, AGENTS.md and a template.
    write(
        &root.join("skills/latin/SKILL.md"),
        front_matter("latin", "", "B"),
    );
    write(&root.join("skills/latin/notes.md"), b"\xff\xfe");
    let catalog = discover_resources(&[&root]).unwrap();
    let refused = error_text(activate_skill(&catalog, "latin", &["notes.md"]));
    assert!(refused.ends_with("notes.md 不是 UTF-8 文本"), "{refused}");
    write(&root.join("AGENTS.md"), b"\xc3");
    let refused = error_text(discover_resources(&[&root]));
    assert!(refused.ends_with("AGENTS.md 不是 UTF-8 文本"), "{refused}");
    fs::remove_file(root.join("AGENTS.md")).unwrap();
    write(&root.join("templates/t.md"), b"---\nname: t\n---\n\x80");
    let refused = error_text(discover_resources(&[&root]));
    assert!(refused.ends_with("t.md 不是 UTF-8 文本"), "{refused}");
    fs::remove_dir_all(root.join("templates")).unwrap();

    // A folder whose name is not UTF-8 names a skill with `�` in it.
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let folder = root.join("skills").join(odd);
    fs::create_dir_all(&folder).unwrap();
    write(
        &folder.join("SKILL.md"),
        "---\ndescription: no name\n---\nB",
    );
    let catalog = discover_resources(&[&root]).unwrap();
    assert_eq!(catalog.keys(), ["skill:caf\u{fffd}", "skill:latin"]);
}

/// A file of `len` bytes that takes no disk: `prefix`, then zeros.
fn sparse(file: &Path, prefix: &[u8], len: u64) {
    write(file, prefix);
    File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn huge_files_are_refused_after_a_bounded_read() {
    const HUGE: u64 = 64 << 30; // 64 GiB: reading it whole would never end well.
    let temporary = TempDir::new("huge");
    let root = temporary.0.join("root");
    sparse(&root.join("AGENTS.md"), b"RULES", HUGE);
    let refused = error_text(discover_resources(&[&root]));
    assert!(
        refused.ends_with("AGENTS.md 超过 262144 字节，resource 文件不能更大"),
        "{refused}"
    );
    assert_eq!(MAX_RESOURCE_BYTES, 262_144);

    // At the bound it is read; one byte over, refused.
    sparse(&root.join("AGENTS.md"), b"RULES", MAX_RESOURCE_BYTES);
    let catalog = discover_resources(&[&root]).unwrap();
    assert!(catalog.instructions.unwrap().body.starts_with("RULES"));
    sparse(&root.join("AGENTS.md"), b"RULES", MAX_RESOURCE_BYTES + 1);
    assert!(discover_resources(&[&root]).is_err());
    fs::remove_file(root.join("AGENTS.md")).unwrap();

    // A huge skill body: discovery reads the front matter only, activation
    // refuses the body; a huge file of a skill is refused too.
    let head = front_matter("big", "a huge body", "");
    sparse(&root.join("skills/big/SKILL.md"), head.as_bytes(), HUGE);
    sparse(&root.join("skills/big/data.md"), b"x", HUGE);
    let catalog = discover_resources(&[&root]).unwrap();
    assert_eq!(catalog.skills[0].description, "a huge body");
    let refused = error_text(activate_skill(&catalog, "big", &[]));
    assert!(refused.contains("SKILL.md 超过 262144 字节"), "{refused}");
    write(
        &root.join("skills/big/SKILL.md"),
        front_matter("big", "small now", "B"),
    );
    let refused = error_text(activate_skill(&catalog, "big", &["data.md"]));
    assert!(refused.contains("data.md 超过 262144 字节"), "{refused}");

    // A front matter that does not end within its bound is unterminated.
    sparse(&root.join("skills/big/SKILL.md"), b"---\nname: big\n", HUGE);
    let refused = error_text(discover_resources(&[&root]));
    assert!(
        refused.ends_with("的 YAML frontmatter 没有结束"),
        "{refused}"
    );
    let long_line = format!(
        "---\ndescription: {}\n---\n",
        "x".repeat(MAX_FRONT_MATTER_BYTES as usize)
    );
    write(&root.join("skills/big/SKILL.md"), long_line);
    assert!(discover_resources(&[&root]).is_err());
}

/// One tree, made in the order given, under `root`.
fn make_tree(root: &Path, reverse: bool) {
    let mut files = vec![
        ("AGENTS.md".to_string(), "RULES".to_string()),
        (
            "templates/b.md".to_string(),
            front_matter("alpha", "t", "T-ALPHA"),
        ),
        (
            "templates/a.md".to_string(),
            front_matter("beta", "t", "T-BETA"),
        ),
    ];
    for (index, name) in ["delta", "alpha", "charlie", "bravo", "echo"]
        .iter()
        .enumerate()
    {
        files.push((
            format!("skills/folder-{index}/SKILL.md"),
            front_matter(name, &format!("{name} skill"), &format!("BODY-{name}")),
        ));
    }
    if reverse {
        files.reverse();
    }
    for (file, content) in files {
        write(&root.join(file), content);
    }
}

/// The catalog with every path relative to its root.
fn relative_view(catalog: &ResourceCatalog, root: &Path) -> String {
    let root = fs::canonicalize(root).unwrap();
    catalog_view(catalog)
        .to_string()
        .replace(root.to_str().unwrap(), "<ROOT>")
}

#[test]
fn the_catalog_is_the_same_across_runs_creation_orders_and_file_systems() {
    let temporary = TempDir::new("stable");
    let mut bases = vec![temporary.0.clone()];
    // tmpfs lists a folder in another order than most disk file systems.
    let shm = Path::new("/dev/shm");
    let in_memory = shm.is_dir().then(|| TempDir::under(shm, "stable"));
    bases.extend(in_memory.iter().map(|dir| dir.0.clone()));
    let mut views = Vec::new();
    for base in &bases {
        for (name, reverse) in [("forward", false), ("reverse", true)] {
            let root = base.join(name);
            make_tree(&root, reverse);
            for _ in 0..2 {
                let catalog = discover_resources(&[&root]).unwrap();
                assert_eq!(
                    catalog.keys(),
                    [
                        "instructions:AGENTS",
                        "skill:alpha",
                        "skill:bravo",
                        "skill:charlie",
                        "skill:delta",
                        "skill:echo",
                        "template:alpha",
                        "template:beta",
                    ]
                );
                views.push(relative_view(&catalog, &root));
            }
        }
    }
    assert!(views.iter().all(|view| *view == views[0]), "{views:#?}");
}

#[test]
fn inactive_skills_carry_no_body_anywhere() {
    let temporary = TempDir::new("no-body");
    let root = temporary.0.join("root");
    for name in ["one", "two", "three"] {
        let body = format!("SECRET-{name}");
        write(
            &root.join(format!("skills/{name}/SKILL.md")),
            front_matter(name, "d", &body),
        );
    }
    let catalog = discover_resources(&[&root]).unwrap();
    let text = format_resource_context(&catalog, &[]).unwrap();
    assert!(!format!("{catalog:?}").contains("SECRET"));
    assert!(!text.contains("SECRET"));
    let two = activate_skill(&catalog, "two", &[]).unwrap();
    let text = format_resource_context(&catalog, &[two]).unwrap();
    assert!(text.contains("SECRET-two"));
    assert!(!text.contains("SECRET-one") && !text.contains("SECRET-three"));
}

// ---- Hooks and staging ----------------------------------------------------

#[derive(Deserialize)]
struct NoInput {}

struct NamedTool(String);

impl Tool for NamedTool {
    type Input = NoInput;

    fn name(&self) -> &str {
        &self.0
    }

    fn description(&self) -> &str {
        "a tool"
    }

    fn schema(&self) -> ObjectSchema<NoInput> {
        object_schema(vec![])
    }

    fn execute(&self, _input: NoInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: vec![text(format!("ran:{}", self.0))],
            ..ToolOutput::default()
        })
    }
}

fn tool(name: &str) -> Box<dyn DynTool> {
    Box::new(NamedTool(name.to_string()))
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: json!({ "path": ".env" }),
        raw_arguments: None,
    }
}

fn source(id: &str) -> ExtensionSource {
    ExtensionSource {
        id: id.to_string(),
        path: format!("/virtual/{id}.rs"),
    }
}

type Diagnostics = Arc<Mutex<Vec<ExtensionDiagnostic>>>;

/// A host whose diagnostics are recorded.
fn host(hook_timeout: Duration) -> (ExtensionHost, Diagnostics) {
    let diagnostics = Diagnostics::default();
    let sink = Arc::clone(&diagnostics);
    let record = move |diagnostic| sink.lock().unwrap().push(diagnostic);
    let options = ExtensionHostOptions {
        hook_timeout,
        on_diagnostic: Some(Arc::new(record)),
    };
    (ExtensionHost::new(options), diagnostics)
}

fn load(
    host: &mut ExtensionHost,
    registry: &mut ToolRegistry,
    id: &str,
    factory: impl FnOnce(&mut ExtensionContext) -> Result<(), ToolError>,
) {
    let loaded = load_extension(&source(id), |_| true, factory, host, registry).unwrap();
    assert_eq!(loaded.status, ExtensionStatus::Active);
}

fn core_result(call: &ToolCall) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![text("core result")],
        details: Some(json!({ "source": "core" })),
        is_error: false,
        timestamp: 1,
    }
}

/// A core executor that counts its calls and answers `core_result`.
fn counting_core(
    calls: &Arc<AtomicUsize>,
) -> impl Fn(&ToolCall, ToolCallOptions) -> Result<ToolResultMessage, ToolError> + Send + Sync + 'static
{
    let calls = Arc::clone(calls);
    move |call, _| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(core_result(call))
    }
}

/// A gate: the hook holding the receiver waits until the test sends or
/// drops the sender.
fn gate() -> (mpsc::Sender<()>, Arc<Mutex<Receiver<()>>>) {
    let (sender, receiver) = mpsc::channel();
    (sender, Arc::new(Mutex::new(receiver)))
}

fn counter() -> (Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    (Arc::clone(&count), count)
}

#[test]
fn a_blocked_result_has_the_original_s_text_and_details_in_order() {
    let (mut host, diagnostics) = host(GENEROUS);
    load(
        &mut host,
        &mut ToolRegistry::new(),
        "deny-policy",
        |context| {
            context.on_before_tool_call(|_| {
                Ok(BeforeToolDecision::Deny {
                    reason: "secret path".to_string(),
                })
            });
            Ok(())
        },
    );
    let wrapped = host.wrap_executor(counting_core(&Arc::default()));
    let denied = wrapped(&call("c1", "write"), ToolCallOptions::default()).unwrap();
    assert_eq!(
        denied.content,
        [text("Tool write blocked by deny-policy: secret path")]
    );
    assert_eq!(
        serde_json::to_string(&denied.details).unwrap(),
        r#"{"blockedByExtension":"deny-policy","kind":"deny","reason":"secret path"}"#
    );
    assert!(denied.is_error && denied.timestamp > 0);
    // A denial is a decision, not a failure: no diagnostic.
    assert!(diagnostics.lock().unwrap().is_empty());
}

#[test]
fn a_panicking_hook_fails_closed_before_and_changes_nothing_after() {
    let (mut host, diagnostics) = host(GENEROUS);
    let (counted, after_calls) = counter();
    load(&mut host, &mut ToolRegistry::new(), "panics", |context| {
        context.on_before_tool_call(|call| match call.name.as_str() {
            "guarded" => panic!("before exploded"),
            _ => Ok(BeforeToolDecision::Allow),
        });
        context.on_after_tool_result(|_| panic!("after exploded"));
        context.on_after_tool_result(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        Ok(())
    });
    let core_calls = Arc::new(AtomicUsize::new(0));
    let wrapped = host.wrap_executor(counting_core(&core_calls));

    let blocked = wrapped(&call("c1", "guarded"), ToolCallOptions::default()).unwrap();
    assert!(blocked.is_error);
    assert_eq!(blocked.details.as_ref().unwrap()["kind"], "error");
    assert_eq!(
        blocked.details.as_ref().unwrap()["reason"],
        "before exploded"
    );
    assert_eq!(core_calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        after_calls.load(Ordering::SeqCst),
        0,
        "no after hook for a blocked call"
    );

    let open = call("c2", "open");
    let result = wrapped(&open, ToolCallOptions::default()).unwrap();
    assert_eq!(result, core_result(&open));
    assert_eq!(core_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        after_calls.load(Ordering::SeqCst),
        1,
        "the next after hook still ran"
    );
    let seen: Vec<(ExtensionHook, DiagnosticKind, String)> = (diagnostics.lock().unwrap().iter())
        .map(|d| (d.hook, d.kind, d.message.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                ExtensionHook::BeforeToolCall,
                DiagnosticKind::Error,
                "before exploded".to_string()
            ),
            (
                ExtensionHook::AfterToolResult,
                DiagnosticKind::Error,
                "after exploded".to_string()
            ),
        ]
    );
}

#[test]
fn a_hook_past_its_deadline_is_left_behind_and_its_late_answer_ignored() {
    let (mut host, diagnostics) = host(SHORT);
    let (release, waiting) = gate();
    let (finished, hook_finished) = mpsc::channel();
    let finished = Mutex::new(finished);
    let calls = AtomicUsize::new(0);
    load(
        &mut host,
        &mut ToolRegistry::new(),
        "slow-policy",
        move |context| {
            context.on_before_tool_call(move |_| {
                // The first call waits at the gate, then says "deny" too late.
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    waiting.lock().unwrap().recv().unwrap();
                    finished.lock().unwrap().send(()).unwrap();
                    return Ok(BeforeToolDecision::Deny {
                        reason: "too late".to_string(),
                    });
                }
                Ok(BeforeToolDecision::Allow)
            });
            Ok(())
        },
    );
    let core_calls = Arc::new(AtomicUsize::new(0));
    let wrapped = host.wrap_executor(counting_core(&core_calls));

    let first = wrapped(&call("c1", "core"), ToolCallOptions::default()).unwrap();
    assert_eq!(first.details.as_ref().unwrap()["kind"], "timeout");
    assert_eq!(
        first.details.as_ref().unwrap()["reason"],
        "beforeToolCall:slow-policy timed out"
    );
    // The thread is still waiting; let it answer now, and wait until it has.
    release.send(()).unwrap();
    hook_finished.recv().unwrap();
    let second = wrapped(&call("c2", "core"), ToolCallOptions::default()).unwrap();
    assert_eq!(second, core_result(&call("c2", "core")));
    assert_eq!(core_calls.load(Ordering::SeqCst), 1);
    assert_eq!(diagnostics.lock().unwrap().len(), 1);
}

#[test]
fn before_hooks_run_in_order_and_the_first_denial_stops_the_rest() {
    let (mut host, _) = host(GENEROUS);
    let mut registry = ToolRegistry::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    for (id, decision) in [("first", None), ("second", Some("no")), ("third", None)] {
        let (before, after) = (Arc::clone(&order), Arc::clone(&order));
        load(&mut host, &mut registry, id, move |context| {
            context.on_before_tool_call(move |_| {
                before.lock().unwrap().push(id);
                Ok(match decision {
                    Some(reason) => BeforeToolDecision::Deny {
                        reason: reason.to_string(),
                    },
                    None => BeforeToolDecision::Allow,
                })
            });
            context.on_after_tool_result(move |_| {
                after.lock().unwrap().push("after");
                Ok(())
            });
            Ok(())
        });
    }
    let core_calls = Arc::new(AtomicUsize::new(0));
    let wrapped = host.wrap_executor(counting_core(&core_calls));
    let denied = wrapped(&call("c1", "core"), ToolCallOptions::default()).unwrap();
    assert_eq!(denied.details.unwrap()["blockedByExtension"], "second");
    assert_eq!(*order.lock().unwrap(), ["first", "second"]);
    assert_eq!(core_calls.load(Ordering::SeqCst), 0);
}

#[test]
fn after_hooks_observe_the_result_once_and_cannot_replace_it() {
    let (mut host, diagnostics) = host(SHORT);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (_release, waiting) = gate();
    let record = Arc::clone(&seen);
    load(
        &mut host,
        &mut ToolRegistry::new(),
        "observers",
        move |context| {
            context.on_after_tool_result(move |result| {
                record.lock().unwrap().push(result.clone());
                Err("observer refuses".into())
            });
            context.on_after_tool_result(|_| panic!("observer panics"));
            context.on_after_tool_result(move |_| {
                let _ = waiting.lock().unwrap().recv();
                Ok(())
            });
            Ok(())
        },
    );
    let wrapped = host.wrap_executor(counting_core(&Arc::default()));
    let returned = wrapped(&call("c1", "core"), ToolCallOptions::default()).unwrap();
    let original = core_result(&call("c1", "core"));
    assert_eq!(returned, original);
    assert_eq!(*seen.lock().unwrap(), [original]);
    let kinds: Vec<DiagnosticKind> = diagnostics.lock().unwrap().iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        [
            DiagnosticKind::Error,
            DiagnosticKind::Error,
            DiagnosticKind::Timeout
        ]
    );
}

#[test]
fn a_failing_core_is_returned_as_it_is_and_no_after_hook_sees_it() {
    let (mut host, _) = host(GENEROUS);
    let (counted, after_calls) = counter();
    load(
        &mut host,
        &mut ToolRegistry::new(),
        "observer",
        move |context| {
            context.on_after_tool_result(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(())
            });
            Ok(())
        },
    );
    let wrapped = host.wrap_executor(|_, _| Err("core broke".into()));
    let failed = wrapped(&call("c1", "core"), ToolCallOptions::default());
    assert_eq!(failed.unwrap_err().to_string(), "core broke");
    assert_eq!(after_calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_diagnostic_observer_that_panics_changes_nothing() {
    let mut host = ExtensionHost::new(ExtensionHostOptions {
        hook_timeout: GENEROUS,
        on_diagnostic: Some(Arc::new(|_| panic!("observer of diagnostics broke"))),
    });
    load(&mut host, &mut ToolRegistry::new(), "failing", |context| {
        context.on_after_tool_result(|_| Err("after failed".into()));
        Ok(())
    });
    let wrapped = host.wrap_executor(counting_core(&Arc::default()));
    let returned = wrapped(&call("c1", "core"), ToolCallOptions::default()).unwrap();
    assert_eq!(returned, core_result(&call("c1", "core")));
}

#[test]
fn an_executor_runs_the_extensions_loaded_before_it_was_made() {
    let (mut host, _) = host(GENEROUS);
    let mut registry = ToolRegistry::new();
    let deny = |context: &mut ExtensionContext| {
        context.on_before_tool_call(|_| {
            Ok(BeforeToolDecision::Deny {
                reason: "later".to_string(),
            })
        });
        Ok(())
    };
    let before = host.wrap_executor(counting_core(&Arc::default()));
    load(&mut host, &mut registry, "later", deny);
    let after = host.wrap_executor(counting_core(&Arc::default()));
    let open = call("c1", "core");
    assert!(!before(&open, ToolCallOptions::default()).unwrap().is_error);
    assert!(after(&open, ToolCallOptions::default()).unwrap().is_error);
}

#[test]
fn staging_leaves_nothing_after_a_panicking_factory_or_a_duplicate_inside_one_factory() {
    let (mut host, _) = host(GENEROUS);
    let mut registry = ToolRegistry::with_tools(vec![tool("existing")]).unwrap();
    let (counted, hook_calls) = counter();
    let panicked = load_extension(
        &source("panics"),
        |_| true,
        |context| {
            context.register_tool(tool("staged"))?;
            context.on_before_tool_call(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(BeforeToolDecision::Allow)
            });
            panic!("factory panicked");
        },
        &mut host,
        &mut registry,
    );
    assert_eq!(
        error_text(panicked),
        "extension panics 注册失败：factory panicked"
    );

    let twice = load_extension(
        &source("twice"),
        |_| true,
        |context| {
            context.register_tool(tool("same"))?;
            context.register_tool(tool("same"))?;
            Ok(())
        },
        &mut host,
        &mut registry,
    );
    assert_eq!(
        error_text(twice),
        "extension twice 注册失败：Tool 已存在：same"
    );
    let names: Vec<&str> = registry.list().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["existing"]);

    // The ids were not taken: a good factory may use them now.
    load(&mut host, &mut registry, "panics", |context| {
        context.register_tool(tool("staged"))?;
        Ok(())
    });
    let names: Vec<&str> = registry.list().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["existing", "staged"]);
    let wrapped = host.wrap_executor(counting_core(&Arc::default()));
    wrapped(&call("c1", "core"), ToolCallOptions::default()).unwrap();
    assert_eq!(hook_calls.load(Ordering::SeqCst), 0);
}

#[test]
fn sources_are_checked_and_an_id_is_taken_once() {
    let (mut host, _) = host(GENEROUS);
    let mut registry = ToolRegistry::new();
    let asked = Mutex::new(Vec::new());
    let blank = ExtensionSource {
        id: " ".to_string(),
        path: "/virtual/x.rs".to_string(),
    };
    let refused = load_extension(&blank, |_| true, |_| Ok(()), &mut host, &mut registry);
    assert_eq!(error_text(refused), "extension source 缺少 id 或 path");
    let no_path = ExtensionSource {
        path: String::new(),
        ..source("x")
    };
    assert!(load_extension(&no_path, |_| true, |_| Ok(()), &mut host, &mut registry).is_err());

    let policy = |source: &ExtensionSource| {
        asked.lock().unwrap().push(source.clone());
        true
    };
    load_extension(
        &source("once"),
        policy,
        |_| Ok(()),
        &mut host,
        &mut registry,
    )
    .unwrap();
    let again = load_extension(
        &source("once"),
        policy,
        |_| panic!("never called"),
        &mut host,
        &mut registry,
    );
    assert_eq!(error_text(again), "extension id 无效或重复：once");
    assert_eq!(*asked.lock().unwrap(), [source("once"), source("once")]);

    // A skipped source takes no id.
    let skipped = load_extension(
        &source("later"),
        |_| false,
        |_| Ok(()),
        &mut host,
        &mut registry,
    );
    assert_eq!(skipped.unwrap().status, ExtensionStatus::SkippedUntrusted);
    load(&mut host, &mut registry, "later", |_| Ok(()));
}

#[test]
fn the_host_s_executor_runs_inside_the_agent_loop() {
    let (mut host, _) = host(GENEROUS);
    let mut registry = ToolRegistry::with_tools(vec![tool("read")]).unwrap();
    load(&mut host, &mut registry, "guard", |context| {
        context.register_tool(tool("note"))?;
        context.on_before_tool_call(|call| {
            Ok(match call.name.as_str() {
                "read" => BeforeToolDecision::Deny {
                    reason: "no reading today".to_string(),
                },
                _ => BeforeToolDecision::Allow,
            })
        });
        Ok(())
    });
    // The loop takes a `'static` executor: the core shares the registry.
    let registry = Arc::new(registry);
    let tools = Arc::clone(&registry);
    let executor =
        host.wrap_executor(move |call, options| Ok(execute_tool_call(call, &tools, options)));
    let empty_call = |id: &str, name: &str| ToolCall {
        arguments: json!({}),
        ..call(id, name)
    };
    let model = ScriptedModel::new(vec![
        ScriptedTurn::Message(assistant_message(
            vec![
                empty_call("c-read", "read").into(),
                empty_call("c-note", "note").into(),
            ],
            StopReason::ToolUse,
        )),
        ScriptedTurn::Message(assistant_message(
            vec![text("done").into()],
            StopReason::Stop,
        )),
    ]);
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message("go"))],
        tools: None,
    };
    let options = AgentLoopOptions {
        execute_tool_call: Some(&*executor),
        ..AgentLoopOptions::default()
    };
    let run = run_agent_loop(&model, &registry, &context, options, |_| {});
    assert_eq!(run.reason, RunReason::Stop);
    let results: Vec<&ToolResultMessage> = (run.messages.iter())
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].tool_call_id, "c-read");
    assert!(results[0].is_error);
    assert_eq!(
        results[0].content,
        [text("Tool read blocked by guard: no reading today")]
    );
    assert_eq!(results[1].tool_call_id, "c-note");
    assert_eq!(results[1].content, [text("ran:note")]);
    // The model was shown the extension's tool with the registry's own.
    let shown: Vec<String> = (model.requests()[0].tools.iter().flatten())
        .map(|definition| definition.name.clone())
        .collect();
    assert_eq!(shown, ["read", "note"]);
}

//! Chapter 12's focused test: resources on demand, extensions through a
//! trust gate, twelve tests ported one for one from the original course.
//!
//! Steps filter them by lab: `lab12_1` (2 tests), `lab12_2` (3), `lab12_3`
//! (2), `lab12_4` (2), `lab12_5` (3); no filter runs all 12.
//!
//! Resources are real folders and symlinks under the system's temporary
//! folder. Rust has no dynamic import: where the original's `importModule`
//! hands back a module whose default export is the factory, an extension
//! here is its factory, and the trust gate is proven to run before the
//! factory is called.
//!
//! Where the original checks that a hook gets a frozen copy or that a
//! result shares nothing with the core's, Rust already guarantees it (a
//! hook gets `&ToolCall`, the caller owns what it is returned): those
//! assertions stay and cannot fail. A hook that never returns waits on a
//! channel the test holds; the host's deadline is the only time here.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use course::context::{BuildContextOptions, build_context};
use course::resources::{
    ActivatedSkillFile, BeforeToolDecision, DiagnosticKind, ExtensionContext, ExtensionDiagnostic,
    ExtensionHook, ExtensionHost, ExtensionHostOptions, ExtensionSource, ExtensionStatus,
    LoadExtensionResult, RESOURCE_SECTION, activate_skill, discover_resources,
    format_resource_context, load_extension, render_template,
};
use course::session::{EntryKind, SessionEntry};
use course::tool::{
    DynTool, ObjectSchema, Tool, ToolCallOptions, ToolContext, ToolError, ToolOutput, ToolRegistry,
    object_schema,
};
use course::types::{
    AgentMessage, Sections, SystemMessage, ToolCall, ToolResultMessage, current_system_prompt,
    text, text_of, user_message,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// A deadline no hook that answers comes near.
const GENEROUS: Duration = Duration::from_secs(10);
/// The deadline of a host whose test waits for a hook to miss it.
const SHORT: Duration = Duration::from_millis(500);

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("course-resources-{}-{name}", std::process::id()));
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

fn front_matter_file(file: &Path, name: &str, description: &str, body: &str) {
    let content = [
        "---",
        &format!("name: {name}"),
        &format!("description: {description}"),
        "---",
        body,
    ];
    fs::write(file, content.join("\n")).unwrap();
}

fn write_skill(root: &Path, folder: &str, name: &str, description: &str, body: &str) -> PathBuf {
    let skill_root = root.join("skills").join(folder);
    fs::create_dir_all(&skill_root).unwrap();
    front_matter_file(&skill_root.join("SKILL.md"), name, description, body);
    skill_root
}

fn write_template(root: &Path, file: &str, name: &str, description: &str, body: &str) {
    let folder = root.join("templates");
    fs::create_dir_all(&folder).unwrap();
    front_matter_file(&folder.join(file), name, description, body);
}

/// A tool that takes no arguments and says it ran.
struct EmptyTool {
    name: String,
    description: String,
}

#[derive(Deserialize)]
struct NoInput {}

impl Tool for EmptyTool {
    type Input = NoInput;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn schema(&self) -> ObjectSchema<NoInput> {
        object_schema(vec![])
    }

    fn execute(&self, _input: NoInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: vec![text(format!("ran:{}", self.name))],
            ..ToolOutput::default()
        })
    }
}

fn empty_tool(name: &str) -> Box<dyn DynTool> {
    Box::new(EmptyTool {
        name: name.to_string(),
        description: format!("{name} tool"),
    })
}

fn tool_call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
        raw_arguments: None,
    }
}

fn tool_result(call: &ToolCall, value: &str) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![text(value)],
        details: Some(json!({ "source": "core" })),
        is_error: false,
        timestamp: 1,
    }
}

fn source(id: &str) -> ExtensionSource {
    ExtensionSource {
        id: id.to_string(),
        path: format!("/virtual/{id}.rs"),
    }
}

/// Loads a trusted extension made of `factory` into `host` and `registry`;
/// it must become active.
fn load_inline(
    host: &mut ExtensionHost,
    registry: &mut ToolRegistry,
    id: &str,
    factory: impl FnOnce(&mut ExtensionContext) -> Result<(), ToolError>,
) {
    let loaded = load_extension(&source(id), |_| true, factory, host, registry).unwrap();
    assert_eq!(loaded.status, ExtensionStatus::Active);
}

type Diagnostics = Arc<Mutex<Vec<ExtensionDiagnostic>>>;

/// A host whose diagnostics are recorded.
fn recorded_host(hook_timeout: Duration) -> (ExtensionHost, Diagnostics) {
    let diagnostics = Diagnostics::default();
    let sink = Arc::clone(&diagnostics);
    let record = move |diagnostic| sink.lock().unwrap().push(diagnostic);
    let options = ExtensionHostOptions {
        hook_timeout,
        on_diagnostic: Some(Arc::new(record)),
    };
    (ExtensionHost::new(options), diagnostics)
}

fn quiet_host() -> ExtensionHost {
    ExtensionHost::new(ExtensionHostOptions {
        hook_timeout: GENEROUS,
        on_diagnostic: None,
    })
}

/// A core executor that counts its calls in `calls` and answers
/// `tool_result`.
fn counting_core(
    calls: &Arc<AtomicUsize>,
) -> impl Fn(&ToolCall, ToolCallOptions) -> Result<ToolResultMessage, ToolError> + Send + Sync + 'static
{
    let calls = Arc::clone(calls);
    move |call, _| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(tool_result(call, "core result"))
    }
}

/// A gate a hook waits at until the test ends (the sender is dropped).
fn gate() -> (mpsc::Sender<()>, Arc<Mutex<Receiver<()>>>) {
    let (sender, receiver) = mpsc::channel();
    (sender, Arc::new(Mutex::new(receiver)))
}

#[test]
fn lab12_1_the_order_of_roots_decides_precedence_for_each_kind_and_name() {
    let temporary = TempDir::new("precedence");
    let project = temporary.0.join("project");
    let user = temporary.0.join("user");
    fs::create_dir_all(&project).unwrap();
    fs::create_dir_all(&user).unwrap();
    fs::write(project.join("AGENTS.md"), "PROJECT RULE").unwrap();
    fs::write(user.join("AGENTS.md"), "USER RULE").unwrap();
    write_skill(
        &project,
        "review-project",
        "review",
        "project review",
        "PROJECT SKILL BODY",
    );
    write_skill(
        &user,
        "review-user",
        "review",
        "user review",
        "USER SKILL BODY",
    );
    write_template(
        &project,
        "project.md",
        "prompt",
        "project prompt",
        "PROJECT {{target}}",
    );
    write_template(&user, "user.md", "prompt", "user prompt", "USER {{target}}");

    let project_first = discover_resources(&[&project, &user]).unwrap();
    assert_eq!(
        project_first.keys(),
        ["instructions:AGENTS", "skill:review", "template:prompt"]
    );
    assert_eq!(project_first.instructions.unwrap().body, "PROJECT RULE");
    assert_eq!(project_first.skills[0].description, "project review");
    assert_eq!(project_first.templates[0].body, "PROJECT {{target}}");

    let user_first = discover_resources(&[&user, &project]).unwrap();
    assert_eq!(user_first.instructions.unwrap().body, "USER RULE");
    assert_eq!(user_first.skills[0].description, "user review");
    assert_eq!(user_first.templates[0].body, "USER {{target}}");
}

#[test]
fn lab12_1_the_catalog_is_stable_by_logical_identity_and_inactive_skills_carry_no_body() {
    let temporary = TempDir::new("stable");
    let root = temporary.0.join("root-with-random-name");
    fs::create_dir_all(&root).unwrap();
    let skill = "first logical skill";
    write_skill(
        &root,
        "z-physical-directory",
        "alpha",
        skill,
        "SECRET_ALPHA_BODY",
    );
    let skill = "last logical skill";
    write_skill(
        &root,
        "a-physical-directory",
        "zeta",
        skill,
        "SECRET_ZETA_BODY",
    );
    write_template(
        &root,
        "z-file.md",
        "aardvark",
        "first logical template",
        "AARDVARK",
    );
    write_template(
        &root,
        "a-file.md",
        "zebra",
        "last logical template",
        "ZEBRA",
    );

    let first = discover_resources(&[&root]).unwrap();
    let second = discover_resources(&[&root]).unwrap();
    assert_eq!(first, second);
    assert_eq!(
        first.keys(),
        [
            "skill:alpha",
            "skill:zeta",
            "template:aardvark",
            "template:zebra"
        ]
    );
    // The Debug form shows every field the catalog holds.
    let serialized = format!("{first:?}");
    assert!(!serialized.contains("SECRET_ALPHA_BODY"));
    assert!(!serialized.contains("SECRET_ZETA_BODY"));
    // `SkillResource` has no body field at all.
    assert!(!format!("{:?}", first.skills[0]).contains("body"));
}

#[test]
fn lab12_2_activation_reads_the_body_and_returns_the_canonical_source() {
    let temporary = TempDir::new("activate");
    let root = temporary.0.join("root");
    let skill_root = write_skill(
        &root,
        "review",
        "review",
        "inspect changes",
        "READ THE DIFF FIRST",
    );
    let catalog = discover_resources(&[&root]).unwrap();
    let before = catalog.clone();
    assert!(!format!("{catalog:?}").contains("READ THE DIFF FIRST"));

    let mut activated = activate_skill(&catalog, "review", &[]).unwrap();
    assert_eq!(activated.body, "READ THE DIFF FIRST");
    assert_eq!(
        activated.source,
        fs::canonicalize(skill_root.join("SKILL.md")).unwrap()
    );
    assert_eq!(activated.root, fs::canonicalize(&skill_root).unwrap());
    assert_eq!(activated.resources, []);
    assert_eq!(catalog, before);
    activated.body = "mutated activation".to_string();
    assert_eq!(catalog, before);
}

#[test]
fn lab12_2_activation_reads_files_inside_the_skill_root_and_names_each_source() {
    let temporary = TempDir::new("files");
    let root = temporary.0.join("root");
    let skill_root = write_skill(
        &root,
        "review",
        "review",
        "inspect",
        "Read references/checklist.md",
    );
    let references = skill_root.join("references");
    fs::create_dir_all(&references).unwrap();
    fs::write(references.join("checklist.md"), "tests\nsecurity\n").unwrap();

    let catalog = discover_resources(&[&root]).unwrap();
    let requests = ["references/checklist.md", "references/checklist.md"];
    let activated = activate_skill(&catalog, "review", &requests).unwrap();
    assert_eq!(
        activated.resources,
        [ActivatedSkillFile {
            request: "references/checklist.md".to_string(),
            source: fs::canonicalize(references.join("checklist.md")).unwrap(),
            content: "tests\nsecurity\n".to_string(),
        }]
    );
}

#[test]
fn lab12_2_activation_refuses_traversal_absolute_paths_and_symlink_escapes() {
    let temporary = TempDir::new("escape");
    let root = temporary.0.join("root");
    let skill_root = write_skill(&root, "review", "review", "inspect", "Stay inside root");
    let references = skill_root.join("references");
    fs::create_dir_all(&references).unwrap();
    fs::write(references.join("safe.md"), "safe").unwrap();
    let outside = temporary.0.join("outside.md");
    fs::write(&outside, "secret").unwrap();
    symlink(&outside, references.join("escape.md")).unwrap();
    let catalog = discover_resources(&[&root]).unwrap();

    let valid = activate_skill(&catalog, "review", &["references/safe.md"]).unwrap();
    assert_eq!(valid.resources[0].content, "safe");
    let outside = outside.to_str().unwrap();
    for request in ["../../outside.md", outside, "references/escape.md"] {
        let refused = activate_skill(&catalog, "review", &[request]).unwrap_err();
        assert!(
            refused.to_string().contains("逃出了声明 root"),
            "{request}: {refused}"
        );
    }
}

#[test]
fn lab12_3_render_template_replaces_each_placeholder_and_makes_a_user_message() {
    let temporary = TempDir::new("template");
    let root = temporary.0.join("root");
    let body = "Review {{target}}; then test {{target}} for {{owner}}.";
    write_template(&root, "review.md", "review", "review one target", body);
    let catalog = discover_resources(&[&root]).unwrap();
    let template = &catalog.templates[0];

    let args = HashMap::from([
        ("target", "src/parser.ts"),
        ("owner", "runtime"),
        ("ignored", "extra"),
    ]);
    let message = AgentMessage::User(render_template(template, &args).unwrap());
    assert_eq!(serde_json::to_value(&message).unwrap()["role"], "user");
    assert_eq!(
        text_of(&message),
        "Review src/parser.ts; then test src/parser.ts for runtime."
    );
    let AgentMessage::User(user) = &message else {
        unreachable!()
    };
    assert!(user.timestamp > 0);
    let missing = render_template(template, &HashMap::from([("target", "src/parser.ts")]));
    assert!(missing.unwrap_err().to_string().contains("缺少参数 owner"));
}

#[test]
fn lab12_3_the_resource_section_reaches_build_context_through_a_system_message() {
    let temporary = TempDir::new("context");
    let root = temporary.0.join("root");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("AGENTS.md"), "FOLLOW PROJECT RULES").unwrap();
    write_skill(&root, "active", "active", "active metadata", "ACTIVE BODY");
    write_skill(
        &root,
        "inactive",
        "inactive",
        "inactive metadata",
        "INACTIVE SECRET BODY",
    );
    let catalog = discover_resources(&[&root]).unwrap();
    let activated = activate_skill(&catalog, "active", &[]).unwrap();

    let resource_text = format_resource_context(&catalog, &[activated]).unwrap();
    assert!(resource_text.contains("FOLLOW PROJECT RULES"));
    assert!(resource_text.contains("active metadata"));
    assert!(resource_text.contains("inactive metadata"));
    assert!(resource_text.contains("ACTIVE BODY"));
    assert!(!resource_text.contains("INACTIVE SECRET BODY"));

    assert_eq!(RESOURCE_SECTION, "pi-resources");
    let system = AgentMessage::System(SystemMessage {
        content: "BASE PROMPT".to_string(),
        sections: Some(Sections::from([(
            RESOURCE_SECTION,
            Some(resource_text.as_str()),
        )])),
        timestamp: 0,
    });
    let message_entry = |id: &str, parent_id: Option<&str>, timestamp, message| SessionEntry {
        id: id.to_string(),
        parent_id: parent_id.map(str::to_string),
        timestamp,
        kind: EntryKind::Message { message },
    };
    let active_path = [
        message_entry("system", None, 0, system.clone()),
        message_entry(
            "user",
            Some("system"),
            1,
            AgentMessage::User(user_message("continue")),
        ),
    ];
    let projection = build_context(
        &active_path,
        &BuildContextOptions {
            max_tokens: 20,
            reserved_output: 2,
            safety_margin: 1,
            estimate_tokens: &|_| 1,
        },
    )
    .unwrap();
    assert_eq!(projection.messages[0], system);
    assert_eq!(projection.tokens.system, 1);
    let prompt = current_system_prompt(&projection.messages).unwrap_or_default();
    assert!(
        prompt.find("BASE PROMPT") < prompt.find("# Pi resources"),
        "资源段落排在基础 prompt 之后，作为独立段落而不是拼接字符串"
    );
    assert!(!prompt.contains("INACTIVE SECRET BODY"));
    assert_eq!(projection.kept_entry_ids, ["user"]);
}

#[test]
fn lab12_4_the_trust_gate_runs_before_the_factory() {
    let mut registry = ToolRegistry::new();
    let mut host = quiet_host();
    let order = RefCell::new(Vec::new());
    let untrusted = load_extension(
        &source("blocked"),
        |_| {
            order.borrow_mut().push("trust");
            false
        },
        |_| {
            order.borrow_mut().push("factory");
            Ok(())
        },
        &mut host,
        &mut registry,
    )
    .unwrap();
    assert_eq!(*order.borrow(), ["trust"]);
    assert_eq!(
        untrusted,
        LoadExtensionResult {
            id: "blocked".to_string(),
            status: ExtensionStatus::SkippedUntrusted,
        }
    );
    assert_eq!(registry.list().len(), 0);

    let trusted = load_extension(
        &source("trusted"),
        |_| {
            order.borrow_mut().push("trust:trusted");
            true
        },
        |context| {
            order.borrow_mut().push("factory:trusted");
            context.register_tool(empty_tool("extension-tool"))?;
            Ok(())
        },
        &mut host,
        &mut registry,
    )
    .unwrap();
    assert_eq!(
        *order.borrow(),
        ["trust", "trust:trusted", "factory:trusted"]
    );
    assert_eq!(trusted.status, ExtensionStatus::Active);
    assert!(registry.get("extension-tool").is_some());
}

#[test]
fn lab12_4_staged_registration_leaves_nothing_after_a_failure_or_a_duplicate() {
    let mut registry = ToolRegistry::with_tools(vec![empty_tool("existing")]).unwrap();
    let mut host = quiet_host();
    let leaked_hook_calls = Arc::new(AtomicUsize::new(0));

    let leaked = Arc::clone(&leaked_hook_calls);
    let failed = load_extension(
        &source("factory-fails"),
        |_| true,
        |context| {
            context.register_tool(empty_tool("must-not-leak"))?;
            context.on_before_tool_call(move |_| {
                leaked.fetch_add(1, Ordering::SeqCst);
                Ok(BeforeToolDecision::Allow)
            });
            Err("factory exploded".into())
        },
        &mut host,
        &mut registry,
    );
    assert!(failed.unwrap_err().to_string().contains("factory exploded"));
    assert!(registry.get("must-not-leak").is_none());

    let leaked = Arc::clone(&leaked_hook_calls);
    let duplicate = load_extension(
        &source("duplicate-tool"),
        |_| true,
        |context| {
            context.register_tool(empty_tool("existing"))?;
            context.on_before_tool_call(move |_| {
                leaked.fetch_add(1, Ordering::SeqCst);
                Ok(BeforeToolDecision::Allow)
            });
            Ok(())
        },
        &mut host,
        &mut registry,
    );
    let refused = duplicate.unwrap_err().to_string();
    assert!(refused.contains("Tool 已存在：existing"), "{refused}");
    let names: Vec<&str> = registry.list().iter().map(|tool| tool.name()).collect();
    assert_eq!(names, ["existing"]);

    let wrapped = host.wrap_executor(counting_core(&Arc::default()));
    wrapped(
        &tool_call("probe", "core", json!({})),
        ToolCallOptions::default(),
    )
    .unwrap();
    assert_eq!(leaked_hook_calls.load(Ordering::SeqCst), 0);
}

#[test]
fn lab12_5_a_before_denial_is_a_paired_error_result_and_the_core_never_runs() {
    let mut host = quiet_host();
    let seen_call = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&seen_call);
    load_inline(
        &mut host,
        &mut ToolRegistry::new(),
        "deny-policy",
        |context| {
            context.on_before_tool_call(move |call| {
                *seen.lock().unwrap() = Some(call.clone());
                Ok(BeforeToolDecision::Deny {
                    reason: "secret path".to_string(),
                })
            });
            Ok(())
        },
    );
    let core_calls = Arc::new(AtomicUsize::new(0));
    let wrapped = host.wrap_executor(counting_core(&core_calls));
    let source = tool_call("denied", "write", json!({ "path": ".env" }));
    let denied = wrapped(&source, ToolCallOptions::default()).unwrap();

    assert_eq!(core_calls.load(Ordering::SeqCst), 0);
    assert_eq!(denied.tool_call_id, "denied");
    assert_eq!(denied.tool_name, "write");
    assert!(denied.is_error);
    assert_eq!(
        denied.details,
        Some(json!({
            "blockedByExtension": "deny-policy",
            "kind": "deny",
            "reason": "secret path",
        }))
    );
    // The hook got `&ToolCall`: it could look, not change (the original's
    // frozen copy).
    assert_eq!(seen_call.lock().unwrap().as_ref(), Some(&source));
}

#[test]
fn lab12_5_a_before_hook_that_fails_or_times_out_fails_closed_with_a_diagnostic() {
    let (mut thrown_host, thrown_diagnostics) = recorded_host(GENEROUS);
    load_inline(
        &mut thrown_host,
        &mut ToolRegistry::new(),
        "throw-policy",
        |context| {
            context.on_before_tool_call(|_| panic!("policy crashed"));
            Ok(())
        },
    );
    let thrown_core_calls = Arc::new(AtomicUsize::new(0));
    let thrown_executor = thrown_host.wrap_executor(counting_core(&thrown_core_calls));
    let thrown_call = tool_call("throw-call", "core", json!({}));
    let thrown = thrown_executor(&thrown_call, ToolCallOptions::default()).unwrap();
    assert_eq!(thrown_core_calls.load(Ordering::SeqCst), 0);
    assert_eq!(thrown.tool_call_id, "throw-call");
    assert!(thrown.is_error);
    assert_eq!(
        *thrown_diagnostics.lock().unwrap(),
        [ExtensionDiagnostic {
            extension_id: "throw-policy".to_string(),
            hook: ExtensionHook::BeforeToolCall,
            kind: DiagnosticKind::Error,
            message: "policy crashed".to_string(),
        }]
    );

    let (mut timeout_host, timeout_diagnostics) = recorded_host(SHORT);
    let (_release, waiting) = gate();
    load_inline(
        &mut timeout_host,
        &mut ToolRegistry::new(),
        "timeout-policy",
        |context| {
            context.on_before_tool_call(move |_| {
                let _ = waiting.lock().unwrap().recv();
                Ok(BeforeToolDecision::Allow)
            });
            Ok(())
        },
    );
    let timeout_core_calls = Arc::new(AtomicUsize::new(0));
    let timeout_executor = timeout_host.wrap_executor(counting_core(&timeout_core_calls));
    let timeout_call = tool_call("timeout-call", "core", json!({}));
    let timed_out = timeout_executor(&timeout_call, ToolCallOptions::default()).unwrap();
    assert_eq!(timeout_core_calls.load(Ordering::SeqCst), 0);
    assert_eq!(timed_out.tool_call_id, "timeout-call");
    assert!(timed_out.is_error);
    assert_eq!(timed_out.details.unwrap()["kind"], "timeout");
    let diagnostics = timeout_diagnostics.lock().unwrap();
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(
        (
            &diagnostics[0].extension_id[..],
            diagnostics[0].hook,
            diagnostics[0].kind
        ),
        (
            "timeout-policy",
            ExtensionHook::BeforeToolCall,
            DiagnosticKind::Timeout
        )
    );
}

#[test]
fn lab12_5_after_hooks_run_once_per_result_and_cannot_replace_it() {
    let (mut host, diagnostics) = recorded_host(SHORT);
    let mut registry = ToolRegistry::new();
    let successful_after_calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&successful_after_calls);
    load_inline(&mut host, &mut registry, "after-success", |context| {
        context.on_after_tool_result(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        Ok(())
    });
    load_inline(&mut host, &mut registry, "after-error", |context| {
        context.on_after_tool_result(|_| Err("observer crashed".into()));
        Ok(())
    });
    let (_release, waiting) = gate();
    load_inline(&mut host, &mut registry, "after-timeout", |context| {
        context.on_after_tool_result(move |_| {
            let _ = waiting.lock().unwrap().recv();
            Ok(())
        });
        Ok(())
    });

    let call = tool_call("core-call", "core", json!({}));
    let core_result = tool_result(&call, "already happened");
    let core_calls = Arc::new(AtomicUsize::new(0));
    let (counted, fact) = (Arc::clone(&core_calls), core_result.clone());
    let wrapped = host.wrap_executor(move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(fact.clone())
    });
    let mut returned = wrapped(&call, ToolCallOptions::default()).unwrap();

    assert_eq!(core_calls.load(Ordering::SeqCst), 1);
    assert_eq!(successful_after_calls.load(Ordering::SeqCst), 1);
    // An owned value, never `core_result` itself.
    assert!(!std::ptr::eq(&returned, &core_result));
    assert_eq!(returned, core_result);
    assert!(!returned.is_error);
    let seen: Vec<(String, ExtensionHook, DiagnosticKind)> = (diagnostics.lock().unwrap().iter())
        .map(|diagnostic| {
            (
                diagnostic.extension_id.clone(),
                diagnostic.hook,
                diagnostic.kind,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "after-error".to_string(),
                ExtensionHook::AfterToolResult,
                DiagnosticKind::Error
            ),
            (
                "after-timeout".to_string(),
                ExtensionHook::AfterToolResult,
                DiagnosticKind::Timeout
            ),
        ]
    );

    returned.content[0].text = "mutated returned result".to_string();
    returned.details = Some(json!({ "source": "mutated" }));
    assert_eq!(
        text_of(&AgentMessage::ToolResult(core_result.clone())),
        "already happened"
    );
    assert_eq!(core_result.details, Some(json!({ "source": "core" })));
}

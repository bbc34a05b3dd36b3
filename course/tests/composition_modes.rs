//! Chapter 13's focused test: one runtime that commits history before a
//! prompt is done, eleven tests ported one for one from the original course.
//!
//! Steps filter them by lab: `lab13_1` (2 tests), `lab13_2` (3), `lab13_3`
//! (4), `lab13_4` (2); no filter runs all 11.
//!
//! A runtime call is accepted at once and answered through a `Pending`
//! handle (the original's promise), so the tests act while a prompt is
//! being saved without threads of their own: a session store whose append
//! waits on a channel (a gate) holds the runtime's worker where the original
//! holds a promise, and `is_finished` says whether a call has settled.
//! Nothing sleeps; a call that should settle must do so within `PATIENCE`.
//!
//! Where the original checks that the control has no `prompt`, that a
//! caller's later change to its own copy does not reach the agent, or that
//! the inner model gets its own copy of the tools, Rust already guarantees
//! it (no such method exists; the caller's values are owned or borrowed):
//! those assertions stay as comments or checks that cannot fail. A deadline
//! of 20 ms for the extension's hooks would let a busy machine turn the
//! denial into a timeout, so the hosts here wait up to ten seconds.

use std::fmt;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use course::agent_loop::{AgentRunResult, RunReason};
use course::assistant_stream::AssistantMessageEventStream;
use course::composition::{
    ContextBudget, ContextProjectionSnapshot, Pending, Prompter, RuntimeConfig, RuntimeDeps,
    RuntimeError, RuntimeMode, SharedSession, create_context_projecting_model, create_runtime,
    run_mode,
};
use course::resources::{
    BeforeToolDecision, ExtensionHost, ExtensionHostOptions, ExtensionSource, RESOURCE_SECTION,
    ResourceCatalog, discover_resources, load_extension,
};
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::session::{EntryKind, SessionEntry, SessionError, SessionStore};
use course::tool::object_schema;
use course::tool::{ObjectSchema, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, Model, Sections, StopReason,
    StreamOptions, SystemMessage, ToolCall, ToolDefinition, assistant_message,
    current_system_prompt, text, text_of, user_message,
};
use serde::Deserialize;
use serde_json::json;

/// How long a call that must settle may take.
const PATIENCE: Duration = Duration::from_secs(10);

// ---- Shared helpers --------------------------------------------------------

fn answer(value: &str) -> AssistantMessage {
    assistant_message(vec![text(value).into()], StopReason::Stop)
}

fn user(value: &str) -> AgentMessage {
    AgentMessage::User(user_message(value))
}

fn said(value: &str) -> AgentMessage {
    AgentMessage::Assistant(answer(value))
}

fn system(content: &str, sections: Option<Sections>) -> AgentMessage {
    AgentMessage::System(SystemMessage {
        content: content.to_string(),
        sections,
        timestamp: 0,
    })
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: "probe".to_string(),
        arguments: json!({}),
        raw_arguments: None,
    }
}

fn role(message: &AgentMessage) -> &'static str {
    match message {
        AgentMessage::System(_) => "system",
        AgentMessage::User(_) => "user",
        AgentMessage::Assistant(_) => "assistant",
        AgentMessage::ToolResult(_) => "toolResult",
    }
}

fn texts(messages: &[AgentMessage]) -> Vec<String> {
    messages.iter().map(text_of).collect()
}

fn message_entry(id: &str, parent_id: Option<&str>, message: AgentMessage) -> SessionEntry {
    SessionEntry {
        id: id.to_string(),
        parent_id: parent_id.map(str::to_string),
        timestamp: 1,
        kind: EntryKind::Message { message },
    }
}

fn message_of(entry: &SessionEntry) -> &AgentMessage {
    match &entry.kind {
        EntryKind::Message { message } => message,
        other => panic!("not a message entry: {other:?}"),
    }
}

fn entry_roles(entries: &[SessionEntry]) -> Vec<&'static str> {
    entries
        .iter()
        .map(|entry| role(message_of(entry)))
        .collect()
}

fn empty_resources() -> Arc<ResourceCatalog> {
    Arc::new(ResourceCatalog::default())
}

fn config(active_leaf_id: Option<&str>) -> RuntimeConfig {
    RuntimeConfig {
        active_leaf_id: active_leaf_id.map(str::to_string),
        system_prompt: Some("BASE SYSTEM".to_string()),
        max_steps: Some(8),
        context: ContextBudget {
            total: 1_000,
            reserved_output: 0,
            safety_margin: 0,
            estimate_tokens: Arc::new(|_| 1),
        },
    }
}

fn host() -> ExtensionHost {
    ExtensionHost::new(ExtensionHostOptions {
        hook_timeout: PATIENCE,
        on_diagnostic: None,
    })
}

/// Chapter 04's scripted model, shared: the runtime owns one handle, the
/// test keeps another to read the requests (the model must be `Sync` to
/// sit in an agent that other threads control).
#[derive(Clone)]
struct Scripted(Arc<Mutex<ScriptedModel>>);

impl Scripted {
    fn new(turns: Vec<ScriptedTurn>) -> Self {
        Scripted(Arc::new(Mutex::new(ScriptedModel::new(turns))))
    }

    fn answers(values: &[&str]) -> Self {
        Scripted::new(values.iter().map(|value| answer(value).into()).collect())
    }

    fn requests(&self) -> Vec<AgentContext> {
        self.0.lock().unwrap().requests()
    }
}

impl Model for Scripted {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        self.0.lock().unwrap().stream(context, options)
    }
}

type BeforeCommit = Box<dyn Fn(&SessionEntry, usize) -> Result<(), SessionError> + Send>;

/// What a recording store saw: every append called, and those committed.
#[derive(Default)]
struct Recorded {
    append_calls: Vec<SessionEntry>,
    committed: Vec<SessionEntry>,
}

/// The original's recording store: it records each append, lets the test
/// hold or fail it (`before_commit`, with the append's index), then
/// commits. It checks no tree rule.
struct RecordingSessionStore {
    log: Arc<Mutex<Recorded>>,
    before_commit: Option<BeforeCommit>,
}

impl SessionStore for RecordingSessionStore {
    fn append(&mut self, entry: &SessionEntry) -> Result<(), SessionError> {
        let index = {
            let mut log = self.log.lock().unwrap();
            log.append_calls.push(entry.clone());
            log.append_calls.len() - 1
        };
        if let Some(before_commit) = &self.before_commit {
            before_commit(entry, index)?;
        }
        self.log.lock().unwrap().committed.push(entry.clone());
        Ok(())
    }

    fn entries(&self) -> Result<Vec<SessionEntry>, SessionError> {
        Ok(self.log.lock().unwrap().committed.clone())
    }
}

/// A recording store holding `initial`, and the test's view of its log.
fn recording(
    initial: Vec<SessionEntry>,
    before_commit: Option<BeforeCommit>,
) -> (SharedSession, Arc<Mutex<Recorded>>) {
    let log = Arc::new(Mutex::new(Recorded {
        append_calls: Vec::new(),
        committed: initial,
    }));
    let store = RecordingSessionStore {
        log: Arc::clone(&log),
        before_commit,
    };
    (Arc::new(Mutex::new(store)), log)
}

/// A hook that holds append number `index`: it says so on the first
/// channel, then waits until the test sends on (or drops) the second.
fn gate_at(index: usize) -> (BeforeCommit, Receiver<()>, Sender<()>) {
    let (reached, started) = mpsc::channel();
    let (open, gate) = mpsc::channel::<()>();
    let hook: BeforeCommit = Box::new(move |_, at| {
        if at == index {
            let _ = reached.send(());
            let _ = gate.recv();
        }
        Ok(())
    });
    (hook, started, open)
}

fn runtime_deps<M>(model: M, session: SharedSession) -> RuntimeDeps<M> {
    let mut id = 0;
    let mut now = 100;
    RuntimeDeps {
        model,
        tools: ToolRegistry::new(),
        session,
        resources: empty_resources(),
        extension_host: None,
        create_id: Box::new(move || {
            id += 1;
            format!("entry-{id}")
        }),
        now: Box::new(move || {
            now += 1;
            now
        }),
    }
}

fn projection_snapshot(active_path: &[SessionEntry]) -> ContextProjectionSnapshot {
    let messages = (active_path.iter())
        .filter(|entry| matches!(entry.kind, EntryKind::Message { .. }))
        .count();
    ContextProjectionSnapshot {
        active_path: active_path.to_vec(),
        persisted_message_count: messages,
    }
}

/// `pending`'s outcome; fails the test if it does not settle in time.
fn settle<T: Clone + Send + 'static>(pending: &Pending<T>) -> Result<T, RuntimeError> {
    let (report, outcome) = mpsc::channel();
    let waiting = pending.clone();
    thread::spawn(move || report.send(waiting.wait()));
    outcome
        .recv_timeout(PATIENCE)
        .expect("the call never settled")
}

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("course-composition-{}-{name}", std::process::id()));
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

// ---- Lab 13.1 ----------------------------------------------------------------

#[test]
fn lab13_1_an_empty_session_builds_the_one_runtime_whose_control_has_no_prompt() {
    let tools = ToolRegistry::new();
    let extensions = Arc::new(host());
    let (session, _) = recording(Vec::new(), None);
    let resources = empty_resources();
    let runtime = create_runtime(
        config(None),
        RuntimeDeps {
            tools,
            resources: Arc::clone(&resources),
            extension_host: Some(Arc::clone(&extensions)),
            ..runtime_deps(Scripted::new(Vec::new()), Arc::clone(&session))
        },
    )
    .unwrap();

    assert!(Arc::ptr_eq(runtime.session(), &session));
    assert!(Arc::ptr_eq(runtime.resources(), &resources));
    assert!(Arc::ptr_eq(runtime.extensions().unwrap(), &extensions));
    assert_eq!(runtime.active_leaf_id(), None);
    // `"prompt" in runtime.control` is false: `RuntimeControl` has no
    // `prompt` method, so a call to one would not compile.
    assert!(runtime.control().state().messages.is_empty());
}

/// A store whose `entries` hands out the test's list of entries.
struct LeakyStore(Vec<SessionEntry>);

impl SessionStore for LeakyStore {
    fn append(&mut self, _entry: &SessionEntry) -> Result<(), SessionError> {
        Ok(())
    }

    fn entries(&self) -> Result<Vec<SessionEntry>, SessionError> {
        Ok(self.0.clone())
    }
}

#[test]
fn lab13_1_a_non_empty_session_needs_an_explicit_leaf_and_the_agent_gets_a_copy_of_that_path() {
    let transcript_base = system("TRANSCRIPT BASE", None);
    let mut leaky_entries = vec![
        message_entry("sys", None, transcript_base),
        message_entry("root", Some("sys"), user("root question")),
        message_entry("left", Some("root"), said("left answer")),
        message_entry("right", Some("root"), said("right answer")),
    ];
    let leaky = |entries: &[SessionEntry]| -> SharedSession {
        Arc::new(Mutex::new(LeakyStore(entries.to_vec())))
    };

    let selected = create_runtime(
        config(Some("right")),
        runtime_deps(Scripted::new(Vec::new()), leaky(&leaky_entries)),
    )
    .unwrap();
    assert_eq!(
        texts(&selected.control().state().messages),
        ["TRANSCRIPT BASE", "root question", "right answer"],
        "恢复时不追加任何 system message；配置的 BASE SYSTEM 让位于 transcript"
    );
    // `"prompt" in selected.control` is false here too (no such method).
    if let EntryKind::Message {
        message: AgentMessage::Assistant(right),
    } = &mut leaky_entries[3].kind
    {
        right.content[0] = AssistantContent::Text(text("mutated source"));
    }
    assert_eq!(
        texts(&selected.control().state().messages),
        ["TRANSCRIPT BASE", "root question", "right answer"]
    );
    let refused = create_runtime(
        config(None),
        runtime_deps(Scripted::new(Vec::new()), leaky(&leaky_entries)),
    );
    let error = refused.err().expect("a non-empty session without a leaf");
    assert!(
        error
            .to_string()
            .contains("非空 session 必须显式提供 activeLeafId")
    );
    let (empty, _) = recording(Vec::new(), None);
    let refused = create_runtime(
        config(Some("missing")),
        runtime_deps(Scripted::new(Vec::new()), empty),
    );
    let error = refused.err().expect("an empty session with a leaf");
    assert!(
        error
            .to_string()
            .contains("空 session 的 activeLeafId 必须是 null")
    );
}

// ---- Lab 13.2 ----------------------------------------------------------------

#[test]
fn lab13_2_the_adapter_attaches_the_unsaved_suffix_to_the_active_path() {
    let system_message = system("SYSTEM", None);
    let old_user = user("old question");
    let old_assistant = said("old answer");
    let active_path = vec![
        message_entry("sys", None, system_message.clone()),
        message_entry("old-user", Some("sys"), old_user.clone()),
        message_entry("old-assistant", Some("old-user"), old_assistant.clone()),
    ];
    let inner = Scripted::answers(&["projected"]);
    let projected =
        create_context_projecting_model(inner.clone(), config(None).context, move || {
            projection_snapshot(&active_path)
        });
    let mut incoming = AgentContext {
        messages: vec![
            system_message,
            old_user,
            old_assistant,
            user("temporary user"),
        ],
        tools: Some(Vec::new()),
    };

    let stream = projected.stream(&incoming, StreamOptions::default());
    if let AgentMessage::User(temporary) = &mut incoming.messages[3] {
        temporary.content[0].text = "mutated later".to_string();
    }
    stream.blocking_result().unwrap();

    let requests = inner.requests();
    assert_eq!(
        current_system_prompt(&requests[0].messages).as_deref(),
        Some("SYSTEM")
    );
    assert_eq!(
        texts(&requests[0].messages),
        ["SYSTEM", "old question", "old answer", "temporary user"]
    );
    assert_eq!(text_of(&incoming.messages[3]), "mutated later");
}

#[test]
fn lab13_2_the_adapter_subtracts_fixed_costs_first_then_keeps_only_whole_recent_interactions() {
    let messages = vec![
        system("SYSTEM", None),
        user("question one"),
        said("answer one"),
        user("question two"),
        said("answer two"),
    ];
    let active_path = vec![
        message_entry("sys", None, messages[0].clone()),
        message_entry("u1", Some("sys"), messages[1].clone()),
        message_entry("a1", Some("u1"), messages[2].clone()),
        message_entry("u2", Some("a1"), messages[3].clone()),
        message_entry("a2", Some("u2"), messages[4].clone()),
    ];
    let inner = Scripted::answers(&["trimmed"]);
    let budget = ContextBudget {
        total: 4,
        reserved_output: 1,
        safety_margin: 1,
        estimate_tokens: Arc::new(|_| 1),
    };
    let projected = create_context_projecting_model(inner.clone(), budget, move || {
        projection_snapshot(&active_path)
    });

    let mut latest = messages;
    latest.push(user("latest question"));
    let request = AgentContext {
        messages: latest,
        tools: None,
    };
    (projected.stream(&request, StreamOptions::default()))
        .blocking_result()
        .unwrap();
    let requests = inner.requests();
    assert_eq!(
        texts(&requests[0].messages),
        ["SYSTEM", "latest question"],
        "system 是固定成本，先于 interaction 预算扣除"
    );
    assert_eq!(
        current_system_prompt(&requests[0].messages).as_deref(),
        Some("SYSTEM")
    );
}

/// Records each request and the signal it came with.
#[derive(Clone, Default)]
struct SignalModel {
    requests: Arc<Mutex<Vec<AgentContext>>>,
    signals: Arc<Mutex<Vec<Option<Arc<AtomicBool>>>>>,
    scripted: Option<Scripted>,
}

impl Model for SignalModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        self.requests.lock().unwrap().push(context.clone());
        self.signals.lock().unwrap().push(options.signal.clone());
        self.scripted.as_ref().unwrap().stream(context, options)
    }
}

#[test]
fn lab13_2_the_adapter_keeps_tools_and_signal_and_isolates_the_inner_models_input() {
    let inner = SignalModel {
        scripted: Some(Scripted::answers(&["done"])),
        ..SignalModel::default()
    };
    let projected = create_context_projecting_model(inner.clone(), config(None).context, || {
        ContextProjectionSnapshot {
            active_path: Vec::new(),
            persisted_message_count: 0,
        }
    });
    let controller = Arc::new(AtomicBool::new(false));
    let mut incoming = AgentContext {
        messages: vec![user("temporary")],
        tools: Some(vec![ToolDefinition {
            name: "probe".to_string(),
            description: "probe".to_string(),
            parameters: json!({ "type": "object" }),
        }]),
    };

    let options = StreamOptions {
        signal: Some(Arc::clone(&controller)),
    };
    (projected.stream(&incoming, options))
        .blocking_result()
        .unwrap();
    let signals = inner.signals.lock().unwrap().clone();
    assert!(Arc::ptr_eq(signals[0].as_ref().unwrap(), &controller));
    let requests = inner.requests.lock().unwrap().clone();
    assert_eq!(requests[0].tools, incoming.tools);
    // `notEqual` by reference: the inner model got a `&AgentContext` the
    // adapter built, never the caller's.
    if let Some(tools) = &mut incoming.tools {
        tools[0].parameters["type"] = json!("mutated");
    }
    assert_eq!(
        requests[0].tools.as_ref().unwrap()[0].parameters,
        json!({ "type": "object" })
    );
}

// ---- Lab 13.3 ----------------------------------------------------------------

#[derive(Deserialize)]
struct NoInput {}

/// Counts how often the core executor really ran it.
struct Probe(Arc<AtomicUsize>);

impl Tool for Probe {
    type Input = NoInput;

    fn name(&self) -> &str {
        "probe"
    }

    fn description(&self) -> &str {
        "probe core execution"
    }

    fn schema(&self) -> ObjectSchema<NoInput> {
        object_schema(vec![])
    }

    fn execute(&self, _input: NoInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput {
            content: vec![text("core ran")],
            ..ToolOutput::default()
        })
    }
}

#[test]
fn lab13_3_the_runtime_wires_resources_and_extensions_and_resolves_in_order_after_saving() {
    let root = TempDir::new("resources");
    fs::write(root.0.join("AGENTS.md"), "PROJECT RULE").unwrap();
    let skill_root = root.0.join("skills").join("review");
    fs::create_dir_all(&skill_root).unwrap();
    let skill = [
        "---",
        "name: review",
        "description: Review code carefully",
        "---",
        "INACTIVE SKILL SECRET",
    ];
    fs::write(skill_root.join("SKILL.md"), skill.join("\n")).unwrap();
    let resources = Arc::new(discover_resources(&[&root.0]).unwrap());

    let core_executions = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    tools
        .register(Box::new(Probe(Arc::clone(&core_executions))))
        .unwrap();
    let mut extensions = host();
    let source = ExtensionSource {
        id: "deny-probe".to_string(),
        path: "/virtual/deny-probe.js".to_string(),
    };
    let deny = |context: &mut course::resources::ExtensionContext| {
        context.on_before_tool_call(|_| {
            Ok(BeforeToolDecision::Deny {
                reason: "course policy".to_string(),
            })
        });
        Ok(())
    };
    load_extension(&source, |_| true, deny, &mut extensions, &mut tools).unwrap();

    let (hold_first, first_append, release) = gate_at(0);
    let (store, log) = recording(Vec::new(), Some(hold_first));
    let model = Scripted::new(vec![
        assistant_message(vec![call("call-1").into()], StopReason::ToolUse).into(),
        answer("first answer").into(),
        answer("second answer").into(),
    ]);
    let runtime = create_runtime(
        config(None),
        RuntimeDeps {
            tools,
            resources,
            extension_host: Some(Arc::new(extensions)),
            ..runtime_deps(model.clone(), store)
        },
    )
    .unwrap();

    let first = runtime.prompt("run probe");
    first_append.recv_timeout(PATIENCE).unwrap();
    assert_eq!(log.lock().unwrap().append_calls.len(), 1);
    let second = runtime.prompt("second");
    assert!(!first.is_finished());
    assert_eq!(model.requests().len(), 2);

    release.send(()).unwrap();
    let first_result = settle(&first).unwrap();
    settle(&second).unwrap();
    assert_eq!(core_executions.load(Ordering::SeqCst), 0);
    let denied = (first_result.messages.iter())
        .find_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .expect("the denied call's result");
    assert!(denied.is_error);
    assert!(text_of(&AgentMessage::ToolResult(denied.clone())).contains("course policy"));

    let requests = model.requests();
    let AgentMessage::System(leading) = &requests[0].messages[0] else {
        panic!("the first request starts with a system message");
    };
    assert_eq!(leading.content, "BASE SYSTEM");
    let resource_text = (leading.sections.as_ref())
        .and_then(|sections| sections.iter().find(|(name, _)| *name == RESOURCE_SECTION))
        .and_then(|(_, value)| value)
        .unwrap_or_default();
    assert!(resource_text.contains("# Pi resources"));
    let system_prompt = current_system_prompt(&requests[0].messages).unwrap_or_default();
    assert!(system_prompt.contains("BASE SYSTEM"));
    let configured_index = system_prompt.find("BASE SYSTEM").unwrap();
    let resources_index = system_prompt.find("# Pi resources").unwrap();
    assert!(resources_index > configured_index);
    assert!(system_prompt.contains("PROJECT RULE"));
    assert!(system_prompt.contains("review: Review code carefully"));
    assert!(!system_prompt.contains("INACTIVE SKILL SECRET"));
    assert_eq!(
        role(&requests[2].messages[0]),
        "system",
        "投影后的请求只带一条重放出的开头 system message"
    );

    let log = log.lock().unwrap();
    assert_eq!(
        entry_roles(&log.append_calls),
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ],
        "开头 system message 与本轮 suffix 一起持久化"
    );
    let links: Vec<(&str, Option<&str>)> = (log.append_calls.iter())
        .map(|entry| (entry.id.as_str(), entry.parent_id.as_deref()))
        .collect();
    assert_eq!(
        links,
        [
            ("entry-1", None),
            ("entry-2", Some("entry-1")),
            ("entry-3", Some("entry-2")),
            ("entry-4", Some("entry-3")),
            ("entry-5", Some("entry-4")),
            ("entry-6", Some("entry-5")),
            ("entry-7", Some("entry-6")),
        ]
    );
    assert_eq!(runtime.active_leaf_id().as_deref(), Some("entry-7"));

    let empty_model = Scripted::answers(&["no system prompt"]);
    let (empty_store, empty_log) = recording(Vec::new(), None);
    let empty_runtime = create_runtime(
        RuntimeConfig {
            system_prompt: None,
            ..config(None)
        },
        runtime_deps(empty_model.clone(), empty_store),
    )
    .unwrap();
    settle(&empty_runtime.prompt("empty resources")).unwrap();
    assert_eq!(
        current_system_prompt(&empty_model.requests()[0].messages),
        None
    );
    assert_eq!(
        entry_roles(&empty_log.lock().unwrap().append_calls),
        ["user", "assistant"],
        "期望状态为空时不写入 system message"
    );
}

#[test]
fn lab13_3_the_system_is_patched_only_on_change_the_transcripts_base_prompt_stands_and_saved_entries_stay()
 {
    let root = TempDir::new("system");
    fs::write(root.0.join("AGENTS.md"), "NEW RULE").unwrap();
    let resources = Arc::new(discover_resources(&[&root.0]).unwrap());
    let old_sections = Sections::from([
        (RESOURCE_SECTION, Some("OLD RESOURCES")),
        ("stale", Some("STALE")),
    ]);
    let initial = vec![
        message_entry("sys", None, system("OLD BASE", Some(old_sections))),
        message_entry("old-user", Some("sys"), user("old question")),
        message_entry("old-assistant", Some("old-user"), said("old answer")),
    ];
    let (store, log) = recording(initial.clone(), None);
    let model = Scripted::answers(&["first answer", "second answer"]);
    let runtime = create_runtime(
        RuntimeConfig {
            system_prompt: Some("NEW BASE".to_string()),
            ..config(Some("old-assistant"))
        },
        RuntimeDeps {
            resources,
            ..runtime_deps(model.clone(), store)
        },
    )
    .unwrap();

    settle(&runtime.prompt("first")).unwrap();
    {
        let log = log.lock().unwrap();
        assert_eq!(
            log.committed[..initial.len()],
            initial[..],
            "已持久化前缀永不改写"
        );
        assert_eq!(
            entry_roles(&log.append_calls),
            ["system", "user", "assistant"]
        );
        let AgentMessage::System(patch) = message_of(&log.append_calls[0]) else {
            panic!("the first append is the system patch");
        };
        assert_eq!(patch.content, "", "基础 prompt 只在第一次写入");
        let sections = patch.sections.clone().unwrap_or_default();
        let mut names: Vec<&str> = sections.iter().map(|(name, _)| name).collect();
        names.sort();
        assert_eq!(names, [RESOURCE_SECTION, "stale"]);
        let value = |wanted: &str| {
            let found = sections.iter().find(|(name, _)| *name == wanted);
            found.and_then(|(_, value)| value).map(str::to_string)
        };
        assert!(value(RESOURCE_SECTION).unwrap().contains("NEW RULE"));
        assert_eq!(value("stale"), None, "多余段落用 null 删除");
    }
    let prompt = current_system_prompt(&model.requests()[0].messages).unwrap_or_default();
    assert!(prompt.starts_with("OLD BASE"));
    for gone in ["NEW BASE", "OLD RESOURCES", "STALE"] {
        assert!(!prompt.contains(gone), "{gone} in {prompt:?}");
    }
    assert!(prompt.contains("NEW RULE"));
    assert_eq!(runtime.control().state().messages.len(), 6);

    settle(&runtime.prompt("second")).unwrap();
    assert_eq!(
        entry_roles(&log.lock().unwrap().append_calls[3..]),
        ["user", "assistant"],
        "无变化则不追加"
    );
    assert_eq!(
        current_system_prompt(&model.requests()[1].messages),
        Some(prompt),
        "第二次请求重放出同样的 system prompt"
    );

    let committed = log.lock().unwrap().committed.clone();
    let (resumed_store, resumed_log) = recording(committed, None);
    let resumed_model = Scripted::answers(&["third answer"]);
    let mut resumed_id = 0;
    let resumed = create_runtime(
        RuntimeConfig {
            system_prompt: Some("NEW BASE".to_string()),
            ..config(runtime.active_leaf_id().as_deref())
        },
        RuntimeDeps {
            create_id: Box::new(move || {
                resumed_id += 1;
                format!("resumed-{resumed_id}")
            }),
            ..runtime_deps(resumed_model.clone(), resumed_store)
        },
    )
    .unwrap();
    settle(&resumed.prompt("third")).unwrap();
    let removal = resumed_log.lock().unwrap().append_calls[0].clone();
    let AgentMessage::System(removal) = message_of(&removal) else {
        panic!("the first append is the system patch");
    };
    assert_eq!(
        removal.sections,
        Some(Sections::from([(RESOURCE_SECTION, None)]))
    );
    assert_eq!(
        current_system_prompt(&resumed_model.requests()[0].messages).as_deref(),
        Some("OLD BASE"),
        "资源消失后只删除段落，基础 prompt 仍以 transcript 为准"
    );
}

/// The cause a failed append is returned as, each time.
fn is_cause(error: &RuntimeError, cause: &Arc<io::Error>) -> bool {
    matches!(error, RuntimeError::Session(SessionError::Io(io)) if Arc::ptr_eq(io, cause))
}

#[test]
fn lab13_3_only_the_suffix_after_the_resumed_history_is_appended_and_a_failed_append_poisons() {
    let initial = vec![
        message_entry("old-user", None, user("old question")),
        message_entry("old-assistant", Some("old-user"), said("old answer")),
    ];
    let disk_error = Arc::new(io::Error::other("disk append failed"));
    let cause = Arc::clone(&disk_error);
    let fail_second: BeforeCommit = Box::new(move |_, index| match index {
        1 => Err(SessionError::Io(Arc::clone(&cause))),
        _ => Ok(()),
    });
    let (store, log) = recording(initial, Some(fail_second));
    let model = Scripted::answers(&["new answer", "must not run"]);
    let runtime = create_runtime(
        config(Some("old-assistant")),
        runtime_deps(model.clone(), store),
    )
    .unwrap();

    let failed = settle(&runtime.prompt("new question")).unwrap_err();
    assert!(is_cause(&failed, &disk_error), "{failed}");
    {
        let log = log.lock().unwrap();
        let appended: Vec<String> = (log.append_calls.iter())
            .map(|entry| text_of(message_of(entry)))
            .collect();
        assert_eq!(
            appended,
            ["BASE SYSTEM", "new question"],
            "system 补丁先于用户消息追加；用户消息写入失败后不再写 assistant"
        );
        assert_eq!(log.committed.len(), 3);
    }
    assert_eq!(runtime.active_leaf_id().as_deref(), Some("entry-1"));
    let again = settle(&runtime.prompt("again")).unwrap_err();
    assert!(is_cause(&again, &disk_error), "{again}");
    let flushed = settle(&runtime.flush()).unwrap_err();
    assert!(is_cause(&flushed, &disk_error), "{flushed}");
    assert_eq!(model.requests().len(), 1);
    assert_eq!(log.lock().unwrap().append_calls.len(), 2);
}

#[test]
fn lab13_3_flush_waits_for_the_queue_and_dispose_waits_for_saving_and_closes_prompt_for_good() {
    let (hold_first, first_append, release) = gate_at(0);
    let (store, log) = recording(Vec::new(), Some(hold_first));
    let runtime = create_runtime(
        config(None),
        runtime_deps(
            Scripted::answers(&["persist me", "persist queued prompt"]),
            store,
        ),
    )
    .unwrap();

    let prompting = runtime.prompt("save");
    first_append.recv_timeout(PATIENCE).unwrap();
    let accepted_before_dispose = runtime.prompt("already accepted");
    let flushing = runtime.flush();
    let disposing = runtime.dispose();
    assert!(runtime.dispose() == disposing);
    let too_late = settle(&runtime.prompt("too late")).unwrap_err();
    assert!(too_late.to_string().contains("已 dispose"), "{too_late}");
    assert!(!flushing.is_finished());

    release.send(()).unwrap();
    settle(&prompting).unwrap();
    settle(&accepted_before_dispose).unwrap();
    settle(&flushing).unwrap();
    settle(&disposing).unwrap();
    settle(&runtime.flush()).unwrap();
    assert!(flushing.is_finished());
    assert_eq!(log.lock().unwrap().committed.len(), 5);
    assert_eq!(runtime.active_leaf_id().as_deref(), Some("entry-5"));
}

// ---- Lab 13.4 ----------------------------------------------------------------

/// A runtime that answers every prompt with `result` and records the prompts.
struct ModeRuntime {
    result: AgentRunResult,
    prompts: Mutex<Vec<String>>,
}

impl ModeRuntime {
    fn new(result: AgentRunResult) -> Self {
        ModeRuntime {
            result,
            prompts: Mutex::new(Vec::new()),
        }
    }

    fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }
}

impl Prompter for ModeRuntime {
    fn prompt(&self, text: &str) -> Pending<AgentRunResult> {
        self.prompts.lock().unwrap().push(text.to_string());
        Pending::ready(Ok(self.result.clone()))
    }
}

fn final_message(value: &str, stop_reason: StopReason) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        timestamp: 2,
        ..assistant_message(vec![text(value).into()], stop_reason)
    })
}

#[test]
fn lab13_4_interactive_and_print_prompt_once_each_and_write_the_final_text() {
    let result = AgentRunResult {
        reason: RunReason::Stop,
        steps: 1,
        messages: vec![
            user("question"),
            final_message("final text", StopReason::Stop),
        ],
    };
    let runtime = ModeRuntime::new(result);
    let mut output = Vec::new();
    let mut write = |value: &str| {
        output.push(value.to_string());
        Ok(())
    };

    run_mode(
        &runtime,
        RuntimeMode::Interactive,
        "same prompt",
        &mut write,
    )
    .unwrap();
    run_mode(&runtime, RuntimeMode::Print, "same prompt", &mut write).unwrap();
    assert_eq!(runtime.prompts(), ["same prompt", "same prompt"]);
    assert_eq!(output, ["final text", "final text"]);
}

/// The output sink's own error, to find it again inside what comes back.
#[derive(Debug)]
struct SinkFailed;

impl fmt::Display for SinkFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("output sink failed")
    }
}

impl std::error::Error for SinkFailed {}

#[test]
fn lab13_4_json_changes_only_the_output_an_unknown_mode_fails_first_and_output_errors_pass_through()
{
    let result = AgentRunResult {
        reason: RunReason::Length,
        steps: 2,
        messages: vec![
            user("question"),
            final_message("partial", StopReason::Length),
        ],
    };
    let runtime = ModeRuntime::new(result.clone());
    let mut output = Vec::new();
    run_mode(&runtime, RuntimeMode::Json, "json prompt", |value| {
        output.push(value.to_string());
        Ok(())
    })
    .unwrap();
    let messages = serde_json::to_string(&result.messages).unwrap();
    assert_eq!(
        output[0],
        format!("{{\"reason\":\"length\",\"steps\":2,\"messages\":{messages}}}\n")
    );
    assert_eq!(runtime.prompts(), ["json prompt"]);

    // A mode is parsed before any runtime is called: "rpc" never reaches one.
    let refused = "rpc".parse::<RuntimeMode>().unwrap_err();
    assert!(
        refused.to_string().contains("未知 runtime mode"),
        "{refused}"
    );
    assert_eq!(runtime.prompts(), ["json prompt"]);

    let failed = run_mode(&runtime, RuntimeMode::Print, "written fact", |_| {
        Err(io::Error::other(SinkFailed))
    })
    .unwrap_err();
    let RuntimeError::Output(error) = &failed else {
        panic!("the sink's error, not {failed}");
    };
    assert!(
        error
            .get_ref()
            .is_some_and(|inner| inner.is::<SinkFailed>())
    );
    assert_eq!(failed.to_string(), "output sink failed");
    assert_eq!(runtime.prompts(), ["json prompt", "written fact"]);
}

//! Chapter 13's contract, beyond the focused test (a repository test, not
//! handed to the learner). Every runtime here saves to a real JSONL file on
//! disk (chapter 10's `JsonlSessionStore`), through the real file system:
//!
//! * a prompt is answered only once its lines are in the file;
//! * a failed write poisons: the prompt that hit it, a prompt accepted
//!   before it, and every later call fail with that same error, no model
//!   runs and no byte is written any more;
//! * a second runtime resumes from the file where the first stopped, and
//!   appends only its own lines;
//! * every request fits the budget, fixed costs included, except a newest
//!   interaction that alone does not fit, which `build_context` reports;
//!   the latest compaction on a resumed path counts;
//! * the extensions' hooks wrap the executor the agent runs tools with;
//! * the control works from the test's thread while a run waits in a tool
//!   (abort, steer), and what the run did is saved.
//!
//! Waiting is gated with channels; every wait has a deadline.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use course::agent_loop::{AgentRunResult, RunReason};
use course::assistant_stream::AssistantMessageEventStream;
use course::composition::{
    ContextBudget, Pending, Runtime, RuntimeConfig, RuntimeDeps, RuntimeError, SharedSession,
    create_runtime,
};
use course::context::{BuildContextOptions, CompactionSummary, ContextBuildReason, build_context};
use course::resources::{
    BeforeToolDecision, ExtensionHost, ExtensionHostOptions, ExtensionSource, ResourceCatalog,
    load_extension,
};
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::session::{
    EntryKind, FileSystem, JsonlSessionStore, SessionEntry, SessionError, SessionFileIo, path_to,
    recover_jsonl,
};
use course::tool::object_schema;
use course::tool::{ObjectSchema, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use course::types::{
    AgentContext, AgentMessage, AssistantMessage, Model, StopReason, StreamOptions, ToolCall,
    assistant_message, text, text_of, user_message,
};
use serde::Deserialize;
use serde_json::json;

const PATIENCE: Duration = Duration::from_secs(10);

// ---- Helpers -------------------------------------------------------------------

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "course-composition-contract-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn file(&self) -> PathBuf {
        self.0.join("session.jsonl")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn answer(value: &str) -> AssistantMessage {
    assistant_message(vec![text(value).into()], StopReason::Stop)
}

fn calls(names: &[(&str, &str)]) -> ScriptedTurn {
    let content = (names.iter())
        .map(|(id, name)| {
            let call = ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: json!({}),
                raw_arguments: None,
            };
            call.into()
        })
        .collect();
    assistant_message(content, StopReason::ToolUse).into()
}

fn role(message: &AgentMessage) -> &'static str {
    match message {
        AgentMessage::System(_) => "system",
        AgentMessage::User(_) => "user",
        AgentMessage::Assistant(_) => "assistant",
        AgentMessage::ToolResult(_) => "toolResult",
    }
}

fn roles(messages: &[AgentMessage]) -> Vec<&'static str> {
    messages.iter().map(role).collect()
}

fn message_of(entry: &SessionEntry) -> &AgentMessage {
    match &entry.kind {
        EntryKind::Message { message } => message,
        other => panic!("not a message entry: {other:?}"),
    }
}

/// The committed entries of the file, read from disk now.
fn on_disk(file: &Path) -> Vec<SessionEntry> {
    let read = recover_jsonl(&fs::read_to_string(file).unwrap()).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    read.entries
}

fn budget(total: u64) -> ContextBudget {
    ContextBudget {
        total,
        reserved_output: 0,
        safety_margin: 0,
        estimate_tokens: Arc::new(|_| 1),
    }
}

fn config(active_leaf_id: Option<String>) -> RuntimeConfig {
    RuntimeConfig {
        active_leaf_id,
        system_prompt: Some("BASE".to_string()),
        max_steps: Some(8),
        context: budget(1_000),
    }
}

fn open(file: &Path, io: impl SessionFileIo + 'static) -> SharedSession {
    Arc::new(Mutex::new(
        JsonlSessionStore::open_with(file, Box::new(io)).unwrap(),
    ))
}

fn deps<M>(model: M, session: SharedSession, prefix: &str) -> RuntimeDeps<M> {
    let (prefix, mut id) = (prefix.to_string(), 0);
    RuntimeDeps {
        model,
        tools: ToolRegistry::new(),
        session,
        resources: Arc::new(ResourceCatalog::default()),
        extension_host: None,
        create_id: Box::new(move || {
            id += 1;
            format!("{prefix}-{id}")
        }),
        now: Box::new(|| 1_000),
    }
}

fn settle<T: Clone + Send + 'static>(pending: &Pending<T>) -> Result<T, RuntimeError> {
    let (report, outcome) = mpsc::channel();
    let waiting = pending.clone();
    thread::spawn(move || report.send(waiting.wait()));
    outcome
        .recv_timeout(PATIENCE)
        .expect("the call never settled")
}

/// Chapter 04's scripted model, shared between the runtime and the test.
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

/// The real file system; the append numbered `hold` (0-based, counted
/// by this io) says so and waits for the test, and the one numbered `fail`
/// writes half its line, then fails with `error`.
struct Disk {
    appends: AtomicUsize,
    hold: Option<(usize, Sender<()>, Receiver<()>)>,
    fail: Option<(usize, Arc<io::Error>)>,
}

impl Disk {
    fn plain() -> Self {
        Disk {
            appends: AtomicUsize::new(0),
            hold: None,
            fail: None,
        }
    }
}

impl SessionFileIo for Disk {
    fn ensure_file(&self, file: &Path) -> io::Result<()> {
        FileSystem.ensure_file(file)
    }

    fn read_file(&self, file: &Path) -> io::Result<String> {
        FileSystem.read_file(file)
    }

    fn append_file(&self, file: &Path, value: &str) -> io::Result<()> {
        let index = self.appends.fetch_add(1, Ordering::SeqCst);
        if let Some((_, reached, gate)) = self.hold.as_ref().filter(|(at, ..)| *at == index) {
            let _ = reached.send(());
            let _ = gate.recv();
        }
        if let Some((_, error)) = self.fail.as_ref().filter(|(at, _)| *at == index) {
            FileSystem.append_file(file, &value[..value.len() / 2])?;
            return Err(io::Error::new(error.kind(), error.to_string()));
        }
        FileSystem.append_file(file, value)
    }
}

// ---- A prompt is answered once its lines are on disk -------------------------

#[test]
fn a_prompt_is_answered_only_after_its_lines_are_in_the_file() {
    let dir = TempDir::new("on-disk");
    let (reached, held) = mpsc::channel();
    let (open_gate, gate) = mpsc::channel();
    let disk = Disk {
        hold: Some((2, reached, gate)),
        ..Disk::plain()
    };
    let model = Scripted::answers(&["saved answer"]);
    let runtime = create_runtime(config(None), deps(model, open(&dir.file(), disk), "a")).unwrap();

    let prompting = runtime.prompt("save me");
    held.recv_timeout(PATIENCE).unwrap();
    // system and user are in the file; the answer's line waits.
    assert_eq!(on_disk(&dir.file()).len(), 2);
    assert!(!prompting.is_finished());
    assert_eq!(runtime.active_leaf_id().as_deref(), Some("a-2"));
    // Dispose waits for what was accepted before it.
    let disposing = runtime.dispose();
    assert!(!disposing.is_finished());

    open_gate.send(()).unwrap();
    let result = settle(&prompting).unwrap();
    let saved = on_disk(&dir.file());
    let saved_messages: Vec<AgentMessage> = saved.iter().map(|e| message_of(e).clone()).collect();
    assert_eq!(saved_messages, result.messages);
    assert_eq!(roles(&saved_messages), ["system", "user", "assistant"]);
    assert_eq!(runtime.active_leaf_id().as_deref(), Some("a-3"));
    let links: Vec<Option<&str>> = saved.iter().map(|e| e.parent_id.as_deref()).collect();
    assert_eq!(links, [None, Some("a-1"), Some("a-2")]);
    settle(&disposing).unwrap();
}

/// The real file system, except that appending panics.
struct PanickingDisk;

impl SessionFileIo for PanickingDisk {
    fn ensure_file(&self, file: &Path) -> io::Result<()> {
        FileSystem.ensure_file(file)
    }

    fn read_file(&self, file: &Path) -> io::Result<String> {
        FileSystem.read_file(file)
    }

    fn append_file(&self, _file: &Path, _value: &str) -> io::Result<()> {
        panic!("the store broke")
    }
}

#[test]
fn a_store_that_panics_stops_the_worker_and_no_call_waits_forever() {
    let dir = TempDir::new("panic");
    let model = Scripted::answers(&["lost"]);
    let runtime = create_runtime(
        config(None),
        deps(model, open(&dir.file(), PanickingDisk), "s"),
    )
    .unwrap();
    let stopped = settle(&runtime.prompt("one")).unwrap_err();
    assert!(matches!(stopped, RuntimeError::Stopped), "{stopped}");
    let later = settle(&runtime.prompt("two")).unwrap_err();
    assert!(matches!(later, RuntimeError::Stopped), "{later}");
    assert!(matches!(
        settle(&runtime.dispose()),
        Err(RuntimeError::Stopped)
    ));
    assert_eq!(fs::read(dir.file()).unwrap(), b"");
}

// ---- A failed write poisons ----------------------------------------------------

/// A model whose first call waits until the test lets it go.
#[derive(Clone)]
struct HeldModel {
    scripted: Scripted,
    calls: Arc<AtomicUsize>,
    called: Arc<Mutex<Sender<()>>>,
    release: Arc<Mutex<Receiver<()>>>,
}

impl Model for HeldModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            let _ = self.called.lock().unwrap().send(());
            let _ = self.release.lock().unwrap().recv();
        }
        self.scripted.stream(context, options)
    }
}

fn is_cause(error: &RuntimeError, cause: &str) -> bool {
    matches!(error, RuntimeError::Session(SessionError::Io(io)) if io.to_string() == cause)
}

#[test]
fn a_failed_write_poisons_the_prompt_the_queue_and_every_later_call_and_writes_nothing_more() {
    let dir = TempDir::new("poison");
    let disk = Disk {
        fail: Some((1, Arc::new(io::Error::other("disk full")))),
        ..Disk::plain()
    };
    let (called, first_call) = mpsc::channel();
    let (release, released) = mpsc::channel();
    let model = HeldModel {
        scripted: Scripted::answers(&["first", "second", "third"]),
        calls: Arc::new(AtomicUsize::new(0)),
        called: Arc::new(Mutex::new(called)),
        release: Arc::new(Mutex::new(released)),
    };
    let runtime = create_runtime(
        config(None),
        deps(model.clone(), open(&dir.file(), disk), "p"),
    )
    .unwrap();

    let first = runtime.prompt("one");
    first_call.recv_timeout(PATIENCE).unwrap();
    let queued = runtime.prompt("two"); // accepted while the first still runs
    release.send(()).unwrap();

    let failed = settle(&first).unwrap_err();
    assert!(is_cause(&failed, "disk full"), "{failed}");
    let after_failure = fs::read(dir.file()).unwrap();
    // The system line, then half of the user's line: a torn tail.
    let read = recover_jsonl(&String::from_utf8_lossy(&after_failure)).unwrap();
    assert_eq!(read.entries.len(), 1);
    assert_eq!(read.warnings.len(), 1);
    assert_eq!(runtime.active_leaf_id().as_deref(), Some("p-1"));

    let queued = settle(&queued).unwrap_err();
    assert!(is_cause(&queued, "disk full"), "{queued}");
    let later = settle(&runtime.prompt("three")).unwrap_err();
    assert!(is_cause(&later, "disk full"), "{later}");
    assert!(is_cause(
        &settle(&runtime.flush()).unwrap_err(),
        "disk full"
    ));
    assert!(is_cause(
        &settle(&runtime.dispose()).unwrap_err(),
        "disk full"
    ));
    assert_eq!(model.calls.load(Ordering::SeqCst), 1, "no model call after");
    assert_eq!(
        fs::read(dir.file()).unwrap(),
        after_failure,
        "no byte after"
    );
}

// ---- Resume from the file in a second runtime ----------------------------------

#[derive(Deserialize)]
struct NoInput {}

/// A tool that says its name, and counts its runs.
struct Named(&'static str, Arc<AtomicUsize>);

impl Tool for Named {
    type Input = NoInput;

    fn name(&self) -> &str {
        self.0
    }

    fn description(&self) -> &str {
        "says its name"
    }

    fn schema(&self) -> ObjectSchema<NoInput> {
        object_schema(vec![])
    }

    fn execute(&self, _input: NoInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput {
            content: vec![text(format!("{} ran", self.0))],
            ..ToolOutput::default()
        })
    }
}

fn registry(names: &[&'static str]) -> (ToolRegistry, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    for name in names {
        tools
            .register(Box::new(Named(name, Arc::clone(&runs))))
            .unwrap();
    }
    (tools, runs)
}

#[test]
fn a_second_runtime_resumes_from_the_file_and_appends_only_its_own_lines() {
    let dir = TempDir::new("resume");
    let first_model = Scripted::new(vec![
        calls(&[("c1", "note")]),
        answer("noted").into(),
        answer("second answer").into(),
    ]);
    let (tools, runs) = registry(&["note"]);
    let first = create_runtime(
        config(None),
        RuntimeDeps {
            tools,
            ..deps(first_model.clone(), open(&dir.file(), Disk::plain()), "one")
        },
    )
    .unwrap();
    settle(&first.prompt("take a note")).unwrap();
    // The second request of the run already holds the unsaved call and result.
    let requests = first_model.requests();
    assert_eq!(
        roles(&requests[1].messages),
        ["system", "user", "assistant", "toolResult"]
    );
    settle(&first.prompt("and then?")).unwrap();
    settle(&first.dispose()).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let leaf = first.active_leaf_id();
    let transcript = first.control().state().messages;
    let before = fs::read(dir.file()).unwrap();
    drop(first);

    // A new process would do this: open the file, pick the leaf, go on.
    let second_model = Scripted::answers(&["third answer"]);
    let second = create_runtime(
        RuntimeConfig {
            system_prompt: Some("ANOTHER BASE".to_string()),
            ..config(leaf.clone())
        },
        deps(
            second_model.clone(),
            open(&dir.file(), Disk::plain()),
            "two",
        ),
    )
    .unwrap();
    assert_eq!(second.control().state().messages, transcript);
    settle(&second.prompt("third")).unwrap();
    let request = &second_model.requests()[0].messages;
    assert_eq!(request[..transcript.len()], transcript[..]);
    assert_eq!(text_of(&request[transcript.len()]), "third");

    let after = fs::read(dir.file()).unwrap();
    assert_eq!(after[..before.len()], before[..], "saved lines unchanged");
    let saved = on_disk(&dir.file());
    let new: Vec<&SessionEntry> = saved.iter().skip(transcript.len()).collect();
    let new_roles: Vec<&str> = new.iter().map(|e| role(message_of(e))).collect();
    assert_eq!(new_roles, ["user", "assistant"], "no second base prompt");
    assert_eq!(new[0].parent_id, leaf);
    assert_eq!(new[0].id, "two-1");
}

// ---- The budget ----------------------------------------------------------------

/// Tokens: one per 4 bytes of text, at least one.
fn estimate(message: &AgentMessage) -> u64 {
    (text_of(message).len() as u64).div_ceil(4).max(1)
}

#[test]
fn every_request_fits_the_budget_with_fixed_costs_except_a_reported_single_group_overflow() {
    let dir = TempDir::new("budget");
    let (reserved, margin, total) = (20, 10, 120);
    let context = ContextBudget {
        total,
        reserved_output: reserved,
        safety_margin: margin,
        estimate_tokens: Arc::new(estimate),
    };
    let huge = "x".repeat(4 * 200);
    let mut turns: Vec<ScriptedTurn> = Vec::new();
    for round in 0..12 {
        turns.push(calls(&[(&format!("c{round}"), "note")]));
        turns.push(answer(&format!("answer {round} {}", "y".repeat(40))).into());
    }
    turns.push(answer("about the huge one").into());
    let model = Scripted::new(turns);
    let (tools, _) = registry(&["note"]);
    let runtime = create_runtime(
        RuntimeConfig {
            system_prompt: Some("a base prompt that costs tokens too".to_string()),
            context: context.clone(),
            ..config(None)
        },
        RuntimeDeps {
            tools,
            ..deps(model.clone(), open(&dir.file(), Disk::plain()), "b")
        },
    )
    .unwrap();
    for round in 0..12 {
        settle(&runtime.prompt(&format!("question {round} {}", "z".repeat(40)))).unwrap();
    }
    settle(&runtime.prompt(&huge)).unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 25);
    for (index, request) in requests[..24].iter().enumerate() {
        let cost: u64 = request.messages.iter().map(estimate).sum();
        assert!(
            cost + reserved + margin <= total,
            "request {index} costs {cost}"
        );
        assert_eq!(role(&request.messages[0]), "system", "request {index}");
        assert_eq!(role(&request.messages[1]), "user", "request {index}");
    }
    let late = &requests[23].messages;
    assert!(late.len() < 12 * 4, "old interactions were left out");
    assert!(!late.iter().any(|m| text_of(m).starts_with("question 0 ")));

    // The last request: over budget, because the newest interaction alone is.
    let last = &requests[24].messages;
    let cost: u64 = last.iter().map(estimate).sum();
    assert!(cost + reserved + margin > total);
    assert_eq!(roles(last), ["system", "user"]);
    assert_eq!(text_of(&last[1]), huge);
    let saved = on_disk(&dir.file());
    let huge_entry = (saved.iter())
        .position(|e| text_of(message_of(e)) == huge)
        .unwrap();
    let options = BuildContextOptions {
        max_tokens: total,
        reserved_output: reserved,
        safety_margin: margin,
        estimate_tokens: &estimate,
    };
    let reported = build_context(&saved[..=huge_entry], &options).unwrap();
    assert_eq!(reported.reason, ContextBuildReason::SingleGroupOverflow);
    assert_eq!(&reported.messages, last);
}

#[test]
fn a_resumed_path_with_a_compaction_is_sent_from_its_summary() {
    let dir = TempDir::new("compaction");
    let message = |id: &str, parent: Option<&str>, message: AgentMessage| SessionEntry {
        id: id.to_string(),
        parent_id: parent.map(str::to_string),
        timestamp: 1,
        kind: EntryKind::Message { message },
    };
    let entries = vec![
        message(
            "u1",
            None,
            AgentMessage::User(user_message("early question")),
        ),
        message(
            "a1",
            Some("u1"),
            AgentMessage::Assistant(answer("early answer")),
        ),
        message(
            "u2",
            Some("a1"),
            AgentMessage::User(user_message("kept question")),
        ),
        message(
            "a2",
            Some("u2"),
            AgentMessage::Assistant(answer("kept answer")),
        ),
        SessionEntry {
            id: "c1".to_string(),
            parent_id: Some("a2".to_string()),
            timestamp: 2,
            kind: EntryKind::Compaction {
                summary: CompactionSummary {
                    goal: "finish the parser".to_string(),
                    constraints: Vec::new(),
                    completed: Vec::new(),
                    decisions: Vec::new(),
                    changed_files: Vec::new(),
                    unresolved: Vec::new(),
                    next: Vec::new(),
                },
                first_kept_entry_id: "u2".to_string(),
                tokens_before: 4,
            },
        },
    ];
    let store = open(&dir.file(), Disk::plain());
    for entry in &entries {
        store.lock().unwrap().append(entry).unwrap();
    }
    let model = Scripted::answers(&["go on"]);
    let runtime = create_runtime(
        RuntimeConfig {
            system_prompt: None,
            ..config(Some("c1".to_string()))
        },
        deps(model.clone(), store, "r"),
    )
    .unwrap();
    assert_eq!(runtime.control().state().messages.len(), 4);
    settle(&runtime.prompt("next")).unwrap();
    let sent: Vec<String> = model.requests()[0].messages.iter().map(text_of).collect();
    assert!(sent[0].starts_with("【会话压缩摘要】"), "{sent:?}");
    assert_eq!(sent[1..], ["kept question", "kept answer", "next"]);
    let saved = on_disk(&dir.file());
    assert_eq!(saved[5].parent_id.as_deref(), Some("c1"));
    let path = path_to(&saved, &runtime.active_leaf_id().unwrap()).unwrap();
    assert_eq!(path.len(), 7);
}

// ---- Extensions wrap the executor ----------------------------------------------

#[test]
fn the_extensions_hooks_wrap_the_executor_the_agent_runs_tools_with() {
    let dir = TempDir::new("extensions");
    let (mut tools, runs) = registry(&["note", "shell"]);
    let mut host = ExtensionHost::new(ExtensionHostOptions {
        hook_timeout: PATIENCE,
        on_diagnostic: None,
    });
    let observed = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&observed);
    let source = ExtensionSource {
        id: "policy".to_string(),
        path: "/virtual/policy".to_string(),
    };
    let factory = move |context: &mut course::resources::ExtensionContext| {
        context.register_tool(Box::new(Named("extra", Arc::new(AtomicUsize::new(0)))))?;
        context.on_before_tool_call(|call| {
            Ok(match call.name.as_str() {
                "shell" => BeforeToolDecision::Deny {
                    reason: "no shell here".to_string(),
                },
                _ => BeforeToolDecision::Allow,
            })
        });
        context.on_after_tool_result(move |result| {
            seen.lock()
                .unwrap()
                .push(text_of(&AgentMessage::ToolResult(result.clone())));
            Ok(())
        });
        Ok(())
    };
    load_extension(&source, |_| true, factory, &mut host, &mut tools).unwrap();
    let model = Scripted::new(vec![
        calls(&[("c1", "note"), ("c2", "shell"), ("c3", "extra")]),
        answer("done").into(),
    ]);
    let runtime = create_runtime(
        config(None),
        RuntimeDeps {
            tools,
            extension_host: Some(Arc::new(host)),
            ..deps(model.clone(), open(&dir.file(), Disk::plain()), "x")
        },
    )
    .unwrap();

    settle(&runtime.prompt("use the tools")).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "note ran, shell never did");
    let mut observed = observed.lock().unwrap().clone();
    observed.sort();
    assert_eq!(observed, ["extra ran", "note ran"]);
    let tool_names: Vec<String> = (model.requests()[0].tools.clone().unwrap().iter())
        .map(|tool| tool.name.clone())
        .collect();
    assert_eq!(tool_names, ["note", "shell", "extra"]);
    let saved = on_disk(&dir.file());
    let results: Vec<(String, bool)> = (saved.iter())
        .filter_map(|e| match message_of(e) {
            AgentMessage::ToolResult(result) => Some((
                text_of(&AgentMessage::ToolResult(result.clone())),
                result.is_error,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("note ran".to_string(), false),
            (
                "Tool shell blocked by policy: no shell here".to_string(),
                true
            ),
            ("extra ran".to_string(), false),
        ]
    );
}

// ---- The control from another thread while a run waits ---------------------------

/// A tool that says it started, then waits until the test lets it finish.
struct Waiting {
    started: Mutex<Sender<()>>,
    finish: Mutex<Receiver<()>>,
}

impl Tool for Waiting {
    type Input = NoInput;

    fn name(&self) -> &str {
        "wait"
    }

    fn description(&self) -> &str {
        "waits for the test"
    }

    fn schema(&self) -> ObjectSchema<NoInput> {
        object_schema(vec![])
    }

    fn execute(&self, _input: NoInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let _ = self.started.lock().unwrap().send(());
        let _ = self.finish.lock().unwrap().recv();
        Ok(ToolOutput {
            content: vec![text("waited")],
            ..ToolOutput::default()
        })
    }
}

/// A runtime over a file whose model first calls `wait`, and the channels
/// that tell the tool started and let it finish.
fn waiting_runtime(
    dir: &TempDir,
    turns: Vec<ScriptedTurn>,
) -> (Runtime<Scripted>, Scripted, Receiver<()>, Sender<()>) {
    let (started, tool_started) = mpsc::channel();
    let (finish, finished) = mpsc::channel();
    let mut tools = ToolRegistry::new();
    let waiting = Waiting {
        started: Mutex::new(started),
        finish: Mutex::new(finished),
    };
    tools.register(Box::new(waiting)).unwrap();
    let model = Scripted::new(turns);
    let runtime = create_runtime(
        config(None),
        RuntimeDeps {
            tools,
            ..deps(model.clone(), open(&dir.file(), Disk::plain()), "w")
        },
    )
    .unwrap();
    (runtime, model, tool_started, finish)
}

#[test]
fn abort_from_another_thread_ends_the_run_and_what_it_did_is_saved() {
    let dir = TempDir::new("abort");
    let turns = vec![calls(&[("c1", "wait")]), answer("never asked").into()];
    let (runtime, model, tool_started, finish) = waiting_runtime(&dir, turns);

    let running = runtime.prompt("wait for me");
    tool_started.recv_timeout(PATIENCE).unwrap();
    assert_eq!(runtime.control().state().pending_tool_call_ids, ["c1"]);
    runtime.control().abort();
    finish.send(()).unwrap();
    let result: AgentRunResult = settle(&running).unwrap();

    assert_eq!(result.reason, RunReason::Aborted);
    assert_eq!(model.requests().len(), 1);
    let saved = on_disk(&dir.file());
    let saved_messages: Vec<AgentMessage> = saved.iter().map(|e| message_of(e).clone()).collect();
    assert_eq!(saved_messages, result.messages);
    assert_eq!(
        roles(&saved_messages),
        ["system", "user", "assistant", "toolResult"]
    );
    // The runtime goes on: the next prompt continues the saved path.
    let next = settle(&runtime.prompt("again")).unwrap();
    assert_eq!(next.reason, RunReason::Stop);
    assert_eq!(on_disk(&dir.file()).len(), 6);
}

#[test]
fn a_steer_from_another_thread_joins_the_run_and_is_saved_after_the_results() {
    let dir = TempDir::new("steer");
    let turns = vec![calls(&[("c1", "wait")]), answer("steered").into()];
    let (runtime, model, tool_started, finish) = waiting_runtime(&dir, turns);

    let running = runtime.prompt("start");
    tool_started.recv_timeout(PATIENCE).unwrap();
    runtime.control().steer("also this").unwrap();
    finish.send(()).unwrap();
    settle(&running).unwrap();

    let second = &model.requests()[1].messages;
    assert_eq!(text_of(second.last().unwrap()), "also this");
    let saved: Vec<AgentMessage> = on_disk(&dir.file())
        .iter()
        .map(|e| message_of(e).clone())
        .collect();
    assert_eq!(
        roles(&saved),
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    assert_eq!(text_of(&saved[4]), "also this");
}

//! Chapter 08's contract beyond the twelve focused tests and the lab's edges
//! step (`coding_tools_edges.rs`): atomic writes on every error path,
//! permission bits, folders, the queue under panics and across paths, the
//! serial keys write and edit name, bad input from a model (missing
//! fields, odd `edits`), paths, line counting, and bash's process group,
//! output budget and exit texts. Real folders, a real `sh`; no timed
//! assertions. These are the repository's tests; the lab does not get them.

use std::env;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{self, Command};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use course::coding_tools::{
    BashDetails, CodingToolsOptions, Containment, EditDetails, MutationQueue, ReadDetails,
    create_coding_tools,
};
use course::tool::{ToolCallOptions, ToolRegistry, execute_tool_call};
use course::types::{ToolCall, ToolResultMessage};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(10);

struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let number = COUNT.fetch_add(1, Ordering::SeqCst);
        let path = env::temp_dir().join(format!("{prefix}{}-{number}", process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).expect("create a temporary folder");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("{name}-call"),
        name: name.to_string(),
        arguments,
        raw_arguments: None,
    }
}

fn tools(options: CodingToolsOptions) -> Arc<ToolRegistry> {
    Arc::new(create_coding_tools(options))
}

fn workspace(root: &Path) -> Arc<ToolRegistry> {
    tools(CodingToolsOptions::new(root, Containment::Workspace))
}

/// Runs one call on a helper thread; it must end within `PATIENCE`.
fn execute(
    tools: &Arc<ToolRegistry>,
    call: ToolCall,
    options: ToolCallOptions,
) -> ToolResultMessage {
    let (sender, receiver) = mpsc::channel();
    let tools = Arc::clone(tools);
    thread::spawn(move || {
        let _ = sender.send(execute_tool_call(&call, &tools, options));
    });
    receiver
        .recv_timeout(PATIENCE)
        .expect("the call ends in time and does not panic")
}

fn run(tools: &Arc<ToolRegistry>, name: &str, arguments: Value) -> ToolResultMessage {
    execute(tools, call(name, arguments), ToolCallOptions::default())
}

fn output_of(result: &ToolResultMessage) -> String {
    result
        .content
        .iter()
        .map(|block| block.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn details_of<T: DeserializeOwned>(result: &ToolResultMessage) -> T {
    let details = result.details.clone().expect("details");
    serde_json::from_value(details).expect("details of the tool's shape")
}

/// A failed result whose text contains `needle`.
fn assert_refused(result: &ToolResultMessage, needle: &str) {
    assert!(result.is_error, "expected an error: {}", output_of(result));
    assert!(
        output_of(result).contains(needle),
        "{needle:?} not in {:?}",
        output_of(result)
    );
}

fn temporaries(folder: &Path) -> Vec<String> {
    fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".pi-tmp-"))
        .collect()
}

// --- write and edit: whole files, and nothing else -------------------------

#[test]
fn write_never_replaces_an_empty_folder_either_and_leaves_no_temporary_file() {
    let root = TempDir::new("pi-contract-empty-folder-");
    fs::create_dir(root.file("folder")).unwrap();
    let tools = workspace(root.path());

    let result = run(&tools, "write", json!({ "path": "folder", "content": "x" }));

    assert!(result.is_error, "{}", output_of(&result));
    assert!(root.file("folder").is_dir());
    assert_eq!(temporaries(root.path()), Vec::<String>::new());
}

#[test]
fn a_write_that_cannot_create_its_folder_leaves_nothing_behind() {
    let root = TempDir::new("pi-contract-parent-file-");
    fs::write(root.file("plain"), "a file, not a folder").unwrap();
    let tools = workspace(root.path());

    let result = run(
        &tools,
        "write",
        json!({ "path": "plain/inner.txt", "content": "x" }),
    );

    assert!(result.is_error, "{}", output_of(&result));
    assert!(
        output_of(&result).contains("plain"),
        "the error names the path"
    );
    assert_eq!(
        fs::read_to_string(root.file("plain")).unwrap(),
        "a file, not a folder"
    );
    assert_eq!(temporaries(root.path()), Vec::<String>::new());
}

#[test]
fn write_and_edit_keep_the_permission_bits_of_the_file_they_replace() {
    let root = TempDir::new("pi-contract-mode-");
    let script = root.file("run.sh");
    fs::write(&script, "echo one\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
    let tools = workspace(root.path());

    let written = run(
        &tools,
        "write",
        json!({ "path": "run.sh", "content": "echo two\n" }),
    );
    assert!(!written.is_error, "{}", output_of(&written));
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o750
    );

    let edited = run(
        &tools,
        "edit",
        json!({ "path": "run.sh", "oldText": "two", "newText": "three" }),
    );
    assert!(!edited.is_error, "{}", output_of(&edited));
    assert_eq!(fs::read_to_string(&script).unwrap(), "echo three\n");
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o750
    );
}

#[test]
fn a_failed_edit_batch_does_not_touch_the_file_at_all() {
    let root = TempDir::new("pi-contract-edit-batch-");
    let file = root.file("value.txt");
    fs::write(&file, "one two two").unwrap();
    let inode = fs::metadata(&file).unwrap().ino();
    let tools = workspace(root.path());

    for (edits, why) in [
        (
            json!([{ "oldText": "one", "newText": "1" }, { "oldText": "two", "newText": "2" }]),
            "匹配多次",
        ),
        (
            json!([{ "oldText": "one", "newText": "1" }, { "oldText": "", "newText": "2" }]),
            "edits[1].oldText 不能为空",
        ),
        (
            json!([{ "oldText": "one", "newText": "ONE" }, { "oldText": "one", "newText": "1" }]),
            "edits[1] 没有匹配",
        ),
    ] {
        let result = run(
            &tools,
            "edit",
            json!({ "path": "value.txt", "edits": edits }),
        );
        assert_refused(&result, why);
        assert_eq!(fs::read_to_string(&file).unwrap(), "one two two");
        assert_eq!(
            fs::metadata(&file).unwrap().ino(),
            inode,
            "not even rewritten with the same bytes"
        );
    }
    assert_eq!(temporaries(root.path()), Vec::<String>::new());
}

#[test]
fn edit_refuses_folders_missing_files_and_text_that_is_not_utf8() {
    let root = TempDir::new("pi-contract-edit-input-");
    fs::create_dir(root.file("folder")).unwrap();
    fs::write(root.file("binary.bin"), [0x66, 0x6f, 0xff, 0x6f]).unwrap();
    let tools = workspace(root.path());

    let folder = run(
        &tools,
        "edit",
        json!({ "path": "folder", "oldText": "a", "newText": "b" }),
    );
    assert_refused(&folder, "不是普通文件");
    assert!(root.file("folder").is_dir());

    let missing = run(
        &tools,
        "edit",
        json!({ "path": "missing.txt", "oldText": "a", "newText": "b" }),
    );
    assert_refused(&missing, "missing.txt");
    assert!(!root.file("missing.txt").exists());

    let binary = run(
        &tools,
        "edit",
        json!({ "path": "binary.bin", "oldText": "f", "newText": "F" }),
    );
    assert_refused(&binary, "不是 UTF-8 文本");
    assert_eq!(
        fs::read(root.file("binary.bin")).unwrap(),
        [0x66, 0x6f, 0xff, 0x6f]
    );
}

#[test]
fn edit_checks_the_shape_of_its_batch_before_touching_anything() {
    let root = TempDir::new("pi-contract-edit-shape-");
    fs::write(root.file("value.txt"), "one").unwrap();
    let tools = workspace(root.path());

    for (arguments, why) in [
        (json!({ "path": "value.txt" }), "必须是 string"),
        (
            json!({ "path": "value.txt", "oldText": "one" }),
            "必须是 string",
        ),
        (
            json!({ "path": "value.txt", "edits": "one" }),
            "edits 必须是 array",
        ),
        (
            json!({ "path": "value.txt", "edits": [1] }),
            "每个 edit 必须是 object",
        ),
        (
            json!({ "path": "value.txt", "edits": [{ "oldText": "one" }] }),
            "必须是 string",
        ),
        (
            json!({ "oldText": "one", "newText": "two" }),
            "必须是 string",
        ),
        (json!(["value.txt"]), "参数必须是 object"),
    ] {
        let result = run(&tools, "edit", arguments.clone());
        assert_refused(&result, why);
        assert_eq!(result.tool_call_id, "edit-call", "{arguments}");
    }
    assert_eq!(fs::read_to_string(root.file("value.txt")).unwrap(), "one");
}

#[test]
fn edits_apply_to_the_text_so_far_and_new_text_may_hold_the_old() {
    let root = TempDir::new("pi-contract-edit-text-");
    fs::write(root.file("value.txt"), "status: draft").unwrap();
    let tools = workspace(root.path());

    let result = run(
        &tools,
        "edit",
        json!({ "path": "value.txt", "edits": [
            { "oldText": "draft", "newText": "draft, reviewed" },
            { "oldText": "status", "newText": "state" },
        ] }),
    );

    assert!(!result.is_error, "{}", output_of(&result));
    assert_eq!(output_of(&result), "已完成 2 处精确替换");
    assert_eq!(
        fs::read_to_string(root.file("value.txt")).unwrap(),
        "state: draft, reviewed"
    );
    let details: EditDetails = details_of(&result);
    assert_eq!(
        (details.old_bytes, details.new_bytes, details.edits),
        (13, 22, 2)
    );
}

// --- the mutation queue ------------------------------------------------------

#[test]
fn a_panicking_operation_does_not_block_its_path() {
    let queue = MutationQueue::new();
    let key = Path::new("panics");

    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        queue.run(key, || panic!("the operation exploded"))
    }));
    assert!(panicked.is_err());

    let (sender, receiver) = mpsc::channel();
    thread::scope(|scope| {
        scope.spawn(|| sender.send(queue.run(key, || "ran")).unwrap());
        assert_eq!(receiver.recv_timeout(PATIENCE), Ok("ran"));
    });
}

#[test]
fn one_path_runs_one_operation_at_a_time_and_all_of_them_land() {
    let queue = MutationQueue::new();
    let inside = AtomicUsize::new(0);
    let most_inside = AtomicUsize::new(0);
    let count = AtomicUsize::new(0);
    let start = Barrier::new(8);
    thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                start.wait();
                for _ in 0..50 {
                    queue.run(Path::new("same"), || {
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most_inside.fetch_max(now, Ordering::SeqCst);
                        count.fetch_add(1, Ordering::SeqCst);
                        inside.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            });
        }
    });
    assert_eq!(most_inside.load(Ordering::SeqCst), 1);
    assert_eq!(count.load(Ordering::SeqCst), 400);
}

#[test]
fn a_write_to_another_file_does_not_wait_for_a_busy_one() {
    let root = TempDir::new("pi-contract-other-path-");
    let tools = workspace(root.path());
    let busy = root.file("busy.txt");

    let result = MutationQueue::shared().run(&busy, || {
        run(
            &tools,
            "write",
            json!({ "path": "free.txt", "content": "went on" }),
        )
    });

    assert!(!result.is_error, "{}", output_of(&result));
    assert_eq!(
        fs::read_to_string(root.file("free.txt")).unwrap(),
        "went on"
    );
}

#[test]
fn write_and_edit_name_their_resolved_file_as_the_serial_key_and_nothing_else_does() {
    let root = TempDir::new("pi-contract-serial-key-");
    let tools = workspace(root.path());
    let key = |name: &str, arguments: Value| tools.get(name).unwrap().serial_key(&arguments);
    let file = Some(root.file("notes.txt").to_str().unwrap().to_string());

    assert_eq!(
        key("write", json!({ "path": "notes.txt", "content": "x" })),
        file
    );
    assert_eq!(
        key(
            "edit",
            json!({ "path": "./sub/../notes.txt", "oldText": "a", "newText": "b" })
        ),
        file,
        "one file, however it is spelled, is one key"
    );
    assert_eq!(key("read", json!({ "path": "notes.txt" })), None);
    assert_eq!(key("bash", json!({ "command": "cat notes.txt" })), None);
    assert_eq!(
        key("write", json!({ "path": 7 })),
        None,
        "arguments that do not parse name no key"
    );
}

// --- paths ---------------------------------------------------------------------

#[test]
fn lexical_escapes_are_refused_however_they_are_spelled() {
    let root = TempDir::new("pi-contract-lexical-");
    fs::create_dir(root.file("sub")).unwrap();
    let tools = workspace(root.path());

    for path in ["..", "sub/../../x.txt", "./../x.txt", "/etc/hostname"] {
        let result = run(&tools, "read", json!({ "path": path }));
        assert_refused(&result, &format!("路径越过教学 workspace：{path}"));
    }
    let written = run(
        &tools,
        "write",
        json!({ "path": "sub/../inside.txt", "content": "ok" }),
    );
    assert!(!written.is_error, "{}", output_of(&written));
    assert_eq!(
        details_of::<Value>(&written)["path"],
        json!(root.file("inside.txt").to_str().unwrap()),
        "details carry the resolved path"
    );
}

#[test]
fn a_new_file_deep_under_a_symlink_that_leaves_is_refused_and_no_folder_is_made_outside() {
    let root = TempDir::new("pi-contract-deep-link-");
    let outside = TempDir::new("pi-contract-deep-outside-");
    symlink(outside.path(), root.file("escape")).unwrap();
    let tools = workspace(root.path());

    let result = run(
        &tools,
        "write",
        json!({ "path": "escape/a/b/new.txt", "content": "x" }),
    );

    assert_refused(&result, "符号链接越过教学 workspace");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn a_symlink_that_stays_inside_is_followed() {
    let root = TempDir::new("pi-contract-inner-link-");
    fs::create_dir(root.file("real")).unwrap();
    fs::write(root.file("real/notes.txt"), "inside").unwrap();
    symlink(root.file("real"), root.file("alias")).unwrap();
    let tools = workspace(root.path());

    let result = run(&tools, "read", json!({ "path": "alias/notes.txt" }));

    assert!(!result.is_error, "{}", output_of(&result));
    assert_eq!(output_of(&result), "   1│ inside");
}

#[test]
fn unrestricted_mode_reaches_outside_the_workspace() {
    let root = TempDir::new("pi-contract-unrestricted-");
    let outside = TempDir::new("pi-contract-unrestricted-out-");
    fs::write(outside.file("there.txt"), "there").unwrap();
    let tools = tools(CodingToolsOptions::new(
        root.path(),
        Containment::Unrestricted,
    ));

    let read = run(
        &tools,
        "read",
        json!({ "path": outside.file("there.txt").to_str().unwrap() }),
    );
    assert!(!read.is_error, "{}", output_of(&read));

    let command = format!("printf made > {}", outside.file("made.txt").display());
    let bash = run(&tools, "bash", json!({ "command": command }));
    assert!(!bash.is_error, "{}", output_of(&bash));
    assert_eq!(
        fs::read_to_string(outside.file("made.txt")).unwrap(),
        "made"
    );
}

#[test]
fn the_workspace_is_resolved_once_from_how_it_was_given() {
    let root = TempDir::new("pi-contract-cwd-");
    fs::create_dir(root.file("sub")).unwrap();
    fs::write(root.file("notes.txt"), "one").unwrap();
    let tools = workspace(&root.path().join("sub/.."));

    let result = run(&tools, "read", json!({ "path": "notes.txt" }));

    assert!(!result.is_error, "{}", output_of(&result));
    assert_eq!(
        details_of::<ReadDetails>(&result).path,
        root.file("notes.txt").to_str().unwrap()
    );
}

// --- read ------------------------------------------------------------------------

#[test]
fn read_checks_its_arguments() {
    let root = TempDir::new("pi-contract-read-args-");
    fs::write(root.file("notes.txt"), "one").unwrap();
    let tools = workspace(root.path());

    assert_refused(&run(&tools, "read", json!({})), "必须是 string");
    assert_refused(
        &run(&tools, "read", json!({ "path": "notes.txt", "offset": 0 })),
        "必须是正整数",
    );
    assert_refused(
        &run(&tools, "read", json!({ "path": "notes.txt", "limit": -1 })),
        "必须是正整数",
    );
    assert_refused(
        &run(&tools, "write", json!({ "path": "notes.txt" })),
        "必须是 string",
    );
    assert_refused(
        &run(&tools, "bash", json!({ "cmd": "ls" })),
        "必须是 string",
    );
    assert_eq!(fs::read_to_string(root.file("notes.txt")).unwrap(), "one");
}

#[test]
fn read_counts_lines_as_splitting_at_newlines_does() {
    let root = TempDir::new("pi-contract-read-lines-");
    fs::write(root.file("empty.txt"), "").unwrap();
    fs::write(root.file("trailing.txt"), "a\n").unwrap();
    let tools = workspace(root.path());

    let empty = run(&tools, "read", json!({ "path": "empty.txt" }));
    assert_eq!(output_of(&empty), "   1│ ");
    assert_eq!(
        details_of::<ReadDetails>(&empty),
        ReadDetails {
            path: root.file("empty.txt").to_str().unwrap().to_string(),
            bytes: 0,
            lines: 1,
            start_line: 1,
            end_line: 1,
            truncated: false,
        }
    );
    let trailing = run(&tools, "read", json!({ "path": "trailing.txt" }));
    assert_eq!(output_of(&trailing), "   1│ a\n   2│ ");
    assert_eq!(details_of::<ReadDetails>(&trailing).lines, 2);
}

#[test]
fn read_walks_past_a_line_far_bigger_than_its_window() {
    let root = TempDir::new("pi-contract-read-huge-");
    let huge = "x".repeat(3_000_000);
    fs::write(root.file("huge.txt"), format!("{huge}\nsmall\n{huge}")).unwrap();
    let tools = workspace(root.path());

    let second = run(&tools, "read", json!({ "path": "huge.txt", "offset": 2 }));

    assert!(!second.is_error, "{}", output_of(&second));
    assert_eq!(
        output_of(&second),
        "   2│ small\n\n[已显示第 2-2 行，共 3 行；继续读取：offset=3]"
    );
    let details: ReadDetails = details_of(&second);
    assert_eq!((details.bytes, details.lines), (6_000_007, 3));
}

#[test]
fn read_never_shows_more_than_max_read_lines_and_numbers_past_9999() {
    let root = TempDir::new("pi-contract-read-window-");
    let text: Vec<String> = (1..=10_002)
        .map(|number| format!("line {number}"))
        .collect();
    fs::write(root.file("many.txt"), text.join("\n")).unwrap();
    let tools = workspace(root.path());

    let first = run(&tools, "read", json!({ "path": "many.txt", "limit": 1000 }));
    let details: ReadDetails = details_of(&first);
    assert_eq!(
        (details.start_line, details.end_line, details.lines),
        (1, 240, 10_002)
    );
    assert!(output_of(&first).ends_with("[已显示第 1-240 行，共 10002 行；继续读取：offset=241]"));

    let last = run(
        &tools,
        "read",
        json!({ "path": "many.txt", "offset": 10_001 }),
    );
    assert_eq!(output_of(&last), "10001│ line 10001\n10002│ line 10002");
    assert!(!details_of::<ReadDetails>(&last).truncated);
}

// --- bash --------------------------------------------------------------------------

/// The processes of group `group` that have not ended (zombies have ended;
/// nobody may have reaped them yet).
fn live_members(group: &str) -> Vec<String> {
    let listing = Command::new("ps")
        .args(["-A", "-o", "pid=,pgid=,stat="])
        .output()
        .unwrap();
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() == 3 && fields[1] == group && !fields[2].starts_with('Z')
        })
        .map(str::to_string)
        .collect()
}

/// Waits for group `group` to have no live member; the tool already sent
/// SIGKILL, so this is only the kernel finishing the job.
fn assert_group_ends(group: &str) {
    let started = Instant::now();
    while !live_members(group).is_empty() {
        assert!(
            started.elapsed() < PATIENCE,
            "left behind in group {group}: {:?}",
            live_members(group)
        );
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_aborted_call_leaves_no_process_of_its_group_behind() {
    let root = TempDir::new("pi-contract-abort-group-");
    let tools = workspace(root.path());
    let signal = Arc::new(AtomicBool::new(false));
    let running = {
        let (tools, signal) = (Arc::clone(&tools), Arc::clone(&signal));
        thread::spawn(move || {
            let options = ToolCallOptions {
                signal: Some(signal),
                report_progress: None,
            };
            execute(
                &tools,
                call(
                    "bash",
                    json!({ "command": "echo $$ > group.txt; sleep 100 & sleep 100" }),
                ),
                options,
            )
        })
    };
    let group_file = root.file("group.txt");
    let started = Instant::now();
    while fs::read_to_string(&group_file).map_or(true, |text| !text.ends_with('\n')) {
        assert!(started.elapsed() < PATIENCE, "the command never started");
        thread::sleep(Duration::from_millis(5));
    }
    signal.store(true, Ordering::SeqCst);

    let result = running.join().unwrap();
    let details: BashDetails = details_of(&result);
    assert!(
        result.is_error && details.aborted && !details.timed_out,
        "{details:?}"
    );
    assert_group_ends(fs::read_to_string(&group_file).unwrap().trim());
}

#[test]
fn a_background_process_holding_the_output_is_ended_by_the_timeout() {
    let root = TempDir::new("pi-contract-background-");
    let tools = tools(CodingToolsOptions {
        bash_timeout: Duration::from_millis(300),
        ..CodingToolsOptions::new(root.path(), Containment::Workspace)
    });

    let result = run(
        &tools,
        "bash",
        json!({ "command": "echo $$ > group.txt; printf started; sleep 100 &" }),
    );

    let details: BashDetails = details_of(&result);
    assert_eq!(details.exit_code, Some(0), "the shell itself ended at once");
    assert!(result.is_error && details.timed_out, "{details:?}");
    assert_eq!(output_of(&result), "started");
    assert_group_ends(fs::read_to_string(root.file("group.txt")).unwrap().trim());
}

#[test]
fn a_process_that_left_the_group_does_not_hang_the_call() {
    let root = TempDir::new("pi-contract-setsid-");
    let tools = tools(CodingToolsOptions {
        bash_timeout: Duration::from_millis(300),
        ..CodingToolsOptions::new(root.path(), Containment::Workspace)
    });

    // `setsid` puts `sleep` in a session of its own, out of reach of the
    // group's signals, still holding the output pipe.
    let result = run(
        &tools,
        "bash",
        json!({ "command": "setsid sh -c 'echo $$ > escaped.txt; exec sleep 30' & wait" }),
    );

    let details: BashDetails = details_of(&result);
    assert!(result.is_error && details.timed_out, "{details:?}");
    if let Ok(pid) = fs::read_to_string(root.file("escaped.txt")) {
        let _ = Command::new("kill").args(["-9", pid.trim()]).output();
    }
}

#[test]
fn a_gigantic_output_costs_the_budget_and_ends() {
    let root = TempDir::new("pi-contract-big-output-");
    let tools = tools(CodingToolsOptions {
        max_bash_output_bytes: 1_000,
        ..CodingToolsOptions::new(root.path(), Containment::Workspace)
    });

    let result = run(
        &tools,
        "bash",
        json!({ "command": "yes 0123456789 | head -c 20000000" }),
    );

    let output = output_of(&result);
    assert!(!result.is_error, "{output}");
    assert!(details_of::<BashDetails>(&result).truncated);
    assert!(output.len() <= 1_000, "{}", output.len());
    assert!(output.starts_with("0123456789\n0123456789\n"));
    assert!(output.ends_with("\n… [输出已截断]"));
}

#[test]
fn cut_output_ends_between_characters_and_odd_bytes_do_not_break_it() {
    let root = TempDir::new("pi-contract-cut-output-");
    let tools = tools(CodingToolsOptions {
        max_bash_output_bytes: 64,
        ..CodingToolsOptions::new(root.path(), Containment::Workspace)
    });

    let wide = run(
        &tools,
        "bash",
        json!({ "command": "printf '%0100d' 0 | sed 's/0/界/g'" }),
    );
    let output = output_of(&wide);
    assert!(
        output.len() <= 64 && output.ends_with("[输出已截断]"),
        "{output}"
    );
    assert!(
        output
            .trim_end_matches("\n… [输出已截断]")
            .chars()
            .all(|c| c == '界'),
        "{output}"
    );

    let odd = run(&tools, "bash", json!({ "command": "printf 'a\\377b'" }));
    assert_eq!(output_of(&odd), "a\u{fffd}b");
    assert!(!details_of::<BashDetails>(&odd).truncated);
}

#[test]
fn empty_output_says_how_the_shell_ended() {
    let root = TempDir::new("pi-contract-exit-text-");
    let tools = workspace(root.path());

    let quiet = run(&tools, "bash", json!({ "command": "exit 3" }));
    assert_eq!(output_of(&quiet), "(exit 3)");
    assert!(quiet.is_error);

    let ok = run(&tools, "bash", json!({ "command": "true" }));
    assert_eq!(output_of(&ok), "(exit 0)");
    assert!(!ok.is_error);

    let killed = run(&tools, "bash", json!({ "command": "kill -9 $$" }));
    assert_eq!(output_of(&killed), "(exit signal)");
    assert_eq!(details_of::<BashDetails>(&killed).exit_code, None);
    assert!(killed.is_error);
}

#[test]
fn a_command_reading_stdin_sees_its_end_at_once() {
    let root = TempDir::new("pi-contract-stdin-");
    let tools = workspace(root.path());

    let result = run(
        &tools,
        "bash",
        json!({ "command": "cat; printf 'stdin ended'" }),
    );

    assert!(!result.is_error, "{}", output_of(&result));
    assert_eq!(output_of(&result), "stdin ended");
}

#[test]
fn the_guardrail_reads_paths_at_the_start_of_a_word_only() {
    let root = TempDir::new("pi-contract-guardrail-");
    fs::create_dir(root.file("sub")).unwrap();
    let tools = workspace(root.path());

    for command in [
        "/bin/ls",
        "cat ~/notes",
        "ls;../x",
        "true&&/bin/ls",
        "ls|../run",
        "cd sub\t../x",
    ] {
        let result = run(&tools, "bash", json!({ "command": command }));
        assert_refused(&result, "教学 guardrail 不允许命令中显式出现绝对路径或 ../");
    }
    for command in [
        "echo a/b",
        "cd sub && cd .. && printf ok",
        "printf '%s' x/../y",
    ] {
        let result = run(&tools, "bash", json!({ "command": command }));
        assert!(!result.is_error, "{command}: {}", output_of(&result));
    }
}

#[test]
fn the_registry_offers_four_tools_in_order_with_their_schemas() {
    let root = TempDir::new("pi-contract-definitions-");
    let definitions = workspace(root.path()).definitions();

    let names: Vec<&str> = definitions
        .iter()
        .map(|definition| definition.name.as_str())
        .collect();
    assert_eq!(names, ["read", "write", "edit", "bash"]);
    assert_eq!(
        serde_json::to_string(&definitions[2].parameters).unwrap(),
        concat!(
            r#"{"type":"object","properties":{"path":{"type":"string"},"oldText":{"type":"string"},"#,
            r#""newText":{"type":"string"},"edits":{"type":"array","items":{"type":"object","#,
            r#""properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"#,
            r#""required":["oldText","newText"],"additionalProperties":false}}},"#,
            r#""required":["path"],"additionalProperties":false}"#
        )
    );
}

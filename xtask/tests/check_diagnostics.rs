//! `check` reads compile errors from cargo's JSON diagnostics and names the
//! teaching file where each fix goes, on a small chapter shaped like 03:
//! `types.rs` holds the data, the focused test imports it by module.

mod common;

use std::fs;
use std::path::PathBuf;

use common::Fixture;

const LIB: &str = "pub mod assistant_stream;\npub mod types;\n";

const TYPES: &str = "\
use std::sync::Arc;

/// A system message: its text and when it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemMessage {
    pub content: String,
    pub timestamp: u64,
}

/// What a model is asked with; it crosses threads.
#[derive(Debug, Clone, Default)]
pub struct AgentContext {
    pub messages: Arc<Vec<SystemMessage>>,
}

impl SystemMessage {
    pub fn time(&self) -> u64 {
        self.timestamp
    }
}

impl AgentContext {
    pub fn len(&self) -> usize {
        self.messages.len()
    }
}
";

const STREAM: &str = "\
pub fn latest(messages: &[crate::types::SystemMessage]) -> Option<u64> {
    messages.iter().map(|message| message.time()).max()
}
";

const FOCUSED: &str = "\
use course::assistant_stream::latest;
use course::types::{AgentContext, SystemMessage};

#[test]
fn system_messages_keep_their_time() {
    let message = SystemMessage {
        content: \"你好\".to_string(),
        timestamp: 7,
    };
    assert_eq!(latest(&[message]), Some(7));
}

#[test]
fn a_context_crosses_threads() {
    let context = AgentContext::default();
    let handle = std::thread::spawn(move || context.len());
    assert_eq!(handle.join().unwrap(), 0);
}
";

/// A chapter 03-like course; the lab starts with the target's teaching
/// files, as a learner who is nearly done.
fn chapter() -> (Fixture, PathBuf) {
    let fixture = common::tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", LIB),
            ("course/src/types.rs", TYPES),
            ("course/src/assistant_stream.rs", STREAM),
            ("course/tests/message_ir.rs", FOCUSED),
        ],
        |manifest| {
            manifest["focusedTest"] = "course/tests/message_ir.rs".into();
            manifest["teachingFiles"] = serde_json::json!([
                "course/src/types.rs",
                "course/src/assistant_stream.rs",
                "course/src/lib.rs"
            ]);
            manifest["run"] =
                serde_json::json!(["cargo", "test", "-p", "course", "--test", "message_ir"]);
            manifest["steps"] = serde_json::json!([]);
            manifest["faults"] = serde_json::json!([]);
        },
    );
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    for (path, content) in [
        ("course/src/lib.rs", LIB),
        ("course/src/types.rs", TYPES),
        ("course/src/assistant_stream.rs", STREAM),
    ] {
        fs::write(lab.join(path), content).unwrap();
    }
    (fixture, lab)
}

#[test]
fn a_module_not_written_yet_is_named_as_a_file_to_make() {
    let (fixture, lab) = chapter();
    fs::remove_file(lab.join("course/src/types.rs")).unwrap();
    fs::write(lab.join("course/src/lib.rs"), "pub mod assistant_stream;\n").unwrap();
    fs::write(lab.join("course/src/assistant_stream.rs"), "").unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "→ 要新建 course/src/types.rs，并在 course/src/lib.rs 里声明它",
        "本章终点的 course/src/lib.rs 这样写：\n    pub mod types;\n",
        "could not find `types` in `course`",
    ]);
    assert!(
        !run.stdout.contains("pub mod assistant_stream"),
        "{}",
        run.stdout
    );
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    let errors = json["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|error| error["teachingFile"] == "course/src/lib.rs"
                && error["declarations"] == serde_json::json!(["pub mod types;"])
                && error["newFile"] == "course/src/types.rs"),
        "{json}"
    );
}

/// A chapter whose crate root keeps its module private and re-exports one
/// function, as chapter 02 does with `block_on`.
fn private_module_chapter() -> (Fixture, PathBuf) {
    let lib = "//! The crate.\n\nmod x;\npub use x::y;\n";
    let focused = "use course::y;\n\n#[test]\nfn y_is_one() {\n    assert_eq!(y(), 1);\n}\n";
    let fixture = common::tiny_course_own_focused(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", lib),
            ("course/src/x.rs", X),
            ("course/tests/focused.rs", focused),
        ],
        |manifest| {
            manifest["teachingFiles"] = serde_json::json!(["course/src/x.rs", "course/src/lib.rs"]);
            manifest["expectedTests"] = 1.into();
            manifest["steps"] = serde_json::json!([]);
            manifest["faults"] = serde_json::json!([]);
        },
    );
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    (fixture, lab)
}

const X: &str = "pub fn y() -> i32 {\n    1\n}\n";

/// The advice for a missing module or item is the target's own crate root,
/// quoted, and points at the file where the fix goes.
#[test]
fn the_advice_for_a_missing_module_quotes_the_targets_crate_root() {
    let (fixture, lab) = private_module_chapter();
    let errors = |fixture: &Fixture| {
        let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
        json["errors"].as_array().unwrap().clone()
    };

    // A blank lab: both lines, and the module file to make.
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "→ 要新建 course/src/x.rs，并在 course/src/lib.rs 里声明它",
        "这样写：\n    mod x;\n    pub use x::y;\n",
    ]);
    assert!(!run.stdout.contains("pub mod"), "{}", run.stdout);

    // `pub mod x;` (what a fixed phrase used to say): the re-export is what
    // is missing, in lib.rs, not in x.rs.
    fs::write(lab.join("course/src/lib.rs"), "pub mod x;\n").unwrap();
    fs::write(lab.join("course/src/x.rs"), X).unwrap();
    let found = errors(&fixture);
    assert!(!found.is_empty());
    for error in &found {
        assert_eq!(error["teachingFile"], "course/src/lib.rs", "{error}");
        assert_eq!(
            error["declarations"],
            serde_json::json!(["pub use x::y;"]),
            "{error}"
        );
        assert!(error["newFile"].is_null(), "{error}");
    }

    // Declared as the target does, the module file gone: the fix is that file.
    fs::write(lab.join("course/src/lib.rs"), "mod x;\npub use x::y;\n").unwrap();
    fs::remove_file(lab.join("course/src/x.rs")).unwrap();
    let found = errors(&fixture);
    assert!(
        found
            .iter()
            .any(|error| error["teachingFile"] == "course/src/x.rs"
                && error["teachingFileMissing"] == true
                && error["declarations"] == serde_json::json!([])),
        "{found:?}"
    );
    fixture
        .xtask(&["check", "01", "lab"])
        .prints(&["→ 要新建 course/src/x.rs（编译器指向 course/src/lib.rs:"]);

    fs::write(lab.join("course/src/x.rs"), X).unwrap();
    fixture.xtask(&["check", "01", "lab"]).success();
}

#[test]
fn a_private_field_used_by_the_focused_test_is_traced_to_types_rs() {
    let (fixture, lab) = chapter();
    fixture.xtask(&["check", "01", "lab"]).success();
    // Every span of this error is in the focused test; the fix is in types.rs.
    fs::write(
        lab.join("course/src/types.rs"),
        TYPES.replace("pub timestamp: u64", "timestamp: u64"),
    )
    .unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "✗ 还不能编译（1 个错误）",
        "→ 要在 course/src/types.rs 里解决（编译器指向 course/tests/message_ir.rs:",
        // rustc's own text, intact.
        "error[E0451]: field `timestamp` of struct `SystemMessage` is private",
        "--> course/tests/message_ir.rs:",
    ]);
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["errors"][0]["teachingFile"], "course/src/types.rs");
    assert!(
        json["errors"][0]["rendered"]
            .as_str()
            .unwrap()
            .contains("private field"),
        "{json}"
    );
}

#[test]
fn rc_where_send_is_required_is_traced_to_the_file_rustcs_notes_name() {
    let (fixture, lab) = chapter();
    fs::write(
        lab.join("course/src/types.rs"),
        TYPES
            .replace("use std::sync::Arc;", "use std::rc::Rc;")
            .replace("Arc<Vec<SystemMessage>>", "Rc<Vec<SystemMessage>>"),
    )
    .unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "→ 要在 course/src/types.rs 里解决（编译器指向 course/tests/message_ir.rs:",
        "cannot be sent between threads safely",
        // The note that names types.rs, with its own source line.
        "note: required because it appears within the type `AgentContext`",
        "pub struct AgentContext {",
    ]);
    assert!(
        !run.stdout.contains("course/src/lib.rs 里解决"),
        "{}",
        run.stdout
    );
}

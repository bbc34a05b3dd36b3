//! Every sentence a learner reads, in the course's language (Chinese): the
//! reports, next steps and errors of the learner commands (`checkpoint`,
//! `practice`, `check`, `hint`, `compare`), their argument errors, and the
//! guide's header. Author commands (`verify`, `recut`, `bench`, `list`)
//! speak English.
//!
//! Who is reading is decided once: `main` calls [`set_audience`] from the
//! subcommand before anything runs. Sentences only learner commands print
//! are Chinese constants and functions. Errors raised in shared code (the
//! repository, the chapter folders, a manifest) can reach either audience:
//! their constructors live in [`shared`] and pick the language with
//! [`for_learner`], so the module that raises one needs no notion of who
//! reads it. clap's argument errors of learner commands are rendered in
//! [`arguments`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::locate::Checkpoint;
use crate::manifest::{ChapterId, Manifest, Mode};

mod arguments;
mod help;
mod shared;

pub use arguments::argument_error;
pub use help::translate_help;
pub use shared::*;

// --- Who reads ---

/// Who a command speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// A learner command: Chinese.
    Learner,
    /// An author command: English.
    Author,
}

static LEARNER: AtomicBool = AtomicBool::new(false);

/// Sets who this process speaks to; `main` calls it once, before any work.
pub fn set_audience(audience: Audience) {
    LEARNER.store(audience == Audience::Learner, Ordering::Relaxed);
}

/// True when this process runs a learner command.
pub fn for_learner() -> bool {
    LEARNER.load(Ordering::Relaxed)
}

/// `zh` for a learner, `en` for an author.
pub(crate) fn pick(zh: impl FnOnce() -> String, en: impl FnOnce() -> String) -> String {
    if for_learner() { zh() } else { en() }
}

/// The prefix of an error line on stderr.
pub fn error_prefix() -> &'static str {
    if for_learner() {
        "错误："
    } else {
        "error: "
    }
}

// --- check ---

pub const COMPILES: &str = "✓ 能编译，测试已运行";
pub const STEPS: &str = "步骤：";
/// The label of a step whose filter is empty.
pub const ALL_TESTS: &str = "全部";
pub const NEXT: &str = "下一步：先预测你的下一个小改动会让这份报告怎样变化，再动手。";
pub const FAILED_WITHOUT_A_TEST: &str = "运行失败了，但没有哪个测试失败；输出的最后几行：";

pub fn heading(chapter: &str, title: &str) -> String {
    format!("第 {chapter} 章 · {title}")
}

pub fn does_not_compile(errors: usize) -> String {
    format!("✗ 还不能编译（{errors} 个错误）")
}

pub fn timed_out(timeout: Duration) -> String {
    format!(
        "✗ 运行超过 {} 秒，已结束它的整个进程组：可能有测试陷入死循环，或在等一个永远不来的事件",
        timeout.as_secs()
    )
}

pub fn first_failure(name: &str) -> String {
    format!("第一个失败的测试：{name}")
}

/// The chapter is done: the reference answer may now be compared.
pub fn complete(passed: usize, chapter: &str) -> String {
    format!(
        "全部 {passed} 个聚焦测试通过：第 {chapter} 章完成。\n\
         想和参考答案对照，在课程仓库根目录运行 `cargo xtask compare {chapter} <练习目录>`。"
    )
}

pub fn not_complete(chapter: &str) -> String {
    format!("第 {chapter} 章还没有完成")
}

pub fn checking(lab: &str) -> String {
    format!("正在检查 {lab} …")
}

pub fn watching(lab: &str) -> String {
    format!("正在盯着 {lab} 的改动（Ctrl-C 停止）")
}

pub fn lab_target_refused(lab: &str, why: &str) -> String {
    format!(
        "练习目录 {lab} 的构建文件夹 target 不能用：{why}。check 只在练习目录自己的 target 文件夹里构建，\
         从不穿过符号链接写到别处；删掉它（`rm -r target`）再运行"
    )
}

pub fn lab_vanished(lab: &str) -> String {
    format!("练习目录 {lab} 不见了：它被删除或移走了，`check --watch` 就此停止")
}

/// The practice folders a learner may have meant, as a sentence; empty when
/// there are none.
fn labs_line(labs: &[String]) -> String {
    if labs.is_empty() {
        String::new()
    } else {
        format!("能看到的练习目录：{}。", labs.join("、"))
    }
}

pub fn no_such_lab(dir: &str, chapter: &str, root: &str, labs: &[String]) -> String {
    let missing = if labs.is_empty() {
        format!("找不到练习目录 {dir}：当前目录和课程仓库根目录下都没有它，也没有别的练习目录。")
    } else {
        format!(
            "找不到练习目录 {dir}：当前目录和课程仓库根目录下都没有它。{}",
            labs_line(labs)
        )
    };
    format!(
        "{missing}要新建一个，在课程仓库根目录 {root} 运行 `cargo xtask practice {chapter} ./lab`"
    )
}

pub fn is_the_repository(dir: &str, chapter: &str, labs: &[String]) -> String {
    format!(
        "{dir} 是课程仓库本身（或包含它），不是练习目录：只有 `cargo xtask practice {chapter} <目录>` \
         建出的练习目录才能检查和对照。{}",
        labs_line(labs)
    )
}

pub fn not_a_lab(dir: &str, chapter: &str, labs: &[String]) -> String {
    format!(
        "{dir} 不是练习目录（里面没有 LEARNING.md 和 Cargo.toml）。{}\
         要新建一个，在课程仓库根目录运行 `cargo xtask practice {chapter} ./lab`",
        labs_line(labs)
    )
}

pub fn focused_test_missing(test: &str, root: &str, target: &str, lab: &str) -> String {
    format!(
        "✗ 聚焦测试 {test} 不在练习目录里，没有可运行的测试。把它恢复回来：\n    \
         git -C '{root}' show {target}:{test} > '{lab}/{test}'"
    )
}

pub fn focused_test_missing_no_history(test: &str, chapter: &str) -> String {
    format!(
        "✗ 聚焦测试 {test} 不在练习目录里，没有可运行的测试。\
         这个仓库里找不到第 {chapter} 章的提交，无法直接恢复：先取回完整历史（`git fetch --unshallow`），\
         或者用 `cargo xtask practice {chapter} <新目录>` 建一个新的练习目录"
    )
}

// --- hint ---

/// The rung names of the hint ladder, level 1 to 4.
pub const HINT_LEVELS: [&str; 4] = ["定位文件", "函数签名", "伪代码", "局部代码"];

pub fn hint_heading(chapter: &str, step: &str) -> String {
    format!("第 {chapter} 章 · 步骤 {step} 的提示")
}

pub fn hint_rung(level: usize) -> String {
    format!("[{level}] {}", HINT_LEVELS[level - 1])
}

pub fn hint_next(chapter: &str, step: &str, level: usize) -> String {
    format!(
        "还卡着？下一级：cargo xtask hint {chapter} --step {step} --level {}",
        level + 1
    )
}

pub fn hint_steps(steps: &str) -> String {
    format!("（本章的步骤：{steps}；用 --step 选择）")
}

pub const HINT_LAST: &str =
    "这是最后一级提示。先自己写完，等 check 说本章完成后，再用 compare 和参考答案对照。";

pub fn no_such_step(chapter: &str, step: &str, known: &[&str]) -> String {
    format!(
        "第 {chapter} 章没有步骤 {step}：可选的步骤是 {}",
        known.join("、")
    )
}

pub fn hints_missing(path: &str) -> String {
    pick(
        || format!("课程仓库里没有 {path}：这一章还没有提示，请告诉课程作者"),
        || format!("{path} does not exist: author the chapter's hints there"),
    )
}

/// A hints file that does not parse; `problem` is the parser's (authors only).
pub fn hints_malformed(path: &str, line: usize, problem: &str) -> String {
    pick(
        || format!("课程仓库的 {path} 第 {line} 行格式不对：这是课程作者的文件，请告诉课程作者"),
        || format!("{path}:{line}: {problem}"),
    )
}

// --- checkpoint ---

/// Where chapter `id` starts, named by what it is: the end of the chapter
/// before it.
pub fn chapter_start(id: ChapterId) -> String {
    match previous_chapter(id) {
        Some(previous) => end_of(previous),
        None => "课程的初始代码".to_string(),
    }
}

/// Where a practice folder starts: the chapter's start (rebuild), or its
/// end (observe).
pub fn practice_from(id: ChapterId, mode: Mode) -> String {
    match mode {
        Mode::Rebuild => chapter_start(id),
        Mode::Observe => end_of(id),
    }
}

/// The chapter before `id` in the course's numbering (chapter NN starts
/// where chapter NN-1 ends, whether or not this kit ports NN-1).
fn previous_chapter(id: ChapterId) -> Option<ChapterId> {
    let number: u8 = id.to_string().parse().ok()?;
    number
        .checked_sub(1)
        .filter(|n| *n > 0)?
        .to_string()
        .parse()
        .ok()
}

/// "The end of chapter NN".
pub fn end_of(id: ChapterId) -> String {
    format!("第 {id} 章的终点")
}

pub fn checkpoint_heading(id: ChapterId, title: &str, mode: Mode) -> String {
    let mode = match mode {
        Mode::Rebuild => "从起点开始，自己写出本章的代码",
        Mode::Observe => "从终点开始，阅读本章写好的代码",
    };
    format!("第 {id} 章 · {title}（{mode}）")
}

/// One of the chapter's two commits: what it is, its short and full id.
pub fn checkpoint_commit(role: &str, what: &str, short: &str, full: &str) -> String {
    format!("  {role}：{what}，提交 {short}\n        {full}")
}

pub const START: &str = "起点";
pub const END: &str = "终点";

pub fn layer_changes(files: usize) -> String {
    format!("本章改动 {files} 个文件：")
}

pub fn checkpoint_commands(focused_test: &str, practice: &str, run: &str) -> String {
    format!(
        "聚焦测试：{focused_test}\n\
         开始练习：{practice}\n\
         运行测试：在练习目录里 {run}"
    )
}

/// The diff is the answer: ask for a prediction before showing how to see it.
pub fn predict_then_diff(diff: &str) -> String {
    format!(
        "先预测，再看答案：上面这些文件各会加上什么、改掉什么？把你的预测写下来，\
         做完练习之后再对照。然后查看：\n  {diff}"
    )
}

// --- practice ---

pub fn practice_ready(chapter: &str, title: &str, dir: &str) -> String {
    format!("第 {chapter} 章（{title}）的练习文件夹已就绪：{dir}")
}

/// The base, named by what it is (e.g. "第 02 章的终点").
pub fn practice_start(
    id: ChapterId,
    mode: Mode,
    short: &str,
    files: usize,
    symlinks: usize,
) -> String {
    format!(
        "起点：{}，提交 {short}（{files} 个文件，{symlinks} 个符号链接）",
        practice_from(id, mode)
    )
}

pub fn practice_added(target: &str, focused_test: &str) -> String {
    format!("另有终点 {target} 的聚焦测试 {focused_test} 和学习指南 LEARNING.md")
}

pub fn practice_submodule(path: &str) -> String {
    format!("注意：子模块 {path} 没有复制（留下一个空文件夹）")
}

pub fn practice_excluded(pattern: &str, added: bool, file: &str) -> String {
    let how = if added { "已写入" } else { "已经在" };
    format!("{pattern} {how} {file}，git 不会把这个文件夹当作要提交的文件")
}

/// Where the lab's tools run: the course repository, and this lab's path
/// from there; both already shell-quoted.
pub struct LabPointer<'a> {
    pub root: &'a str,
    pub lab_from_root: &'a str,
}

/// The commands a lab runs from the course repository, and the tutor file.
fn lab_pointer_lines(chapter: &str, lab: &LabPointer<'_>, indent: &str) -> String {
    let LabPointer {
        root,
        lab_from_root,
    } = lab;
    format!(
        "{indent}检查、提示和对照都在课程仓库 {root} 里运行，不在练习文件夹里。\n\
         {indent}每次保存后报告进度：\n\
         {indent}  cd {root} && cargo xtask check {chapter} {lab_from_root} --watch\n\
         {indent}卡住时，一级一级看提示：\n\
         {indent}  cd {root} && cargo xtask hint {chapter}\n\
         {indent}做完之后，和参考答案对照：\n\
         {indent}  cd {root} && cargo xtask compare {chapter} {lab_from_root}\n\
         {indent}练习文件夹里的 AGENTS.md 是写给 AI 编程助手的：让它当导师，不替你写答案。"
    )
}

/// The next steps after `practice`; every path is already shell-quoted.
pub fn practice_next_steps(
    chapter: &str,
    guide: &str,
    lab_from_here: &str,
    run: &str,
    root: &str,
    lab_from_root: &str,
) -> String {
    let pointer = lab_pointer_lines(
        chapter,
        &LabPointer {
            root,
            lab_from_root,
        },
        "     ",
    );
    format!(
        "下一步：\n  \
         1. 阅读 {guide}。\n  \
         2. 先预测结果，再运行聚焦测试：\n       \
            cd {lab_from_here} && {run}\n  \
         3. 一边写，一边看进度：\n\
         {pointer}"
    )
}

/// The chapter's guide with a header naming the chapter, where it starts
/// and ends, its focused test and, given `lab`, where its tools run.
pub fn guide_with_header(
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    lab: Option<&LabPointer<'_>>,
    guide: &str,
) -> String {
    let id = manifest.id;
    let pointer = match lab {
        Some(lab) => lab_pointer_lines(&id.to_string(), lab, "> "),
        None => format!(
            "> 检查、提示和对照都在课程仓库的根目录里运行，不在练习文件夹里，例如\n\
             > `cargo xtask check {id} <练习目录>`、`cargo xtask hint {id}`、`cargo xtask compare {id} <练习目录>`。\n\
             > 练习文件夹里的 AGENTS.md 是写给 AI 编程助手的：让它当导师，不替你写答案。"
        ),
    };
    format!(
        "> 第 {id} 章 · {title}\n\
         > 起点：{start}，提交 `{parent}`\n\
         > 终点：{end}，提交 `{target}`（先自己做完，再看它）\n\
         > 聚焦测试：`{test}`\n\
         {pointer}\n\n{guide}",
        title = manifest.title,
        start = chapter_start(id),
        parent = checkpoint.parent.short,
        end = end_of(id),
        target = checkpoint.target.short,
        test = manifest.focused_test,
    )
}

// --- compare ---

pub fn compare_heading(chapter: &str, title: &str, lab: &str) -> String {
    format!("第 {chapter} 章 · {title}：{lab} 里你写的文件，对照参考答案（第 {chapter} 章的终点）")
}

pub const COMPARE_LEGEND: &str = "以 - 开头的行只在你的文件里，以 + 开头的行只在参考答案里。";

pub fn compare_file(path: &str) -> String {
    format!("── {path} ──")
}

pub const COMPARE_SUMMARY: &str = "差多远：";

pub fn compare_checking(lab: &str) -> String {
    format!("先用 check 确认本章在 {lab} 里已经完成 …")
}

/// One line per teaching file: how far the learner's file is from the answer.
pub fn compare_distance(
    path: &str,
    mine: Option<usize>,
    answer: usize,
    removed: usize,
    added: usize,
) -> String {
    match mine {
        None => format!("  ✗ {path}：练习目录里没有这个文件（参考答案 {answer} 行）"),
        Some(_) if removed == 0 && added == 0 => format!("  = {path}：和参考答案一字不差"),
        Some(mine) => format!(
            "  ≠ {path}：你的 {mine} 行，参考答案 {answer} 行；只在你这边的 {removed} 行，只在参考答案里的 {added} 行"
        ),
    }
}

pub const COMPARE_CLOSING: &str =
    "参考答案只是一种写法：测试都通过了，你的写法就是对的。挑一两处不同，想想各自的取舍。";

/// The closing line when `--anyway` skipped check's verdict.
pub const COMPARE_CLOSING_ANYWAY: &str =
    "参考答案只是一种写法。你用了 --anyway，没有先确认本章完成：先让 check 报告完成，再回来对照。";

pub fn compare_refused(chapter: &str, lab: &str, verdict: &str, anyway: &str) -> String {
    format!(
        "第 {chapter} 章在 {lab} 里还没有完成（{verdict}），所以 compare 先不给你看参考答案：\
         先自己做完，用 `cargo xtask check {chapter} {lab}` 确认。\
         一定要现在看，加上 --anyway：{anyway}"
    )
}

/// Why check does not call the chapter complete, from its report.
pub fn compare_verdict(
    passed: Option<usize>,
    expected: Option<usize>,
    red_steps: &[String],
) -> String {
    match (passed, expected) {
        (Some(passed), Some(expected)) if passed < expected => {
            format!("{passed}/{expected} 个聚焦测试通过")
        }
        _ if !red_steps.is_empty() => format!("步骤 {} 还没通过", red_steps.join("、")),
        _ => "check 说还没有完成".to_string(),
    }
}

pub fn compare_not_readable(path: &str, why: &str) -> String {
    format!("读不了练习目录里的 {path}：{why}")
}

pub fn compare_symlink(path: &str, at: &str) -> String {
    format!(
        "练习目录里的 {path} 经过符号链接 `{at}`：compare 从不穿过符号链接读取文件，把它换成普通文件再运行"
    )
}

pub fn compare_not_utf8(path: &str) -> String {
    format!("练习目录里的 {path} 不是 UTF-8 文本：用 UTF-8 保存它再运行")
}

// --- hw-fs ---

/// A step's own test file, copied into the lab beside the focused test.
pub fn practice_added_step_test(test_file: &str) -> String {
    format!("另有步骤的测试文件 {test_file}")
}

// --- hy-check ---

/// Why a file in the lab's `target/` was refused.
pub const NOT_A_REGULAR_FILE: &str = "它不是普通文件（比如是命名管道），check 不会打开它等待";
pub const A_SYMLINK: &str = "它是符号链接，check 从不跟随";

pub fn target_file_refused(lab: &str, path: &str, why: &str) -> String {
    format!(
        "练习目录 {lab} 的构建文件夹里 {path} 不能用：{why}。这个文件夹只该由 cargo 写入；\
         删掉它（`rm -r target`）再运行，下一次构建会重新生成"
    )
}

pub fn still_reused(packages: &str) -> String {
    format!(
        "cargo 清理后仍然沿用了旧的构建结果（{packages}），check 无法确认测试跑的是你现在的代码。\
         看看 cargo 的配置（比如 build.build-dir），或删掉练习目录的 target 文件夹再运行"
    )
}

/// A test file the lab got from the target, changed or gone; `restore` is
/// the command that brings the target's version back.
pub fn test_changed(test: &str, restore: &str) -> String {
    format!("✗ {test} 和本章终点的版本不一样：测试被改过，结果不能算数。恢复它：\n    {restore}")
}

pub fn test_gone(test: &str, restore: &str) -> String {
    format!("✗ {test} 不在练习目录里，这一步没有可运行的测试。恢复它：\n    {restore}")
}

pub fn tests_unverifiable(chapter: &str) -> String {
    format!(
        "✗ 这个仓库里找不到第 {chapter} 章的终点提交，无法确认练习目录里的测试没有被改过，所以不能判定完成。\
         先取回完整历史（`git fetch --unshallow`）再运行"
    )
}

/// The line above a compile error's rendered text.
pub fn error_in(teaching_file: Option<&str>, location: Option<&str>) -> String {
    let location = location.unwrap_or("（没有位置）");
    match teaching_file {
        Some(file) => format!("→ 要在 {file} 里解决（编译器指向 {location}）"),
        None => format!("→ 编译器指向 {location}"),
    }
}

pub fn more_errors(hidden: usize) -> String {
    format!("……还有 {hidden} 个错误没有显示（加 --verbose 看全部）")
}

/// A step row's label: its title, else its filter, else [`ALL_TESTS`].
pub fn step_label(title: Option<&str>, filter: &str) -> String {
    match (title, filter) {
        (Some(title), _) => title.to_string(),
        (None, "") => ALL_TESTS.to_string(),
        (None, filter) => filter.to_string(),
    }
}

pub const NO_TEST_RAN: &str =
    "✗ 没有一个聚焦测试真正运行（全被忽略、名字被改，或过滤条件一个也没选中）：这不算通过。";

pub fn first_failure_in_step(name: &str, step: &str) -> String {
    format!("第一个失败的测试（步骤 {step}）：{name}")
}

/// Where the two sides of a failed `assert_eq!` first differ.
pub fn first_difference(at: usize, left: &str, right: &str) -> String {
    format!("第一处不同在第 {at} 个字符：left 一侧是 {left}，right 一侧是 {right}")
}

pub fn complete_with_steps(passed: usize, steps: usize, chapter: &str) -> String {
    format!("全部 {passed} 个聚焦测试和 {steps} 个步骤都通过：第 {chapter} 章完成。")
}

/// After the chapter is complete: the reference answer, side by side.
pub fn compare_next(chapter: &str, lab: &str) -> String {
    format!("想和参考答案对照？在课程仓库根目录运行：\n    cargo xtask compare {chapter} {lab}")
}

/// After a failure's line cut short for the terminal.
pub fn line_cut(length: usize) -> String {
    format!("…（这一行共 {length} 个字符，加 --verbose 看全文）")
}

pub const NOT_A_FOLDER: &str = "它不是文件夹";

pub fn cannot_touch(path: &str) -> String {
    format!("无法更新 {path} 的修改时间")
}

pub fn cannot_read(folder: &str) -> String {
    format!("无法读取文件夹 {folder}")
}

/// The line above a compile error whose fix is a file not written yet.
pub fn error_in_new_file(teaching_file: &str, location: Option<&str>) -> String {
    let location = location.unwrap_or("（没有位置）");
    format!(
        "→ 要新建 {teaching_file}，并在 crate 根（lib.rs）里用 `pub mod` 声明它（编译器指向 {location}）"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> ChapterId {
        text.parse().unwrap()
    }

    #[test]
    fn a_chapter_starts_where_the_one_before_ends() {
        assert_eq!(chapter_start(id("03")), "第 02 章的终点");
        assert_eq!(chapter_start(id("10")), "第 09 章的终点");
        assert_eq!(chapter_start(id("01")), "课程的初始代码");
        assert_eq!(practice_from(id("03"), Mode::Observe), "第 03 章的终点");
    }

    #[test]
    fn a_lab_with_no_other_labs_is_not_missing_twice() {
        let message = no_such_lab("lab", "03", "/course", &[]);
        assert_eq!(message.matches("根目录下").count(), 1, "{message}");
        let seen = no_such_lab("lab", "03", "/course", &["lab2".to_string()]);
        assert!(seen.contains("能看到的练习目录：lab2。"), "{seen}");
    }
}

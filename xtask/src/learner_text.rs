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
//! their constructors live here too, under "Errors of shared code", and
//! pick the language with [`for_learner`], so the module that raises one
//! needs no notion of who reads it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::locate::Checkpoint;
use crate::manifest::{ChapterId, Manifest, Mode};
use crate::safe_fs::{Reason, Refusal};

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
fn pick(zh: impl FnOnce() -> String, en: impl FnOnce() -> String) -> String {
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

pub fn error_line(message: &str) -> String {
    format!("错误：{message}")
}

pub fn error_location(location: Option<&str>, teaching_file: Option<&str>) -> String {
    let location = location.unwrap_or("（没有位置）");
    match teaching_file {
        Some(file) => format!("位置 {location} → 要在 {file} 里解决"),
        None => format!("位置 {location}"),
    }
}

pub fn help_line(help: &str) -> String {
    format!("编译器建议：{help}")
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

/// The base commit, by its id only: its subject is author material (a
/// re-cut's "Restore …" commit). See [`practice_start`].
pub fn practice_base(short: &str, _subject: &str, files: usize, symlinks: usize) -> String {
    format!("起点：提交 {short}（{files} 个文件，{symlinks} 个符号链接）")
}

/// The base, named by what it is (e.g. "第 02 章的终点"). `practice.rs`
/// calls this instead of [`practice_base`] from the merge on.
#[allow(dead_code)]
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

pub fn compare_refused(chapter: &str, lab: &str, verdict: &str, anyway: &str) -> String {
    format!(
        "第 {chapter} 章在 {lab} 里还没有完成（{verdict}），所以 compare 先不给你看参考答案：\
         先自己做完，用 `cargo xtask check {chapter} {lab}` 确认。\
         一定要现在看，加上 --anyway：{anyway}"
    )
}

pub fn compare_verdict(passed: usize, expected: Option<usize>) -> String {
    match expected {
        Some(expected) => {
            format!("check 的结论：{passed}/{expected} 个聚焦测试通过，或有步骤没通过")
        }
        None => format!("check 的结论：{passed} 个聚焦测试通过，但还有没通过的"),
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

// --- Errors of shared code: both languages, chosen by the audience ---

pub fn current_dir_unreadable(error: &std::io::Error) -> String {
    pick(
        || format!("读不到当前目录（{}）：换到课程仓库里再运行", io_kind(error)),
        || format!("cannot read the current directory: {error}"),
    )
}

/// `start` is not inside a git repository. `repo.rs` raises it.
#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn not_in_repository(start: &str) -> String {
    pick(
        || format!("{start} 不在 git 仓库里：cargo xtask 要在课程仓库里运行（先 cd 到课程仓库）"),
        || {
            format!(
                "{start} is not inside a git repository: run xtask from inside the course repository"
            )
        },
    )
}

/// The repository has no commits. `repo.rs` raises it.
#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn repository_without_commits(root: &str) -> String {
    pick(
        || format!("{root} 的仓库还没有任何提交：这不是课程仓库，请在课程仓库里运行"),
        || {
            format!(
                "the repository at {root} has no commits yet: commit the course (with its course(NN): checkpoints) first"
            )
        },
    )
}

/// No chapter folder `id`.
pub fn unknown_chapter(id: ChapterId, known: &[String], checkpoints_dir: &str) -> String {
    pick(
        || {
            if known.is_empty() {
                format!("没有第 {id} 章：{checkpoints_dir} 里还没有任何章节")
            } else {
                format!("没有第 {id} 章：现有的章节是 {}", known.join("、"))
            }
        },
        || {
            if known.is_empty() {
                format!("unknown chapter {id}: {checkpoints_dir} holds no chapter folders")
            } else {
                format!(
                    "unknown chapter {id}: chapters that exist: {}",
                    known.join(", ")
                )
            }
        },
    )
}

/// No `course(NN):` commit reachable from HEAD. `locate.rs` raises it.
#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn no_checkpoint_commit(id: ChapterId, shallow: bool) -> String {
    let prefix = id.commit_prefix();
    pick(
        || {
            if shallow {
                format!(
                    "找不到第 {id} 章的提交（`{prefix}`）：这是一个浅克隆，历史不全；\
                     运行 `git fetch --unshallow` 取回完整历史再试"
                )
            } else {
                format!("找不到第 {id} 章的提交（`{prefix}`）：这一章还没有做好，请告诉课程作者")
            }
        },
        || {
            let mut message =
                format!("no commit reachable from HEAD has a subject starting with `{prefix}`");
            if shallow {
                message.push_str(
                    ": this is a shallow clone, so the checkpoint may lie beyond its history; \
                     fetch the full history with `git fetch --unshallow` and try again",
                );
            } else {
                message.push_str(&format!(
                    ": cut chapter {id}'s checkpoint (a commit `{prefix} …` on top of the previous chapter's state)"
                ));
            }
            message
        },
    )
}

/// A chapter folder file is reached through a symlink.
pub fn chapter_file_symlink(path: &str, at: &str) -> String {
    pick(
        || {
            format!(
                "课程仓库的 {path} 经过符号链接 `{at}`：xtask 从不穿过符号链接读取文件，请告诉课程作者"
            )
        },
        || {
            format!(
                "cannot read {path}: `{at}` is a symlink, and xtask never reads through one \
                 (nothing outside the repository is read); make it a regular file or folder of the repository"
            )
        },
    )
}

/// A chapter folder file cannot be read; `why` is [`refusal`]'s.
pub fn chapter_file_unreadable(path: &str, why: &str) -> String {
    pick(
        || format!("读不了课程仓库的 {path}：{why}；请检查这个文件，或告诉课程作者"),
        || format!("cannot read {path}: {why}"),
    )
}

/// Why a path below a folder could not be used (see `safe_fs`).
pub fn refusal(refusal: &Refusal) -> String {
    let at = refusal.at.display();
    pick(
        || match &refusal.reason {
            Reason::Symlink => format!("`{at}` 是符号链接，xtask 从不穿过它"),
            Reason::NotAFolder => format!("`{at}` 不是文件夹"),
            Reason::Folder => format!("`{at}` 是文件夹，不是文件"),
            Reason::NotAFile => format!("`{at}` 不是普通文件"),
            Reason::NotRelative => format!("`{at}` 不是留在文件夹里的相对路径"),
            Reason::Io(error) => format!("`{at}`：{}", io_kind(error)),
        },
        || refusal.to_string(),
    )
}

pub fn chapter_file_not_utf8(path: &str) -> String {
    pick(
        || format!("课程仓库的 {path} 不是 UTF-8 文本：请告诉课程作者"),
        || format!("{path} is not UTF-8 text: save it as UTF-8"),
    )
}

pub fn guide_missing(path: &str) -> String {
    pick(
        || format!("课程仓库里没有 {path}：这一章还没有学习指南，请告诉课程作者"),
        || format!("{path} does not exist: every chapter folder needs its learner's guide"),
    )
}

pub fn manifest_missing(path: &str) -> String {
    pick(
        || format!("课程仓库里没有 {path}：请告诉课程作者"),
        || format!("{path} does not exist"),
    )
}

/// A manifest that does not parse; `detail` is serde's (authors only).
pub fn manifest_malformed(path: &str, line: usize, column: usize, detail: &str) -> String {
    pick(
        || {
            format!(
                "课程仓库的 {path} 第 {line} 行第 {column} 列写错了：这是课程作者的文件，\
                 `cargo xtask list` 会给出详情；请告诉课程作者，或者更新课程仓库"
            )
        },
        || {
            format!(
                "{path}:{line}:{column}: malformed manifest: {detail}; fix it (the keys are listed in README.md)"
            )
        },
    )
}

/// A manifest that parses but is wrong; `problems` are in English (authors only).
pub fn manifest_problems(path: &str, problems: &[String]) -> String {
    pick(
        || {
            format!(
                "课程仓库的 {path} 有 {} 处问题：这是课程作者的文件，`cargo xtask list` 会给出详情；\
                 请告诉课程作者，或者更新课程仓库",
                problems.len()
            )
        },
        || format!("{path}: {}", problems.join("; ")),
    )
}

pub fn two_folders_for_one_chapter(first: &str, second: &str, id: ChapterId) -> String {
    pick(
        || format!("{first} 和 {second} 都是第 {id} 章：请告诉课程作者，一章只能有一个文件夹"),
        || format!("{first} and {second} are both chapter {id}: keep one folder per chapter"),
    )
}

pub fn checkpoints_unreadable(dir: &str, error: &std::io::Error) -> String {
    pick(
        || format!("读不了 {dir}（{}）", io_kind(error)),
        || format!("cannot read {dir}: {error}"),
    )
}

/// The manifest names files the target commit lacks.
pub fn target_lacks_files(id: ChapterId, files: &[String], target: &str) -> String {
    pick(
        || {
            format!(
                "第 {id} 章的 checkpoint.json 列出的 {} 在终点提交 {target} 里不存在：请告诉课程作者",
                files.join("、")
            )
        },
        || {
            format!(
                "checkpoints/{id}/checkpoint.json names {} that target {target} does not have: \
                 fix the manifest or re-cut the chapter",
                files.join(", ")
            )
        },
    )
}

/// The run was stopped by `signal`. `error.rs` (`Error::interrupted`) and
/// `signals.rs` (its exit line, after [`error_prefix`]) say it with this.
#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn interrupted(signal: i32) -> String {
    let (zh, en) = match signal {
        libc::SIGINT => ("Ctrl-C", "SIGINT (Ctrl-C)"),
        libc::SIGTERM => ("SIGTERM", "SIGTERM"),
        libc::SIGHUP => ("终端关闭（SIGHUP）", "SIGHUP (the terminal closed)"),
        libc::SIGQUIT => ("Ctrl-\\（SIGQUIT）", "SIGQUIT (Ctrl-\\)"),
        _ => ("", ""),
    };
    pick(
        || {
            let by = if zh.is_empty() {
                format!("信号 {signal}")
            } else {
                zh.to_string()
            };
            format!("已被 {by} 中断：启动的进程都已结束，没有留下做了一半的东西")
        },
        || {
            let by = if en.is_empty() {
                format!("signal {signal}")
            } else {
                en.to_string()
            };
            format!("interrupted by {by}: stopped, leaving nothing running and nothing half made")
        },
    )
}

/// An I/O failure in words, for learners (the OS message is English).
fn io_kind(error: &std::io::Error) -> &'static str {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::NotFound => "不存在",
        ErrorKind::PermissionDenied => "没有权限",
        ErrorKind::StorageFull => "磁盘已满",
        ErrorKind::ReadOnlyFilesystem => "只读文件系统",
        _ => "系统错误",
    }
}

/// DIR of `practice` is not empty. `destination.rs` raises it, and the
/// refusals below.
#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn dir_not_empty(dir: &str) -> String {
    pick(
        || {
            format!(
                "{dir} 已经存在，而且不是空的：换一个新的文件夹名（已有的东西从不覆盖）；什么都没有改动"
            )
        },
        || {
            format!(
                "{dir} exists and is not empty: choose a new folder (existing work is never overwritten); nothing was touched"
            )
        },
    )
}

#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn dir_not_a_folder(dir: &str) -> String {
    pick(
        || format!("{dir} 已经存在，而且不是文件夹：换一个新的文件夹名；什么都没有改动"),
        || {
            format!(
                "{dir} exists and is not a folder: choose a new folder name; nothing was touched"
            )
        },
    )
}

#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn dir_in_git(dir: &str) -> String {
    pick(
        || {
            format!(
                "{dir} 在 .git 文件夹里，那是 git 存自己数据的地方：换一个 .git 之外的文件夹（例如 `lab`）；什么都没有改动"
            )
        },
        || {
            format!(
                "{dir} is inside a .git folder, where git keeps its own data: \
                 choose a folder outside .git (e.g. `lab`); nothing was touched"
            )
        },
    )
}

#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn dir_is_current(dir: &str) -> String {
    pick(
        || format!("{dir} 就是当前目录：换一个新文件夹来练习（例如 `lab`）；什么都没有改动"),
        || {
            format!(
                "{dir} is the current folder: practise in a new folder instead \
                 (e.g. `lab`); nothing was touched"
            )
        },
    )
}

#[allow(dead_code)] // raised by shared code from the merge on (see the doc above)
pub fn dir_is_repository(dir: &str) -> String {
    pick(
        || {
            format!(
                "{dir} 是课程仓库本身（或包含它）：换一个新文件夹（例如 `lab`）；什么都没有改动"
            )
        },
        || {
            format!(
                "{dir} is the course repository or a folder containing it: \
                 choose a new folder (e.g. `lab`); nothing was touched"
            )
        },
    )
}

// --- Argument errors of learner commands (clap's, rendered here) ---

/// A learner command's argument error, from clap's error kind and context.
/// `usage` is the subcommand's usage line without clap's "Usage:" label.
pub fn argument_error(error: &clap::Error, command: &str, usage: &str) -> String {
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(value)) => value.clone(),
        Some(ContextValue::Strings(values)) => values.join("、"),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let arg = text(ContextKind::InvalidArg);
    let value = text(ContextKind::InvalidValue);
    let what = match error.kind() {
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => invalid_value(&arg, &value),
        ErrorKind::MissingRequiredArgument => format!("缺少参数 {arg}"),
        ErrorKind::UnknownArgument => {
            let suggested = text(ContextKind::SuggestedArg);
            if suggested.is_empty() {
                format!("{command} 不认识参数 `{arg}`")
            } else {
                format!("{command} 不认识参数 `{arg}`，你想写的也许是 `{suggested}`")
            }
        }
        ErrorKind::NoEquals | ErrorKind::WrongNumberOfValues | ErrorKind::TooManyValues => {
            format!("参数 {arg} 的值个数不对")
        }
        ErrorKind::ArgumentConflict => format!("参数 {arg} 不能和前面的参数一起用"),
        ErrorKind::InvalidUtf8 => "参数里有不是 UTF-8 的字符".to_string(),
        _ => format!("{command} 的参数不对"),
    };
    format!(
        "{}{what}\n\n用法：{usage}\n完整说明：cargo xtask {command} --help",
        error_prefix()
    )
}

/// Why `value` does not fit the argument `arg` (`<ID>`, `--level <LEVEL>`, …).
fn invalid_value(arg: &str, value: &str) -> String {
    let name = arg.split_whitespace().next().unwrap_or(arg);
    let rule = match name {
        "<ID>" => "章号是一到两位数字，例如 03",
        "--level" => "提示级别是 1 到 4 的整数：1 定位文件，2 函数签名，3 伪代码，4 局部代码",
        "--timeout" => "超时是大于 0 的整数秒数，例如 600",
        _ => "这个值不能用",
    };
    if value.is_empty() {
        format!("参数 {arg} 缺少值：{rule}")
    } else {
        format!("参数 {arg} 不接受 `{value}`：{rule}")
    }
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

//! Errors raised in shared code that a learner command can meet, in both
//! languages ([`pick`]); the English is what author commands print. Those
//! only `practice` raises are Chinese only.

use crate::chapter::MANIFEST_FILE;
use crate::manifest::ChapterId;
use crate::repo::CHECKPOINTS_DIR;
use crate::safe_fs::{Reason, Refusal};

use super::basic::{io_kind, pick};

/// No chapter folder `id`.
pub fn unknown_chapter(id: ChapterId, known: &[String], checkpoints_dir: &str) -> String {
    if known.is_empty() {
        return pick(
            format!("没有第 {id} 章：{checkpoints_dir} 里还没有任何章节"),
            format!("unknown chapter {id}: {checkpoints_dir} holds no chapter folders"),
        );
    }
    pick(
        format!("没有第 {id} 章：现有的章节是 {}", known.join("、")),
        format!(
            "unknown chapter {id}: chapters that exist: {}",
            known.join(", ")
        ),
    )
}

/// A chapter folder file is reached through a symlink.
pub fn chapter_file_symlink(path: &str, at: &str) -> String {
    pick(
        format!(
            "课程仓库的 {path} 经过符号链接 `{at}`：xtask 从不穿过符号链接读取文件，请告诉课程作者"
        ),
        format!(
            "cannot read {path}: `{at}` is a symlink, and xtask never reads through one \
             (nothing outside the repository is read); make it a regular file or folder of the repository"
        ),
    )
}

/// A chapter folder file cannot be read; `why` is [`refusal`]'s.
pub fn chapter_file_unreadable(path: &str, why: &str) -> String {
    pick(
        format!("读不了课程仓库的 {path}：{why}；请检查这个文件，或告诉课程作者"),
        format!("cannot read {path}: {why}"),
    )
}

/// Why a path below a folder could not be used (see `safe_fs`).
pub fn refusal(refusal: &Refusal) -> String {
    let at = refusal.at.display();
    pick(
        match &refusal.reason {
            Reason::Symlink => format!("`{at}` 是符号链接，xtask 从不穿过它"),
            Reason::NotAFolder => format!("`{at}` 不是文件夹"),
            Reason::Folder => format!("`{at}` 是文件夹，不是文件"),
            Reason::NotAFile => format!("`{at}` 不是普通文件"),
            Reason::NotRelative => format!("`{at}` 不是留在文件夹里的相对路径"),
            Reason::Io(error) => format!("`{at}`：{}", io_kind(error)),
        },
        refusal.to_string(),
    )
}

pub fn chapter_file_not_utf8(path: &str) -> String {
    pick(
        format!("课程仓库的 {path} 不是 UTF-8 文本：请告诉课程作者"),
        format!("{path} is not UTF-8 text: save it as UTF-8"),
    )
}

/// A chapter folder file (the manifest, the guide) does not exist.
pub fn chapter_file_missing(path: &str) -> String {
    pick(
        format!("课程仓库里没有 {path}：请告诉课程作者"),
        format!("{path} does not exist"),
    )
}

/// A manifest that does not parse; `detail` is serde's (authors only).
pub fn manifest_malformed(path: &str, line: usize, column: usize, detail: &str) -> String {
    pick(
        format!(
            "课程仓库的 {path} 第 {line} 行第 {column} 列写错了：这是课程作者的文件，\
             `cargo xtask list` 会给出详情；请告诉课程作者，或者更新课程仓库"
        ),
        format!(
            "{path}:{line}:{column}: malformed manifest: {detail}; fix it (the keys are listed in README.md)"
        ),
    )
}

/// A file of the chapter's starter folder that is no teaching file.
pub fn starter_not_teaching(path: &str, id: ChapterId) -> String {
    pick(
        format!("课程仓库的 {path} 不是第 {id} 章要你写的文件，起始文件里不该有它：请告诉课程作者"),
        format!(
            "{path} is not one of chapter {id}'s teachingFiles: a starter holds teaching files \
             only, at their paths in the lab"
        ),
    )
}

/// A manifest that parses but is wrong; `problems` are in English (authors only).
pub fn manifest_problems(path: &str, problems: &[String]) -> String {
    pick(
        format!(
            "课程仓库的 {path} 有 {} 处问题：这是课程作者的文件，`cargo xtask list` 会给出详情；\
             请告诉课程作者，或者更新课程仓库",
            problems.len()
        ),
        format!("{path}: {}", problems.join("; ")),
    )
}

pub fn two_folders_for_one_chapter(first: &str, second: &str, id: ChapterId) -> String {
    pick(
        format!("{first} 和 {second} 都是第 {id} 章：请告诉课程作者，一章只能有一个文件夹"),
        format!("{first} and {second} are both chapter {id}: keep one folder per chapter"),
    )
}

pub fn checkpoints_unreadable(dir: &str, error: &std::io::Error) -> String {
    pick(
        format!("读不了 {dir}（{}）", io_kind(error)),
        format!("cannot read {dir}: {error}"),
    )
}

/// The manifest names files the target commit lacks.
pub fn target_lacks_files(id: ChapterId, files: &[String], target: &str) -> String {
    pick(
        format!(
            "第 {id} 章的 checkpoint.json 列出的 {} 在终点提交 {target} 里不存在：请告诉课程作者",
            files.join("、")
        ),
        format!(
            "checkpoints/{id}/checkpoint.json names {} that target {target} does not have: \
             fix the manifest or re-cut the chapter",
            files.join(", ")
        ),
    )
}

/// Chapter `id`'s target layer changes no teaching file (`chapter::idle_layer`).
pub fn idle_layer(id: ChapterId, short: &str, subject: &str) -> String {
    pick(
        format!(
            "第 {id} 章的终点提交 {short}（{subject}）没有改动本章的任何教学文件：它多半不是真正的章节提交，\
             只是主题碰巧以 course({id}): 开头，所以练习的起点里可能已经有答案。请告诉课程作者"
        ),
        format!(
            "chapter {id}'s target {short} ({subject}) changes none of the chapter's teaching files: \
             a commit whose subject starts with `course({id}):` by accident? Such subjects are \
             reserved for checkpoint commits: cut the chapter again (`cargo xtask recut {id}`) so \
             that the newest `course({id}):` commit is a real cut"
        ),
    )
}

/// DIR of `practice` is not empty (`destination.rs`, as the refusals below).
pub fn dir_not_empty(dir: &str) -> String {
    format!(
        "{dir} 已经存在，而且不是空的：换一个新的文件夹名（已有的东西从不覆盖）；什么都没有改动"
    )
}

pub fn dir_not_a_folder(dir: &str) -> String {
    format!("{dir} 已经存在，而且不是文件夹：换一个新的文件夹名；什么都没有改动")
}

pub fn dir_in_git(dir: &str) -> String {
    format!(
        "{dir} 在 .git 文件夹里，那是 git 存自己数据的地方：换一个 .git 之外的文件夹（例如 `lab`）；什么都没有改动"
    )
}

pub fn dir_is_current(dir: &str) -> String {
    format!("{dir} 就是当前目录：换一个新文件夹来练习（例如 `lab`）；什么都没有改动")
}

pub fn dir_is_repository(dir: &str) -> String {
    format!("{dir} 是课程仓库本身（或包含它）：换一个新文件夹（例如 `lab`）；什么都没有改动")
}

/// The base tree puts a symlink on the way to a file the lab adds (`lab.rs`).
pub fn lab_tree_symlink(base: &str, at: &str, file: &str) -> String {
    pick(
        format!(
            "起点 {base} 的代码树在 `{at}` 放了一个符号链接，正挡在 {file} 的路上：xtask 不穿过它写入\
             （练习目录之外什么都没写，也没有建任何文件夹）；这是课程的问题，请告诉课程作者"
        ),
        format!(
            "the tree of {base} has a symlink at `{at}`, on the way to {file}: refusing to write \
             through it (nothing was written outside the practice folder, and no folder was made); \
             a checkpoint's tree must not put a symlink where the chapter adds a file"
        ),
    )
}

/// The base tree leaves no room for a file the lab adds. `lab.rs` raises it.
pub fn lab_cannot_add(file: &str, base: &str, why: &str) -> String {
    pick(
        format!("没法把 {file} 放进起点 {base} 的代码树（{why}）；这是课程的问题，请告诉课程作者"),
        format!(
            "cannot add {file} to the tree of {base}: {why}; the checkpoint's tree must leave room for it"
        ),
    )
}

/// The exclude file cannot be read or written (`exclude.rs`).
pub fn exclude_unusable(path: &str, why: &str) -> String {
    format!("没法把练习目录写进 {path}，让 git 忽略它（{why}）：修好它再运行；什么都没有改动")
}

/// A practice folder whose name no exclude pattern can express.
pub fn exclude_newline(name: &str) -> String {
    format!(
        "文件夹名 {name:?} 里有换行符，git 的排除规则写不出这样的名字：换一个不带换行的名字；什么都没有改动"
    )
}

/// A child (`cargo`, `rustc`, `git`) failed because of the machine, not the
/// input; `why` is [`child_killed`]'s or the line of its output that said so.
pub fn child_environment_failure(command: &str, dir: &str, why: &str) -> String {
    pick(
        format!(
            "在 {dir} 里运行 `{command}` 失败，原因在这台机器上，不在你的代码里：{why}；腾出空间或改好权限后再试"
        ),
        format!("`{command}` in {dir} failed because of the machine, not the input: {why}"),
    )
}

/// The line that stands for the `bytes` of a child's output left out.
pub fn output_left_out(bytes: u64) -> String {
    pick(
        format!("[…… 输出太长，xtask 在这里略去了 {bytes} 字节（测试结果行照样保留在下面）……]"),
        format!(
            "[... {bytes} bytes of output left out here by xtask (test result lines kept below) ...]"
        ),
    )
}

/// A child was ended by `signal` (its name, e.g. SIGKILL), which no user sent.
pub fn child_killed(signal: &str) -> String {
    pick(
        format!("它被信号 {signal} 结束了（内存不足、ulimit 之类的限制）"),
        format!("it was killed by {signal} (out of memory, a ulimit, …)"),
    )
}

/// The program a manifest's `run` names is not installed.
pub fn program_not_found(program: &str) -> String {
    let manifest = format!("{CHECKPOINTS_DIR}/NN/{MANIFEST_FILE}");
    pick(
        format!(
            "找不到程序 `{program}`：它来自章节清单 {manifest} 的 `run`；请安装它，或告诉课程作者"
        ),
        format!(
            "the program `{program}` was not found: it comes from the chapter manifest's `run`; install it or fix `run` in {manifest}"
        ),
    )
}

pub fn cannot_run(command: &str, dir: &str, why: &str) -> String {
    pick(
        format!("无法在 {dir} 里运行 `{command}`：{why}"),
        format!("cannot run `{command}` in {dir}: {why}"),
    )
}

pub fn run_folder_gone(dir: &str) -> String {
    pick(
        format!("文件夹 {dir} 不存在（或已经被删掉）"),
        format!("the folder {dir} does not exist (any more)"),
    )
}

/// What `practice` was doing when the operating system refused.
#[derive(Debug, Clone, Copy)]
pub enum PracticeStep {
    Inspect,
    CreateParent,
    /// Creating the staging folder beside DIR.
    Staging,
    Write,
    /// Reading DIR (to see that it is empty).
    Read,
    MoveIntoPlace,
}

/// `practice` could not do `step` at `path`; nothing half made is left.
/// Only `Write` (a lab's tree, `tree.rs`) also serves `verify`, in English.
pub fn practice_io(step: PracticeStep, path: &str, error: &std::io::Error) -> String {
    use std::io::ErrorKind::{FileTooLarge, QuotaExceeded, StorageFull};
    let doing = match step {
        PracticeStep::Inspect => format!("查看 {path}"),
        PracticeStep::CreateParent => format!("创建文件夹 {path}"),
        PracticeStep::Staging => format!("在 {path} 里准备练习目录"),
        PracticeStep::Write => format!("写入 {path}"),
        PracticeStep::Read => format!("读取 {path}"),
        PracticeStep::MoveIntoPlace => format!("把练习目录放到 {path}"),
    };
    let advice = match error.kind() {
        StorageFull | QuotaExceeded | FileTooLarge => "腾出磁盘空间后再试",
        _ => "换一个你能写入的位置再试",
    };
    let (left, en) = match step {
        PracticeStep::Inspect | PracticeStep::Read => ("什么都没有改动", "nothing was touched"),
        _ => ("没有留下做了一半的东西", "nothing half made was left"),
    };
    pick(
        format!("无法{doing}（{}）：{left}；{advice}", io_kind(error)),
        format!("cannot use {path}: {error}; {en}"),
    )
}

/// DIR was created or filled while `practice` wrote its copy.
pub fn dir_filled_meanwhile(dir: &str) -> String {
    format!(
        "写的过程中 {dir} 被别的运行（或别的东西）先占了：这次的副本已经删掉，{dir} 保持原样；用那个文件夹，或者换一个新的"
    )
}

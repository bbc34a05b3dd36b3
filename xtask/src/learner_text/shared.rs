//! Errors raised in shared code that a learner command can meet, in both
//! languages: [`pick`] chooses by the audience `main` set. The English text
//! is what authors read (and what the author commands print).

use crate::manifest::ChapterId;
use crate::safe_fs::{Reason, Refusal};

use super::pick;

pub fn current_dir_unreadable(error: &std::io::Error) -> String {
    pick(
        || format!("读不到当前目录（{}）：换到课程仓库里再运行", io_kind(error)),
        || format!("cannot read the current directory: {error}"),
    )
}

/// `start` is not inside a git repository. `repo.rs` raises it.
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

/// HEAD is a branch with no commits while other branches have some.
pub fn unborn_head(branch: &str) -> String {
    pick(
        || {
            format!(
                "当前分支 `{branch}` 还没有任何提交：切换到存放课程历史的分支（例如 `git switch main`）再运行"
            )
        },
        || {
            format!(
                "HEAD is on `{branch}`, which has no commits yet: switch to the branch holding \
                 the course's history (e.g. `git switch main`); nothing was changed"
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

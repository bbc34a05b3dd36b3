//! Who reads (the audience `main` sets once) and the sentences of the bottom
//! modules (`error`, `signals`, `out`, `repo`, `locate`); it imports nothing
//! of the crate.

use std::sync::atomic::{AtomicBool, Ordering};

/// Who a command speaks to: a learner in Chinese, an author in English.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    Learner,
    Author,
}

static LEARNER: AtomicBool = AtomicBool::new(false);

/// Sets who this process speaks to; `main` calls it once, before any work.
pub fn set_audience(audience: Audience) {
    LEARNER.store(audience == Audience::Learner, Ordering::Relaxed);
}

pub fn for_learner() -> bool {
    LEARNER.load(Ordering::Relaxed)
}

/// `zh` for a learner, `en` for an author.
pub fn pick(zh: String, en: String) -> String {
    if for_learner() { zh } else { en }
}

pub fn note_prefix() -> &'static str {
    if for_learner() { "注意：" } else { "note: " }
}

/// Standard output failed (full, or broken): the report is lost.
pub fn report_lost(error: &str) -> String {
    pick(
        format!("报告没能写到标准输出（{error}）；退出码仍是本次运行的结论"),
        format!(
            "the report could not be written to standard output ({error}); the exit status is still the verdict"
        ),
    )
}

pub fn error_prefix() -> &'static str {
    if for_learner() {
        "错误："
    } else {
        "error: "
    }
}

pub fn current_dir_unreadable(error: &std::io::Error) -> String {
    pick(
        format!("读不到当前目录（{}）：换到课程仓库里再运行", io_kind(error)),
        format!("cannot read the current directory: {error}"),
    )
}

/// `start` is not inside a git repository. `repo.rs` raises it.
pub fn not_in_repository(start: &str) -> String {
    pick(
        format!("{start} 不在 git 仓库里：cargo xtask 要在课程仓库里运行（先 cd 到课程仓库）"),
        format!(
            "{start} is not inside a git repository: run xtask from inside the course repository"
        ),
    )
}

/// The repository has no commits. `repo.rs` raises it.
pub fn repository_without_commits(root: &str) -> String {
    pick(
        format!("{root} 的仓库还没有任何提交：这不是课程仓库，请在课程仓库里运行"),
        format!(
            "the repository at {root} has no commits yet: commit the course (with its course(NN): checkpoints) first"
        ),
    )
}

/// HEAD is a branch with no commits while other branches have some.
pub fn unborn_head(branch: &str) -> String {
    pick(
        format!(
            "当前分支 `{branch}` 还没有任何提交：切换到存放课程历史的分支（例如 `git switch main`）再运行"
        ),
        format!(
            "HEAD is on `{branch}`, which has no commits yet: switch to the branch holding \
             the course's history (e.g. `git switch main`); nothing was changed"
        ),
    )
}

/// No `course(NN):` commit reachable from HEAD (`prefix`: `course(03):`).
pub fn no_checkpoint_commit(id: &str, prefix: &str, shallow: bool) -> String {
    if shallow {
        return pick(
            format!(
                "找不到第 {id} 章的提交（`{prefix}`）：这是一个浅克隆，历史不全；\
                 运行 `git fetch --unshallow` 取回完整历史再试"
            ),
            format!(
                "no commit reachable from HEAD has a subject starting with `{prefix}`: this is a shallow \
                 clone, so the checkpoint may lie beyond its history; fetch the full history with \
                 `git fetch --unshallow` and try again"
            ),
        );
    }
    pick(
        format!(
            "从 HEAD 出发找不到第 {id} 章的提交（`{prefix}`）：当前分支的历史里没有它。\
             切换到存放课程历史的分支（例如 `git switch main`）再试；哪个分支都没有的话，请告诉课程作者"
        ),
        format!(
            "no commit reachable from HEAD has a subject starting with `{prefix}`: cut chapter {id}'s \
             checkpoint (a commit `{prefix} …` on top of the previous chapter's state)"
        ),
    )
}

/// Chapter `id`'s target `short` has no parent in a shallow clone.
pub fn target_parent_not_fetched(id: &str, short: &str) -> String {
    pick(
        format!(
            "第 {id} 章的终点 {short} 在这个浅克隆里没有父提交（起点）：\
             运行 `git fetch --unshallow` 取回完整历史再试"
        ),
        format!(
            "chapter {id}'s target {short} has no parent in this shallow clone: \
             fetch the full history with `git fetch --unshallow` and try again"
        ),
    )
}

/// Chapter `id`'s target `short` is a root commit. `locate.rs` raises it.
pub fn target_is_root(id: &str, short: &str) -> String {
    pick(
        format!(
            "第 {id} 章的终点 {short} 是仓库的第一个提交，前面没有起点：\
             这个检查点切得不对，请告诉课程作者"
        ),
        format!(
            "chapter {id}'s target {short} is a root commit: a checkpoint needs the previous chapter's state as its parent"
        ),
    )
}

/// The run was stopped by `signal` ([`crate::error::Error::interrupted`]).
pub fn interrupted(signal: i32) -> String {
    let (zh, en) = match signal {
        libc::SIGINT => ("Ctrl-C", "SIGINT (Ctrl-C)"),
        libc::SIGTERM => ("SIGTERM", "SIGTERM"),
        libc::SIGHUP => ("终端关闭（SIGHUP）", "SIGHUP (the terminal closed)"),
        libc::SIGQUIT => ("Ctrl-\\（SIGQUIT）", "SIGQUIT (Ctrl-\\)"),
        _ => ("信号", "a signal"),
    };
    pick(
        format!("已被 {zh} 中断：启动的进程都已结束，没有留下做了一半的东西"),
        format!("interrupted by {en}: stopped, leaving nothing running and nothing half made"),
    )
}

/// An I/O failure in words, for learners (the OS message is English).
pub fn io_kind(error: &std::io::Error) -> &'static str {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::NotFound => "不存在",
        ErrorKind::PermissionDenied => "没有权限",
        ErrorKind::StorageFull => "磁盘已满",
        ErrorKind::ReadOnlyFilesystem => "只读文件系统",
        ErrorKind::FileTooLarge => "文件超过了大小限制（ulimit -f）",
        _ => "系统错误",
    }
}

//! `practice`'s sentences: the new folder, what it holds, the next steps,
//! and the guide's header (where the lab's tools run).

use super::{end_of, start_commit};
use crate::locate::Checkpoint;
use crate::manifest::Manifest;

/// An interrupt that came after the folder was already in place.
pub fn practice_ready_before_interrupt(dir: &str) -> String {
    format!("中断来得太晚：练习文件夹已经完整建好，留着可以直接用：{dir}")
}

pub fn practice_ready(chapter: &str, title: &str, dir: &str) -> String {
    format!("第 {chapter} 章（{title}）的练习文件夹已就绪：{dir}")
}

/// The base, named by what it is (`from`, e.g. "第 02 章的终点").
pub fn practice_start(from: &str, short: &str, files: usize, symlinks: usize) -> String {
    format!("起点：{from}，提交 {short}（{files} 个文件，{symlinks} 个符号链接）")
}

pub fn practice_added(target: &str, focused_test: &str) -> String {
    format!("另有终点 {target} 的聚焦测试 {focused_test} 和学习指南 LEARNING.md")
}

/// A step's own test file, copied into the lab beside the focused test.
pub fn practice_added_step_test(test_file: &str) -> String {
    format!("另有步骤的测试文件 {test_file}")
}

/// A further file the lab takes from the target (`labFiles`).
pub fn practice_added_lab_file(target: &str, file: &str) -> String {
    format!("另有终点 {target} 的文件 {file}")
}

/// A teaching file the starter begins; `to_write` when it holds `todo!`s.
pub fn practice_added_starter(file: &str, to_write: bool) -> String {
    if to_write {
        format!(
            "起始文件：{file} 已经开好头（公开的类型和签名；要你写的部分是 todo!(\"Lab N.M … 尚未实现\")）"
        )
    } else {
        format!("起始文件：{file} 已经写好（本章的新模块已经声明）")
    }
}

pub fn practice_submodule(path: &str) -> String {
    format!("注意：子模块 {path} 没有复制（留下一个空文件夹）")
}

pub fn practice_excluded(pattern: &str, added: bool, file: &str) -> String {
    let how = if added { "已写入" } else { "已经在" };
    format!("{pattern} {how} {file}，git 不会把这个文件夹当作要提交的文件")
}

/// Where the lab's tools run (the repository, the lab from it), shell-quoted.
pub struct LabPointer<'a> {
    pub root: &'a str,
    pub lab_from_root: &'a str,
}

/// The commands a lab runs from the course repository, and the tutor file.
fn lab_pointer_lines(chapter: &str, lab: &LabPointer<'_>, indent: &str) -> String {
    let (root, lab_from_root) = (lab.root, lab.lab_from_root);
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
    lab: &LabPointer<'_>,
) -> String {
    let pointer = lab_pointer_lines(chapter, lab, "     ");
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
    let tick = |short: &str| format!("`{short}`");
    let previous_end = checkpoint.previous_end.as_ref().map(|end| tick(&end.short));
    let start = start_commit(id, &tick(&checkpoint.start.short), previous_end.as_deref());
    format!(
        "> 第 {id} 章 · {title}\n\
         > 起点：{start}\n\
         > 终点：{end}，提交 `{target}`（先自己做完，再看它）\n\
         > 聚焦测试：`{test}`\n\
         {pointer}\n\n{guide}",
        title = manifest.title,
        end = end_of(id),
        target = checkpoint.target.short,
        test = manifest.focused_test,
    )
}

//! `check`'s sentences: the report's heading, compile errors and step
//! rows, the verdict and what to do next, `--watch`'s lines, and what it
//! says of a lab whose test files cannot be trusted.

use std::time::Duration;

pub const COMPILES: &str = "✓ 能编译，测试已运行";
pub const STEPS: &str = "步骤：";
pub const NEXT: &str = "下一步：先预测你的下一个小改动会让这份报告怎样变化，再动手。";
pub const FAILED_WITHOUT_A_TEST: &str = "运行失败了，但没有哪个测试失败；输出的最后几行：";

pub fn heading(chapter: &str, title: &str) -> String {
    format!("第 {chapter} 章 · {title}")
}

pub fn does_not_compile(errors: usize) -> String {
    format!("✗ 还不能编译（{errors} 个错误）")
}

pub fn step_files_do_not_compile(errors: usize) -> String {
    format!(
        "✓ 聚焦测试能编译，也运行了；✗ 后面某个步骤自己的测试文件还不能编译（{errors} 个错误）：\n  \
         先按下面的步骤表做完眼前的步骤，做到那一步时再看这些错误"
    )
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

pub fn complete(passed: usize, chapter: &str) -> String {
    format!("全部 {passed} 个聚焦测试通过：第 {chapter} 章完成。")
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

pub fn lab_vanished(lab: &str) -> String {
    format!("练习目录 {lab} 不见了：它被删除或移走了，`check --watch` 就此停止")
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

/// A step row's label: its title, else its filter, else "all".
pub fn step_label(title: Option<&str>, filter: &str) -> String {
    match (title, filter) {
        (Some(title), _) => title.to_string(),
        (None, "") => "全部".to_string(),
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

pub fn cannot_write(path: &str) -> String {
    format!("无法写入 {path}")
}

pub fn cannot_read(folder: &str) -> String {
    format!("无法读取文件夹 {folder}")
}

/// The line above a compile error whose fix is a file not written yet.
pub fn error_in_new_file(teaching_file: &str, location: Option<&str>) -> String {
    let location = location.unwrap_or("（没有位置）");
    format!("→ 要新建 {teaching_file}（编译器指向 {location}）")
}

/// The lines above a compile error whose fix is in the crate root: the
/// declarations it lacks, as the chapter's end writes them (and the module
/// file to create as well, if any).
pub fn error_needs_declarations(
    crate_root: &str,
    declarations: &[String],
    new_file: Option<&str>,
    location: Option<&str>,
) -> String {
    let location = location.unwrap_or("（没有位置）");
    let create = new_file
        .map(|file| format!("新建 {file}，并"))
        .unwrap_or_default();
    let lines: Vec<String> = declarations
        .iter()
        .map(|line| format!("    {line}"))
        .collect();
    format!(
        "→ 要{create}在 {crate_root} 里声明它（编译器指向 {location}）。本章终点的 {crate_root} 这样写：\n{}",
        lines.join("\n")
    )
}

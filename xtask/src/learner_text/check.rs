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

pub fn suite_does_not_compile(errors: usize) -> String {
    format!(
        "✓ 聚焦测试和各个步骤都通过；✗ 练习目录里的其他测试（前面各章的）还不能编译（{errors} 个错误）：\n  \
         本章也改动前面各章写好的文件，别把它们的测试用到的东西改坏"
    )
}

/// The row of the lab's whole suite: green with how many passed (`reused`
/// when unchanged since it passed), or red with the `rerun` command.
pub fn suite_row(passed: usize, green: bool, reused: bool, rerun: Option<&str>) -> String {
    let title = "全部测试（含前面各章）";
    let rerun = rerun
        .map(|command| format!("\n  在练习目录里单独重跑失败的那个测试文件：{command}"))
        .unwrap_or_default();
    match (green, reused) {
        (true, false) => format!("{title} {passed}/{passed} ✓"),
        (true, true) => {
            format!("{title} {passed}/{passed} ✓（上次检查之后没有改动，沿用上次的结果）")
        }
        (false, _) => format!(
            "{title} ✗ 本章也改动前面各章写好的文件，它们的测试也要通过，本章才算完成{rerun}"
        ),
    }
}

pub fn first_failure_in_suite(name: &str) -> String {
    format!("第一个失败的测试（在全部测试里，可能是前面某一章的）：{name}")
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

/// A test file from the target, changed or gone; `restore` brings it back.
pub fn test_changed(test: &str, restore: &str) -> String {
    format!(
        "✗ {test} 和本章终点的版本不一样：测试被改过，结果不能算数。在课程仓库根目录运行这条命令恢复它：\n    {restore}"
    )
}

pub fn test_gone(test: &str, restore: &str) -> String {
    format!(
        "✗ {test} 不在练习目录里，这一步没有可运行的测试。在课程仓库根目录运行这条命令恢复它：\n    {restore}"
    )
}

/// `check --restore-tests` wrote the target's version of `test` back.
pub fn test_restored(test: &str) -> String {
    format!("已把 {test} 恢复成本章终点的版本")
}

pub fn cannot_restore_test(test: &str, why: &str) -> String {
    format!("没法把 {test} 写回练习目录（{why}）：修好它再运行")
}

/// `check --restore-tests` without the chapter's commits.
pub fn cannot_restore_tests(chapter: &str) -> String {
    format!(
        "这个仓库里找不到第 {chapter} 章的终点提交，没法恢复测试文件：先取回完整历史（`git fetch --unshallow`），\
         或者用 `cargo xtask practice {chapter} <新目录>` 建一个新的练习目录"
    )
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

/// A step row's label: its title, else its filters ("" is "all").
pub fn step_label(title: Option<&str>, filters: &[String]) -> String {
    if let Some(title) = title {
        return title.to_string();
    }
    let filters = filters.iter().map(|filter| match filter.as_str() {
        "" => "全部",
        filter => filter,
    });
    filters.collect::<Vec<_>>().join("、")
}

/// The mark of a step whose tests all stop at its own starter `todo!`.
pub const NOT_WRITTEN: &str = "还没写";

/// The mark of a step whose tests stop at other steps' starter `todo!`s.
pub fn steps_not_written(steps: &[String]) -> String {
    format!("{} 还没写", steps.join("、"))
}

/// Under the first failing test, when it stopped at a starter's `todo!`.
pub fn step_not_written_at(step: &str, at: Option<&str>) -> String {
    match at {
        Some(at) => format!("{step} 还没写：起始文件在 {at} 留下的 todo! 还等着你来写"),
        None => format!("{step} 还没写：起始文件留下的 todo! 还等着你来写"),
    }
}

/// Above a failing test's panic messages, quoted as the test printed them.
pub const FAILURE_OUTPUT: &str = "失败信息（测试输出的原文）：";

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

/// The lines above a compile error whose fix is a crate-root declaration.
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

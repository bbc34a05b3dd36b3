//! `compare`'s sentences: the side-by-side heading, how far each file is
//! from the answer, and its refusal while the chapter is not complete.

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

/// One line per teaching file: the lines only the learner's file has, how
/// many of those the starter gave, and the lines only the answer has.
pub fn compare_distance(
    path: &str,
    mine: Option<usize>,
    answer: usize,
    (removed, from_starter, added): (usize, usize, usize),
) -> String {
    let given = match from_starter {
        0 => String::new(),
        given => format!("（其中 {given} 行是起始文件给的）"),
    };
    match mine {
        None => format!("  ✗ {path}：练习目录里没有这个文件（参考答案 {answer} 行）"),
        Some(_) if removed == 0 && added == 0 => format!("  = {path}：和参考答案一字不差"),
        Some(mine) => format!(
            "  ≠ {path}：你的 {mine} 行，参考答案 {answer} 行；只在你这边的 {removed} 行{given}，只在参考答案里的 {added} 行"
        ),
    }
}

pub const COMPARE_CLOSING: &str =
    "参考答案只是一种写法：测试都通过了，你的写法就是对的。挑一两处不同，想想各自的取舍。";

/// The closing line when `--anyway` skipped check's verdict.
pub const COMPARE_CLOSING_ANYWAY: &str =
    "参考答案只是一种写法。你用了 --anyway，没有先确认本章完成：先让 check 报告完成，再回来对照。";

pub fn compare_refused(chapter: &str, lab: &str, verdict: &str) -> String {
    format!(
        "第 {chapter} 章在 {lab} 里还没有完成（{verdict}），所以 compare 先不给你看参考答案：\
         先自己做完，用 `cargo xtask check {chapter} {lab}` 确认。\
         一定要现在看，加上 --anyway：cargo xtask compare {chapter} {lab} --anyway"
    )
}

/// Why check does not call the chapter complete, from its report.
pub fn compare_verdict(
    passed: usize,
    expected: Option<usize>,
    red_steps: &[String],
    suite_failed: bool,
) -> String {
    match (passed, expected) {
        (passed, Some(expected)) if passed < expected => {
            format!("{passed}/{expected} 个聚焦测试通过")
        }
        _ if !red_steps.is_empty() => format!("步骤 {} 还没通过", red_steps.join("、")),
        _ if suite_failed => "练习目录里还有别的测试没通过，多半是前面各章的".to_string(),
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

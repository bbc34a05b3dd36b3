//! `checkpoint`'s report, and where a chapter starts and ends named by
//! what it is (the end of the chapter before it), which `practice` and the
//! guide's header say too.

use crate::checkpoint::{Report, Role};
use crate::manifest::{ChapterId, Mode};

/// Where chapter `id` starts, named by what it is: the end of the chapter
/// before it in the course's numbering (whether or not this kit ports it).
pub fn chapter_start(id: ChapterId) -> String {
    let number: u8 = id.to_string().parse().unwrap_or_default();
    match number.saturating_sub(1).to_string().parse() {
        Ok(previous) if number > 1 => end_of(previous),
        _ => "课程的初始代码".to_string(),
    }
}

/// The chapter's start commit `short`: the end of the chapter before, or
/// both when its learner code is not that end's (`previous_end`).
pub fn start_commit(id: ChapterId, short: &str, previous_end: Option<&str>) -> String {
    match previous_end {
        None => format!("{}，提交 {short}", chapter_start(id)),
        Some(end) => format!(
            "提交 {short}（不是{}的提交 {end}：两者的学习者代码不一样）",
            chapter_start(id)
        ),
    }
}

/// Where a practice folder starts: the chapter's start or (observe) its end.
pub fn practice_from(id: ChapterId, mode: Mode) -> String {
    match mode {
        Mode::Rebuild => chapter_start(id),
        Mode::Observe => end_of(id),
    }
}

/// "The end of chapter NN".
pub fn end_of(id: ChapterId) -> String {
    format!("第 {id} 章的终点")
}

/// `checkpoint`'s report, the diff (the answer) only after asking for a
/// prediction.
pub fn checkpoint_report(report: &Report<'_>) -> String {
    let id = report.id;
    let mode = match report.mode {
        Mode::Rebuild => "从起点开始，自己写出本章的代码",
        Mode::Observe => "从终点开始，阅读本章写好的代码",
    };
    let previous_end = report.previous_end.map(|end| end.short.as_str());
    let start_name = start_commit(id, &report.start.short, previous_end);
    // Which files the learner writes, which the lab gets as they are at
    // the end, and which never leave the repository.
    let groups = [
        (Role::Teaching, "你要写的（教学文件）"),
        (
            Role::Lab,
            "练习目录从终点直接拿到的（测试和终点另给的文件）",
        ),
        (
            Role::Repository,
            "只留在课程仓库里的（仓库自己的测试等，练习目录里没有）",
        ),
    ];
    let mut files = String::new();
    for (role, heading) in groups {
        let mine = report.files.iter().filter(|file| file.role == role);
        let lines: String = mine
            .map(|file| {
                let starter = if file.starter {
                    "（起始文件已开好头）"
                } else {
                    ""
                };
                format!("\n    {} {}{starter}", file.status, file.path)
            })
            .collect();
        if !lines.is_empty() {
            files.push_str(&format!("\n  {heading}：{lines}"));
        }
    }
    let (start, target, commands) = (report.start, report.target, &report.commands);
    format!(
        "第 {id} 章 · {title}（{mode}）\n  \
         起点：{start_name}\n        {start_id}\n  \
         终点：{end}，提交 {target_short}\n        {target_id}\n\n\
         本章改动 {count} 个文件：{files}\n\n\
         聚焦测试：{focused_test}\n\
         开始练习：{practice}\n\
         运行测试：在练习目录里 {run}\n\n\
         先预测，再看答案：上面这些文件各会加上什么、改掉什么？把你的预测写下来，\
         做完练习之后再对照。然后查看：\n  {diff}",
        title = report.title,
        start_id = start.id,
        end = end_of(id),
        target_short = target.short,
        target_id = target.id,
        count = report.files.len(),
        focused_test = report.focused_test,
        practice = commands.practice,
        run = commands.run,
        diff = commands.diff,
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
        assert_eq!(
            start_commit(id("03"), "abc", None),
            "第 02 章的终点，提交 abc"
        );
        let both = start_commit(id("03"), "abc", Some("def"));
        assert!(both.contains("abc") && both.contains("def"), "{both}");
    }
}

//! `hint`'s sentences: the ladder's rungs, the way to the next one, and a
//! missing or malformed hints file.

/// The rung names of the hint ladder, level 1 to 4.
pub const HINT_LEVELS: [&str; 4] = ["定位文件", "函数签名", "伪代码", "局部代码"];

/// `title`: the step's, from the manifest.
pub fn hint_heading(chapter: &str, step: &str, title: Option<&str>) -> String {
    match title {
        Some(title) => format!("第 {chapter} 章 · 步骤 {step}（{title}）的提示"),
        None => format!("第 {chapter} 章 · 步骤 {step} 的提示"),
    }
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
    format!("课程仓库里没有 {path}：这一章还没有提示，请告诉课程作者")
}

/// A hints file that does not parse (the parser's words are English: not shown).
pub fn hints_malformed(path: &str, line: usize) -> String {
    format!("课程仓库的 {path} 第 {line} 行格式不对：这是课程作者的文件，请告诉课程作者")
}

//! The lab folder a learner named (`check`, `compare`): not found, the
//! repository itself, not a lab, or missing its focused test.

/// The practice folders a learner may have meant, as a sentence, or "".
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

/// `restore` is the command that writes the target's copy back.
pub fn focused_test_missing(test: &str, restore: &str) -> String {
    format!(
        "✗ 聚焦测试 {test} 不在练习目录里，没有可运行的测试。在课程仓库根目录运行这条命令把它恢复回来：\n    {restore}"
    )
}

pub fn focused_test_missing_no_history(test: &str, chapter: &str) -> String {
    format!(
        "✗ 聚焦测试 {test} 不在练习目录里，没有可运行的测试。\
         这个仓库里找不到第 {chapter} 章的提交，无法直接恢复：先取回完整历史（`git fetch --unshallow`），\
         或者用 `cargo xtask practice {chapter} <新目录>` 建一个新的练习目录"
    )
}

/// The marker file `practice` leaves at a lab's root: a comment for the
/// learner, then the line the tools read.
pub fn lab_marker(chapter: &str) -> String {
    format!(
        "# 这个练习目录是 `cargo xtask practice {chapter}` 为第 {chapter} 章建的；\
         check 和 compare 靠下面这一行认出它属于哪一章，请不要改动。\n\
         chapter = \"{chapter}\"\n"
    )
}

/// A lab made for chapter `theirs`, named to a command of chapter `asked`.
pub fn lab_of_another_chapter(dir: &str, theirs: &str, asked: &str, command: &str) -> String {
    format!(
        "{dir} 是第 {theirs} 章的练习目录（见它的 .xtask-lab），不是第 {asked} 章的。\
         要看它的进度，运行 `{command}`；要练第 {asked} 章，先用 \
         `cargo xtask practice {asked} <新目录>` 建一个它自己的练习目录"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lab_with_no_other_labs_is_not_missing_twice() {
        let message = no_such_lab("lab", "03", "/course", &[]);
        assert_eq!(message.matches("根目录下").count(), 1, "{message}");
        let seen = no_such_lab("lab", "03", "/course", &["lab2".to_string()]);
        assert!(seen.contains("能看到的练习目录：lab2。"), "{seen}");
    }
}

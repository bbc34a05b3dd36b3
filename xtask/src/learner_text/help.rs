//! The help a learner reads, in Chinese, named by `cli.rs`'s attributes;
//! [`for_learner`] lays it out and marks the author commands.

use clap::{Arg, ArgAction, Command};

pub const ROOT: &str = "课程的检查点工具：找到一章、创建练习目录、检查进度、看提示、和参考答案对照";
pub const CHECKPOINT: &str = "找到一章的起点和终点：本章改动哪些文件，怎样练习";
pub const PRACTICE: &str =
    "创建独立的练习目录：起点的代码、聚焦测试和 LEARNING.md；没有历史，没有答案";
pub const CHECK: &str = "报告练习目录的进度：能不能编译，哪些步骤通过了，第一个失败的测试差在哪里；都通过后再跑一遍全部测试（含前面各章）";
pub const HINT: &str = "一级一级显示某个步骤的提示：1 定位文件，2 函数签名，3 伪代码，4 局部代码";
pub const COMPARE: &str = "本章在练习目录里完成之后：把你写的每个文件和参考答案（终点）对照";

pub const ID: &str = "章节编号，例如 03（或 3）";
pub const LAB: &str = "练习目录";
pub const NEW_LAB: &str = "要创建的文件夹：必须不存在，或者是空的";
pub const JSON: &str = "以 JSON 输出，给工具读";
pub const WATCH: &str = "每次保存后重新报告（轮询；Ctrl-C 停止）";
pub const VERBOSE: &str = "同时显示 cargo 的完整输出";
pub const RESTORE_TESTS: &str = "先把改过或缺少的测试文件恢复成本章终点的版本，再检查";
pub const STEP: &str = "步骤，例如 3.1（默认：本章的第一个步骤）";
pub const LEVEL: &str = "显示到第几级提示（1 到 4）";
pub const ANYWAY: &str = "本章还没完成也要对照";
/// `--timeout`, which learner and author commands share: its learner text.
const TIMEOUT: &str = "一次运行最多多少秒；超时就结束它启动的整个进程树";

/// The author commands (`cli::audience_of`) and their entries in the
/// learner's top-level list; every other command is a learner's.
const AUTHOR_ENTRIES: [(&str, &str); 4] = [
    (
        "list",
        "（作者用）列出 checkpoints/ 里的每一章，以及能不能找到它",
    ),
    (
        "verify",
        "（作者用）证明检查点可信：起点红、终点绿、每个步骤的数目、每个故障都被抓到",
    ),
    ("bench", "（作者用）测量这套工具和用户会选的替代做法"),
    ("recut", "（作者用）重新切出一章，并在上面重放后面的每一章"),
];

/// `command` laid out for a learner: Chinese headings, author commands marked.
pub fn for_learner(command: Command) -> Command {
    command
        .help_template(
            "{about}\n\n用法：{usage}\n\n命令：\n{subcommands}\n\n选项：\n{options}\n\n\
             一个命令的参数：cargo xtask 命令 --help",
        )
        .subcommand_value_name("命令")
        .disable_help_flag(true)
        .arg(help_flag())
        .mut_subcommands(|subcommand| {
            let name = subcommand.get_name();
            if let Some((_, entry)) = AUTHOR_ENTRIES.iter().find(|(author, _)| *author == name) {
                return subcommand.about(*entry);
            }
            subcommand
                .mut_args(in_chinese)
                .help_template(
                    "{about}\n\n用法：{usage}\n\n参数：\n{positionals}\n\n选项：\n{options}",
                )
                .disable_help_flag(true)
                .arg(help_flag())
        })
}

fn help_flag() -> Arg {
    Arg::new("help")
        .short('h')
        .long("help")
        .action(ArgAction::Help)
        .help("显示这份说明")
}

/// `arg` as a learner reads it: `--timeout`'s help, a default value said in
/// Chinese instead of clap's "[default: …]".
fn in_chinese(arg: Arg) -> Arg {
    let arg = match arg.get_id().as_str() {
        "secs" => arg.help(TIMEOUT),
        _ => arg,
    };
    match arg.get_default_values() {
        [default] if arg.get_action().takes_values() => {
            let text = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let text = format!("{text}（默认 {}）", default.to_string_lossy());
            arg.help(text).hide_default_value(true)
        }
        _ => arg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_author_command_has_its_entry() {
        let command = crate::cli::command_for(crate::learner_text::Audience::Author);
        let authors: Vec<&str> = command
            .get_subcommands()
            .map(|subcommand| subcommand.get_name())
            .filter(|name| crate::cli::audience_of(name) == crate::learner_text::Audience::Author)
            .collect();
        let entries: Vec<&str> = AUTHOR_ENTRIES.iter().map(|(name, _)| *name).collect();
        assert_eq!(authors, entries);
    }
}

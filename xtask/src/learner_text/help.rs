//! The help of the learner commands, in the course's language. clap renders
//! help from `cli.rs`'s doc comments (English, for authors); for a learner
//! command, [`translate_help`] puts the Chinese texts below in their place
//! before the arguments are read, headings included.

use clap::{Arg, ArgAction, Command};

/// What a learner command does, and the help of each of its arguments (by
/// clap's argument id: the field name).
struct Help {
    command: &'static str,
    about: &'static str,
    args: &'static [(&'static str, &'static str)],
}

const ID: (&str, &str) = ("id", "章节编号，例如 03（或 3）");
const LAB: (&str, &str) = ("dir", "练习目录");
const TIMEOUT: (&str, &str) = ("secs", "一次运行最多多少秒；超时就结束它启动的整个进程树");

const LEARNER_HELP: [Help; 5] = [
    Help {
        command: "checkpoint",
        about: "找到一章的起点和终点：本章改动哪些文件，怎样练习",
        args: &[ID, ("json", "以 JSON 输出，给工具读")],
    },
    Help {
        command: "practice",
        about: "创建独立的练习目录：起点的代码、聚焦测试和 LEARNING.md；没有历史，没有答案",
        args: &[ID, ("dir", "要创建的文件夹：必须不存在，或者是空的")],
    },
    Help {
        command: "check",
        about: "报告练习目录的进度：能不能编译，哪些步骤通过了，第一个失败的测试差在哪里",
        args: &[
            ID,
            LAB,
            ("watch", "每次保存后重新报告（轮询；Ctrl-C 停止）"),
            ("verbose", "同时显示 cargo 的完整输出"),
            ("json", "以 JSON 输出报告"),
            TIMEOUT,
        ],
    },
    Help {
        command: "hint",
        about: "一级一级显示某个步骤的提示：1 定位文件，2 函数签名，3 伪代码，4 局部代码",
        args: &[
            ID,
            ("step", "步骤，例如 3.1（默认：本章的第一个步骤）"),
            ("level", "显示到第几级提示（1 到 4）"),
        ],
    },
    Help {
        command: "compare",
        about: "本章在练习目录里完成之后：把你写的每个文件和参考答案（终点）对照",
        args: &[ID, LAB, ("anyway", "本章还没完成也要对照"), TIMEOUT],
    },
];

/// How a learner command's help is laid out: clap's layout, Chinese headings.
const TEMPLATE: &str = "{about}\n\n用法：{usage}\n\n参数：\n{positionals}\n\n选项：\n{options}";

/// `command` with the learner subcommand `name`'s help in Chinese (any
/// other name: unchanged).
pub fn translate_help(command: Command, name: &str) -> Command {
    let Some(help) = LEARNER_HELP.iter().find(|help| help.command == name) else {
        return command;
    };
    command.mut_subcommand(name, |subcommand| {
        let translated = help.args.iter().fold(subcommand, |subcommand, (id, text)| {
            subcommand.mut_arg(*id, |arg| translated_arg(arg, text))
        });
        translated
            .about(help.about)
            .long_about(None)
            .help_template(TEMPLATE)
            .disable_help_flag(true)
            .arg(
                Arg::new("help")
                    .short('h')
                    .long("help")
                    .action(ArgAction::Help)
                    .help("显示这份说明"),
            )
    })
}

/// `arg` with the help `text`, its default value (if any) said in Chinese
/// instead of clap's "[default: …]".
fn translated_arg(arg: Arg, text: &str) -> Arg {
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| value.to_string_lossy().into_owned())
        .collect();
    if defaults.is_empty() || !arg.get_action().takes_values() {
        return arg.help(text.to_string());
    }
    arg.help(format!("{text}（默认 {}）", defaults.join("、")))
        .hide_default_value(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_learner_command_and_argument_is_translated() {
        let mut command = crate::cli::command_for(crate::learner_text::Audience::Author, "");
        command.build();
        for help in &LEARNER_HELP {
            let subcommand = command.find_subcommand(help.command).unwrap();
            let ids: Vec<&str> = subcommand
                .get_arguments()
                .map(|arg| arg.get_id().as_str())
                .filter(|id| *id != "help")
                .collect();
            let translated: Vec<&str> = help.args.iter().map(|(id, _)| *id).collect();
            assert_eq!(ids, translated, "{}", help.command);
        }
    }

    #[test]
    fn a_learner_commands_help_is_chinese() {
        for help in &LEARNER_HELP {
            let mut command =
                crate::cli::command_for(crate::learner_text::Audience::Learner, help.command);
            command.build();
            let rendered = command
                .find_subcommand_mut(help.command)
                .unwrap()
                .render_help()
                .to_string();
            assert!(rendered.contains(help.about), "{rendered}");
            for english in [
                "Usage:",
                "Options:",
                "Arguments:",
                "Print help",
                "Chapter id",
                "default",
            ] {
                assert!(!rendered.contains(english), "{english} in {rendered}");
            }
        }
    }
}

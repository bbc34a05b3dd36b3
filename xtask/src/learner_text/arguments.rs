//! clap's argument errors: a learner's rendered in the learner's language
//! from clap's error kind and context, an author's as clap writes them.

use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::for_learner;

/// What clap found wrong with the arguments, without "error: "; `command` is
/// the subcommand typed, `usage` its usage line.
pub fn argument_error(error: &clap::Error, command: Option<&str>, usage: &str) -> String {
    if !for_learner() {
        let rendered = error.render().to_string();
        return rendered
            .trim_start_matches("error: ")
            .trim_end()
            .to_string();
    }
    let strings = |kind| match error.get(kind) {
        Some(ContextValue::String(value)) => vec![value.clone()],
        Some(ContextValue::Strings(values)) => values.clone(),
        Some(other) => vec![other.to_string()],
        None => Vec::new(),
    };
    let text = |kind| strings(kind).join("、");
    let arg = text(ContextKind::InvalidArg);
    let value = text(ContextKind::InvalidValue);
    let whose = command.unwrap_or("cargo xtask");
    let what = match error.kind() {
        ErrorKind::InvalidSubcommand => {
            let typed = text(ContextKind::InvalidSubcommand);
            match strings(ContextKind::SuggestedSubcommand).join("` 或 `") {
                suggested if suggested.is_empty() => format!("没有 `{typed}` 这个命令"),
                suggested => format!("没有 `{typed}` 这个命令，你想写的也许是 `{suggested}`"),
            }
        }
        ErrorKind::MissingSubcommand => "缺少命令".to_string(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => {
            let rule = match arg.split_whitespace().next().unwrap_or_default() {
                "<ID>" => "：章号是一到两位数字，例如 03",
                "--level" => {
                    "：提示级别是 1 到 4 的整数：1 定位文件，2 函数签名，3 伪代码，4 局部代码"
                }
                "--timeout" => "：超时是大于 0 的整数秒数，例如 600",
                _ => "",
            };
            if value.is_empty() {
                format!("参数 {arg} 缺少值{rule}")
            } else {
                format!("参数 {arg} 不接受 `{value}`{rule}")
            }
        }
        ErrorKind::ArgumentConflict if text(ContextKind::PriorArg) == arg => {
            format!("参数 {arg} 只能写一次")
        }
        ErrorKind::ArgumentConflict => format!("参数 {arg} 不能和前面的参数一起用"),
        ErrorKind::InvalidUtf8 => "参数里有不是 UTF-8 的字符".to_string(),
        ErrorKind::MissingRequiredArgument => format!("缺少参数 {arg}"),
        ErrorKind::UnknownArgument => {
            let suggested = text(ContextKind::SuggestedArg);
            if suggested.is_empty() {
                format!("{whose} 不认识参数 `{arg}`")
            } else {
                format!("{whose} 不认识参数 `{arg}`，你想写的也许是 `{suggested}`")
            }
        }
        _ => format!("{whose} 的参数不对"),
    };
    let full = command.map_or_else(String::new, |command| format!(" {command}"));
    format!("{what}\n\n用法：{usage}\n完整说明：cargo xtask{full} --help")
}

//! **starter** (README, "verify's proofs"): the lab as `practice` writes it,
//! plus the target's teaching files the starter leaves out, builds; each
//! step's run fails at a starter's `todo!` of that step or an earlier one;
//! and no target function body appears in a starter file, whitespace aside
//! (one-line bodies and [`builds_a_value`] ones are exempt). Bodies are read
//! line by line from rustfmt's layout: a miss only weakens the proof.

use std::path::Path;

use super::Chapter;
use super::leak::without_whitespace;
use super::work::Work;
use crate::error::{Error, Result};
use crate::libtest;
use crate::manifest::{self, Manifest, Mode};
use crate::safe_fs;
use crate::tree;

/// The lab with the starter builds, is red step by step at the starter's
/// `todo!`s, and holds no body of the answer.
pub(super) fn starter(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = &chapter.manifest;
    let rebuild = Manifest {
        mode: Mode::Rebuild,
        ..manifest.clone()
    };
    let dir = work.lab(chapter, "starter", &rebuild, &chapter.handout)?;
    let tree = work.repo.tree_of(chapter.checkpoint.target.oid)?;
    let starter = &chapter.handout.starter;
    for teaching in &manifest.teaching_files {
        if starter.iter().all(|(file, _)| file != teaching) {
            let content = tree::file_at(&work.repo.git, &tree, teaching.as_str())?;
            let path = Path::new(teaching.as_str());
            safe_fs::write_inside(&dir, path, &content.unwrap_or_default(), 0o644)?;
        }
    }
    let build = ["cargo", "test", "--workspace", "--no-run"].map(String::from);
    work.passing(chapter, "starter", &dir, &build)
        .map_err(|error| error.context("the lab with the starter does not build"))?;
    let order: Vec<&str> = manifest
        .step_groups()
        .iter()
        .map(|group| group.id)
        .collect();
    let mut problems = Vec::new();
    for step in &manifest.steps {
        let mut command = step.run(manifest).to_vec();
        if !step.filter.is_empty() {
            command.push(step.filter.clone());
        }
        let run = work.run(chapter, "starter", &dir, &command)?;
        let report = libtest::parse(&run.output);
        let known = &order[..=order.iter().position(|id| *id == step.id).unwrap_or(0)];
        // Each failure stops at a todo of this step or an earlier one.
        let stray: Vec<String> = (report.failed.iter())
            .filter(|failure| {
                let named = failure.unwritten();
                named.is_empty() || named.iter().any(|u| !known.contains(&u.step.as_str()))
            })
            .map(|failure| format!("`{}`", failure.name))
            .collect();
        let what = if run.success {
            "passes".to_string()
        } else if report.failed.is_empty() {
            "fails without a failing test".to_string()
        } else if !stray.is_empty() {
            format!("fails elsewhere than at a todo in {}", stray.join(", "))
        } else {
            continue;
        };
        problems.push(format!(
            "`{}` {what} with the starter: its tests must stop at a starter's \
             `todo!(\"Lab N.M … 尚未实现\")` of step {} or an earlier one",
            command.join(" "),
            manifest::shown(&step.id)
        ));
    }
    problems.extend(copied_bodies(work, chapter)?);
    if !problems.is_empty() {
        return Err(Error::check_failed(problems.join("; ")));
    }
    Ok(format!(
        "{} starter file(s) build; {} step run(s) red, each at a todo! of its step or an earlier one; no body of the answer",
        starter.len(),
        manifest.steps.len()
    ))
}

/// Each target function body (not exempt) that a starter file holds,
/// whitespace aside.
fn copied_bodies(work: &Work, chapter: &Chapter) -> Result<Vec<String>> {
    let tree = work.repo.tree_of(chapter.checkpoint.target.oid)?;
    let mut problems = Vec::new();
    for teaching in &chapter.manifest.teaching_files {
        let source = tree::file_at(&work.repo.git, &tree, teaching.as_str())?.unwrap_or_default();
        let bodies = fn_bodies(&String::from_utf8_lossy(&source)).into_iter();
        for (name, body) in bodies.filter(|(_, body)| !builds_a_value(body)) {
            let body = String::from_utf8_lossy(&without_whitespace(body.as_bytes())).into_owned();
            for (file, content) in &chapter.handout.starter {
                if String::from_utf8_lossy(&without_whitespace(content)).contains(&body) {
                    problems.push(format!(
                        "the starter's {file} holds the body of `fn {name}` of {teaching} at the \
                         target: leave it `todo!(\"Lab N.M … 尚未实现\")`"
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// The name and body of every multi-line `fn` of a rustfmt-formatted `source`.
fn fn_bodies(source: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut bodies = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let Some(name) = fn_name(code) else {
            continue;
        };
        let indent = &line[..line.len() - code.len()];
        // The signature ends on the first line at its indentation that
        // ends with `{` (a body follows) or `;` or `}` (none, or one line).
        let at_indent = |line: &&str| {
            line.strip_prefix(indent)
                .is_some_and(|rest| !rest.starts_with(char::is_whitespace))
        };
        let end_of_signature = (lines[at..].iter().enumerate())
            .filter(|(offset, line)| *offset == 0 || at_indent(line))
            .find(|(_, line)| line.ends_with(['{', ';', '}']));
        let Some((offset, signature)) = end_of_signature else {
            continue;
        };
        if !signature.ends_with('{') {
            continue;
        }
        let open = at + offset;
        let close = format!("{indent}}}");
        let Some(end) = (open + 1..lines.len()).find(|&index| lines[index] == close) else {
            continue;
        };
        if end - open > 2 {
            bodies.push((name, lines[open + 1..end].join("\n")));
        }
    }
    bodies
}

/// True when `body` has no branch, loop, closure, `?` or `return`.
fn builds_a_value(body: &str) -> bool {
    let logic = ["if", "match", "for", "while", "loop", "return"];
    let mut words = body.split(|c: char| !(c.is_alphanumeric() || c == '_'));
    !body.contains(['|', '?']) && !body.contains("=>") && !words.any(|w| logic.contains(&w))
}

/// The name of the `fn` a line's signature declares.
fn fn_name(code: &str) -> Option<String> {
    let (before, after) = code.split_once("fn ")?;
    let qualifier = |word: &str| {
        word.starts_with("pub") || ["const", "async", "unsafe", "extern", "\"C\""].contains(&word)
    };
    if !before.split_whitespace().all(qualifier) || !(before.is_empty() || before.ends_with(' ')) {
        return None;
    }
    let name: String = after
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_of_more_than_one_line_are_read_from_rustfmts_layout() {
        let source = "pub fn short(&self) -> &str {\n    &self.name\n}\n\n\
            impl Tool {\n    pub(crate) async fn run(\n        &self,\n        input: u8,\n    ) -> u8 {\n        \
            let doubled = input * 2;\n        doubled + 1\n    }\n\n    fn declared(&self);\n\n    \
            fn one_line(&self) -> u8 { 1 }\n\n    fn bounded<T>(t: T) -> T\n    where\n        T: Copy,\n    {\n        \
            let copy = t;\n        copy\n    }\n}\n// fn not_code() {\nlet x = \"fn quoted() {\";\n";
        let bodies = fn_bodies(source);
        let names: Vec<&str> = bodies.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["run", "bounded"]);
        assert_eq!(
            bodies[0].1,
            "        let doubled = input * 2;\n        doubled + 1"
        );
        assert_eq!(fn_name("pub const unsafe fn x() {"), Some("x".to_string()));
        assert!(builds_a_value(
            "Options {\n    cwd: cwd.into(),\n    limit: LIMIT,\n}"
        ));
        assert!(builds_a_value(
            "object_schema(vec![\n    (\"path\", string_value()),\n])"
        ));
        assert!(builds_a_value("let pair = json!({});\nSchema { pair }"));
        for logic in [
            "let x = f()?;\nx",
            "a.iter().map(|x| x)",
            "if a {\n b\n} else {\n c\n}",
        ] {
            assert!(!builds_a_value(logic), "{logic}");
        }
        assert_eq!(fn_name("// fn x() {"), None);
        assert_eq!(fn_name("let f = |x| x; fn_call();"), None);
    }
}

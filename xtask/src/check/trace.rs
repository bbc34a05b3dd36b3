//! Which teaching file a compile error's fix goes to: the first teaching
//! file among the error's primary span, its other spans and its notes'
//! spans; else the module the lab's tests import a named item from
//! (`use course::types::{SystemMessage, …}`); else, for a name the tests
//! cannot find, the crate root, which exports it.

use std::path::Path;

use crate::libtest::CompileError;
use crate::manifest::{Manifest, RepoPath};
use crate::safe_fs;

/// The paths the lab's test files import from the course crate.
pub(super) fn imports(manifest: &Manifest, lab: &Path) -> Vec<Vec<String>> {
    manifest
        .lab_tests()
        .into_iter()
        .filter_map(|test| safe_fs::read_inside(lab, Path::new(test.as_str())).ok()?)
        .flat_map(|source| course_imports(&String::from_utf8_lossy(&source)))
        .collect()
}

/// The teaching file where the fix for `error` goes (see the module doc).
pub(super) fn teaching_file_for<'a>(
    error: &CompileError,
    teaching: &'a [RepoPath],
    imports: &[Vec<String>],
) -> Option<&'a RepoPath> {
    let by_path = |file: &str| teaching.iter().find(|path| path.as_str() == file);
    if let Some(found) = error.files.iter().find_map(|file| by_path(file)) {
        return Some(found);
    }
    let stem = |path: &RepoPath| {
        let path = Path::new(path.as_str());
        let stem = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned());
        match stem.as_deref() {
            // `types/mod.rs` is module `types`.
            Some("mod") => path
                .parent()
                .and_then(Path::file_name)
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            _ => stem.unwrap_or_default(),
        }
    };
    let module_file = |module: &str| {
        teaching
            .iter()
            .find(|path| stem(path) == module && module != "lib")
    };
    let named: Vec<&str> = error
        .message
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|quoted| quoted.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| !word.is_empty())
        .collect();
    // A module named in the message (`course::types`), then the module the
    // tests import a named item from.
    if let Some(found) = named.iter().find_map(|word| module_file(word)) {
        return Some(found);
    }
    for word in &named {
        let from = imports
            .iter()
            .filter(|path| path.last().is_some_and(|last| last == word))
            .find_map(|path| module_file(path.first()?));
        if from.is_some() {
            return from;
        }
    }
    // Anything else the tests can't find is the crate root's to export.
    let unresolved = ["unresolved import", "cannot find", "failed to resolve"]
        .iter()
        .any(|start| error.message.starts_with(start));
    unresolved
        .then(|| teaching.iter().find(|path| stem(path) == "lib"))
        .flatten()
}

/// Every path a `use course::…;` item of `source` imports, as its segments
/// after `course` (an alias replaces the last one): `use course::types::{A,
/// b::C as D};` gives `[types, A]` and `[types, b, D]`.
fn course_imports(source: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (at, _) in source.match_indices("use course::") {
        let rest = &source[at + "use course::".len()..];
        let item = rest.split(';').next().unwrap_or_default();
        let tokens = use_tokens(item);
        let mut position = 0;
        use_tree(&tokens, &mut position, Vec::new(), &mut paths);
    }
    paths
}

fn use_tokens(item: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in item.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if matches!(c, '{' | '}' | ',' | '*') {
            tokens.push(c.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// Reads one use tree from `tokens` (`::` already dropped: segments follow
/// each other) into `paths`.
fn use_tree(tokens: &[String], at: &mut usize, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    while let Some(token) = tokens.get(*at) {
        match token.as_str() {
            "{" => {
                *at += 1;
                while tokens.get(*at).is_some_and(|token| token != "}") {
                    use_tree(tokens, at, path.clone(), paths);
                    if tokens.get(*at).is_some_and(|token| token == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "}" | "," => break,
            "as" => {
                *at += 1;
                if let Some(alias) = tokens.get(*at) {
                    path.pop();
                    path.push(alias.clone());
                    *at += 1;
                }
            }
            word => {
                path.push(word.to_string());
                *at += 1;
            }
        }
    }
    if !path.is_empty() {
        paths.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn course_imports_are_flattened_with_groups_and_aliases() {
        let source = "use std::fmt;\nuse course::types::{\n    SystemMessage, wire::{Tag as T, Other},\n};\nuse course::assistant_stream::Stream;\nuse course::text_of;\n";
        assert_eq!(
            course_imports(source),
            [
                vec!["types", "SystemMessage"],
                vec!["types", "wire", "T"],
                vec!["types", "wire", "Other"],
                vec!["assistant_stream", "Stream"],
                vec!["text_of"],
            ]
        );
    }

    fn teaching() -> Vec<RepoPath> {
        [
            "course/src/types.rs",
            "course/src/assistant_stream.rs",
            "course/src/lib.rs",
        ]
        .map(|path| RepoPath::try_from(path.to_string()).unwrap())
        .to_vec()
    }

    fn error(message: &str, files: &[&str]) -> CompileError {
        CompileError {
            message: message.to_string(),
            location: None,
            help: Vec::new(),
            rendered: String::new(),
            files: files.iter().map(|file| file.to_string()).collect(),
        }
    }

    #[test]
    fn an_error_goes_to_its_first_teaching_file_then_the_imported_module_then_lib() {
        let teaching = teaching();
        let imports = course_imports("use course::types::{SystemMessage, Usage};\n");
        let at = |error: &CompileError| {
            teaching_file_for(error, &teaching, &imports).map(RepoPath::as_str)
        };
        let test = "course/tests/message_ir.rs";
        assert_eq!(
            at(&error(
                "`Rc<u8>` cannot be sent",
                &[test, "course/src/assistant_stream.rs"]
            )),
            Some("course/src/assistant_stream.rs"),
            "a child note's span in a teaching file"
        );
        assert_eq!(
            at(&error(
                "field `timestamp` of struct `SystemMessage` is private",
                &[test]
            )),
            Some("course/src/types.rs"),
            "the module the test imports the named item from"
        );
        assert_eq!(
            at(&error("unresolved import `course::types`", &[test])),
            Some("course/src/types.rs")
        );
        assert_eq!(
            at(&error("unresolved import `course::Missing`", &[test])),
            Some("course/src/lib.rs")
        );
        assert_eq!(at(&error("mismatched types", &[test])), None);
    }
}

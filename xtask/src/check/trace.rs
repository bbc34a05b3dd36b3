//! Which teaching file a compile error's fix goes to: a missing crate-root
//! declaration the target has; an unresolved import's module; the first
//! teaching file among its spans; a module the message names; the module
//! the tests import the item from; else the crate root.

use std::path::Path;

use serde::Serialize;

use crate::libtest::CompileError;
use crate::locate;
use crate::manifest::{Manifest, RepoPath};
use crate::repo::CourseRepo;
use crate::safe_fs;
use crate::tree;

/// Where the compile errors' fixes go in one lab.
pub(super) struct Tracer<'m> {
    teaching: &'m [RepoPath],
    lab: &'m Path,
    crate_root: Option<CrateRoot<'m>>,
    /// The words of each `use course::…;` of the lab's tests, the module
    /// first: `use course::types::{A, B};` gives `[types, A, B]`.
    imports: Vec<Vec<String>>,
}

/// The crate root among the teaching files (`…/lib.rs`), with its
/// declarations at the target and in the lab.
struct CrateRoot<'m> {
    path: &'m RepoPath,
    target: Vec<Declaration>,
    lab: Vec<Declaration>,
}

/// A top-level `mod NAME;` or `use PATH;` of a crate root, on a line of its
/// own as rustfmt writes a simple one.
#[derive(Debug, PartialEq, Eq)]
struct Declaration {
    /// The line as written, e.g. `pub use block_on::block_on;`.
    text: String,
    /// `pub`: seen from the tests.
    public: bool,
    is_mod: bool,
    /// The path's words without a leading `crate`/`self`.
    path: Vec<String>,
}

impl Declaration {
    /// The module whose file holds what this declares.
    fn module(&self) -> Option<&String> {
        self.path
            .first()
            .filter(|_| self.is_mod || self.path.len() > 1)
    }
}

/// Where a compile error's fix goes.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Advice {
    /// The teaching file where the fix goes.
    pub(super) teaching_file: Option<String>,
    /// True when that file is not in the lab yet: it is to be made.
    pub(super) teaching_file_missing: bool,
    /// The declarations of the target's crate root the lab's lacks, to add
    /// to `teachingFile` (the crate root), as the target writes them.
    pub(super) declarations: Vec<String>,
    /// A module file those declarations need that the lab lacks too.
    pub(super) new_file: Option<String>,
}

impl<'m> Tracer<'m> {
    /// Reads the lab's tests and crate root, and the target's crate root.
    pub(super) fn new(repo: &CourseRepo, manifest: &'m Manifest, lab: &'m Path) -> Self {
        let read = |path: &RepoPath| {
            let source = safe_fs::read_inside(lab, Path::new(path.as_str())).ok()??;
            Some(String::from_utf8_lossy(&source).into_owned())
        };
        let imports = manifest
            .lab_tests()
            .into_iter()
            .filter_map(&read)
            .flat_map(|source| course_imports(&source))
            .collect();
        let crate_root = manifest
            .teaching_files
            .iter()
            .find(|path| stem(path) == "lib")
            .and_then(|path| {
                let checkpoint = locate::locate(&repo.git, manifest.id).ok()?;
                let target_tree = repo.tree_of(checkpoint.target.oid).ok()?;
                let target = tree::file_at(&repo.git, &target_tree, path.as_str()).ok()??;
                Some(CrateRoot {
                    path,
                    target: declarations(&String::from_utf8_lossy(&target)),
                    lab: declarations(&read(path).unwrap_or_default()),
                })
            });
        Tracer {
            teaching: &manifest.teaching_files,
            lab,
            crate_root,
            imports,
        }
    }

    /// Where the fix for `error` goes (see the module doc).
    pub(super) fn advice(&self, error: &CompileError) -> Advice {
        if let Some(advice) = self
            .crate_root
            .as_ref()
            .and_then(|root| self.declare(root, error))
        {
            return advice;
        }
        let file = self.teaching_file(error);
        Advice {
            teaching_file: file.map(RepoPath::to_string),
            teaching_file_missing: file.is_some_and(|file| self.missing(file)),
            ..Advice::default()
        }
    }

    /// The fix when `error` is about a module or item the target's crate
    /// root declares and the lab lacks it or its file.
    fn declare(&self, root: &CrateRoot<'_>, error: &CompileError) -> Option<Advice> {
        // rustc pointing into another teaching file knows better.
        let elsewhere = error.files.iter().any(|file| {
            file != root.path.as_str() && self.teaching.iter().any(|path| path.as_str() == file)
        });
        if elsewhere {
            return None;
        }
        let named = named_words(&error.message);
        // The declarations of a module or item the error names, and the
        // `mod` each such `use` needs.
        let touched: Vec<&Declaration> = root
            .target
            .iter()
            .filter(|declaration| {
                [declaration.path.first(), declaration.path.last()]
                    .into_iter()
                    .flatten()
                    .any(|name| named.contains(&name.as_str()))
            })
            .collect();
        let relevant: Vec<&Declaration> = root
            .target
            .iter()
            .filter(|declaration| {
                touched.contains(declaration)
                    || declaration.is_mod
                        && touched
                            .iter()
                            .any(|use_| use_.module() == declaration.module())
            })
            .collect();
        let new_file = relevant
            .iter()
            .filter_map(|declaration| self.module_file(declaration.module()?))
            .find(|file| self.missing(file))
            .map(RepoPath::to_string);
        let declarations: Vec<String> = relevant
            .into_iter()
            .filter(|declaration| {
                !root.lab.iter().any(|mine| {
                    (mine.is_mod, &mine.path) == (declaration.is_mod, &declaration.path)
                        && (mine.public || !declaration.public)
                })
            })
            .map(|declaration| declaration.text.clone())
            .collect();
        if !declarations.is_empty() {
            return Some(Advice {
                teaching_file: Some(root.path.to_string()),
                declarations,
                new_file,
                ..Advice::default()
            });
        }
        new_file.map(|file| Advice {
            teaching_file: Some(file),
            teaching_file_missing: true,
            ..Advice::default()
        })
    }

    /// The teaching file for `error` (see the module doc).
    fn teaching_file(&self, error: &CompileError) -> Option<&'m RepoPath> {
        let teaching = self.teaching;
        let named = named_words(&error.message);
        let unresolved = ["unresolved import", "cannot find", "failed to resolve"]
            .iter()
            .any(|start| error.message.starts_with(start));
        // An import of an item a module lacks is fixed in that module (a
        // starter's `use crate::types::ToolDefinition;` waits on `types.rs`).
        let lacking = (error.message.starts_with("unresolved import"))
            .then(|| named.iter().find_map(|word| self.module_file(word)))
            .flatten();
        lacking
            .or_else(|| {
                let mut files = error.files.iter();
                files.find_map(|file| teaching.iter().find(|path| path.as_str() == file))
            })
            .or_else(|| named.iter().find_map(|word| self.module_file(word)))
            .or_else(|| {
                named.iter().find_map(|word| {
                    self.imports
                        .iter()
                        .filter(|import| import.iter().any(|name| name == word))
                        .find_map(|import| self.module_file(&import[0]))
                })
            })
            .or_else(|| {
                unresolved
                    .then(|| teaching.iter().find(|path| stem(path) == "lib"))
                    .flatten()
            })
    }

    /// The teaching file of module `module` (never the crate root).
    fn module_file(&self, module: &str) -> Option<&'m RepoPath> {
        self.teaching
            .iter()
            .find(|path| stem(path) == module && module != "lib")
    }

    fn missing(&self, file: &RepoPath) -> bool {
        safe_fs::read_inside(self.lab, Path::new(file.as_str())).is_ok_and(|found| found.is_none())
    }
}

/// A teaching file's name without `.rs`: its module.
fn stem(path: &RepoPath) -> &str {
    let stem = Path::new(path.as_str()).file_stem();
    stem.and_then(|stem| stem.to_str()).unwrap_or_default()
}

/// The identifiers inside the backquoted parts of a compiler message.
fn named_words(message: &str) -> Vec<&str> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(words)
        .collect()
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
}

/// The words of every `use course::…;` of `source` ([`Tracer::imports`]).
fn course_imports(source: &str) -> Vec<Vec<String>> {
    source
        .match_indices("use course::")
        .map(|(at, found)| {
            let item = source[at + found.len()..].split(';').next();
            words(item.unwrap_or_default())
                .filter(|word| !matches!(*word, "as" | "self"))
                .map(String::from)
                .collect()
        })
        .filter(|import: &Vec<String>| !import.is_empty())
        .collect()
}

/// The crate root's declarations (see [`Declaration`]).
fn declarations(source: &str) -> Vec<Declaration> {
    let declaration = |line: &str| {
        let text = line.split("//").next().unwrap_or_default().trim_end();
        let item = text.strip_prefix("pub ").unwrap_or(text);
        let is_mod = item.starts_with("mod ");
        let path = words(item)
            .skip(1)
            .filter(|word| !matches!(*word, "crate" | "self"))
            .map(String::from)
            .collect();
        ((is_mod || item.starts_with("use ")) && text.ends_with(';')).then(|| Declaration {
            text: text.to_string(),
            public: item.len() < text.len(),
            is_mod,
            path,
        })
    };
    source.lines().filter_map(declaration).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn course_imports_are_the_words_of_each_use_course_item() {
        let source = "use std::fmt;\nuse course::types::{\n    SystemMessage, Tag as T,\n};\nuse course::assistant_stream::Stream;\nuse course::text_of;\n";
        assert_eq!(
            course_imports(source),
            [
                vec!["types", "SystemMessage", "Tag", "T"],
                vec!["assistant_stream", "Stream"],
                vec!["text_of"],
            ]
        );
    }

    #[test]
    fn a_crate_roots_declarations_are_its_top_level_mod_and_use_lines() {
        let source = "//! Docs: `mod fake;` in a comment.\n\
            pub mod event_stream;\n\
            #[doc(hidden)]\nmod block_on;\npub use crate::block_on::block_on;\n\
            fn helper() { use std::fmt; }\n\
            #[cfg(test)]\nmod tests {\n    use super::*;\n}\n\
            pub mod types; // the message IR\n";
        let found: Vec<(String, bool, bool, Vec<String>)> = declarations(source)
            .into_iter()
            .map(|d| (d.text, d.public, d.is_mod, d.path))
            .collect();
        let path = |segments: &[&str]| segments.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            found,
            [
                (
                    "pub mod event_stream;".into(),
                    true,
                    true,
                    path(&["event_stream"])
                ),
                ("mod block_on;".into(), false, true, path(&["block_on"])),
                (
                    "pub use crate::block_on::block_on;".into(),
                    true,
                    false,
                    path(&["block_on", "block_on"])
                ),
                ("pub mod types;".into(), true, true, path(&["types"])),
            ]
        );
    }

    fn error(message: &str, files: &[&str]) -> CompileError {
        CompileError {
            message: message.to_string(),
            location: None,
            rendered: String::new(),
            files: files.iter().map(|file| file.to_string()).collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn an_error_goes_to_its_first_teaching_file_then_the_imported_module_then_lib() {
        let teaching = [
            "course/src/types.rs",
            "course/src/assistant_stream.rs",
            "course/src/lib.rs",
        ]
        .map(|path| RepoPath::try_from(path.to_string()).unwrap());
        let tracer = Tracer {
            teaching: &teaching,
            lab: Path::new("/nonexistent"),
            crate_root: None,
            imports: course_imports("use course::types::{SystemMessage, Usage};\n"),
        };
        let at = |error: &CompileError| tracer.teaching_file(error).map(RepoPath::as_str);
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
        assert_eq!(
            at(&error(
                "unresolved import `crate::types::ToolDefinition`",
                &["course/src/assistant_stream.rs"]
            )),
            Some("course/src/types.rs"),
            "an import a module lacks is fixed in that module"
        );
    }
}

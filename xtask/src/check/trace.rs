//! Which teaching file a compile error's fix goes to: the first teaching
//! file among the error's primary span, its other spans and its notes'
//! spans; else the module the lab's tests import a named item from
//! (`use course::types::{SystemMessage, …}`); else, for a name the tests
//! cannot find, the crate root, which exports it.
//!
//! A module or item the error names that the target's crate root declares
//! (`mod block_on;`, `pub use block_on::block_on;`) comes first
//! ([`CrateRoot::advice`]): when the lab's crate root lacks one of those
//! declarations the fix goes there, quoted from the target; when they are
//! all there but the module's file is not, the fix is that file. So the
//! advice is the chapter's own answer, never a fixed phrase.

use std::path::Path;

use crate::libtest::CompileError;
use crate::locate;
use crate::manifest::{Manifest, RepoPath};
use crate::repo::CourseRepo;
use crate::safe_fs;
use crate::tree;

/// The crate root among the teaching files (`…/lib.rs`), with its
/// declarations at the target and in the lab.
#[derive(Debug)]
pub(super) struct CrateRoot {
    path: RepoPath,
    target: Vec<Declaration>,
    lab: Vec<Declaration>,
}

/// One `mod` or one path of a `use` at a crate root's top level.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Declaration {
    /// The whole statement as written (whitespace collapsed), with its `;`.
    text: String,
    /// `pub` (not `pub(crate)`): seen from the tests.
    public: bool,
    item: Item,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Mod(String),
    /// A `use` path without a leading `crate`/`self`, its alias last.
    Use(Vec<String>),
}

impl Item {
    /// The names a declaration is about: the module, and an imported item.
    fn names(&self) -> Vec<&str> {
        match self {
            Item::Mod(name) => vec![name],
            Item::Use(path) => path
                .first()
                .into_iter()
                .chain(path.last())
                .map(String::as_str)
                .collect(),
        }
    }

    /// The module whose file holds what this declares.
    fn module(&self) -> Option<&str> {
        match self {
            Item::Mod(name) => Some(name),
            Item::Use(path) if path.len() > 1 => path.first().map(String::as_str),
            Item::Use(_) => None,
        }
    }
}

/// Where a compile error's fix goes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Advice {
    /// The teaching file to change (or to create, when `missing`).
    pub(super) file: Option<String>,
    pub(super) missing: bool,
    /// Lines of the target's crate root to add to `file` (the lab's crate root).
    pub(super) declarations: Vec<String>,
    /// A module file the declarations need that the lab does not have yet.
    pub(super) new_file: Option<String>,
}

impl CrateRoot {
    /// The crate root of the chapter's teaching files, read at the target
    /// and in the lab; `None` when there is none or the target is unknown.
    pub(super) fn read(repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> Option<CrateRoot> {
        let path = manifest
            .teaching_files
            .iter()
            .find(|path| Path::new(path.as_str()).file_name() == Some("lib.rs".as_ref()))?;
        let checkpoint = locate::locate(&repo.git, manifest.id).ok()?;
        let target_tree = repo.tree_of(checkpoint.target.oid).ok()?;
        let target = tree::file_at(&repo.git, &target_tree, path.as_str()).ok()??;
        let mine = safe_fs::read_inside(lab, Path::new(path.as_str()))
            .ok()
            .flatten()
            .unwrap_or_default();
        Some(CrateRoot {
            path: path.clone(),
            target: declarations(&String::from_utf8_lossy(&target)),
            lab: declarations(&String::from_utf8_lossy(&mine)),
        })
    }

    /// Where the fix for `error` goes when it is about a module or item the
    /// target's crate root declares; `None` when it is not, or the lab has
    /// both the declarations and the module's file.
    pub(super) fn advice(
        &self,
        error: &CompileError,
        teaching: &[RepoPath],
        lab: &Path,
    ) -> Option<Advice> {
        // rustc pointing into another teaching file knows better.
        let elsewhere = error.files.iter().any(|file| {
            file != self.path.as_str() && teaching.iter().any(|path| path.as_str() == file)
        });
        if elsewhere {
            return None;
        }
        let named = named_words(&error.message);
        let touched = |declaration: &Declaration| {
            declaration
                .item
                .names()
                .iter()
                .any(|name| named.contains(name))
        };
        // What the error names, and the `mod` each such `use` needs.
        let needed: Vec<&str> = self
            .target
            .iter()
            .filter(|declaration| touched(declaration))
            .filter_map(|declaration| declaration.item.module())
            .collect();
        let relevant: Vec<&Declaration> = self
            .target
            .iter()
            .filter(|declaration| {
                touched(declaration)
                    || matches!(&declaration.item, Item::Mod(name) if needed.contains(&name.as_str()))
            })
            .collect();
        let missing_file = relevant
            .iter()
            .filter_map(|declaration| module_file(teaching, declaration.item.module()?))
            .find(|file| {
                safe_fs::read_inside(lab, Path::new(file.as_str())).is_ok_and(|f| f.is_none())
            })
            .map(RepoPath::to_string);
        let mut lines: Vec<String> = Vec::new();
        for declaration in relevant {
            let present = self
                .lab
                .iter()
                .any(|mine| mine.item == declaration.item && (mine.public || !declaration.public));
            if !present && !lines.contains(&declaration.text) {
                lines.push(declaration.text.clone());
            }
        }
        if !lines.is_empty() {
            return Some(Advice {
                file: Some(self.path.to_string()),
                missing: false,
                declarations: lines,
                new_file: missing_file,
            });
        }
        missing_file.map(|file| Advice {
            file: Some(file),
            missing: true,
            ..Advice::default()
        })
    }
}

/// The identifiers inside the backquoted parts of a compiler message.
fn named_words(message: &str) -> Vec<&str> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|quoted| quoted.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| !word.is_empty())
        .collect()
}

/// The module a teaching file holds: its stem, or its folder for `mod.rs`.
fn module_of(path: &RepoPath) -> String {
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
}

/// The teaching file of module `module` (never the crate root).
fn module_file<'a>(teaching: &'a [RepoPath], module: &str) -> Option<&'a RepoPath> {
    teaching
        .iter()
        .find(|path| module_of(path) == module && module != "lib")
}

/// The top-level `mod` and `use` declarations of a crate root's source: the
/// statements that start at a line's first column, as rustfmt writes them.
fn declarations(source: &str) -> Vec<Declaration> {
    let mut found = Vec::new();
    let mut statement = String::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        // A new item starts at the first column (a `}` closes a `use` group).
        if !code.starts_with(char::is_whitespace) && !code.starts_with('}') {
            statement.clear();
            if !["mod ", "use ", "pub"]
                .iter()
                .any(|start| code.starts_with(start))
            {
                continue;
            }
        } else if statement.is_empty() {
            continue;
        }
        statement.push_str(code);
        statement.push(' ');
        if let Some(done) = statement.trim_end().strip_suffix(';') {
            found.extend(declaration(done));
            statement.clear();
        }
    }
    found
}

/// The declarations one statement (without its `;`) makes, if it is a
/// `mod NAME` or a `use`.
fn declaration(statement: &str) -> Vec<Declaration> {
    let words: Vec<&str> = statement.split_whitespace().collect();
    let text = format!("{};", words.join(" "));
    let joined = words.join(" ");
    let (public, rest) = match joined.strip_prefix("pub ") {
        Some(rest) => (true, rest.to_string()),
        None if joined.starts_with("pub(") => match joined.split_once(')') {
            Some((_, rest)) => (false, rest.trim_start().to_string()),
            None => return Vec::new(),
        },
        None => (false, joined.clone()),
    };
    let make = |item| Declaration {
        text: text.clone(),
        public,
        item,
    };
    if let Some(name) = rest.strip_prefix("mod ") {
        let name = name.trim();
        let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        return if plain {
            vec![make(Item::Mod(name.to_string()))]
        } else {
            Vec::new()
        };
    }
    let Some(tree) = rest.strip_prefix("use ") else {
        return Vec::new();
    };
    let tokens = use_tokens(tree);
    let mut paths = Vec::new();
    let mut at = 0;
    use_tree(&tokens, &mut at, Vec::new(), &mut paths);
    paths
        .into_iter()
        .map(|mut path| {
            while path
                .first()
                .is_some_and(|first| first == "crate" || first == "self")
            {
                path.remove(0);
            }
            make(Item::Use(path))
        })
        .collect()
}

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
    let module_file = |module: &str| module_file(teaching, module);
    let named = named_words(&error.message);
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
        .then(|| teaching.iter().find(|path| module_of(path) == "lib"))
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

    #[test]
    fn a_crate_roots_declarations_are_its_top_level_mods_and_uses() {
        let source = "//! Docs: `mod fake;` in a comment.\n\
            pub mod event_stream;\n\
            #[doc(hidden)]\nmod block_on;\npub use block_on::block_on;\n\
            pub(crate) use crate::types::{\n    A,\n    b::C as D,\n};\n\
            fn helper() { use std::fmt; }\n\
            #[cfg(test)]\nmod tests {\n    use super::*;\n}\n\
            pub mod types;\n";
        let found: Vec<(String, bool, Item)> = declarations(source)
            .into_iter()
            .map(|d| (d.text, d.public, d.item))
            .collect();
        let path = |segments: &[&str]| Item::Use(segments.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            found,
            [
                (
                    "pub mod event_stream;".into(),
                    true,
                    Item::Mod("event_stream".into())
                ),
                ("mod block_on;".into(), false, Item::Mod("block_on".into())),
                (
                    "pub use block_on::block_on;".into(),
                    true,
                    path(&["block_on", "block_on"])
                ),
                (
                    "pub(crate) use crate::types::{ A, b::C as D, };".into(),
                    false,
                    path(&["types", "A"])
                ),
                (
                    "pub(crate) use crate::types::{ A, b::C as D, };".into(),
                    false,
                    path(&["types", "b", "D"])
                ),
                ("pub mod types;".into(), true, Item::Mod("types".into())),
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

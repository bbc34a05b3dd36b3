//! **leak** (README, "verify's proofs"): a practice folder holds the base's
//! learner world, the files from the target and the handout, and no answer:
//! no public name the layer adds outside those files, no teaching file's
//! target content under another name (`observe` mode is exempt). Names are
//! read line by line: a miss only weakens the proof.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid};

use super::Chapter;
use super::work::{Work, progress};
use crate::chapter;
use crate::error::{self, Error, Result};
use crate::manifest::{Mode, RepoPath};
use crate::repo::CourseRepo;
use crate::tree;
use crate::worlds;

/// A practice folder holds nothing it should not.
pub(super) fn leak(work: &Work, chapter: &Chapter) -> Result<String> {
    progress(chapter.id(), "leak: writing a practice folder");
    let dir = work.lab(chapter, "leak", &chapter.manifest, &chapter.handout)?;
    let files = practice_files(&dir)?;
    let mut problems = differences(work.repo, chapter, &files)?;
    let names = added_names(work.repo, chapter)?;
    problems.extend(name_leaks(work.repo, chapter, &files, &names)?);
    problems.extend(answer_copies(work.repo, chapter, &files)?);
    if problems.is_empty() {
        Ok(format!(
            "no tooling, history or answer; none of the layer's {} public name(s)",
            names.len()
        ))
    } else {
        Err(Error::check_failed(problems.join("; ")))
    }
}

/// One file (or symlink) of the practice folder.
struct PracticeFile {
    relative: PathBuf,
    /// The blob id and git mode it would have.
    blob: (Oid, i32),
    /// A regular file's content (a symlink has none).
    content: Option<Vec<u8>>,
}

/// Every file and symlink below `dir`, read once, nothing followed.
fn practice_files(dir: &Path) -> Result<Vec<PracticeFile>> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry.map_err(|error| {
            Error::check_failed(format!("cannot walk {}: {error}", dir.display()))
        })?;
        let path = entry.path();
        let read = error::io(format!("cannot read {}", path.display()));
        let kind = entry.file_type();
        let (bytes, mode, content) = if kind.is_dir() {
            continue;
        } else if kind.is_symlink() {
            let target = fs::read_link(path).map_err(read)?;
            let bytes = target.as_os_str().as_bytes().to_vec();
            (bytes, tree::MODE_SYMLINK, None)
        } else {
            let meta = fs::symlink_metadata(path).map_err(read)?;
            let content = fs::read(path).map_err(error::io("cannot read a practice file"))?;
            let mode = tree::file_mode(meta.permissions().mode());
            (content.clone(), mode, Some(content))
        };
        let oid =
            Oid::hash_object(ObjectType::Blob, &bytes).map_err(error::git("cannot hash a file"))?;
        files.push(PracticeFile {
            relative: path.strip_prefix(dir).unwrap_or(path).to_path_buf(),
            blob: (oid, mode),
            content,
        });
    }
    Ok(files)
}

/// Each practice file must be the base tree's learner world, the target's
/// or the handout's, and none may be missing.
fn differences(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
) -> Result<Vec<String>> {
    let manifest = &chapter.manifest;
    let base = chapter.checkpoint.base(manifest.mode);
    let base_tree = repo.tree_of(base.oid)?;
    let mut expected = tree::list_tree(&repo.git, &base_tree, &worlds::is_tooling)?;
    let target_tree = repo.tree_of(chapter.checkpoint.target.oid)?;
    let target = tree::list_tree(&repo.git, &target_tree, &|_| false)?;
    for file in manifest.target_files() {
        let path = PathBuf::from(file.as_str());
        if let Some(blob) = target.get(&path) {
            expected.insert(path, *blob);
        }
    }
    for (file, content) in starter(chapter) {
        let oid = Oid::hash_object(ObjectType::Blob, content)
            .map_err(error::git("cannot hash a starter file"))?;
        let mode = tree::MODE_FILE;
        expected.insert(PathBuf::from(file.as_str()), tree::Blob { oid, mode });
    }
    // The handout is what `practice` writes from the chapter folder.
    let handout = [chapter::GUIDE_FILE, chapter::TUTOR_FILE].map(PathBuf::from);
    let mut problems = Vec::new();
    for file in files
        .iter()
        .filter(|file| !handout.contains(&file.relative))
    {
        let shown = file.relative.display();
        match expected.get(&file.relative) {
            None => problems.push(format!("{shown} is not in {}'s learner world", base.short)),
            Some(wanted) if file.blob != (wanted.oid, tree::normal_mode(wanted.mode)) => {
                problems.push(format!("{shown} differs from the tree it was written from"))
            }
            Some(_) => {}
        }
    }
    let seen: BTreeSet<&PathBuf> = files.iter().map(|file| &file.relative).collect();
    let missing = expected.keys().filter(|path| !seen.contains(path));
    problems.extend(missing.map(|path| format!("{} is missing", path.display())));
    Ok(problems)
}

/// The starter files a lab of `chapter` gets: none when observing.
fn starter(chapter: &Chapter) -> &[(RepoPath, Vec<u8>)] {
    match chapter.manifest.mode {
        Mode::Rebuild => &chapter.handout.starter,
        Mode::Observe => &[],
    }
}

/// The files that may hold the answer's names: the files from the target,
/// the starter, the handout, and in `observe` mode the teaching files.
fn exempt(chapter: &Chapter) -> Vec<PathBuf> {
    let manifest = &chapter.manifest;
    let mut exempt = manifest.target_files();
    exempt.extend(starter(chapter).iter().map(|(file, _)| file));
    if manifest.mode == Mode::Observe {
        exempt.extend(&manifest.teaching_files);
    }
    let exempt = exempt.into_iter().map(|file| PathBuf::from(file.as_str()));
    // The tutor file is one text for every chapter, written before any of
    // them: a chapter's name in it ("a Pi agent") gives no answer away.
    let handout = [chapter::GUIDE_FILE, chapter::TUTOR_FILE].map(PathBuf::from);
    exempt.chain(handout).collect()
}

/// The public names the layer adds to its teaching files, and where.
fn added_names(repo: &CourseRepo, chapter: &Chapter) -> Result<BTreeMap<String, String>> {
    let parent = repo.tree_of(chapter.checkpoint.parent.oid)?;
    let target = repo.tree_of(chapter.checkpoint.target.oid)?;
    let mut before = BTreeSet::new();
    let mut added = BTreeMap::new();
    for teaching in &chapter.manifest.teaching_files {
        let source = tree::file_at(&repo.git, &parent, teaching.as_str())?.unwrap_or_default();
        before.extend(public_names(&String::from_utf8_lossy(&source)));
    }
    for teaching in &chapter.manifest.teaching_files {
        let source = tree::file_at(&repo.git, &target, teaching.as_str())?.unwrap_or_default();
        for name in public_names(&String::from_utf8_lossy(&source)) {
            if !before.contains(&name) {
                added.entry(name).or_insert_with(|| teaching.to_string());
            }
        }
    }
    Ok(added)
}

/// Every non-exempt practice file that mentions one of `names` as a word
/// where the parent's version of that file does not.
fn name_leaks(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
    names: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    let exempt = exempt(chapter);
    let parent = repo.tree_of(chapter.checkpoint.parent.oid)?;
    let mut problems = Vec::new();
    for file in files.iter().filter(|file| !exempt.contains(&file.relative)) {
        let Some(content) = &file.content else {
            continue;
        };
        let text = String::from_utf8_lossy(content);
        let relative = file.relative.to_string_lossy();
        let before = tree::file_at(&repo.git, &parent, &relative)?.unwrap_or_default();
        let before = String::from_utf8_lossy(&before);
        for (name, teaching) in names {
            if contains_word(&text, name) && !contains_word(&before, name) {
                problems.push(format!(
                    "`{name}` (added to {teaching} by the layer) appears in {relative}"
                ));
            }
        }
    }
    Ok(problems)
}

/// Every non-exempt practice file holding a target teaching file, whitespace aside.
fn answer_copies(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
) -> Result<Vec<String>> {
    let manifest = &chapter.manifest;
    let target = &chapter.checkpoint.target;
    let tree = repo.tree_of(target.oid)?;
    let mut answers = HashMap::new();
    for teaching in &manifest.teaching_files {
        let content = tree::file_at(&repo.git, &tree, teaching.as_str())?.unwrap_or_default();
        let squeezed = without_whitespace(&content);
        if !squeezed.is_empty() {
            answers.entry(squeezed).or_insert(teaching);
        }
    }
    let exempt = exempt(chapter);
    let mut problems = Vec::new();
    for file in files.iter().filter(|file| !exempt.contains(&file.relative)) {
        let content = file.content.as_deref().unwrap_or_default();
        let Some(teaching) = answers.get(&without_whitespace(content)) else {
            continue;
        };
        let shown = file.relative.display();
        problems.push(if Path::new(teaching.as_str()) == file.relative {
            format!(
                "{shown} is already the answer: the layer leaves this teaching file as it is at \
                 {}, so the practice folder hands it out (list only files the learner writes \
                 in `teachingFiles`)",
                chapter.checkpoint.base(manifest.mode).short
            )
        } else {
            format!(
                "{shown} holds the answer: the content of {teaching} at the target {}",
                target.short
            )
        });
    }
    Ok(problems)
}

pub(super) fn without_whitespace(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(|byte| !byte.is_ascii_whitespace())
        .collect()
}

/// The item kinds whose names count as a layer's public names.
const ITEM_KINDS: [&str; 9] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
];

/// Keywords that may stand between the visibility and the name.
const QUALIFIERS: [&str; 4] = ["async", "unsafe", "extern", "mut"];

/// The top-level public item names of a Rust source, in order.
pub fn public_names(source: &str) -> Vec<String> {
    source.lines().filter_map(public_name).collect()
}

/// The name a top-level `pub` item on `line` declares, if any.
fn public_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("pub")?;
    let rest = match rest.trim_start().strip_prefix('(') {
        Some(scope) => &scope[scope.find(')')? + 1..],
        None if rest.starts_with(char::is_whitespace) => rest,
        None => return None,
    };
    // Raw identifiers (`r#type`) and ABI strings (`"C"`) are one word each.
    let in_word = |c: char| is_ident(c) || c == '#' || c == '"';
    let mut kind = false;
    for word in rest.split(|c| !in_word(c)).filter(|word| !word.is_empty()) {
        if ITEM_KINDS.contains(&word) {
            kind = true;
        } else if !QUALIFIERS.contains(&word) && !word.starts_with('"') {
            let is_name = word != "_" && word.starts_with(|c: char| c.is_alphabetic() || c == '_');
            return (kind && is_name).then(|| word.to_string());
        }
    }
    None
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// True when `word` occurs in `text` with no identifier character on either side.
pub fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_does_not_disguise_an_answer() {
        let answer = b"pub fn add(a: i32) -> i32 {\n    a\n}\n";
        let disguised = b"pub fn add(a: i32) -> i32 {\r\n\ta\r\n}";
        assert_eq!(without_whitespace(answer), without_whitespace(disguised));
        assert_ne!(
            without_whitespace(answer),
            without_whitespace(b"pub fn add(a: i32) -> i32 { b }")
        );
    }

    #[test]
    fn public_names_are_the_top_level_pub_items() {
        let source = "pub fn text_of(m: &M) -> String {}\npub struct Usage {\n    pub input: u64,\n}\n\
                      pub(crate) enum Kind {}\npub mod types;\npub use x::Y;\nfn private() {}\n    pub fn method() {}\n\
                      pub const EMPTY_USAGE: Usage = Usage;\npub trait Model {}\npub type Alias = u8;\n\
                      public fn not_rust() {}\npub(crate)fn tight() {}\n";
        assert_eq!(
            public_names(source),
            [
                "text_of",
                "Usage",
                "Kind",
                "types",
                "EMPTY_USAGE",
                "Model",
                "Alias",
                "tight"
            ]
        );
    }

    #[test]
    fn every_qualifier_is_read_past_to_the_name() {
        let cases = [
            ("pub const fn x() {}", "x"),
            ("pub const unsafe fn cu() {}", "cu"),
            ("pub async fn fetch() {}", "fetch"),
            ("pub async unsafe fn au() {}", "au"),
            ("pub unsafe fn raw() {}", "raw"),
            ("pub extern \"C\" fn callback() {}", "callback"),
            ("pub extern fn bare() {}", "bare"),
            ("pub unsafe extern \"C\" fn ue() {}", "ue"),
            ("pub const unsafe extern \"C\" fn cue() {}", "cue"),
            ("pub static mut COUNTER: u32 = 0;", "COUNTER"),
            ("pub static LIMIT: u32 = 0;", "LIMIT"),
            ("pub const LIMIT2: u32 = 0;", "LIMIT2"),
            ("pub unsafe trait Send2 {}", "Send2"),
            ("pub fn default() -> Self {}", "default"),
            ("pub union Bits { a: u32 }", "Bits"),
            ("pub(crate) const fn crate_const() {}", "crate_const"),
            ("pub(super) static mut UP: u8 = 0;", "UP"),
            ("pub(in crate::types) async fn scoped() {}", "scoped"),
            ("pub fn generic<T: Into<String>>(t: T) {}", "generic"),
            ("pub struct Tuple(pub u8);", "Tuple"),
            ("pub fn r#type() {}", "r#type"),
        ];
        for (line, name) in cases {
            assert_eq!(public_names(line), [name], "{line}");
        }
        for line in [
            "pub use crate::x;",
            "pub extern crate serde;",
            "pub impl X {}",
            "pub const _: () = ();",
            "pub static mut",
            "pub",
        ] {
            assert!(public_names(line).is_empty(), "{line}");
        }
    }

    #[test]
    fn a_word_is_found_only_between_non_identifier_characters() {
        assert!(contains_word("use course::types::{text};", "text"));
        assert!(contains_word("text", "text"));
        assert!(!contains_word("text_stream(texts)", "text"));
        assert!(!contains_word("context", "text"));
        assert!(
            !contains_word("日本text語", "text"),
            "letters of any script continue an identifier"
        );
    }
}

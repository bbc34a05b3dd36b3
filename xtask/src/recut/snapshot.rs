//! Reading the work tree's learner world into the object database, the way
//! `git add -A` would commit it, or refusing what it cannot represent.
//!
//! Files keep their executable bit ([`tree::is_executable`]), symlinks are
//! stored as symlinks (never followed), ignored paths are left out unless
//! tracked, nested repositories are left out with a note. Refused (exit 2,
//! nothing changed): a FIFO, socket or device the learner's world would
//! hold, a path whose git attributes ask for a filter or an end-of-line
//! conversion — recut commits bytes as they are and does not run filters,
//! so `git add` would commit something else — and a symlink that leaves
//! the work tree or replaces a folder of the chapter ([`links`]).

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use git2::{AttrCheckFlags, AttrValue, Index, Oid, Repository};

use super::links::{self, Chapter};
use super::text::{join, repo_path, shown};
use crate::error::{self, Error, Result};
use crate::signals;
use crate::tree;
use crate::worlds;

/// The work tree's learner world as a tree object.
pub struct Snapshot {
    pub tree: Oid,
    /// What was left out and why, for the author.
    pub notes: Vec<String>,
}

/// Reads the learner world below `root`; `index` says what is tracked,
/// `chapter` what the chapter being re-cut holds today.
pub fn take(git: &Repository, index: &Index, root: &Path, chapter: &Chapter) -> Result<Snapshot> {
    let mut reader = Reader {
        git,
        index,
        root,
        chapter,
        notes: Vec::new(),
    };
    let tree = match reader.folder(root, b"")? {
        Some(tree) => tree,
        None => empty_tree(git)?,
    };
    Ok(Snapshot {
        tree,
        notes: reader.notes,
    })
}

struct Reader<'a> {
    git: &'a Repository,
    /// What is tracked: a tracked file is committed even when an ignore rule
    /// matches it, as git does.
    index: &'a Index,
    root: &'a Path,
    /// What the symlinks are checked against ([`links::refuse`]).
    chapter: &'a Chapter<'a>,
    notes: Vec<String>,
}

impl Reader<'_> {
    /// The tree of the folder `dir` (repository path `prefix`), or `None`
    /// when nothing in it is committed.
    fn folder(&mut self, dir: &Path, prefix: &[u8]) -> Result<Option<Oid>> {
        let mut builder = self
            .git
            .treebuilder(None)
            .map_err(error::git("cannot build a tree"))?;
        let entries =
            fs::read_dir(dir).map_err(error::io(format!("cannot read {}", dir.display())))?;
        for entry in entries {
            signals::check()?;
            let entry = entry.map_err(error::io(format!("cannot read {}", dir.display())))?;
            let name = entry.file_name().into_vec();
            let path = join(prefix, &name);
            if name == b".git" || worlds::is_tooling(&path) {
                continue;
            }
            if let Some((oid, mode)) = self.entry(&entry.path(), &path)? {
                builder
                    .insert(&name, oid, mode)
                    .map_err(error::git(format!(
                        "cannot add `{}` to a tree",
                        shown(&path)
                    )))?;
            }
        }
        if builder.is_empty() {
            return Ok(None);
        }
        builder.write().map(Some).map_err(error::git(format!(
            "cannot write the tree of `{}`",
            shown(prefix)
        )))
    }

    /// One entry of a folder: a file, a symlink (its target, not what it
    /// points to), a folder or a submodule; `None` when git would leave it
    /// out. A non-regular file git would not ignore is refused.
    fn entry(&mut self, on_disk: &Path, path: &[u8]) -> Result<Option<(Oid, i32)>> {
        let meta = fs::symlink_metadata(on_disk)
            .map_err(error::io(format!("cannot inspect {}", on_disk.display())))?;
        let kind = meta.file_type();
        if kind.is_dir() {
            return self.subfolder(on_disk, path);
        }
        if self.ignored(path, false)? {
            return Ok(None);
        }
        let (content, mode) = if kind.is_symlink() {
            let target = fs::read_link(on_disk).map_err(error::io(format!(
                "cannot read symlink {}",
                on_disk.display()
            )))?;
            links::refuse(self.root, path, &target, self.chapter)?;
            (target.into_os_string().into_vec(), tree::MODE_SYMLINK)
        } else if kind.is_file() {
            refuse_conversion(self.git, path)?;
            let (content, permissions) = read_regular(on_disk, path)?;
            (content, tree::file_mode(permissions))
        } else {
            return Err(not_regular(path, kind));
        };
        let oid = self
            .git
            .blob(&content)
            .map_err(error::git(format!("cannot store `{}`", shown(path))))?;
        Ok(Some((oid, mode)))
    }

    fn subfolder(&mut self, on_disk: &Path, path: &[u8]) -> Result<Option<(Oid, i32)>> {
        if let Some(entry) = self.index.get_path(repo_path(path), 0)
            && entry.mode as i32 == tree::MODE_GITLINK
        {
            return Ok(Some((entry.id, tree::MODE_GITLINK)));
        }
        if fs::symlink_metadata(on_disk.join(".git")).is_ok() {
            self.notes.push(format!(
                "`{}` is a repository of its own and no submodule: left out",
                shown(path)
            ));
            return Ok(None);
        }
        if self.ignored(path, true)? {
            return Ok(None);
        }
        let tree = self.folder(on_disk, path)?;
        Ok(tree.map(|oid| (oid, tree::MODE_TREE)))
    }

    /// True when git ignores `path`: an ignore rule matches it and nothing
    /// there is tracked.
    fn ignored(&self, path: &[u8], folder: bool) -> Result<bool> {
        let mut asked = path.to_vec();
        if folder {
            asked.push(b'/');
        }
        let matched = self
            .git
            .is_path_ignored(repo_path(&asked))
            .map_err(error::git(format!(
                "cannot read the ignore rules for `{}`",
                shown(path)
            )))?;
        let tracked = if folder {
            self.index.find_prefix(asked.as_slice()).is_ok()
        } else {
            self.index.get_path(repo_path(path), 0).is_some()
        };
        Ok(matched && !tracked)
    }
}

/// The content and permission bits of the regular file `on_disk`, opened
/// without following a symlink and without blocking on a FIFO put there
/// since it was inspected.
fn read_regular(on_disk: &Path, path: &[u8]) -> Result<(Vec<u8>, u32)> {
    let shown_path = on_disk.display();
    let mut file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(on_disk)
        .map_err(error::io(format!("cannot open {shown_path}")))?;
    let meta = file
        .metadata()
        .map_err(error::io(format!("cannot inspect {shown_path}")))?;
    if !meta.is_file() {
        return Err(not_regular(path, meta.file_type()));
    }
    let mut content = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut content)
        .map_err(error::io(format!("cannot read {shown_path}")))?;
    Ok((content, meta.mode()))
}

fn not_regular(path: &[u8], kind: fs::FileType) -> Error {
    let what = if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file, a symlink or a folder"
    };
    Error::bad_input(format!(
        "`{}` in the learner's world is {what}: git cannot commit it, so recut cannot take \
         the work tree as the chapter's end state; remove it or ignore it in .gitignore; \
         nothing was changed",
        shown(path)
    ))
}

/// The git attributes that make `git add` commit something other than the
/// file's bytes, with the values that do it.
const CONVERTING: [&str; 6] = [
    "filter",
    "text",
    "eol",
    "crlf",
    "ident",
    "working-tree-encoding",
];

/// Refuses `path` when its git attributes ask for a filter (`filter=lfs`),
/// an end-of-line conversion (`text`, `text=auto`, `eol=…`, `crlf`), `ident`
/// or a working-tree encoding. Unset (`-text`) and unspecified are fine.
pub fn refuse_conversion(git: &Repository, path: &[u8]) -> Result<()> {
    for name in CONVERTING {
        let value = git
            .get_attr_bytes(repo_path(path), name, AttrCheckFlags::FILE_THEN_INDEX)
            .map_err(error::git(format!(
                "cannot read the git attributes of `{}`",
                shown(path)
            )))?;
        let asked = match AttrValue::from_bytes(value) {
            AttrValue::Unspecified | AttrValue::False => None,
            AttrValue::True => Some(name.to_string()),
            AttrValue::String(value) => Some(format!("{name}={value}")),
            AttrValue::Bytes(value) => Some(format!("{name}={}", shown(value))),
        };
        if let Some(attribute) = asked {
            return Err(Error::bad_input(format!(
                "`{}` has the git attribute `{attribute}` (.gitattributes): git would run a \
                 filter or convert line endings when committing or checking it out, and recut \
                 commits and writes files byte for byte without them, so it refuses rather \
                 than commit something else; unset the attribute for learner files (e.g. \
                 `-text`) or re-cut by hand; nothing was changed",
                shown(path)
            )));
        }
    }
    Ok(())
}

fn empty_tree(git: &Repository) -> Result<Oid> {
    git.treebuilder(None)
        .and_then(|builder| builder.write())
        .map_err(error::git("cannot write the empty tree"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn repo() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        (dir, git)
    }

    fn write(root: &Path, path: &str, content: &str) {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    /// A chapter that holds nothing yet.
    fn chapter(git: &Repository) -> Chapter<'_> {
        Chapter {
            id: "01".parse().unwrap(),
            end: git.find_tree(empty_tree(git).unwrap()).unwrap(),
        }
    }

    fn entries(git: &Repository, tree: Oid) -> Vec<(String, i32)> {
        let tree = git.find_tree(tree).unwrap();
        tree::list_tree(git, &tree, &|_| false)
            .unwrap()
            .into_iter()
            .map(|(path, blob)| (path.to_string_lossy().into_owned(), blob.mode))
            .collect()
    }

    #[test]
    fn the_learner_world_is_read_as_git_would_commit_it() {
        let (dir, git) = repo();
        let root = dir.path();
        write(root, ".gitignore", "*.log\n");
        write(root, "course/src/lib.rs", "// lib\n");
        write(root, "course/run.sh", "#!/bin/sh\n");
        fs::set_permissions(
            root.join("course/run.sh"),
            fs::Permissions::from_mode(0o744),
        )
        .unwrap();
        write(root, "course/group.sh", "#!/bin/sh\n");
        fs::set_permissions(
            root.join("course/group.sh"),
            fs::Permissions::from_mode(0o654),
        )
        .unwrap();
        symlink("src/lib.rs", root.join("course/link")).unwrap();
        write(root, "course/debug.log", "ignored\n");
        write(root, "checkpoints/01/checkpoint.json", "{}\n");
        let index = git.index().unwrap();

        let snapshot = take(&git, &index, root, &chapter(&git)).unwrap();

        assert_eq!(
            entries(&git, snapshot.tree),
            [
                (".gitignore".to_string(), tree::MODE_FILE),
                ("course/group.sh".to_string(), tree::MODE_FILE),
                ("course/link".to_string(), tree::MODE_SYMLINK),
                ("course/run.sh".to_string(), tree::MODE_EXECUTABLE),
                ("course/src/lib.rs".to_string(), tree::MODE_FILE),
            ]
        );
    }

    #[test]
    fn a_socket_is_refused_unless_ignored() {
        let (dir, git) = repo();
        let root = dir.path();
        write(root, "course/src/lib.rs", "// lib\n");
        let _listener =
            std::os::unix::net::UnixListener::bind(root.join("course/agent.sock")).unwrap();
        let index = git.index().unwrap();

        let error = take(&git, &index, root, &chapter(&git)).err().unwrap();
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("`course/agent.sock`"), "{error}");
        assert!(error.to_string().contains("a socket"), "{error}");

        write(root, ".gitignore", "/course/agent.sock\n");
        take(&git, &index, root, &chapter(&git)).unwrap();
    }

    #[test]
    fn attributes_that_convert_are_refused() {
        let (dir, git) = repo();
        let root = dir.path();
        write(
            root,
            ".gitattributes",
            "*.bin filter=lfs\n*.txt eol=crlf\n*.md text\n*.raw -text\n",
        );
        for (path, refused) in [
            ("a.bin", Some("filter=lfs")),
            ("a.txt", Some("eol=crlf")),
            ("a.md", Some("`text`")),
            ("a.raw", None),
            ("a.rs", None),
        ] {
            let result = refuse_conversion(&git, path.as_bytes());
            match refused {
                Some(needle) => {
                    let error = result.unwrap_err().to_string();
                    assert!(error.contains(needle), "{path}: {error}");
                    assert!(error.contains(&format!("`{path}`")), "{path}: {error}");
                }
                None => result.unwrap(),
            }
        }
    }
}

//! What git's three-way merge of trees does not see: a folder on one side
//! and a file or symlink at the same path on the other. libgit2 merges path
//! by path, so a folder's files "deleted" by one side and a symlink "added"
//! in their place merge without a word, and the later chapter loses every
//! file of the folder it kept. Such a path is a conflict unless one side
//! left it as the common ancestor had it (then the other side's change is
//! taken whole, which loses nothing).

use git2::{ObjectType, Repository, Tree, TreeEntry};

use super::text::{join, shown};
use crate::error::{self, Result};

/// Every path where `ours` and `theirs` hold a folder against a file or
/// symlink and both changed it from `ancestor`, sorted.
pub fn folder_file_conflicts(
    git: &Repository,
    ancestor: &Tree<'_>,
    ours: &Tree<'_>,
    theirs: &Tree<'_>,
) -> Result<Vec<String>> {
    let mut found = Vec::new();
    walk(git, Some(ancestor), ours, theirs, b"", &mut found)?;
    found.sort();
    Ok(found)
}

fn walk(
    git: &Repository,
    ancestor: Option<&Tree<'_>>,
    ours: &Tree<'_>,
    theirs: &Tree<'_>,
    prefix: &[u8],
    found: &mut Vec<String>,
) -> Result<()> {
    for our in ours.iter() {
        let name = our.name_bytes();
        let Some(their) = theirs.get_name_bytes(name) else {
            continue;
        };
        if same(&our, &their) {
            continue;
        }
        let base = ancestor.and_then(|tree| tree.get_name_bytes(name));
        let path = join(prefix, name);
        match (is_folder(&our), is_folder(&their)) {
            (true, true) => {
                let base = match base.filter(is_folder) {
                    Some(entry) => Some(subtree(git, &entry, &path)?),
                    None => None,
                };
                let (our, their) = (subtree(git, &our, &path)?, subtree(git, &their, &path)?);
                walk(git, base.as_ref(), &our, &their, &path, found)?;
            }
            (false, false) => {}
            _ => {
                let unchanged = |side: &TreeEntry<'_>| base.as_ref().is_some_and(|b| same(b, side));
                if !unchanged(&our) && !unchanged(&their) {
                    found.push(shown(&path));
                }
            }
        }
    }
    Ok(())
}

fn same(a: &TreeEntry<'_>, b: &TreeEntry<'_>) -> bool {
    a.id() == b.id() && a.filemode() == b.filemode()
}

fn is_folder(entry: &TreeEntry<'_>) -> bool {
    entry.kind() == Some(ObjectType::Tree)
}

fn subtree<'r>(git: &'r Repository, entry: &TreeEntry<'_>, path: &[u8]) -> Result<Tree<'r>> {
    git.find_tree(entry.id()).map_err(error::git(format!(
        "cannot read the tree of `{}`",
        shown(path)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{MODE_FILE, MODE_SYMLINK, MODE_TREE};

    /// A tree of `entries`: (name, Some(content) for a blob of `mode`, or
    /// None with a subtree id).
    fn tree(git: &Repository, entries: &[(&str, git2::Oid, i32)]) -> git2::Oid {
        let mut builder = git.treebuilder(None).unwrap();
        for (name, oid, mode) in entries {
            builder.insert(name, *oid, *mode).unwrap();
        }
        builder.write().unwrap()
    }

    #[test]
    fn a_folder_against_a_symlink_conflicts_unless_one_side_kept_the_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        let a = git.blob(b"a").unwrap();
        let b = git.blob(b"b").unwrap();
        let link = git.blob(b"/outside").unwrap();
        let old = tree(&git, &[("a.rs", a, MODE_FILE)]);
        let grown = tree(&git, &[("a.rs", a, MODE_FILE), ("b.rs", b, MODE_FILE)]);
        let top = |entry: (git2::Oid, i32)| {
            let course = tree(&git, &[("tests", entry.0, entry.1)]);
            git.find_tree(tree(&git, &[("course", course, MODE_TREE)]))
                .unwrap()
        };
        let ancestor = top((old, MODE_TREE));
        let symlinked = top((link, MODE_SYMLINK));
        let conflicts = |ours: &Tree<'_>, theirs: &Tree<'_>| {
            folder_file_conflicts(&git, &ancestor, ours, theirs).unwrap()
        };

        assert_eq!(
            conflicts(&symlinked, &top((grown, MODE_TREE))),
            ["course/tests"]
        );
        assert_eq!(
            conflicts(&top((grown, MODE_TREE)), &symlinked),
            ["course/tests"]
        );
        // Chapter 04 left the folder as it was: the symlink is taken whole.
        assert!(conflicts(&symlinked, &ancestor).is_empty());
        assert!(conflicts(&top((grown, MODE_TREE)), &ancestor).is_empty());
    }
}

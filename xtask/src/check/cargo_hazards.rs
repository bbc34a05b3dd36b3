//! What cargo must not meet in a lab. Its build folder holds no symlink
//! where cargo writes, and the lab's own files hold no FIFO (below). A linked
//! `target/` is refused on the way in ([`crate::safe_fs::folder_inside`]),
//! and so is a link anywhere inside it (`debug`, `debug/deps/x.d`, a
//! fingerprint folder, …), before cargo runs and writes through it to a
//! folder outside the lab; so is a FIFO there, which cargo would wait on.

use std::path::Path;

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::safe_fs;

/// Refuses (exit 2) a symlink inside `target`, the lab's build folder.
pub(super) fn refuse_links(lab: &Path, target: &Path) -> Result<()> {
    let Some(link) = safe_fs::first_unsafe_entry(target) else {
        return Ok(());
    };
    let below_lab = link.strip_prefix(lab).unwrap_or(&link);
    Err(Error::bad_input(say::target_entry_linked(
        &lab.display().to_string(),
        &below_lab.display().to_string(),
    )))
}

/// Refuses (exit 2) a FIFO, socket or device among the lab's own files (its
/// sources, `Cargo.toml`, its tests): cargo, or the focused test's
/// comparison, would wait on it until the timeout. Symlinks the lab's tree
/// holds are fine: nothing writes through them.
pub(super) fn refuse_special_files(lab: &Path) -> Result<()> {
    let special = crate::watch::lab_files(lab).find(|entry| {
        let kind = entry.file_type();
        !(kind.is_file() || kind.is_symlink())
    });
    let Some(entry) = special else {
        return Ok(());
    };
    let below_lab = entry.path().strip_prefix(lab).unwrap_or(entry.path());
    Err(Error::bad_input(say::lab_file_special(
        &lab.display().to_string(),
        &below_lab.display().to_string(),
    )))
}

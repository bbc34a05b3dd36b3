//! The lab's build folder holds no symlink where cargo writes: a linked
//! `target/` is refused on the way in ([`crate::safe_fs::folder_inside`]),
//! and so is a link inside it, two levels down (`debug`, `release`, a
//! `<triple>` folder, `debug/deps`, `debug/build`, …), before cargo runs and
//! writes through it to a folder outside the lab.

use std::path::Path;

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::safe_fs;

/// Refuses (exit 2) a symlink inside `target`, the lab's build folder.
pub(super) fn refuse_links(lab: &Path, target: &Path) -> Result<()> {
    let Some(link) = safe_fs::first_symlink(target, 2) else {
        return Ok(());
    };
    let below_lab = link.strip_prefix(lab).unwrap_or(&link);
    Err(Error::bad_input(say::target_entry_linked(
        &lab.display().to_string(),
        &below_lab.display().to_string(),
    )))
}

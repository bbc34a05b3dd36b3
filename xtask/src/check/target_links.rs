//! The lab's build folder holds no symlink where cargo writes: a linked
//! `target/` is refused on the way in ([`crate::safe_fs::folder_inside`]),
//! and so is a link directly inside it (`debug`, `release`, `tmp`, a
//! `<triple>` folder, `.rustc_info.json`, `CACHEDIR.TAG`, …), before cargo
//! runs and writes through it to a folder outside the lab.

use std::fs;
use std::path::Path;

use crate::error::{self, Error, Result};
use crate::learner_text as say;

/// Refuses (exit 2) a symlink directly inside `target`, the lab's build folder.
pub(super) fn refuse_links(lab: &Path, target: &Path) -> Result<()> {
    let cannot_read = || say::cannot_read(&target.display().to_string());
    for entry in fs::read_dir(target).map_err(error::io(cannot_read()))? {
        let entry = entry.map_err(error::io(cannot_read()))?;
        let linked = entry
            .file_type()
            .map_err(error::io(cannot_read()))?
            .is_symlink();
        if linked {
            let name = format!("target/{}", entry.file_name().to_string_lossy());
            return Err(Error::bad_input(say::target_entry_linked(
                &lab.display().to_string(),
                &name,
            )));
        }
    }
    Ok(())
}

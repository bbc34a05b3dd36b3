//! `recut NN`: re-cuts chapter NN from the work tree's learner world and
//! replays every later chapter on top (SPEC §4, §5).

use crate::cli;
use crate::error::{Error, Result};
use crate::repo::CourseRepo;

impl cli::Recut {
    /// Runs the command.
    pub fn run(&self, _repo: &CourseRepo) -> Result<()> {
        Err(Error::bad_input(format!(
            "recut {} is not built yet",
            self.id
        )))
    }
}

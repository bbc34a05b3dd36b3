//! Every sentence a learner reads, in the course's language (Chinese): the
//! reports, next steps and errors of the learner commands (`checkpoint`,
//! `practice`, `check`, `hint`, `compare`), their argument errors, and the
//! guide's header. Author commands (`verify`, `recut`, `bench`, `list`)
//! speak English.
//!
//! Who is reading is decided once: `main` calls [`set_audience`] from the
//! subcommand before anything runs; this module owns that choice. Sentences
//! only learner commands print are Chinese constants and functions, one
//! submodule per command ([`check`], [`compare`], [`hint`], [`checkpoint`],
//! [`practice`], and [`lab_dir`] for the lab folder `check` and `compare`
//! are pointed at), all re-exported here. Errors raised in shared code (the
//! repository, the chapter folders, a manifest) can reach either audience:
//! their constructors live in [`shared`] and pick the language with
//! [`for_learner`], so the module that raises one needs no notion of who
//! reads it. clap's argument errors of learner commands are rendered in
//! [`arguments`].

use std::sync::atomic::{AtomicBool, Ordering};

mod arguments;
mod check;
mod checkpoint;
mod compare;
mod hint;
mod lab_dir;
mod practice;
mod shared;

pub use arguments::argument_error;
pub use check::*;
pub use checkpoint::*;
pub use compare::*;
pub use hint::*;
pub use lab_dir::*;
pub use practice::*;
pub use shared::*;

// --- Who reads ---

/// Who a command speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// A learner command: Chinese.
    Learner,
    /// An author command: English.
    Author,
}

static LEARNER: AtomicBool = AtomicBool::new(false);

/// Sets who this process speaks to; `main` calls it once, before any work.
pub fn set_audience(audience: Audience) {
    LEARNER.store(audience == Audience::Learner, Ordering::Relaxed);
}

/// True when this process runs a learner command.
pub fn for_learner() -> bool {
    LEARNER.load(Ordering::Relaxed)
}

/// `zh` for a learner, `en` for an author.
pub(crate) fn pick(zh: impl FnOnce() -> String, en: impl FnOnce() -> String) -> String {
    if for_learner() { zh() } else { en() }
}

/// The prefix of an error line on stderr.
pub fn error_prefix() -> &'static str {
    if for_learner() {
        "错误："
    } else {
        "error: "
    }
}

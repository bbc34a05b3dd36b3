//! Every sentence a learner reads, in the course's language (Chinese): the
//! reports, next steps and errors of the learner commands (`checkpoint`,
//! `practice`, `check`, `hint`, `compare`), their argument errors, and the
//! guide's header. Author commands (`verify`, `recut`, `bench`, `list`)
//! speak English.
//!
//! Who is reading is decided once: `main` calls [`set_audience`] from the
//! subcommand before anything runs; [`basic`] owns that choice, with the
//! few sentences the bottom modules (errors, signals, the repository,
//! locating a checkpoint) raise, so that they depend on nothing above them. Sentences
//! only learner commands print are Chinese constants and functions, one
//! submodule per command ([`check`], [`compare`], [`hint`], [`checkpoint`],
//! [`practice`], and [`lab_dir`] for the lab folder `check` and `compare`
//! are pointed at), all re-exported here. Errors raised in shared code (the
//! repository, the chapter folders, a manifest) can reach either audience:
//! their constructors live in [`shared`] and pick the language with
//! [`for_learner`], so the module that raises one needs no notion of who
//! reads it. clap's argument errors of learner commands are rendered in
//! [`arguments`].

mod arguments;
pub mod basic;
mod check;
mod checkpoint;
mod compare;
pub mod help;
mod hint;
mod lab_dir;
mod practice;
mod shared;

pub use arguments::argument_error;
pub use basic::*;
pub use check::*;
pub use checkpoint::*;
pub use compare::*;
pub use hint::*;
pub use lab_dir::*;
pub use practice::*;
pub use shared::*;

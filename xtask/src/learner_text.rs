//! Every sentence a learner reads, in the course's language (Chinese): the
//! learner commands' reports, errors, argument errors and help. Author
//! commands (`verify`, `recut`, `bench`, `list`) speak English. `main` sets
//! the audience once ([`set_audience`]); errors of shared code either can
//! meet pick their language with [`pick`] ([`shared`]).

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

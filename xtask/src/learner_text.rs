//! Every sentence a learner reads, in Chinese; author commands speak English.
//! `main` sets the audience once ([`set_audience`]); shared errors [`pick`].

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

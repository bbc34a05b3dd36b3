//! The learner's crate of the "build your own Pi agent" course.
//!
//! Each chapter adds one layer; the checkpoint commits in the repository's
//! history (`course(NN): …`) mark where a chapter starts and ends.
//!
//! * Chapter 02 — [`event_stream`]: one stream that carries the events of a
//!   process and resolves its final result ([`block_on()`] drives it without
//!   an async runtime).

pub mod event_stream;

mod block_on;
pub use block_on::block_on;

//! The learner's crate of the "build your own Pi agent" course.
//!
//! Each chapter adds one layer; the checkpoint commits in the repository's
//! history (`course(NN): …`) mark where a chapter starts and ends.
//!
//! * Chapter 02 — [`event_stream`]: one stream that carries the events of a
//!   process and resolves its final result.
//! * Chapter 03 — [`types`]: the message IR that saves one complete tool
//!   round-trip (four roles, content blocks, stop reasons, model events,
//!   system prompt replay, the lossy text projection), and
//!   [`event_stream::AssistantMessageEventStream`].

pub mod block_on;
pub mod event_stream;
pub mod partial;
pub mod sections;
pub mod types;

pub use block_on::block_on;

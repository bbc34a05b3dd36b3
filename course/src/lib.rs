//! The learner's crate of the "build your own Pi agent" course.
//!
//! Each chapter adds one layer; the checkpoint commits in the repository's
//! history (`course(NN): …`) mark where a chapter starts and ends.
//!
//! * Chapter 02 — [`event_stream`]: one stream that carries the events of a
//!   process and resolves its final result ([`block_on()`] drives it without
//!   an async runtime).
//! * Chapter 03 — [`types`]: the message IR that saves one complete tool
//!   round-trip, and [`assistant_stream`]: the stream of one model call.
//! * Chapter 04 — [`scripted_model`]: a model that plays scripted turns
//!   through that stream and records each request.
//! * Chapter 05 — [`provider_adapter`]: a real model behind an
//!   OpenAI-compatible API: the request written out, the SSE answer read
//!   back into the same events.
//! * Chapter 06 — [`tool`]: the tool contract: a schema that checks a call's
//!   arguments, a registry of tools, and an executor whose every outcome is
//!   one result paired with the call.
//! * Chapter 07 — [`agent_loop`]: the loop that calls the model, runs the
//!   tools it asks for (at once, on threads) and calls it again, until an
//!   answer.
//! * Chapter 08 — [`coding_tools`]: `read`, `write`, `edit` and `bash` over
//!   one workspace folder: bounded reads, whole-file commits by rename, one
//!   queue per path (and, through the loop, one turn's edits of a file in
//!   call order), and commands whose whole process group ends on a timeout
//!   or an abort.
//! * Chapter 09 — [`agent`]: an agent that keeps one transcript across
//!   runs: state derived by a pure reducer, listeners, one run at a time,
//!   abort, steering and follow-up messages.
//! * Chapter 10 — [`session`]: the session tree: entries that point at
//!   their parent, appended one JSON line at a time to a file that survives
//!   a crash, and the path from a chosen leaf back to the conversation.
//! * Chapter 11 — [`context`]: what the model reads, rebuilt from the
//!   session's path to a token budget: whole interactions, newest first,
//!   behind the latest compaction summary.
//! * Chapter 12 — [`resources`]: `AGENTS.md`, skills and templates found in
//!   resource roots and brought into the context on demand, and extensions
//!   that pass a trust gate before their code runs, then hook tool calls.
//! * Chapter 13 — [`composition`]: one runtime that wires the session, the
//!   agent, the context, resources and extensions, and answers a prompt
//!   only once its messages are saved.

pub mod event_stream;

mod block_on;
pub use block_on::block_on;

pub mod agent;
pub mod agent_loop;
pub mod assistant_stream;
pub mod coding_tools;
pub mod composition;
pub mod context;
pub mod provider_adapter;
pub mod resources;
pub mod scripted_model;
pub mod session;
pub mod tool;
pub mod types;

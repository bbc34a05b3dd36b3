//! The learner's crate of the "build your own Pi agent" course.
//!
//! Each chapter adds one layer; the checkpoint commits in the repository's
//! history (`course(NN): …`) mark where a chapter starts and ends.

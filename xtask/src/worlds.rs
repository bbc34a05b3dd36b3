//! The two worlds of a course repository (README, "Two worlds"): the
//! learner's world is all a practice folder holds; the tooling paths below
//! never reach one, and `recut` takes them from HEAD.

use crate::repo::CHECKPOINTS_DIR;

/// Top-level paths that belong to the tooling. `README.md` is here because it
/// documents the tooling and every chapter's API at once.
pub const TOOLING: [&str; 5] = ["xtask", ".cargo", ".ci", CHECKPOINTS_DIR, "README.md"];

/// True when the repository path `path` is tooling.
pub fn is_tooling(path: &[u8]) -> bool {
    let top = path.split(|&byte| byte == b'/').next().unwrap_or_default();
    TOOLING.iter().any(|tooling| tooling.as_bytes() == top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tooling_is_recognised_by_its_top_level_name_only() {
        for tooling in [
            "xtask",
            "xtask/src/main.rs",
            ".cargo/config.toml",
            ".ci/run",
            "checkpoints/03/LEARNING.md",
            "README.md",
        ] {
            assert!(is_tooling(tooling.as_bytes()), "{tooling}");
        }
        for learner in [
            "Cargo.toml",
            "Cargo.lock",
            ".gitignore",
            "course/src/lib.rs",
            "course/xtask/x.rs",
            "xtasks",
            "course/README.md",
        ] {
            assert!(!is_tooling(learner.as_bytes()), "{learner}");
        }
    }
}

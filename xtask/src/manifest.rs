//! `checkpoints/NN/checkpoint.json`: what a chapter is and how to prove it.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// A chapter number, always shown with two digits (`3` and `03` are both `03`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChapterId(u8);

impl FromStr for ChapterId {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let valid = !text.is_empty() && text.len() <= 2 && text.bytes().all(|b| b.is_ascii_digit());
        match text.parse::<u8>() {
            Ok(number) if valid => Ok(ChapterId(number)),
            _ => Err(format!(
                "`{text}` is not a chapter id: use one or two digits, e.g. 03"
            )),
        }
    }
}

impl fmt::Display for ChapterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}", self.0)
    }
}

impl ChapterId {
    /// The subject prefix of this chapter's checkpoint commits.
    pub fn commit_prefix(self) -> String {
        format!("course({self}):")
    }
}

/// A chapter's manifest, as authored in `checkpoint.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub mode: Mode,
    /// The chapter's focused test, copied from the target into practice folders.
    pub focused_test: RepoPath,
    /// The files the learner writes; they must not leak into practice.
    pub teaching_files: Vec<RepoPath>,
    /// The command that runs the focused test, from the repository root.
    pub run: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_tests: Option<usize>,
    /// Strings the parent's failing output must contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub red: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
}

/// Where practice starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Practise from the parent: rebuild the chapter's layer.
    #[default]
    Rebuild,
    /// Practise from the target: study the finished layer.
    Observe,
}

/// One step of the chapter: a test-name filter and how many tests it selects.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: String,
    /// Substring of test names; empty selects every focused test.
    #[serde(default)]
    pub filter: String,
    pub expected_tests: usize,
}

/// A deliberate bug: `find` → `replace` in `file` must make `failing_test` fail.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub id: String,
    pub file: RepoPath,
    pub find: String,
    pub replace: String,
    pub failing_test: String,
}

/// A relative path that stays inside the repository (no `..`, not absolute).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct RepoPath(String);

impl RepoPath {
    /// The path as written, with `/` separators.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path below `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        root.join(&self.0)
    }
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for RepoPath {
    type Error = String;

    fn try_from(path: String) -> Result<Self, String> {
        let stays_inside = !path.is_empty()
            && !path.contains('\\')
            && Path::new(&path)
                .components()
                .all(|component| matches!(component, Component::Normal(name) if name != ".git"));
        if stays_inside {
            Ok(RepoPath(path.trim_end_matches('/').to_string()))
        } else {
            Err(format!(
                "path `{path}` leaves the repository: paths are relative to the repository root, without `..`, `.git` or a leading `/`"
            ))
        }
    }
}

impl<'de> Deserialize<'de> for RepoPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RepoPath::try_from(String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_ids_take_one_or_two_digits() {
        assert_eq!("3".parse::<ChapterId>().unwrap().to_string(), "03");
        assert_eq!("03".parse::<ChapterId>().unwrap().to_string(), "03");
        for bad in ["", "003", "x1", "-1", "3a", " 3"] {
            assert!(bad.parse::<ChapterId>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn repo_paths_stay_inside() {
        for good in ["course/src/lib.rs", "a", "dir/"] {
            assert!(RepoPath::try_from(good.to_string()).is_ok(), "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../b",
            "./a",
            ".git/config",
            "a\\..\\b",
            "a/.git/x",
        ] {
            assert!(RepoPath::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }
}

//! `checkpoints/NN/checkpoint.json`: what a chapter is and how to prove it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::worlds;

/// A chapter number, always shown with two digits (`3` and `03` are both `03`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChapterId(u8);

impl Serialize for ChapterId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChapterId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl FromStr for ChapterId {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.parse() {
            Ok(number) if text.len() <= 2 && text.bytes().all(|b| b.is_ascii_digit()) => {
                Ok(ChapterId(number))
            }
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

/// A chapter's manifest, as authored in `checkpoint.json`. An unknown key is
/// an error: a misspelt `expectedTest` must not switch a proof off.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub id: ChapterId,
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
    /// Further files the lab takes from the target besides the lab tests: a
    /// runnable example, the build files when the chapter adds a dependency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lab_files: Vec<RepoPath>,
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

/// One entry of a step: a test-name filter and how many tests it selects
/// (see [`StepGroup`]); without its own `testFile` and `run`, it filters `run`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    pub id: String,
    /// The step's name for the learner, given once per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Substring of test names; empty selects every test of the run.
    #[serde(default)]
    pub filter: String,
    pub expected_tests: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_file: Option<RepoPath>,
    /// Required with `testFile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Vec<String>>,
}

impl Step {
    /// The command this step runs: its own, or the chapter's `run`.
    pub fn run<'a>(&'a self, manifest: &'a Manifest) -> &'a [String] {
        self.run.as_deref().unwrap_or(&manifest.run)
    }
}

/// A step as the learner meets it: one id, title and `check` row.
pub struct StepGroup<'m> {
    pub id: &'m str,
    pub title: Option<&'m str>,
    /// The manifest's entries with this id, in order.
    pub entries: Vec<&'m Step>,
}

impl StepGroup<'_> {
    /// How many distinct tests the step selects: per run, the count of an
    /// entry with an empty filter, else the sum of its entries' counts.
    pub fn expected_tests(&self, manifest: &Manifest) -> usize {
        let runs = distinct(self.entries.iter().map(|step| step.run(manifest)));
        let in_run = |run: &[String]| {
            let entries = self.entries.iter().filter(|step| step.run(manifest) == run);
            let all = entries.clone().find(|step| step.filter.is_empty());
            all.map_or_else(
                || entries.map(|step| step.expected_tests).sum(),
                |step| step.expected_tests,
            )
        };
        runs.into_iter().map(in_run).sum()
    }
}

/// Manifest text as messages show it: quoted and escaped unless plain, so
/// a trailing space shows and nothing reaches the terminal raw.
pub fn shown(text: &str) -> Cow<'_, str> {
    match crate::out::escape_control(text) {
        Cow::Borrowed(plain) if !plain.is_empty() && plain.trim() == plain => Cow::Borrowed(plain),
        escaped => Cow::Owned(format!("\"{escaped}\"")),
    }
}

/// A deliberate bug: `find` → `replace` in `file` must make `failing_test` fail.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    pub id: String,
    pub file: RepoPath,
    pub find: String,
    pub replace: String,
    pub failing_test: String,
    /// The step whose own `run` holds `failing_test`; else the chapter's `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

impl Fault {
    /// The command that must fail once this fault is applied.
    pub fn run<'a>(&self, manifest: &'a Manifest) -> &'a [String] {
        let step = self.step.as_ref().and_then(|id| {
            manifest
                .steps
                .iter()
                .find(|step| &step.id == id && step.run.is_some())
        });
        step.map_or(&manifest.run, |step| step.run(manifest))
    }
}

impl Manifest {
    /// The test files a lab gets from the target: the focused test, the steps'.
    pub fn lab_tests(&self) -> Vec<&RepoPath> {
        let steps = self.steps.iter().filter_map(|step| step.test_file.as_ref());
        distinct(std::iter::once(&self.focused_test).chain(steps))
    }

    /// Every file a lab takes from the target, once: the lab tests, `labFiles`.
    pub fn target_files(&self) -> Vec<&RepoPath> {
        distinct(self.lab_tests().into_iter().chain(&self.lab_files))
    }

    /// The distinct commands a lab runs: the chapter's `run`, then the steps'.
    pub fn runs(&self) -> Vec<&[String]> {
        distinct(std::iter::once(&self.run[..]).chain(self.steps.iter().map(|step| step.run(self))))
    }

    /// The chapter's steps, each id once, in the order of its first entry.
    pub fn step_groups(&self) -> Vec<StepGroup<'_>> {
        let mut groups: Vec<StepGroup<'_>> = Vec::new();
        for step in &self.steps {
            match groups.iter_mut().find(|group| group.id == step.id) {
                Some(group) => {
                    group.title = group.title.or(step.title.as_deref());
                    group.entries.push(step);
                }
                None => groups.push(StepGroup {
                    id: &step.id,
                    title: step.title.as_deref(),
                    entries: vec![step],
                }),
            }
        }
        groups
    }

    /// What is wrong with the manifest on its own, before any commit is read.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        // Text that reaches a terminal in reports and guides: no control
        // character (an escape sequence could rewrite the screen).
        let steps = self
            .steps
            .iter()
            .flat_map(|step| [Some(&step.id), step.title.as_ref()]);
        let faults = self.faults.iter().map(|fault| Some(&fault.id));
        for text in std::iter::once(Some(&self.title))
            .chain(steps)
            .chain(faults)
            .flatten()
        {
            if text.chars().any(crate::out::is_hidden) {
                problems.push(format!(
                    "{} holds a control character: write it as plain text",
                    shown(text)
                ));
            }
        }
        let mut seen = HashSet::new();
        for step in &self.steps {
            if !seen.insert((&step.id, &step.filter)) {
                problems.push(format!(
                    "step {} with filter {} is declared twice",
                    shown(&step.id),
                    shown(&step.filter)
                ));
            }
        }
        for group in self.step_groups() {
            let titles = distinct(group.entries.iter().filter_map(|step| step.title.as_ref()));
            if titles.len() > 1 {
                let titles: Vec<Cow<'_, str>> = titles.iter().map(|title| shown(title)).collect();
                problems.push(format!(
                    "step {} has {} titles ({}): a step has one title, on its first entry",
                    shown(group.id),
                    titles.len(),
                    titles.join(", ")
                ));
            }
        }
        let mut seen = HashSet::new();
        for fault in &self.faults {
            if !seen.insert(&fault.id) {
                problems.push(format!("fault id `{}` is declared twice", shown(&fault.id)));
            }
        }
        if self.runs().iter().any(|run| run.is_empty()) {
            problems.push("a `run` is empty: give the command that runs the tests".to_string());
        }
        for step in &self.steps {
            if let Some(file) = &step.test_file
                && step.run.is_none()
            {
                problems.push(format!(
                    "step {} has a `testFile` but no `run`: give the command that runs {file}",
                    shown(&step.id)
                ));
            }
        }
        for file in self.target_files() {
            if self.teaching_files.contains(file) {
                problems.push(format!(
                    "{file}, taken from the target into every lab, is also a teaching file: \
                     practice would copy the answer"
                ));
            }
        }
        for path in self.target_files().into_iter().chain(&self.teaching_files) {
            if worlds::is_tooling(path.as_str().as_bytes()) {
                problems.push(format!(
                    "{path} is a tooling path ({}): the learner's files live in the learner's world",
                    worlds::TOOLING.join(", ")
                ));
            }
        }
        for fault in &self.faults {
            if let Some(step) = &fault.step
                && !self.steps.iter().any(|known| &known.id == step)
            {
                problems.push(format!(
                    "fault `{}` names step {}, which the manifest does not declare",
                    shown(&fault.id),
                    shown(step)
                ));
            }
            if !self.teaching_files.contains(&fault.file) {
                problems.push(format!(
                    "fault `{}` changes {}, which is not a teaching file",
                    shown(&fault.id),
                    fault.file
                ));
            }
        }
        problems
    }
}

/// `items` in their order, each once.
fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut kept = Vec::new();
    for item in items {
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
    kept
}

/// Explains serde's "unknown field" error with the closest key it knows.
pub fn closest_key_hint(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, rest) = rest.split_once('`')?;
    let known: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let closest = known.iter().min_by_key(|key| edit_distance(unknown, key))?;
    Some(format!(
        "unknown key `{unknown}`: did you mean `{closest}`?"
    ))
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// A relative path that stays inside the repository (no `..`, not absolute).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct RepoPath(String);

impl RepoPath {
    pub fn as_str(&self) -> &str {
        &self.0
    }

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
        let plain = !path.chars().any(crate::out::is_hidden);
        let stays_inside = plain
            && !path.is_empty()
            && !path.contains('\\')
            && Path::new(&path)
                .components()
                .all(|component| matches!(component, Component::Normal(name) if name != ".git"));
        if stays_inside {
            Ok(RepoPath(path.trim_end_matches('/').to_string()))
        } else {
            Err(format!(
                "path `{}` leaves the repository or holds a control character: paths are relative to the repository root, without `..`, `.git` or a leading `/`",
                crate::out::escape_control(&path)
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
    fn a_path_with_a_control_character_is_refused_and_shown_escaped() {
        let error = RepoPath::try_from("course/\u{1b}[31mx.rs".to_string()).unwrap_err();
        assert!(error.contains(r"course/\u{1b}[31mx.rs"), "{error}");
        assert!(!error.contains('\u{1b}'), "{error}");
        assert!(RepoPath::try_from("course/src/类型.rs".to_string()).is_ok());
    }

    #[test]
    fn chapter_ids_take_one_or_two_digits() {
        assert_eq!("3".parse::<ChapterId>().unwrap().to_string(), "03");
        assert_eq!("03".parse::<ChapterId>().unwrap().to_string(), "03");
        for bad in ["", "003", "x1", "-1", "3a", " 3"] {
            assert!(bad.parse::<ChapterId>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_unknown_key_names_the_closest_known_one() {
        let error = serde_json::from_str::<Manifest>(
            r#"{"id":"03","title":"t","focusedTest":"a","teachingFiles":[],"run":["x"],"expectedTest":4}"#,
        )
        .unwrap_err();
        assert_eq!(
            closest_key_hint(&error.to_string()).as_deref(),
            Some("unknown key `expectedTest`: did you mean `expectedTests`?")
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
    }

    #[test]
    fn manifest_problems_are_all_named() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "id": "03", "title": "t", "focusedTest": "course/src/lib.rs",
            "teachingFiles": ["course/src/lib.rs", "checkpoints/03/hints.md"], "run": [],
            "steps": [{"id": "1", "filter": "a", "expectedTests": 1}, {"id": "1", "filter": "a", "expectedTests": 1}, {"id": "1", "filter": "b", "expectedTests": 1}],
            "faults": [
                {"id": "f", "file": "course/src/lib.rs", "find": "a", "replace": "b", "failingTest": "t"},
                {"id": "f", "file": "course/src/other.rs", "find": "a", "replace": "b", "failingTest": "t"}
            ]
        }))
        .unwrap();
        let problems = manifest.problems().join("\n");
        for needle in [
            "`run` is empty",
            "course/src/lib.rs, taken from the target into every lab, is also a teaching file",
            "checkpoints/03/hints.md is a tooling path",
            "course/src/other.rs, which is not a teaching file",
            "step 1 with filter a is declared twice",
            "fault id `f` is declared twice",
        ] {
            assert!(problems.contains(needle), "{needle}: {problems}");
        }
        assert_eq!(manifest.problems().len(), 6, "{problems}");
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

    fn wire_manifest(patch: impl FnOnce(&mut serde_json::Value)) -> Manifest {
        let mut json = serde_json::json!({
            "id": "03", "title": "t", "focusedTest": "course/tests/focused.rs",
            "teachingFiles": ["course/src/types.rs"], "run": ["cargo", "test", "--test", "focused"],
            "steps": [
                {"id": "3.1", "filter": "text", "expectedTests": 1},
                {"id": "3.3", "title": "线上格式", "filter": "", "expectedTests": 2,
                 "testFile": "course/tests/wire.rs", "run": ["cargo", "test", "--test", "wire"]},
                {"id": "3.4", "filter": "event", "expectedTests": 1,
                 "testFile": "course/tests/wire.rs", "run": ["cargo", "test", "--test", "wire"]}
            ],
            "faults": [
                {"id": "camel", "file": "course/src/types.rs", "find": "a", "replace": "b",
                 "failingTest": "wire_round_trip", "step": "3.3"},
                {"id": "text", "file": "course/src/types.rs", "find": "a", "replace": "b",
                 "failingTest": "text_projection"}
            ]
        });
        patch(&mut json);
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_step_may_bring_its_own_test_file_and_run() {
        let manifest = wire_manifest(|_| {});
        assert!(manifest.problems().is_empty(), "{:?}", manifest.problems());
        let tests: Vec<&str> = manifest.lab_tests().iter().map(|t| t.as_str()).collect();
        assert_eq!(tests, ["course/tests/focused.rs", "course/tests/wire.rs"]);
        let wire = ["cargo", "test", "--test", "wire"];
        assert_eq!(
            manifest.runs(),
            [&manifest.run[..], &wire.map(String::from)[..]]
        );
        assert_eq!(manifest.steps[0].run(&manifest), &manifest.run[..]);
        assert_eq!(manifest.steps[1].run(&manifest), wire);
        assert_eq!(manifest.steps[1].title.as_deref(), Some("线上格式"));
        assert_eq!(manifest.faults[0].run(&manifest), wire);
        assert_eq!(manifest.faults[1].run(&manifest), &manifest.run[..]);
        // A fault naming a step without a run of its own fails the chapter's run.
        let manifest = wire_manifest(|json| json["faults"][0]["step"] = "3.1".into());
        assert_eq!(manifest.faults[0].run(&manifest), &manifest.run[..]);
        // The schema's new keys are checked like the others.
        let error = serde_json::from_value::<Step>(serde_json::json!(
            {"id": "1", "expectedTests": 1, "testfile": "a"}
        ))
        .unwrap_err();
        assert_eq!(
            closest_key_hint(&error.to_string()).as_deref(),
            Some("unknown key `testfile`: did you mean `testFile`?")
        );
    }

    #[test]
    fn step_test_files_and_runs_have_their_own_problems() {
        let manifest = wire_manifest(|json| {
            json["steps"][1].as_object_mut().unwrap().remove("run");
            json["steps"][2]["testFile"] = "course/src/types.rs".into();
            json["steps"][2]["run"] = serde_json::json!([]);
            json["steps"][0]["testFile"] = "checkpoints/03/wire.rs".into();
            json["steps"][0]["run"] = serde_json::json!(["cargo"]);
            json["faults"][0]["step"] = "9.9".into();
        });
        let problems = manifest.problems().join("\n");
        for needle in [
            "step 3.3 has a `testFile` but no `run`",
            "course/src/types.rs, taken from the target into every lab, is also a teaching file",
            "a `run` is empty",
            "checkpoints/03/wire.rs is a tooling path",
            "fault `camel` names step 9.9, which the manifest does not declare",
        ] {
            assert!(problems.contains(needle), "{needle}: {problems}");
        }
        assert_eq!(manifest.problems().len(), 5, "{problems}");
    }

    fn target_files(manifest: &Manifest) -> Vec<&str> {
        manifest.target_files().iter().map(|f| f.as_str()).collect()
    }

    #[test]
    fn lab_files_come_after_the_lab_tests_and_have_their_own_problems() {
        let manifest = wire_manifest(|json| {
            json["labFiles"] = serde_json::json!(["Cargo.lock", "course/examples/chat.rs"]);
        });
        assert!(manifest.problems().is_empty(), "{:?}", manifest.problems());
        assert_eq!(
            target_files(&manifest),
            [
                "course/tests/focused.rs",
                "course/tests/wire.rs",
                "Cargo.lock",
                "course/examples/chat.rs"
            ]
        );

        let manifest = wire_manifest(|json| {
            json["labFiles"] = serde_json::json!([
                "Cargo.lock",
                "Cargo.lock",
                "course/tests/wire.rs",
                "course/src/types.rs",
                ".cargo/config.toml"
            ]);
        });
        assert_eq!(
            target_files(&manifest),
            [
                "course/tests/focused.rs",
                "course/tests/wire.rs",
                "Cargo.lock",
                "course/src/types.rs",
                ".cargo/config.toml"
            ]
        );
        let problems = manifest.problems().join("\n");
        for needle in [
            "course/src/types.rs, taken from the target into every lab, is also a teaching file",
            ".cargo/config.toml is a tooling path",
        ] {
            assert!(problems.contains(needle), "{needle}: {problems}");
        }
        assert_eq!(manifest.problems().len(), 2, "{problems}");

        let error = serde_json::from_value::<Manifest>(serde_json::json!({
            "id": "03", "title": "t", "focusedTest": "a", "teachingFiles": [], "run": ["x"],
            "labfile": ["Cargo.lock"]
        }))
        .unwrap_err();
        assert_eq!(
            closest_key_hint(&error.to_string()).as_deref(),
            Some("unknown key `labfile`: did you mean `labFiles`?")
        );
        let error = serde_json::from_value::<Manifest>(serde_json::json!({
            "id": "03", "title": "t", "focusedTest": "a", "teachingFiles": [], "run": ["x"],
            "labFiles": ["../Cargo.lock"]
        }))
        .unwrap_err();
        assert!(
            error.to_string().contains("leaves the repository"),
            "{error}"
        );
    }

    #[test]
    fn a_step_given_several_filters_is_one_step_with_one_title_and_one_count() {
        let manifest = wire_manifest(|json| {
            json["steps"] = serde_json::json!([
                {"id": "5.1", "title": "出站", "filter": "outbound", "expectedTests": 1},
                {"id": "5.2", "filter": "transport", "expectedTests": 3},
                {"id": "5.1", "filter": "system", "expectedTests": 2},
                {"id": "5.4", "title": "密钥", "filter": "fetch", "expectedTests": 2},
                {"id": "5.4", "title": "密钥", "filter": "", "expectedTests": 12},
                {"id": "5.4", "filter": "round", "expectedTests": 5, "testFile": "course/tests/wire.rs",
                 "run": ["cargo", "test", "--test", "wire"]}
            ]);
            json.as_object_mut().unwrap().remove("faults");
        });
        assert!(manifest.problems().is_empty(), "{:?}", manifest.problems());
        let groups = manifest.step_groups();
        let rows: Vec<(&str, Option<&str>, usize, usize)> = groups
            .iter()
            .map(|group| {
                let expected = group.expected_tests(&manifest);
                (group.id, group.title, group.entries.len(), expected)
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("5.1", Some("出站"), 2, 3),
                ("5.2", None, 1, 3),
                // All 12 of the focused run (the 2 `fetch` ones among them),
                // and the 5 of its own run.
                ("5.4", Some("密钥"), 3, 17),
            ]
        );
        let manifest = wire_manifest(|json| {
            json["steps"][0]["title"] = "文本".into();
            json["steps"][1]["id"] = "3.1".into();
        });
        let problems = manifest.problems().join("\n");
        assert!(
            problems.contains("step 3.1 has 2 titles (文本, 线上格式)"),
            "{problems}"
        );
    }

    #[test]
    fn text_is_quoted_when_its_ends_or_characters_would_not_show() {
        assert_eq!(shown("3.1"), "3.1");
        assert_eq!(shown("线上 格式"), "线上 格式");
        assert_eq!(shown("3.1 "), "\"3.1 \"");
        assert_eq!(shown(" 3.1"), "\" 3.1\"");
        assert_eq!(shown(""), "\"\"");
        assert_eq!(shown("a\u{1b}b"), "\"a\\u{1b}b\"");
        assert_eq!(shown("a\u{202e}b"), "\"a\\u{202e}b\"");
        let manifest = wire_manifest(|json| json["steps"][0]["id"] = "3.1 ".into());
        assert_eq!(shown(&manifest.steps[0].id), "\"3.1 \"");
    }
}

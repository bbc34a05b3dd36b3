//! `hint NN [--step S] [--level 1-4]`: the hint ladder of a chapter step —
//! 1 locate the file, 2 the signature, 3 pseudocode, 4 a partial fragment.
//!
//! Hints are authored in `checkpoints/NN/hints.md`:
//!
//! ```text
//! ## 3.1
//! ### 1
//! Which file to open …
//! ### 2
//! …
//! ```
//!
//! Every step has all four levels. Being authoring material under
//! `checkpoints/`, hints never reach a practice folder.

use crate::chapter::{self, ChapterFolder};
use crate::cli;
use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::manifest;
use crate::out::outln;
use crate::repo::CourseRepo;

/// The hints of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepHints {
    pub step: String,
    /// Levels 1 to 4, in order.
    pub levels: Vec<String>,
}

impl cli::Hint {
    /// Runs the command.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let (id, step, level) = (self.id, self.step.as_deref(), self.level);
        let hints = load(&chapter::find(&repo.checkpoints_dir(), id)?)?;
        let known: Vec<&str> = hints.iter().map(|hints| hints.step.as_str()).collect();
        let chosen = match step {
            None => hints.first(),
            Some(step) => hints.iter().find(|hints| hints.step == step),
        }
        .ok_or_else(|| {
            Error::bad_input(say::no_such_step(
                &id.to_string(),
                &manifest::shown(step.unwrap_or("?")),
                &known,
            ))
        })?;
        let level = usize::from(level);
        outln!("{}", say::hint_heading(&id.to_string(), &chosen.step));
        for (index, text) in chosen.levels.iter().take(level).enumerate() {
            outln!("\n{}", say::hint_rung(index + 1));
            for line in text.lines() {
                outln!("  {line}");
            }
        }
        if level < say::HINT_LEVELS.len() {
            outln!("\n{}", say::hint_next(&id.to_string(), &chosen.step, level));
        } else {
            outln!("\n{}", say::HINT_LAST);
        }
        if step.is_none() && known.len() > 1 {
            outln!("{}", say::hint_steps(&known.join("、")));
        }
        Ok(())
    }
}

/// Reads and checks a chapter's hints file (never through a symlink).
pub fn load(chapter: &ChapterFolder) -> Result<Vec<StepHints>> {
    let (shown, text) = chapter.read("hints.md", say::hints_missing)?;
    parse(&text).map_err(|(line, _)| Error::bad_input(say::hints_malformed(&shown, line)))
}

/// Parses the hints format; errors carry a 1-based line number.
pub fn parse(text: &str) -> Result<Vec<StepHints>, (usize, String)> {
    let mut steps: Vec<StepHints> = Vec::new();
    let mut last_heading = 0;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(step) = line.strip_prefix("## ") {
            close(steps.last(), last_heading)?;
            if steps.iter().any(|known| known.step == step.trim()) {
                return Err((number, format!("step `{}` has hints already", step.trim())));
            }
            steps.push(StepHints {
                step: step.trim().to_string(),
                levels: Vec::new(),
            });
            last_heading = number;
        } else if let Some(level) = line.strip_prefix("### ") {
            let step = steps.last_mut().ok_or((
                number,
                "a level comes before any `## step` heading".to_string(),
            ))?;
            let expected = step.levels.len() + 1;
            if level.trim() != expected.to_string() || expected > say::HINT_LEVELS.len() {
                return Err((
                    number,
                    format!("expected `### {expected}` (levels run 1 to 4, in order)"),
                ));
            }
            step.levels.push(String::new());
        } else if let Some(current) = steps.last_mut().and_then(|step| step.levels.last_mut()) {
            current.push_str(line);
            current.push('\n');
        } else if !line.trim().is_empty() && !steps.is_empty() {
            return Err((number, "text before the step's `### 1`".to_string()));
        }
    }
    close(steps.last(), last_heading)?;
    if steps.is_empty() {
        return Err((1, "no `## step` heading".to_string()));
    }
    for step in &mut steps {
        for level in &mut step.levels {
            *level = level.trim().to_string();
        }
    }
    Ok(steps)
}

fn close(step: Option<&StepHints>, heading: usize) -> Result<(), (usize, String)> {
    match step {
        Some(step) if step.levels.len() != say::HINT_LEVELS.len() => Err((
            heading,
            format!(
                "step {} has {} of the 4 levels",
                step.step,
                step.levels.len()
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ladder(step: &str) -> String {
        format!("## {step}\n### 1\nfile\n### 2\nsig\n### 3\npseudo\n### 4\ncode\n")
    }

    #[test]
    fn parses_steps_with_four_levels() {
        let hints = parse(&format!("# title\n\n{}{}", ladder("3.1"), ladder("3.2"))).unwrap();
        assert_eq!(hints.len(), 2);
        assert_eq!(hints[1].step, "3.2");
        assert_eq!(hints[0].levels, ["file", "sig", "pseudo", "code"]);
    }

    #[test]
    fn refuses_missing_or_disordered_levels() {
        assert_eq!(parse("## 3.1\n### 1\na\n### 3\nb\n").unwrap_err().0, 4);
        let missing = parse("## 3.1\n### 1\na\n## 3.2\n").unwrap_err();
        assert_eq!(missing.0, 1);
        assert!(missing.1.contains("1 of the 4"));
        assert!(parse("### 1\n").is_err());
        assert!(parse("").is_err());
        assert!(parse(&format!("{}### 5\nx\n", ladder("1"))).is_err());
    }

    /// The real chapters' hints: every manifest step has all four levels.
    #[test]
    fn every_step_of_the_course_has_four_levels() {
        let checkpoints = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../checkpoints");
        for chapter in crate::chapter::all(&checkpoints).unwrap() {
            let manifest = chapter.load().unwrap();
            let hints = load(&chapter).unwrap();
            for step in &manifest.steps {
                let found = hints.iter().find(|hints| hints.step == step.id);
                assert!(
                    found.is_some(),
                    "chapter {} step {} has no hints",
                    manifest.id,
                    step.id
                );
            }
        }
    }
}

//! `hint NN [--step S] [--level 1-4]`: a step's hint ladder from
//! `checkpoints/NN/hints.md` (format: AUTHORING.md).

use crate::chapter;
use crate::cli;
use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::manifest;
use crate::out::outln;
use crate::repo::CourseRepo;

#[derive(Debug, PartialEq)]
struct StepHints {
    step: String,
    /// Levels 1 to 4, in order.
    levels: Vec<String>,
}

impl cli::Hint {
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let (id, step, level) = (self.id, self.step.as_deref(), self.level);
        let chapter = chapter::find(&repo.checkpoints_dir(), id)?;
        let manifest = chapter.load()?;
        let (shown, text) = chapter.read("hints.md", say::hints_missing)?;
        let hints =
            parse(&text).map_err(|line| Error::bad_input(say::hints_malformed(&shown, line)))?;
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
        // The step's title has one home, the manifest, as in `check`'s rows.
        let groups = manifest.step_groups();
        let title = groups.iter().find(|group| group.id == chosen.step);
        let title = title.and_then(|group| group.title);
        outln!(
            "{}",
            say::hint_heading(&id.to_string(), &chosen.step, title)
        );
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

/// Parses the hints format; an error is the 1-based number of the line at
/// fault (a step's heading when it lacks levels).
fn parse(text: &str) -> Result<Vec<StepHints>, usize> {
    let mut steps: Vec<(usize, StepHints)> = Vec::new();
    for (number, line) in (1..).zip(text.lines()) {
        if let Some(step) = line.strip_prefix("## ") {
            if steps.iter().any(|(_, known)| known.step == step.trim()) {
                return Err(number);
            }
            let levels = Vec::new();
            let step = step.trim().to_string();
            steps.push((number, StepHints { step, levels }));
        } else if let Some(level) = line.strip_prefix("### ") {
            let (_, step) = steps.last_mut().ok_or(number)?;
            let expected = step.levels.len() + 1;
            if level.trim() != expected.to_string() || expected > say::HINT_LEVELS.len() {
                return Err(number);
            }
            step.levels.push(String::new());
        } else if let Some((_, step)) = steps.last_mut() {
            match step.levels.last_mut() {
                Some(current) => {
                    current.push_str(line);
                    current.push('\n');
                }
                // Text before the step's `### 1`.
                None if !line.trim().is_empty() => return Err(number),
                None => {}
            }
        }
    }
    if steps.is_empty() {
        return Err(1);
    }
    (steps.into_iter())
        .map(|(heading, mut step)| {
            if step.levels.len() != say::HINT_LEVELS.len() {
                return Err(heading);
            }
            for level in &mut step.levels {
                *level = level.trim().to_string();
            }
            Ok(step)
        })
        .collect()
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
        assert_eq!(parse("## 3.1\n### 1\na\n### 3\nb\n"), Err(4));
        assert_eq!(parse("## 3.1\n### 1\na\n## 3.2\n"), Err(1));
        assert_eq!(parse(&format!("{}## 3.1\n", ladder("3.1"))), Err(10));
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
            let (_, text) = chapter.read("hints.md", say::hints_missing).unwrap();
            let hints = parse(&text).unwrap();
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

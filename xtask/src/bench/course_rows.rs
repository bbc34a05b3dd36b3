//! The course crate's own benchmarks, run as child processes: the tooling
//! never links the learner's crate. Each workload is an example of the course
//! crate (`course/examples/bench_<workload>.rs`, added by the chapter that
//! introduces the API it measures), built in release, printing one JSON
//! [`Row`] per line on stdout (`--quick` for smaller sizes).

use std::path::Path;
use std::time::Duration;

use super::Row;
use crate::error::{Error, Result};
use crate::out::noteln;
use crate::repo::CourseRepo;
use crate::runner::Invocation;
use crate::safe_fs;

/// How long one course benchmark may run, build included.
const TIMEOUT: Duration = Duration::from_secs(900);

/// Runs `course/examples/bench_<workload>.rs` and reads its rows.
pub fn run(repo: &CourseRepo, workload: &str, quick: bool) -> Result<Vec<Row>> {
    noteln!("bench: {workload} (course/examples/bench_{workload}.rs, release) …");
    let example = format!("bench_{workload}");
    let command: Vec<String> = [
        "cargo",
        "run",
        "--quiet",
        "--release",
        "-p",
        "course",
        "--example",
    ]
    .into_iter()
    .map(String::from)
    .chain([example.clone(), "--".to_string()])
    .collect();
    let extra: Vec<String> = if quick {
        vec!["--quick".to_string()]
    } else {
        vec![]
    };
    let run = Invocation {
        command: &command,
        extra: &extra,
        dir: &repo.root,
        target_dir: &safe_fs::folder_inside(&repo.root, Path::new(crate::repo::TARGET_DIR))?,
        timeout: TIMEOUT,
    }
    .run()?;
    if !run.success {
        return Err(Error::check_failed(format!(
            "`{}` failed:\n{}",
            command.join(" "),
            run.output
        )));
    }
    run.stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| {
            serde_json::from_str(line).map_err(|error| {
                Error::check_failed(format!(
                    "{example} printed a row that is not a bench row ({error}): {line}"
                ))
            })
        })
        .collect()
}

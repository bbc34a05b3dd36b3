//! `practice NN DIR`: an isolated exercise folder ([`lab::build`]), written
//! whole or not at all ([`Destination`]).

use std::path::Path;

use crate::destination::Destination;
use crate::error::{Error, Result};
use crate::learner_text::{self as say, LabPointer};
use crate::manifest::Mode;
use crate::out::{self, escape_control, noteln, outln, relative_or_absolute, shell_word};
use crate::repo::CourseRepo;
use crate::{chapter, cli, exclude, lab, lab_dir, locate, safe_fs, signals};

impl cli::Practice {
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let chapter = chapter::find(&repo.checkpoints_dir(), self.id)?;
        let manifest = chapter.load()?;
        let checkpoint = locate::locate(&repo.git, self.id)?;
        chapter::check_target(repo, &manifest, &checkpoint)?;
        let handout = chapter.handout(&manifest)?;
        let here = std::env::current_dir()
            .and_then(|here| here.canonicalize())
            .map_err(|error| {
                Error::bad_input(format!("cannot read the current directory: {error}"))
            })?;
        let destination = Destination::resolve(&self.dir, &here)?;
        destination.check(repo, &here)?;
        let dir = &destination.path;
        let root = &repo.canonical_root;
        let pattern = match dir.strip_prefix(root) {
            Ok(relative) => Some(exclude::pattern_for(relative)?),
            Err(_) => None,
        };
        let root_word = shell_word(&root.display().to_string());
        let lab_from_root = shell_word(&relative_or_absolute(dir, root));
        let pointer = LabPointer {
            root: &root_word,
            lab_from_root: &lab_from_root,
        };
        let (written, excluded) = {
            let _section = signals::defer();
            // Declared in this order so they are dropped the other way round
            // on an error or an interrupt: the staging folder goes first,
            // then the parent folders that held it.
            let parents = destination.create_parents()?;
            let staging = destination.staging()?;
            let written = lab::build(
                repo,
                &manifest,
                &checkpoint,
                &handout,
                staging.path(),
                Some(&pointer),
            )?;
            // Written like the tree's files: never through a symlink the
            // tree put at that name.
            let marker = say::lab_marker(&manifest.id.to_string());
            let at = Path::new(lab_dir::MARKER_FILE);
            safe_fs::write_inside(staging.path(), at, marker.as_bytes(), 0o644)?;
            let excluded = pattern
                .map(|pattern| exclude::add(repo.git.commondir(), &pattern))
                .transpose()?;
            signals::check()?;
            destination.move_into_place(staging)?;
            parents.keep();
            if signals::received().is_some() {
                noteln!(
                    "{}",
                    say::practice_ready_before_interrupt(&escape_control(
                        &dir.display().to_string()
                    ))
                );
            }
            (written, excluded)
        };
        // What was made: where it starts, what was added to it, what it
        // left out; then the next steps.
        let id = manifest.id.to_string();
        let target = &checkpoint.target.short;
        let (title, shown) = (&manifest.title, dir.display().to_string());
        let ready = say::practice_ready(&id, &escape_control(title), &escape_control(&shown));
        outln!("{ready}");
        let base = &checkpoint.base(manifest.mode).short;
        let (files, symlinks) = (written.files, written.symlinks);
        let from = say::practice_from(manifest.id, manifest.mode);
        let start = say::practice_start(&from, base, files, symlinks);
        outln!("  {start}");
        let focused_test = manifest.focused_test.as_str();
        outln!("  {}", say::practice_added(target, focused_test));
        for test in manifest.lab_tests().into_iter().skip(1) {
            outln!("  {}", say::practice_added_step_test(test.as_str()));
        }
        for file in &manifest.lab_files {
            outln!("  {}", say::practice_added_lab_file(target, file.as_str()));
        }
        if manifest.mode == Mode::Rebuild {
            for (file, content) in &handout.starter {
                let to_write = String::from_utf8_lossy(content).contains("尚未实现");
                outln!("  {}", say::practice_added_starter(file.as_str(), to_write));
            }
        }
        for submodule in &written.submodules {
            outln!("  {}", say::practice_submodule(submodule));
        }
        if let Some(excluded) = &excluded {
            let (file, added) = (excluded.file.display().to_string(), excluded.added);
            outln!(
                "  {}",
                say::practice_excluded(&excluded.pattern, added, &file)
            );
        }
        let lab_from_here = relative_or_absolute(dir, &here);
        let guide = format!("{lab_from_here}/{}", chapter::GUIDE_FILE);
        let steps = say::practice_next_steps(
            &id,
            &shell_word(&guide),
            &shell_word(&lab_from_here),
            &out::shell_line(&manifest.run),
            &pointer,
        );
        outln!("\n{steps}");
        out::flush();
        Ok(())
    }
}

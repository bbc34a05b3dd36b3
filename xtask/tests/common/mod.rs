//! Throwaway course repositories for the xtask tests, built with git2 in
//! temporary folders. Nothing here touches the real repository or the network.

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use git2::{Oid, Repository, Signature, Time};
use tempfile::TempDir;

/// A git repository in `repo/` of a private temporary folder, so a test can
/// also check that nothing was written beside the repository.
pub struct Fixture {
    pub dir: TempDir,
    root: PathBuf,
    pub repo: Repository,
    clock: std::cell::Cell<i64>,
}

impl Fixture {
    /// An empty repository (no commits).
    pub fn empty() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("xtask-fixture-")
            .tempdir()
            .unwrap();
        let root = dir.path().join("repo");
        let repo = Repository::init(&root).unwrap();
        Fixture {
            dir,
            root,
            repo,
            clock: std::cell::Cell::new(1_700_000_000),
        }
    }

    /// A course repository with chapters 02 and 03 cut as checkpoints:
    /// skeleton → course(02) → course(03), plus the chapter folders at HEAD.
    pub fn course() -> Self {
        Fixture::course_with_index_only(&[])
    }

    /// [`Fixture::course`] whose chapter 03 layer (and the commit after it)
    /// also holds `extra` files, in the commits and the index only, never
    /// in the work tree.
    pub fn course_with_index_only(extra: &[(String, String)]) -> Self {
        let fixture = Fixture::empty();
        fixture.write("Cargo.toml", "[workspace]\nmembers = [\"course\"]\n");
        fixture.write("course/src/lib.rs", "// skeleton\n");
        fixture.commit("Skeleton");
        fixture.write("course/src/lib.rs", "pub mod stream;\n");
        fixture.write("course/src/stream.rs", "// chapter 02\n");
        fixture.write("course/tests/stream.rs", "// focused 02\n");
        fixture.commit("course(02): the stream");
        fixture.write("course/src/lib.rs", "pub mod stream;\npub mod types;\n");
        fixture.write("course/src/types.rs", "// chapter 03 answer\n");
        fixture.write("course/tests/message_ir.rs", "// focused 03\n");
        fixture.commit_with_index_only("course(03): save one complete tool round-trip", extra);
        fixture.write_manifest(
            "02",
            &manifest("02", "course/tests/stream.rs", &["course/src/stream.rs"]),
        );
        fixture.write_manifest(
            "03",
            &manifest(
                "03",
                "course/tests/message_ir.rs",
                &["course/src/types.rs", "course/src/lib.rs"],
            ),
        );
        fixture.commit_with_index_only("Describe chapters 02 and 03", extra);
        fixture
    }

    /// [`Fixture::course`] with chapter 03 re-cut as `recut` does it: a
    /// commit restoring chapter 03's start (`lib.rs` as `restored_lib`;
    /// `pub mod stream;\n` is course(02)'s learner world again), then a new
    /// `course(03):` on top.
    pub fn course_recut_03(restored_lib: &str) -> Self {
        let fixture = Fixture::course();
        fs::remove_file(fixture.root().join("course/src/types.rs")).unwrap();
        fs::remove_file(fixture.root().join("course/tests/message_ir.rs")).unwrap();
        fixture.write("course/src/lib.rs", restored_lib);
        fixture.commit("Restore chapter 03's starting point, to re-cut it");
        fixture.write("course/src/lib.rs", "pub mod stream;\npub mod types;\n");
        fixture.write("course/src/types.rs", "// chapter 03 answer, re-cut\n");
        fixture.write("course/tests/message_ir.rs", "// focused 03\n");
        fixture.commit("course(03): save one complete tool round-trip");
        fixture
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes a file of the work tree, creating folders.
    pub fn write(&self, path: &str, content: &str) {
        let path = self.root().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    pub fn make_executable(&self, path: &str) {
        let path = self.root().join(path);
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub fn symlink(&self, target: &str, path: &str) {
        std::os::unix::fs::symlink(target, self.root().join(path)).unwrap();
    }

    /// Writes `checkpoints/NN/checkpoint.json` and a LEARNING.md.
    pub fn write_manifest(&self, id: &str, json: &str) {
        self.write(&format!("checkpoints/{id}/checkpoint.json"), json);
        self.write(
            &format!("checkpoints/{id}/LEARNING.md"),
            &format!("# 第 {id} 章练习\n"),
        );
    }

    /// Commits the whole work tree on HEAD.
    pub fn commit(&self, subject: &str) -> Oid {
        self.commit_with_index_only(subject, &[])
    }

    /// [`Fixture::commit`], with `extra` files added to the index (and so
    /// the commit) but not to the work tree.
    pub fn commit_with_index_only(&self, subject: &str, extra: &[(String, String)]) -> Oid {
        let mut index = self.repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.update_all(["*"], None).unwrap();
        for (path, content) in extra {
            let entry = git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o100644,
                uid: 0,
                gid: 0,
                file_size: 0,
                id: Oid::ZERO_SHA1,
                flags: 0,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            };
            index.add_frombuffer(&entry, content.as_bytes()).unwrap();
        }
        index.write().unwrap();
        let tree = index.write_tree().unwrap();
        self.commit_tree(subject, tree)
    }

    /// Commits `tree` on HEAD.
    pub fn commit_tree(&self, subject: &str, tree: Oid) -> Oid {
        let parents: Vec<_> = self
            .repo
            .head()
            .ok()
            .map(|head| head.peel_to_commit().unwrap())
            .into_iter()
            .collect();
        let parent_refs: Vec<_> = parents.iter().collect();
        self.commit_with_parents(
            subject,
            tree,
            &parent_refs.iter().map(|c| c.id()).collect::<Vec<_>>(),
        )
    }

    /// Commits `tree` with the given parents and moves HEAD to it.
    pub fn commit_with_parents(&self, subject: &str, tree: Oid, parents: &[Oid]) -> Oid {
        let time = self.clock.get() + 60;
        self.clock.set(time);
        let signature =
            Signature::new("Fixture", "fixture@example.com", &Time::new(time, 0)).unwrap();
        let tree = self.repo.find_tree(tree).unwrap();
        let parents: Vec<_> = parents
            .iter()
            .map(|id| self.repo.find_commit(*id).unwrap())
            .collect();
        let parent_refs: Vec<_> = parents.iter().collect();
        let oid = self
            .repo
            .commit(None, &signature, &signature, subject, &tree, &parent_refs)
            .unwrap();
        self.move_head(oid);
        oid
    }

    /// Points the current branch at `commit`.
    pub fn move_head(&self, commit: Oid) {
        let head = self.repo.find_reference("HEAD").unwrap();
        let branch = head
            .symbolic_target()
            .ok()
            .flatten()
            .unwrap_or("refs/heads/main")
            .to_string();
        self.repo
            .reference(&branch, commit, true, "fixture")
            .unwrap();
    }

    /// The commit `spec` (e.g. `HEAD~1`) names.
    pub fn rev(&self, spec: &str) -> Oid {
        self.repo.revparse_single(spec).unwrap().id()
    }

    pub fn head(&self) -> Oid {
        self.repo.head().unwrap().peel_to_commit().unwrap().id()
    }

    /// Marks `commits` as shallow boundaries, as a shallow clone would.
    pub fn make_shallow(&self, commits: &[Oid]) {
        let lines: String = commits.iter().map(|oid| format!("{oid}\n")).collect();
        fs::write(self.repo.path().join("shallow"), lines).unwrap();
    }

    /// Runs `cargo xtask ARGS` in the repository root.
    pub fn xtask(&self, args: &[&str]) -> Run {
        xtask_in(self.root(), args)
    }
}

pub const ANSWER: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn double(x: i32) -> i32 {\n    x * 2\n}\n";

pub const FOCUSED: &str = "use course::{add, double};\n\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n\n#[test]\nfn doubles() {\n    assert_eq!(double(4), 8);\n}\n";

/// A course with chapter 01: an empty crate, then `add` and `double` with
/// their focused test. `parent_lib` and `target_lib` let a test break it.
pub fn tiny_course(
    parent_lib: &str,
    target_lib: &str,
    patch: impl FnOnce(&mut serde_json::Value),
) -> Fixture {
    tiny_course_with(
        &[("course/src/lib.rs", parent_lib)],
        &[("course/src/lib.rs", target_lib)],
        patch,
    )
}

/// [`tiny_course`] with any files written at the parent (on top of the
/// workspace skeleton) and at the target (on top of the parent's).
pub fn tiny_course_with(
    parent_files: &[(&str, &str)],
    target_files: &[(&str, &str)],
    patch: impl FnOnce(&mut serde_json::Value),
) -> Fixture {
    let focused = [("course/tests/focused.rs", FOCUSED)];
    let target: Vec<(&str, &str)> = target_files.iter().copied().chain(focused).collect();
    tiny_course_own_focused(parent_files, &target, patch)
}

/// The crate manifest chapter 01 of [`tiny_course_with_lab_files`] ends
/// with: the skeleton's, with a feature (as a chapter adding a dependency
/// changes it).
pub const LAB_CARGO_TOML: &str = "[package]\nname = \"course\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\n[features]\nloud = []\n";

/// The lock file chapter 01 of [`tiny_course_with_lab_files`] adds.
pub const LAB_CARGO_LOCK: &str = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"course\"\nversion = \"0.1.0\"\n";

/// The runnable example chapter 01 of [`tiny_course_with_lab_files`] adds:
/// it compiles only with the answer.
pub const LAB_EXAMPLE: &str =
    "fn main() {\n    println!(\"{}\", course::double(course::add(1, 2)));\n}\n";

/// [`tiny_course`] whose chapter 01 also changes the crate's `Cargo.toml`,
/// adds a `Cargo.lock` and a runnable example, the three handed out as
/// `labFiles`.
pub fn tiny_course_with_lab_files(patch: impl FnOnce(&mut serde_json::Value)) -> Fixture {
    tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/Cargo.toml", LAB_CARGO_TOML),
            ("Cargo.lock", LAB_CARGO_LOCK),
            ("course/examples/demo.rs", LAB_EXAMPLE),
        ],
        |manifest| {
            manifest["labFiles"] =
                serde_json::json!(["Cargo.lock", "course/Cargo.toml", "course/examples/demo.rs"]);
            patch(manifest);
        },
    )
}

/// A chapter manifest with the required fields.
pub fn manifest(id: &str, focused: &str, teaching: &[&str]) -> String {
    serde_json::json!({
        "id": id,
        "title": format!("第 {id} 章"),
        "focusedTest": focused,
        "teachingFiles": teaching,
        "run": ["cargo", "test", "-p", "course"],
    })
    .to_string()
}

/// What one xtask run printed and how it exited.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn success(&self) -> &Self {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Asserts the exit code and that stderr mentions every one of `needles`.
    pub fn fails_with(&self, code: i32, needles: &[&str]) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr lacks {needle:?}:\n{}",
                self.stderr
            );
        }
        self
    }

    /// Asserts that stdout mentions every one of `needles`.
    pub fn prints(&self, needles: &[&str]) -> &Self {
        for needle in needles {
            assert!(
                self.stdout.contains(needle),
                "stdout lacks {needle:?}:\n{}",
                self.stdout
            );
        }
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("{error}: {}", self.stdout))
    }
}

/// Runs the xtask binary with `dir` as the current directory.
pub fn xtask_in(dir: &Path, args: &[&str]) -> Run {
    xtask_with_env(dir, args, &[])
}

/// Runs the xtask binary with extra environment variables.
pub fn xtask_with_env(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Run {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(dir)
        .env("CARGO_TERM_COLOR", "never")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Every path below `dir` (relative), sorted: to prove nothing else was written.
pub fn snapshot(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .map(|entry| {
            entry
                .unwrap()
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_path_buf()
        })
        .collect();
    paths.sort();
    paths
}

/// The top-level names of the tooling world (as xtask/src/worlds.rs declares
/// them), for tests that tell the two worlds apart.
pub const TOOLING: [&str; 5] = ["xtask", ".cargo", ".ci", "checkpoints", "README.md"];

/// True when the repository path `path` belongs to the tooling.
pub fn is_tooling(path: &str) -> bool {
    let top = path.split('/').next().unwrap_or_default();
    TOOLING.contains(&top)
}

/// One blob of a tree: its mode and content.
pub type Blob = (i32, Vec<u8>);

impl Fixture {
    /// Gives the repository its own author identity (user.name, user.email).
    pub fn set_identity(&self) {
        let mut config = self.repo.config().unwrap();
        config.set_str("user.name", "Course Author").unwrap();
        config.set_str("user.email", "author@example.com").unwrap();
    }

    /// Runs `cargo xtask ARGS` with git's global configuration hidden (HOME
    /// and XDG_CONFIG_HOME point into the fixture's private folder; libgit2
    /// reads no GIT_CONFIG_* variables), so the repository's own
    /// configuration is what counts. Cargo and rustup keep their homes.
    pub fn xtask_own_config(&self, args: &[&str]) -> Run {
        let home = self.dir.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let caller_home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| caller_home.join(".cargo"));
        let rustup_home = std::env::var_os("RUSTUP_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| caller_home.join(".rustup"));
        xtask_with_env(
            self.root(),
            args,
            &[
                ("HOME", &home),
                ("XDG_CONFIG_HOME", &home),
                ("CARGO_HOME", &cargo_home),
                ("RUSTUP_HOME", &rustup_home),
            ],
        )
    }

    /// Every blob (file, symlink) of the tree of commit `spec`, by path.
    pub fn files_at(&self, spec: &str) -> std::collections::BTreeMap<String, Blob> {
        let tree = self
            .repo
            .revparse_single(spec)
            .unwrap()
            .peel_to_tree()
            .unwrap();
        let mut files = std::collections::BTreeMap::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |folder, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                let blob = self.repo.find_blob(entry.id()).unwrap();
                files.insert(
                    format!("{folder}{}", entry.name().unwrap()),
                    (entry.filemode(), blob.content().to_vec()),
                );
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        files
    }

    /// The learner's world of commit `spec`: its blobs outside the tooling.
    pub fn learner_at(&self, spec: &str) -> std::collections::BTreeMap<String, Blob> {
        let mut files = self.files_at(spec);
        files.retain(|path, _| !is_tooling(path));
        files
    }

    /// The tooling of commit `spec`: its blobs inside the tooling.
    pub fn tooling_at(&self, spec: &str) -> std::collections::BTreeMap<String, Blob> {
        let mut files = self.files_at(spec);
        files.retain(|path, _| is_tooling(path));
        files
    }

    /// The full message of commit `spec`.
    pub fn message(&self, spec: &str) -> String {
        let commit = self
            .repo
            .revparse_single(spec)
            .unwrap()
            .peel_to_commit()
            .unwrap();
        commit.message().unwrap().to_string()
    }

    /// The subject of commit `spec`.
    pub fn subject(&self, spec: &str) -> String {
        self.message(spec)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// Every file of the work tree outside `.git` and `target`, by path:
    /// its mode bits and content (a symlink's content is its target).
    pub fn work_tree(&self) -> std::collections::BTreeMap<String, (u32, Vec<u8>)> {
        let mut files = std::collections::BTreeMap::new();
        let walk = walkdir::WalkDir::new(self.root())
            .min_depth(1)
            .into_iter()
            .filter_entry(|entry| entry.file_name() != ".git" && entry.file_name() != "target");
        for entry in walk {
            let entry = entry.unwrap();
            let meta = entry.path().symlink_metadata().unwrap();
            let content = if meta.file_type().is_symlink() {
                fs::read_link(entry.path())
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_file() {
                fs::read(entry.path()).unwrap()
            } else {
                continue;
            };
            let path = entry.path().strip_prefix(self.root()).unwrap();
            files.insert(
                path.to_string_lossy().into_owned(),
                (meta.permissions().mode(), content),
            );
        }
        files
    }
}
/// Starts the xtask binary in `dir` without waiting for it. Stdin is empty
/// and stderr is captured; stdout goes where the test says.
pub fn spawn_xtask(dir: &Path, args: &[&str], stdout: std::process::Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(dir)
        .env("CARGO_TERM_COLOR", "never")
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits at most `limit` for `child`. A child still running then is killed
/// and `None` is returned, so a hanging command fails its test instead of
/// hanging the test run.
pub fn wait_at_most(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// What a spawned child wrote to its captured stderr (after it ended).
pub fn stderr_of(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut text = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut text);
    }
    text
}

/// Polls `condition` until it holds (true) or `limit` passes (false).
pub fn wait_until(limit: std::time::Duration, mut condition: impl FnMut() -> bool) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if condition() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    condition()
}

/// True while process `pid` exists and has not ended (a zombie waiting to
/// be reaped counts as ended).
pub fn is_running(pid: i32) -> bool {
    if let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        return !state.starts_with('Z') && !state.starts_with('X');
    }
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Sends `signal` to process `pid`.
pub fn send_signal(pid: u32, signal: i32) {
    // SAFETY: plain kill(2) on a child this test started.
    let sent = unsafe { libc::kill(pid as i32, signal) };
    assert_eq!(sent, 0, "cannot send signal {signal} to {pid}");
}

/// The names of practice staging folders (`.practice-…`) in `dir`.
pub fn staging_folders(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with('.') && name.contains(".practice-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits at most `limit` for `child` (as [`wait_at_most`]) and returns its
/// exit status with the peak resident memory, in bytes, of it and the
/// children it waited for (`wait4`). Read its piped stdout on another
/// thread meanwhile; reap it with nothing else.
pub fn wait_with_peak_memory(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> Option<(std::process::ExitStatus, u64)> {
    use std::os::unix::process::ExitStatusExt;
    let started = std::time::Instant::now();
    let pid = child.id() as libc::pid_t;
    loop {
        let mut status = 0;
        // SAFETY: wait4 on our own child, writing into a zeroed rusage.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if done == pid {
            // ru_maxrss is in KiB on Linux.
            let peak = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
            return Some((std::process::ExitStatus::from_raw(status), peak));
        }
        assert!(done >= 0, "wait4: {}", std::io::Error::last_os_error());
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// [`spawn_xtask`] with extra environment variables.
pub fn spawn_xtask_with_env(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    stdout: std::process::Stdio,
) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(dir)
        .env("CARGO_TERM_COLOR", "never")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

// --- hx-verify ---

/// A course with chapter 01 like [`tiny_course_with`], whose target files
/// include its own focused test `course/tests/focused.rs` (none is added).
pub fn tiny_course_own_focused(
    parent_files: &[(&str, &str)],
    target_files: &[(&str, &str)],
    patch: impl FnOnce(&mut serde_json::Value),
) -> Fixture {
    let fixture = Fixture::empty();
    fixture.write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"course\"]\nresolver = \"2\"\n",
    );
    fixture.write(
        "course/Cargo.toml",
        "[package]\nname = \"course\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    fixture.write(".gitignore", "/target\n");
    for (path, content) in parent_files {
        fixture.write(path, content);
    }
    fixture.commit("Skeleton");
    for (path, content) in target_files {
        fixture.write(path, content);
    }
    fixture.commit("course(01): add and double");
    let mut manifest = serde_json::json!({
        "id": "01",
        "title": "加法",
        "focusedTest": "course/tests/focused.rs",
        "teachingFiles": ["course/src/lib.rs"],
        "run": ["cargo", "test", "-p", "course", "--test", "focused"],
        "expectedTests": 2,
        "red": ["unresolved import"],
        "steps": [{"id": "1.1", "filter": "adds", "expectedTests": 1}],
        "faults": [{"id": "subtracts", "file": "course/src/lib.rs", "find": "a + b", "replace": "a - b", "failingTest": "adds"}]
    });
    patch(&mut manifest);
    fixture.write_manifest("01", &manifest.to_string());
    fixture
}

/// The proofs of the first chapter of a `verify --json` run, as (name,
/// passed, detail).
pub fn proofs_of(run: &Run) -> Vec<(String, bool, String)> {
    let summary = run.json();
    summary["chapters"][0]["proofs"]
        .as_array()
        .unwrap_or_else(|| panic!("no proofs in {}\n{}", run.stdout, run.stderr))
        .iter()
        .map(|proof| {
            (
                proof["proof"].as_str().unwrap().to_string(),
                proof["passed"].as_bool().unwrap(),
                proof["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The failed proofs of `proofs`, by name, with their details.
pub fn failed_proofs(proofs: &[(String, bool, String)]) -> Vec<(&str, &str)> {
    proofs
        .iter()
        .filter(|(_, passed, _)| !passed)
        .map(|(name, _, detail)| (name.as_str(), detail.as_str()))
        .collect()
}

/// Runs a command a learner report printed for the repository root
/// (`cargo xtask …`, shell-quoted) in `dir`, this test's xtask binary
/// standing in for the alias.
pub fn run_printed(dir: &Path, command: &str) -> Run {
    let script = format!("cargo() {{ shift; \"$XTASK\" \"$@\"; }}\n{command}");
    let output = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir)
        .env("XTASK", env!("CARGO_BIN_EXE_xtask"))
        .env("CARGO_TERM_COLOR", "never")
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs the `restore` command a `check` report printed, writes the answer
/// into the lab of chapter 01 and requires `check` to call it complete: a
/// report's restore line really restores.
pub fn restore_then_complete(fixture: &Fixture, lab: &Path, restore: &str) {
    let restored = run_printed(fixture.root(), restore);
    assert!(
        restored.stderr.contains("已把"),
        "{restore}: {}",
        restored.stderr
    );
    fs::write(lab.join("course/src/lib.rs"), ANSWER).unwrap();
    fixture
        .xtask(&["check", "01", "lab"])
        .success()
        .prints(&["第 01 章完成"]);
}

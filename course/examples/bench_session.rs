//! Chapter 10's session file at 100,000 entries: an append costs what the
//! first append did (it writes one line at the end; nothing is read or
//! rewritten), reopening reads the file once, and the memory a session takes.
//!
//! `cargo run --release -p course --example bench_session [-- --quick]`
//! (`--quick`: 10,000 entries). Figures are printed, never asserted.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Goal, figure, millis, row};
use course::session::{
    EntryKind, FileSystem, JsonlSessionStore, SessionEntry, SessionFileIo, SessionStore,
};
use course::types::{AgentMessage, StopReason, assistant_message, text, user_message};

/// The real file system, counting what goes through it.
#[derive(Clone, Default)]
struct Counted {
    written: Arc<AtomicUsize>,
    reads: Arc<AtomicUsize>,
}

impl SessionFileIo for Counted {
    fn ensure_file(&self, file: &Path) -> io::Result<()> {
        FileSystem.ensure_file(file)
    }

    fn read_file(&self, file: &Path) -> io::Result<String> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        FileSystem.read_file(file)
    }

    fn append_file(&self, file: &Path, value: &str) -> io::Result<()> {
        self.written.fetch_add(value.len(), Ordering::SeqCst);
        FileSystem.append_file(file, value)
    }
}

/// Entry `i` of a long conversation: users and assistants taking turns,
/// each the child of the one before.
fn entry(i: usize) -> SessionEntry {
    let message = if i.is_multiple_of(2) {
        AgentMessage::User(user_message(format!(
            "第 {i} 个问题：读一下 src/lib.rs 再回答"
        )))
    } else {
        AgentMessage::Assistant(assistant_message(
            vec![text(format!("回答 {i}：这个文件声明了本课程的模块。")).into()],
            StopReason::Stop,
        ))
    };
    SessionEntry {
        id: format!("e-{i}"),
        parent_id: i.checked_sub(1).map(|parent| format!("e-{parent}")),
        timestamp: 1_767_225_600_000 + i as u64,
        kind: EntryKind::Message { message },
    }
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let file = dir.join(name);
    let _ = std::fs::remove_file(&file);
    file
}

/// Counts the heap the program holds now and the most it held since the
/// last reset, so memory is measured in bytes allocated, not pages.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

fn main() {
    let entries = if common::quick() { 10_000 } else { 100_000 };
    let samples = if common::quick() { 21 } else { 101 };
    let size = format!("{entries} entries");
    let dir = std::env::temp_dir().join(format!("course-bench-session-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");

    // The first append, each time to a new empty file.
    let first: Vec<f64> = (0..samples)
        .map(|run| {
            let file = fresh(&dir, &format!("first-{run}.jsonl"));
            let mut store = JsonlSessionStore::open(&file).expect("open an empty file");
            millis(|| store.append(&entry(0)).expect("append"))
        })
        .collect();

    // A file of `entries` entries, written through the store.
    let file = fresh(&dir, "long.jsonl");
    let mut store = JsonlSessionStore::open(&file).expect("open");
    let fill = millis(|| {
        for i in 0..entries {
            store.append(&entry(i)).expect("append");
        }
    });
    let file_mb = std::fs::metadata(&file).expect("the file").len() as f64 / 1e6;

    // The next appends to that file, each timed alone.
    let counted = Counted::default();
    let mut store = JsonlSessionStore::open_with(&file, Box::new(counted.clone())).expect("open");
    let reads_on_open = counted.reads.load(Ordering::SeqCst);
    let later: Vec<f64> = (entries..entries + samples)
        .map(|i| millis(|| store.append(&entry(i)).expect("append")))
        .collect();
    let bytes_per_append = counted.written.load(Ordering::SeqCst) as f64 / samples as f64;
    // The same entries' own JSON lines (the key order aside, the bytes a line holds).
    let line_bytes: usize = (entries..entries + samples)
        .map(|i| serde_json::to_string(&entry(i)).expect("JSON").len() + 1)
        .sum();
    drop(store);

    row(
        "session append",
        &format!("after {size} vs the first"),
        figure(later, "ms"),
        Some(figure(first, "ms")),
        Goal::Reported,
    );
    row(
        "session append bytes",
        &format!("after {size} vs the line itself"),
        figure(vec![bytes_per_append], "bytes written"),
        Some(figure(
            vec![line_bytes as f64 / samples as f64],
            "bytes per line",
        )),
        Goal::Reported,
    );
    row(
        "session fill",
        &size,
        figure(vec![fill * 1e3 / entries as f64], "µs per append"),
        None,
        Goal::Reported,
    );

    // Reopening: the store reads the file once and keeps only the ids; the
    // baseline is reading the same bytes with nothing else.
    let (reopen, read): (Vec<f64>, Vec<f64>) = (0..common::runs())
        .map(|_| {
            let reopen = millis(|| drop(JsonlSessionStore::open(&file).expect("reopen")));
            let read = millis(|| drop(std::fs::read(&file).expect("read")));
            (reopen, read)
        })
        .unzip();
    row(
        "session reopen",
        &format!("{size}, {file_mb:.1} MB, {reads_on_open} read"),
        figure(reopen, "ms"),
        Some(figure(read, "ms")),
        Goal::Reported,
    );

    // Memory: the open store keeps the ids (the file's text and the parsed
    // entries live only while it opens); `entries()` holds every entry.
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let store = JsonlSessionStore::open(&file).expect("reopen");
    let open_live = LIVE.load(Ordering::SeqCst) - base;
    let open_peak = PEAK.load(Ordering::SeqCst) - base;
    let all = store.entries().expect("entries");
    let entries_live = LIVE.load(Ordering::SeqCst) - base;
    row(
        "session memory, open store",
        &format!("{} entries, file {file_mb:.1} MB", all.len()),
        figure(vec![mb(open_live)], "MB held (ids)"),
        Some(figure(vec![mb(open_peak)], "MB peak while opening")),
        Goal::Reported,
    );
    row(
        "session memory, all entries",
        &format!("{} entries, file {file_mb:.1} MB", all.len()),
        figure(vec![mb(entries_live)], "MB held (store + entries)"),
        None,
        Goal::Reported,
    );
    drop(all);
    let _ = std::fs::remove_dir_all(&dir);
}

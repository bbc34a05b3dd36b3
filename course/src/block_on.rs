//! A minimal executor: enough to drive the stream's futures in tests and
//! examples without pulling in an async runtime.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Runs `future` to completion on the current thread. While the future is
/// pending the thread spins briefly, then parks until it is woken.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let unparker = Arc::new(Unparker {
        thread: thread::current(),
        woken: AtomicBool::new(false),
    });
    let waker = Waker::from(Arc::clone(&unparker));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        unparker.wait();
    }
}

/// How many times a pending `block_on` checks for a wake before parking
/// (busy spins; the last 8 rounds yield the thread).
const SPIN_ROUNDS: u32 = 72;

struct Unparker {
    thread: Thread,
    woken: AtomicBool,
}

impl Unparker {
    fn wait(&self) {
        for round in 0..SPIN_ROUNDS {
            if self.woken.swap(false, Ordering::Acquire) {
                return;
            }
            if round < SPIN_ROUNDS - 8 {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
        while !self.woken.swap(false, Ordering::Acquire) {
            // A wake between the check and the park leaves an unpark token
            // behind, so the park returns at once: no wake-up is lost.
            thread::park();
        }
    }
}

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

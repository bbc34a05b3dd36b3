//! A tiny executor, so the stream's futures run without an async runtime.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Runs `future` to completion on the current thread.
///
/// Between polls the thread sleeps (`thread::park`); the future's waker wakes
/// it (`unpark`). A wake that arrives before the thread parks is not lost:
/// `unpark` leaves a token, so the next `park` returns at once. A park that
/// returns for no reason only costs one extra poll.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

/// A waker that unparks the thread it was made on.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

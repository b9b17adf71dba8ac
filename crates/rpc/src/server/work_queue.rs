//! The bounded work queue between the HTTP thread and the workers: Core's
//! `WorkQueue` (`httpserver.cpp`). `-rpcthreads` worker threads take jobs
//! in arrival order; at most `-rpcworkqueue` jobs wait for one (jobs being
//! run do not count), and a job offered to a full queue is refused at once,
//! which the server answers with 503 "Work queue depth exceeded".
//!
//! Workers are plain threads rather than tokio's blocking pool: backend
//! calls block (engine queries, block file reads, `waitfornewblock`), and
//! the pool's 512-thread default is neither `-rpcthreads` nor bounded by
//! it. Stopping lets the workers finish the jobs already queued (Core's
//! `Run` leaves only once the queue is empty), then joins them.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

/// A job for a worker.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// The queue was full (or stopping): the job was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("work queue depth exceeded")]
pub(crate) struct QueueFull;

struct State {
    jobs: VecDeque<Job>,
    running: bool,
}

struct Shared {
    state: Mutex<State>,
    job_ready: Condvar,
    depth_max: usize,
}

/// The queue and its worker threads.
pub(crate) struct WorkQueue {
    shared: Arc<Shared>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl WorkQueue {
    /// Starts `threads` workers (at least one) over a queue of at most
    /// `depth_max` waiting jobs (at least one), as Core clamps both.
    pub(crate) fn start(threads: usize, depth_max: usize) -> std::io::Result<WorkQueue> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { jobs: VecDeque::new(), running: true }),
            job_ready: Condvar::new(),
            depth_max: depth_max.max(1),
        });
        let queue = WorkQueue { shared, workers: Mutex::new(Vec::new()) };
        for index in 0..threads.max(1) {
            let shared = queue.shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("ibex-rpc-worker.{index}"))
                .spawn(move || run(&shared));
            match handle {
                Ok(handle) => lock(&queue.workers).push(handle),
                Err(error) => {
                    queue.stop();
                    return Err(error);
                }
            }
        }
        Ok(queue)
    }

    /// Queues `job`, or refuses it when `depth_max` jobs already wait.
    pub(crate) fn try_submit(&self, job: Job) -> Result<(), QueueFull> {
        let mut state = lock(&self.shared.state);
        if !state.running || state.jobs.len() >= self.shared.depth_max {
            return Err(QueueFull);
        }
        state.jobs.push_back(job);
        drop(state);
        self.shared.job_ready.notify_one();
        Ok(())
    }

    /// Refuses new jobs, lets the workers run those queued, and joins them.
    pub(crate) fn stop(&self) {
        lock(&self.shared.state).running = false;
        self.shared.job_ready.notify_all();
        let workers = std::mem::take(&mut *lock(&self.workers));
        for worker in workers {
            // A worker that panicked has nothing left to give back.
            let _ = worker.join();
        }
    }
}

impl Drop for WorkQueue {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A worker's loop: take the oldest job, run it, until stopped and empty.
fn run(shared: &Shared) {
    super::worker_priority::lower_this_thread();
    loop {
        let job = {
            let mut state = lock(&shared.state);
            loop {
                if let Some(job) = state.jobs.pop_front() {
                    break job;
                }
                if !state.running {
                    return;
                }
                state = shared.job_ready.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        };
        // A job that panics (a bug: nothing a client sends should) drops
        // its reply channel, which the HTTP side answers with a 500; the
        // worker lives on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn depth_counts_waiting_jobs_only() {
        let queue = WorkQueue::start(1, 1).unwrap();
        let (release_sender, release) = channel::<()>();
        let (started_sender, started) = channel::<()>();
        queue
            .try_submit(Box::new(move || {
                started_sender.send(()).unwrap();
                release.recv().unwrap();
            }))
            .unwrap();
        started.recv().unwrap();
        // The worker is busy: one job may wait, the next is refused.
        let (done_sender, done) = channel::<u32>();
        let second = done_sender.clone();
        queue.try_submit(Box::new(move || second.send(2).unwrap())).unwrap();
        assert_eq!(queue.try_submit(Box::new(|| {})), Err(QueueFull));
        release_sender.send(()).unwrap();
        assert_eq!(done.recv().unwrap(), 2);
        // Stopping runs what is queued first.
        let third = done_sender.clone();
        queue.try_submit(Box::new(move || third.send(3).unwrap())).unwrap();
        queue.stop();
        assert_eq!(done.recv().unwrap(), 3);
        assert_eq!(queue.try_submit(Box::new(|| {})), Err(QueueFull));
    }

    #[test]
    fn a_panicking_job_leaves_the_worker_alive() {
        let queue = WorkQueue::start(1, 4).unwrap();
        let (sender, receiver) = channel::<u32>();
        queue.try_submit(Box::new(|| std::panic::panic_any("job bug"))).unwrap();
        queue.try_submit(Box::new(move || sender.send(7).unwrap())).unwrap();
        assert_eq!(receiver.recv().unwrap(), 7);
    }
}

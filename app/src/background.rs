//! Background jobs for the views: one helper, [`Background`], for every run that must not block a
//! frame (verify, precision, vocabulary, train, serve, GPU, planner).
//!
//! A job is *stepped*: something with [`Stepped::step`] that does a slice of the work and answers
//! [`Step::Progress`], [`Step::Done`] or [`Step::Failed`]. The same job runs two ways:
//!
//! - **on a thread** (the desktop app, [`Background::spawn`] off wasm32): a worker thread calls
//!   `step` until the job ends and reports progress over a channel; the UI thread reads it in
//!   [`Background::poll`].
//! - **in frames** (the browser, where there are no threads; [`Background::in_frames`]):
//!   [`Background::poll`] calls `step` inside the frame until a time budget (8 ms by default) is
//!   spent, then asks for the next frame.
//!
//! Work the engine only offers as one call (a verification run, a precision sweep) is a job of
//! one step, [`Background::once`]; its closure gets a [`Reporter`] for progress inside that step.
//! Dropping a [`Background`] cancels it: no further step runs (a step already running finishes
//! and its result is discarded).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

// `std::time::Instant` panics in a browser; the web edition reads the clock through `web_time`.
#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;
#[cfg(target_arch = "wasm32")]
use web_time::Instant;

/// Both ends of a job's progress reports: `(fraction done, what it is doing)`.
type ProgressChannel = (Sender<(f32, String)>, Receiver<(f32, String)>);

/// What one [`Stepped::step`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<T> {
    /// More to do: the fraction done (0 to 1) and what it is doing, e.g. `step 12/200`.
    Progress(f32, String),
    /// Finished with a result.
    Done(T),
    /// Finished with an error, in words for the learner.
    Failed(String),
}

/// A job in slices: each call does a bounded amount of work. `step` is not called again after it
/// answers [`Step::Done`] or [`Step::Failed`].
pub trait Stepped: Send + 'static {
    type Output: Send + 'static;
    fn step(&mut self) -> Step<Self::Output>;
}

/// Progress reports from inside a step (for the one-step jobs of [`Background::once`]): sends
/// `(fraction, message)` to the job's [`Background`] and repaints.
#[derive(Clone)]
pub struct Reporter {
    tx: Sender<(f32, String)>,
    ctx: Option<egui::Context>,
}

impl Reporter {
    /// Reports `fraction` done (0 to 1) and what the job is doing.
    pub fn report(&self, fraction: f32, message: &str) {
        // The receiver is gone once the job was dropped (cancelled): nothing to tell then.
        let _ = self.tx.send((fraction, message.to_string()));
        if let Some(ctx) = &self.ctx {
            ctx.request_repaint();
        }
    }
}

/// A job of one step: the closure, run once.
struct Once<F> {
    work: Option<F>,
    reporter: Reporter,
}

impl<T, F> Stepped for Once<F>
where
    T: Send + 'static,
    F: FnOnce(&Reporter) -> Result<T, String> + Send + 'static,
{
    type Output = T;
    fn step(&mut self) -> Step<T> {
        match self.work.take() {
            Some(f) => match f(&self.reporter) {
                Ok(v) => Step::Done(v),
                Err(e) => Step::Failed(e),
            },
            None => Step::Failed("the job has already run".into()),
        }
    }
}

/// Runs steps of `job` until it ends, `cancel` is set, or `deadline` passes (after at least one
/// step). Progress goes to `progress`, the end to `done`. Returns whether the job ended.
fn drive<J: Stepped + ?Sized>(
    job: &mut J,
    progress: &Sender<(f32, String)>,
    done: &Sender<Result<J::Output, String>>,
    cancel: &AtomicBool,
    deadline: Option<Instant>,
) -> bool {
    loop {
        if cancel.load(Ordering::SeqCst) {
            return true;
        }
        match job.step() {
            Step::Progress(f, m) => {
                let _ = progress.send((f.clamp(0.0, 1.0), m));
            }
            Step::Done(v) => {
                let _ = done.send(Ok(v));
                return true;
            }
            Step::Failed(e) => {
                let _ = done.send(Err(e));
                return true;
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
    }
}

/// Where [`Background::spawn`] runs steps: frames of [`FRAME_BUDGET`] in a browser, a thread
/// elsewhere.
fn default_budget() -> Option<Duration> {
    cfg!(target_arch = "wasm32").then_some(FRAME_BUDGET)
}

/// How the steps run.
enum Runner<T> {
    /// On a worker thread (it holds the job).
    #[cfg(not(target_arch = "wasm32"))]
    Thread,
    /// Inside [`Background::poll`], within `budget` per frame; `None` once the job ended.
    Frames {
        job: Option<Box<dyn Stepped<Output = T>>>,
        budget: Duration,
        progress_tx: Sender<(f32, String)>,
        done_tx: Sender<Result<T, String>>,
    },
}

/// The default time a frame gives a job in [`Background::in_frames`].
pub const FRAME_BUDGET: Duration = Duration::from_millis(8);

/// A running job: its latest progress, its time, and its result once (through [`Self::poll`]).
pub struct Background<T> {
    runner: Runner<T>,
    progress_rx: Receiver<(f32, String)>,
    done_rx: Receiver<Result<T, String>>,
    progress: (f32, String),
    cancel: Arc<AtomicBool>,
    started: Instant,
    finished: bool,
}

impl<T: Send + 'static> Background<T> {
    /// Starts `job` the platform's way: a worker thread on the desktop, frames in a browser.
    /// `ctx` is repainted when there is news.
    pub fn spawn(ctx: &egui::Context, job: impl Stepped<Output = T>) -> Self {
        Self::start(
            Some(ctx.clone()),
            Box::new(job),
            channel(),
            default_budget(),
        )
    }

    /// A job of one step, `work`, started the platform's way; `work` reports progress through
    /// its [`Reporter`] and answers its result or an error in words.
    pub fn once<F>(ctx: &egui::Context, work: F) -> Self
    where
        F: FnOnce(&Reporter) -> Result<T, String> + Send + 'static,
    {
        let (tx, rx) = channel();
        let reporter = Reporter {
            tx: tx.clone(),
            ctx: Some(ctx.clone()),
        };
        let job = Once {
            work: Some(work),
            reporter,
        };
        Self::start(Some(ctx.clone()), Box::new(job), (tx, rx), default_budget())
    }

    /// Runs `job` on a worker thread (not in a browser); `ctx`, if any, is repainted on news.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn on_thread(ctx: Option<egui::Context>, job: impl Stepped<Output = T>) -> Self {
        Self::start(ctx, Box::new(job), channel(), None)
    }

    /// Runs `job` inside [`Self::poll`], at most about `budget` per call (at least one step).
    pub fn in_frames(job: impl Stepped<Output = T>, budget: Duration) -> Self {
        Self::start(None, Box::new(job), channel(), Some(budget))
    }

    /// Starts `job` in frames of `budget`, or on a thread when `budget` is `None`.
    // In a browser `ctx` is not needed: `poll` repaints.
    #[cfg_attr(target_arch = "wasm32", allow(unused_variables))]
    fn start(
        ctx: Option<egui::Context>,
        job: Box<dyn Stepped<Output = T>>,
        (progress_tx, progress_rx): ProgressChannel,
        budget: Option<Duration>,
    ) -> Self {
        let (done_tx, done_rx) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let runner = match budget {
            Some(budget) => Runner::Frames {
                job: Some(job),
                budget,
                progress_tx,
                done_tx,
            },
            #[cfg(not(target_arch = "wasm32"))]
            None => {
                let flag = Arc::clone(&cancel);
                let mut job = job;
                std::thread::spawn(move || {
                    // One step at a time, repainting after each so progress shows.
                    loop {
                        let ended = drive(
                            job.as_mut(),
                            &progress_tx,
                            &done_tx,
                            &flag,
                            Some(Instant::now()),
                        );
                        if let Some(c) = &ctx {
                            c.request_repaint();
                        }
                        if ended {
                            break;
                        }
                    }
                });
                Runner::Thread
            }
            #[cfg(target_arch = "wasm32")]
            None => Runner::Frames {
                job: Some(job),
                budget: FRAME_BUDGET,
                progress_tx,
                done_tx,
            },
        };
        Self {
            runner,
            progress_rx,
            done_rx,
            progress: (0.0, String::new()),
            cancel,
            started: Instant::now(),
            finished: false,
        }
    }

    /// Advances the job (in frames: runs steps for this frame's budget), takes its latest
    /// progress, and returns its result once. While it runs, asks `ctx` (if any) for another
    /// frame: at once in frames, after 100 ms on a thread (the thread also repaints on news).
    /// A job that stopped without a result (its thread panicked) answers an error.
    pub fn poll(&mut self, ctx: Option<&egui::Context>) -> Option<Result<T, String>> {
        if self.finished {
            return None;
        }
        let in_frames = match &mut self.runner {
            #[cfg(not(target_arch = "wasm32"))]
            Runner::Thread => false,
            Runner::Frames {
                job,
                budget,
                progress_tx,
                done_tx,
            } => {
                if let Some(j) = job {
                    let deadline = Instant::now() + *budget;
                    if drive(
                        j.as_mut(),
                        progress_tx,
                        done_tx,
                        &self.cancel,
                        Some(deadline),
                    ) {
                        *job = None;
                    }
                }
                true
            }
        };
        while let Ok(p) = self.progress_rx.try_recv() {
            self.progress = p;
        }
        match self.done_rx.try_recv() {
            Ok(r) => {
                self.finished = true;
                Some(r)
            }
            Err(TryRecvError::Disconnected) => {
                self.finished = true;
                Some(Err("the background job stopped without a result".into()))
            }
            Err(TryRecvError::Empty) => {
                if let Some(ctx) = ctx {
                    if in_frames {
                        ctx.request_repaint();
                    } else {
                        ctx.request_repaint_after(Duration::from_millis(100));
                    }
                }
                None
            }
        }
    }

    /// The latest progress: the fraction done and what the job is doing (empty before any).
    pub fn progress(&self) -> (f32, &str) {
        (self.progress.0, &self.progress.1)
    }

    /// Seconds since the job started.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Stops the job: no further step runs and no result will come. Dropping does the same.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
}

/// Polls the job in `slot`; when it ends, empties the slot and returns the result. The views'
/// `logic` calls it each frame.
pub fn finished<T: Send + 'static>(
    slot: &mut Option<Background<T>>,
    ctx: &egui::Context,
) -> Option<Result<T, String>> {
    let r = slot.as_mut()?.poll(Some(ctx))?;
    *slot = None;
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums 1..=n, one term per step; fails at `fail_at` if set.
    struct Sum {
        n: u64,
        i: u64,
        acc: u64,
        fail_at: Option<u64>,
        steps_run: Arc<std::sync::atomic::AtomicU64>,
    }

    impl Sum {
        fn new(n: u64) -> Self {
            Self {
                n,
                i: 0,
                acc: 0,
                fail_at: None,
                steps_run: Arc::default(),
            }
        }
    }

    impl Stepped for Sum {
        type Output = u64;
        fn step(&mut self) -> Step<u64> {
            self.steps_run.fetch_add(1, Ordering::SeqCst);
            if self.i == self.n {
                return Step::Done(self.acc);
            }
            self.i += 1;
            if self.fail_at == Some(self.i) {
                return Step::Failed(format!("term {} refused", self.i));
            }
            self.acc += self.i;
            Step::Progress(self.i as f32 / self.n as f32, format!("term {}", self.i))
        }
    }

    /// Polls until the job answers (at most ~5 s).
    fn wait<T: Send + 'static>(bg: &mut Background<T>) -> Result<T, String> {
        for _ in 0..5000 {
            if let Some(r) = bg.poll(None) {
                return r;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("the job did not finish");
    }

    #[test]
    fn a_stepped_job_gives_its_one_shot_result_on_a_thread_and_in_frames() {
        let one_shot: u64 = (1..=1000).sum();
        let mut t = Background::on_thread(None, Sum::new(1000));
        assert_eq!(wait(&mut t), Ok(one_shot));
        let mut f = Background::in_frames(Sum::new(1000), Duration::from_millis(1));
        assert_eq!(wait(&mut f), Ok(one_shot));
        // The result comes once.
        assert_eq!(f.poll(None), None);
    }

    #[test]
    fn progress_is_the_latest_step_report() {
        // A zero budget runs exactly one step per poll.
        let mut f = Background::in_frames(Sum::new(4), Duration::ZERO);
        assert_eq!(f.progress(), (0.0, ""));
        assert_eq!(f.poll(None), None);
        assert_eq!(f.progress(), (0.25, "term 1"));
        assert_eq!(f.poll(None), None);
        assert_eq!(f.progress(), (0.5, "term 2"));
        assert_eq!(wait(&mut f), Ok(10));
        assert_eq!(f.progress(), (1.0, "term 4"));
    }

    #[test]
    fn a_failed_step_ends_the_job_with_its_error() {
        let job = Sum {
            fail_at: Some(3),
            ..Sum::new(10)
        };
        let steps = Arc::clone(&job.steps_run);
        let mut t = Background::on_thread(None, job);
        assert_eq!(wait(&mut t), Err("term 3 refused".into()));
        // No step after the failure.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(steps.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn dropping_or_cancelling_stops_the_steps() {
        /// Never ends on its own; counts its steps.
        struct Forever(Arc<std::sync::atomic::AtomicU64>);
        impl Stepped for Forever {
            type Output = ();
            fn step(&mut self) -> Step<()> {
                self.0.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
                Step::Progress(0.0, String::new())
            }
        }
        let count = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let bg = Background::on_thread(None, Forever(Arc::clone(&count)));
        std::thread::sleep(Duration::from_millis(30));
        drop(bg);
        std::thread::sleep(Duration::from_millis(20));
        let after_drop = count.load(Ordering::SeqCst);
        assert!(after_drop > 0);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            count.load(Ordering::SeqCst),
            after_drop,
            "steps ran after the drop"
        );

        let count = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut f = Background::in_frames(Forever(Arc::clone(&count)), Duration::ZERO);
        assert_eq!(f.poll(None), None);
        f.cancel();
        assert_eq!(f.poll(None), None);
        assert_eq!(f.poll(None), None);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_one_step_job_reports_through_its_reporter() {
        let ctx = egui::Context::default();
        let mut bg = Background::once(&ctx, |r: &Reporter| {
            r.report(0.5, "halfway");
            Ok::<_, String>(7)
        });
        assert_eq!(wait(&mut bg), Ok(7));
        assert_eq!(bg.progress(), (0.5, "halfway"));
        let mut bad = Background::<()>::once(&ctx, |_: &Reporter| Err("no".into()));
        assert_eq!(wait(&mut bad), Err("no".into()));
    }

    #[test]
    fn a_job_that_panics_answers_an_error() {
        struct Panics;
        impl Stepped for Panics {
            type Output = ();
            fn step(&mut self) -> Step<()> {
                panic!("boom")
            }
        }
        let mut t = Background::on_thread(None, Panics);
        let r = wait(&mut t);
        assert!(r.is_err_and(|e| e.contains("without a result")));
    }

    #[test]
    fn finished_empties_the_slot() {
        let ctx = egui::Context::default();
        let mut slot = Some(Background::in_frames(Sum::new(3), FRAME_BUDGET));
        assert_eq!(finished(&mut slot, &ctx), Some(Ok(6)));
        assert!(slot.is_none());
        assert_eq!(finished(&mut slot, &ctx), None);
    }
}

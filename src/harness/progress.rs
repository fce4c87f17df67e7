//! A progress bar on stderr: shown only on a terminal, and only once a run has
//! lasted more than a second and a half, so short runs print nothing extra.
//! `--style color|none` hides it everywhere. Clones share one bar, so a
//! caller that runs several plans one after the other (a study's parts)
//! shows them as one. It is drawn only when a worker starts or ends, never
//! on a timer: a redraw while a worker samples wakes kdelta and the
//! terminal, and either may land on the measured CPU.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

#[derive(Clone)]
pub(crate) struct Progress {
    bar: ProgressBar,
    start: Instant,
    tty: bool,
    shown: std::rc::Rc<std::cell::Cell<bool>>,
}

impl Progress {
    /// A bar of `total` workers; never drawn unless `allowed`.
    pub(crate) fn new(total: u64, allowed: bool) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} workers, {eta} left {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            bar,
            start: Instant::now(),
            tty: allowed && std::io::stderr().is_terminal(),
            shown: std::rc::Rc::new(std::cell::Cell::new(false)),
        }
    }
    fn maybe_show(&self) {
        if self.tty && !self.shown.get() && self.start.elapsed() > Duration::from_millis(1500) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown.set(true);
        }
    }
    pub(crate) fn set_message(&self, m: String) {
        self.maybe_show();
        self.bar.set_message(m);
    }
    pub(crate) fn inc(&self) {
        self.maybe_show();
        self.bar.inc(1);
    }
    /// More jobs than planned (retakes, `--runs auto`).
    pub(crate) fn add_length(&self, n: u64) {
        self.bar.inc_length(n);
    }
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

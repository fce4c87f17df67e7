//! The resource limits every benchmark server keeps (chat's two models,
//! tbench), what they count when a limit bites, and their bounded log.
//!
//! A server for the open network must not let one client cost it without
//! bound: connections are capped (one more is accepted and closed at once,
//! counted), a connection silent for [`Limits::idle`] is closed, a receiver
//! that takes no bytes for [`Limits::write`] is dropped, and what a server
//! says about each of these goes through [`RateLog`]: a few lines per window,
//! then one line saying how many were left out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The limits a server keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Connections open at once; one more is closed as soon as accepted.
    pub(crate) conns: usize,
    /// Runs (chat) being seated or served at once; a HELLO for one more is refused.
    pub(crate) runs: usize,
    /// A connection that sends nothing for this long is closed.
    pub(crate) idle: Duration,
    /// A receiver that takes no bytes of its pending output for this long is
    /// dropped (its socket shut down), so that its room goes on.
    pub(crate) write: Duration,
    /// Bytes of output a connection may have waiting in the server (beyond
    /// the kernel's socket buffer) before the server stops reading from the
    /// senders of its room (chat `events`; `threads` holds at most its
    /// bounded queue).
    pub(crate) out_bytes: usize,
}

impl Limits {
    /// Defaults of `kdelta serve` (stated in its `--help`).
    pub(crate) const SERVE: Limits = Limits {
        conns: 4096,
        runs: 64,
        idle: Duration::from_secs(300),
        write: Duration::from_secs(30),
        out_bytes: 256 << 10,
    };

    /// A server started by one run on loopback: room for the largest run
    /// (chat's `MAX_RUN_CONNS` and some), the same timeouts.
    pub(crate) const LOCAL: Limits = Limits { conns: (1 << 16) + 64, runs: 4, ..Limits::SERVE };

    /// One line for a server's start-up message.
    pub(crate) fn describe(&self) -> String {
        format!(
            "at most {} connections, {} runs, idle timeout {:?}, write timeout {:?}, {} KiB of pending output per connection",
            self.conns,
            self.runs,
            self.idle,
            self.write,
            self.out_bytes >> 10
        )
    }
}

/// What a server counted when its limits bit, reported when it stops.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) accepted: AtomicU64,
    /// Connections closed at once: the cap was reached.
    pub(crate) refused: AtomicU64,
    /// HELLOs refused (runs cap, or a bad shape).
    pub(crate) hellos_refused: AtomicU64,
    /// Connections closed after `idle` without a byte.
    pub(crate) idle_closed: AtomicU64,
    /// Receivers dropped for taking nothing for `write`.
    pub(crate) slow_dropped: AtomicU64,
}

impl Tally {
    pub(crate) fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// One line: `accepted 10, refused 2 (connection cap), ...`.
    pub(crate) fn summary(&self) -> String {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "accepted {} connections, refused {} (connection cap), refused {} HELLOs, closed {} idle, dropped {} slow receivers",
            g(&self.accepted),
            g(&self.refused),
            g(&self.hellos_refused),
            g(&self.idle_closed),
            g(&self.slow_dropped)
        )
    }
}

/// A log that prints at most [`RateLog::LINES`] lines per
/// [`RateLog::WINDOW`], and then, once the window is over, one line with the
/// count of those left out: a flood of refusals costs a few lines.
pub(crate) struct RateLog {
    name: &'static str,
    state: Mutex<(Instant, u32, u64)>,
}

impl RateLog {
    pub(crate) const LINES: u32 = 10;
    pub(crate) const WINDOW: Duration = Duration::from_secs(10);

    pub(crate) fn new(name: &'static str) -> RateLog {
        RateLog { name, state: Mutex::new((Instant::now(), 0, 0)) }
    }

    /// Say `msg` on stderr unless this window's lines are spent; true if said.
    pub(crate) fn say(&self, msg: impl std::fmt::Display) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (start, lines, left_out) = &mut *st;
        if start.elapsed() >= Self::WINDOW {
            if *left_out > 0 {
                eprintln!("{}: {} more messages left out in the last {:?}", self.name, left_out, Self::WINDOW);
            }
            *start = Instant::now();
            *lines = 0;
            *left_out = 0;
        }
        if *lines < Self::LINES {
            *lines += 1;
            eprintln!("{}: {msg}", self.name);
            true
        } else {
            *left_out += 1;
            false
        }
    }
}

/// A server's limits, tally and log together, shared by its threads; the
/// caller keeps a handle to report the tally when the server stops.
pub(crate) struct Guard {
    pub(crate) limits: Limits,
    pub(crate) tally: Tally,
    pub(crate) log: RateLog,
}

impl Guard {
    pub(crate) fn new(name: &'static str, limits: Limits) -> std::sync::Arc<Guard> {
        std::sync::Arc::new(Guard { limits, tally: Tally::default(), log: RateLog::new(name) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_says_a_few_lines_per_window_and_counts_the_rest() {
        let log = RateLog::new("test server");
        let said = (0..1000).filter(|i| log.say(format!("line {i}"))).count();
        assert_eq!(said, RateLog::LINES as usize);
        assert_eq!(log.state.lock().unwrap().2, 1000 - RateLog::LINES as u64);
    }

    #[test]
    fn the_tally_reads_as_one_line() {
        let t = Tally::default();
        Tally::add(&t.refused);
        Tally::add(&t.refused);
        assert!(t.summary().contains("refused 2 (connection cap)"), "{}", t.summary());
        assert!(Limits::SERVE.describe().contains("4096 connections"));
    }
}

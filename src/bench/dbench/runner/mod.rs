//! Running N clients over a loadfile: processes or threads, a warm-up and a
//! timed phase, per-operation statistics.
//!
//! The parent owns the clock. A small shared block (an anonymous shared
//! mapping for processes, the heap for threads) holds the phase: clients wait
//! until every one of them is ready, replay the loadfile from the top again
//! and again, and file each completed operation under the phase it completed
//! in, as dbench does by snapshotting its byte counters when the warm-up
//! ends. The windows are measured by the parent between the phase switches.
//! A client that meets an error sets the phase to abort; everyone stops, the
//! error is returned. SIGINT/SIGTERM during a run abort it the same way, so
//! the caller can remove its files.
//!
//! Phases and what dbench 4.0 (`dbench.c`, Debian's 4.0-2.1) does, which
//! kdelta follows so that the same loadfile and limits give the same MB/s:
//!
//! | dbench 4.0 | kdelta |
//! |---|---|
//! | `-t T` is the timed phase alone; the warm-up (`T/5` s) comes before it | `time` is the timed phase, `warmup` comes before it |
//! | the warm-up ends only once every client has moved payload bytes | the same, waiting at most one more `warmup` for the slow ones (dbench would wait for ever on a loadfile without payload) |
//! | the parent samples the byte counters once a second and prints the running rate; the final "Throughput" is the last rate printed *before* the limit, so it covers the whole seconds strictly inside the timed phase (9 s of `-t 10`) | the figure is the payload of the first [`figure_window`]`(time)` of the timed phase over that window (9 s of `time=10s`); the operations completed after it (the *tail*) count in the per-operation table, as in dbench's, whose counters run to the limit |
//! | bytes of an operation are counted when it completes | an operation is filed under the phase it completed in |
//! | the child calls `kill(parent, 0)` before every operation and exits if the parent is gone | the same by default ([`Liveness::PerOp`]); clients also have the kernel's parent-death signal |

mod processes;
mod shared;

use super::loadfile::{Loadfile, Op, OP_NAMES};
use anyhow::{bail, Context, Result};
use processes::run_processes;
use serde::{Deserialize, Serialize};
use shared::{Shared, SharedMem, SignalGuard, INTERRUPTED};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// What one operation did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// Did it succeed (compared with the expected status)?
    pub(crate) ok: bool,
    /// Payload bytes counted towards the throughput.
    pub(crate) bytes: u64,
    /// Why it failed, for mismatch reports.
    pub(crate) why: Option<String>,
}

/// Something that replays operations: the file backend or the socket one.
pub(crate) trait Backend {
    /// Start of a pass over the loadfile (close what the last pass left open).
    fn reset(&mut self);
    /// Run one operation. `Err` ends the run (no space, I/O error, lost server).
    fn exec(&mut self, op: &Op) -> Result<Outcome>;
    /// Are outcomes compared with the expected statuses? (Not for tbench,
    /// which touches no file.)
    fn checks_status(&self) -> bool {
        true
    }
    /// Operations refused because a symbolic link was in the way (the file
    /// backend follows none).
    fn refused(&self) -> u64 {
        0
    }
}

/// Per-operation figures.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct OpStat {
    pub(crate) count: u64,
    pub(crate) total_ns: u64,
    pub(crate) max_ns: u64,
    /// Expected-status mismatches (warm-up and timed phase).
    pub(crate) mismatches: u64,
}

impl OpStat {
    /// Add another client's or sample's figures for the same operation.
    pub(crate) fn merge(&mut self, o: &OpStat) {
        self.count += o.count;
        self.total_ns += o.total_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
        self.mismatches += o.mismatches;
    }
}

/// What one client reports.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ClientResult {
    pub(crate) ops: Vec<OpStat>,
    /// Payload bytes in the figure's window (the timed phase less its tail).
    pub(crate) bytes: u64,
    /// Payload bytes in the tail (after the figure's window, before the limit).
    #[serde(default)]
    pub(crate) tail_bytes: u64,
    /// Complete passes over the loadfile.
    pub(crate) passes: u64,
    pub(crate) error: Option<String>,
    /// The first few mismatches, `line N: Op expected S: why`.
    pub(crate) examples: Vec<String>,
    /// Operations refused for a symbolic link in the way ([`Backend::refused`]).
    #[serde(default)]
    pub(crate) refused: u64,
}

/// The sum over clients.
#[derive(Debug, Clone, Default)]
pub(crate) struct Totals {
    pub(crate) ops: Vec<OpStat>,
    /// Payload bytes in the figure's window.
    pub(crate) bytes: u64,
    pub(crate) tail_bytes: u64,
    pub(crate) passes: u64,
    /// Length of the figure's window (see [`figure_window`]).
    pub(crate) secs: f64,
    /// Length of the whole timed phase (the operation table's window).
    pub(crate) timed_secs: f64,
    pub(crate) examples: Vec<String>,
    pub(crate) refused: u64,
}

impl Totals {
    /// Add one part's counts (a client's, or a sample's sums): the operation
    /// table, then `[bytes, tail_bytes, passes, refused]`; the first
    /// `MAX_EXAMPLES` examples are kept.
    pub(crate) fn add(
        &mut self,
        ops: &[OpStat],
        [bytes, tail_bytes, passes, refused]: [u64; 4],
        examples: Vec<String>,
    ) {
        for (t, o) in self.ops.iter_mut().zip(ops) {
            t.merge(o);
        }
        self.bytes += bytes;
        self.tail_bytes += tail_bytes;
        self.passes += passes;
        self.refused += refused;
        for e in examples {
            if self.examples.len() < MAX_EXAMPLES {
                self.examples.push(e);
            }
        }
    }

    pub(crate) fn mbps(&self) -> f64 {
        if self.secs > 0.0 {
            self.bytes as f64 / 1e6 / self.secs
        } else {
            0.0
        }
    }
    pub(crate) fn mismatches(&self) -> u64 {
        self.ops.iter().map(|o| o.mismatches).sum()
    }
    /// `{op: {count, avg_ms, max_ms, mismatches}}` for the operations seen.
    pub(crate) fn ops_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (i, o) in self.ops.iter().enumerate() {
            if o.count == 0 && o.mismatches == 0 {
                continue;
            }
            let avg = if o.count > 0 { o.total_ns as f64 / o.count as f64 / 1e6 } else { 0.0 };
            m.insert(
                OP_NAMES[i].to_string(),
                serde_json::json!({"count": o.count, "avg_ms": avg, "max_ms": o.max_ns as f64 / 1e6, "mismatches": o.mismatches}),
            );
        }
        serde_json::Value::Object(m)
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) clients: usize,
    pub(crate) threads: bool,
    pub(crate) warmup: Duration,
    pub(crate) time: Duration,
    pub(crate) strict: bool,
    pub(crate) liveness: Liveness,
}

crate::model::params::choice! {
    /// How a client makes sure the process that started it is still there.
    pub(crate) enum Liveness {
        /// dbench's and tbench's way (`child.c`): `kill(parent, 0)` before every
        /// operation, stopping when the parent is gone. One system call per
        /// operation, and its cost is in their figures: on a CPU-bound filesystem
        /// it is 7-9% of dbench's MB/s here, so kdelta makes the same call to
        /// report the same figure.
        PerOp = "per-op",
        /// Only the kernel's parent-death signal (`PR_SET_PDEATHSIG`, processes)
        /// and the shared phase block: no cost per operation.
        Signal = "signal",
    }
}

const WAITING: u32 = 0;
const WARMUP: u32 = 1;
const TIMED: u32 = 2;
/// After the figure's window, before the limit: counted in the op table only.
const TAIL: u32 = 3;
const STOP: u32 = 4;
const ABORT: u32 = 5;

/// The part of a timed phase of length `time` that the throughput figure
/// covers, as dbench reports it: dbench samples its counters at whole seconds
/// and keeps the last sample taken before the limit, so its figure covers
/// `ceil(time) - 1` whole seconds (9 of 10). A phase of one second or less
/// (where dbench would report nothing) is used whole.
pub(crate) fn figure_window(time: Duration) -> Duration {
    let whole = (time.as_secs_f64().ceil() as u64).saturating_sub(1);
    if whole == 0 {
        time
    } else {
        Duration::from_secs(whole)
    }
}

/// Longest wait for all clients to get ready, and for them to finish after
/// the time limit.
const SETUP_LIMIT: Duration = Duration::from_secs(120);
const FINISH_GRACE: Duration = Duration::from_secs(60);
const MAX_EXAMPLES: usize = 5;

/// Sleep until `until`, waking early when the phase reaches `STOP` or above.
fn sleep_until(sh: &Shared, until: Instant) {
    loop {
        let now = Instant::now();
        if now >= until || sh.phase.load(Ordering::Relaxed) >= STOP {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

/// One client's life: set up its backend, wait for the start, replay.
/// `parent`, when set, is checked before every operation ([`Liveness::PerOp`]).
fn client_main(
    n: usize,
    lf: &Loadfile,
    spec: &Spec,
    sh: &Shared,
    parent: Option<nix::unistd::Pid>,
    make: &(dyn Fn(usize) -> Result<Box<dyn Backend>> + Sync),
) -> ClientResult {
    let mut res = ClientResult { ops: vec![OpStat::default(); OP_NAMES.len()], ..Default::default() };
    let mut backend = match make(n) {
        Ok(b) => b,
        Err(e) => {
            abort(sh, &mut res, format!("client {n}: {e:#}"));
            sh.ready.fetch_add(1, Ordering::SeqCst);
            return res;
        }
    };
    sh.ready.fetch_add(1, Ordering::SeqCst);
    while sh.phase.load(Ordering::SeqCst) == WAITING {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut replay = Replay { n, lf, spec, sh, parent, checks: backend.checks_status(), moved: false };
    while replay.pass(&mut *backend, &mut res) {
        res.passes += 1;
    }
    res.refused = backend.refused();
    drop(backend);
    res
}

/// Record a client's error and abort the phase for every client.
fn abort(sh: &Shared, res: &mut ClientResult, msg: String) {
    res.error = Some(msg);
    sh.phase.store(ABORT, Ordering::SeqCst);
}

/// One client's replay of the loadfile, pass after pass.
struct Replay<'a> {
    n: usize,
    lf: &'a Loadfile,
    spec: &'a Spec,
    sh: &'a Shared,
    /// Checked before every operation when set.
    parent: Option<nix::unistd::Pid>,
    /// Whether the backend's outcomes are compared with the expected status.
    checks: bool,
    /// Whether this client has counted itself in `moved` (its first bytes).
    moved: bool,
}

impl Replay<'_> {
    /// One pass over the operations; false when the replay ends in it (the
    /// phase reached `STOP`, the parent is gone, an error or a strict
    /// mismatch), true when the pass is complete.
    #[inline]
    fn pass(&mut self, backend: &mut dyn Backend, res: &mut ClientResult) -> bool {
        let (n, sh) = (self.n, self.sh);
        backend.reset();
        let start = Instant::now();
        for op in &self.lf.ops {
            if sh.phase.load(Ordering::Relaxed) >= STOP {
                return false;
            }
            if let Some(p) = self.parent {
                // Signal 0 delivers nothing; ESRCH says the process is gone
                // (EPERM would say it exists).
                if nix::sys::signal::kill(p, None) == Err(nix::errno::Errno::ESRCH) {
                    abort(sh, res, format!("client {n}: the parent process {p} is gone"));
                    return false;
                }
            }
            if let Some(t) = op.time {
                sleep_until(sh, start + Duration::from_secs_f64(t));
            }
            let t0 = Instant::now();
            let r = backend.exec(op);
            let dt = t0.elapsed().as_nanos() as u64;
            let out = match r {
                Ok(o) => o,
                Err(e) => {
                    if sh.phase.load(Ordering::SeqCst) < STOP {
                        abort(sh, res, format!("client {n}: {e:#}"));
                    }
                    return false;
                }
            };
            let phase = sh.phase.load(Ordering::Relaxed);
            if !self.moved && out.bytes > 0 {
                self.moved = true;
                sh.moved.fetch_add(1, Ordering::SeqCst);
            }
            if self.checks && !op.status.matches(out.ok) && !self.mismatch(op, &out, res) {
                return false;
            }
            if phase == TIMED || phase == TAIL {
                account(res, op, &out, phase, dt);
            }
        }
        true
    }

    /// Count an outcome that is not the expected one and keep the first few
    /// as examples; false when `strict=true` makes it end the run.
    #[inline]
    fn mismatch(&self, op: &Op, out: &Outcome, res: &mut ClientResult) -> bool {
        res.ops[op.kind.index()].mismatches += 1;
        let msg = format!(
            "line {}: {} expected {}, got {}",
            op.line,
            op.kind.name(),
            op.status.text(),
            match &out.why {
                Some(w) if !out.ok => format!("a failure ({w})"),
                Some(w) => format!("success ({w})"),
                None => "success".to_string(),
            }
        );
        if self.spec.strict {
            let text = format!("client {}: {} {msg} (strict=true stops at the first mismatch)", self.n, self.lf.name);
            abort(self.sh, res, text);
            return false;
        }
        if res.examples.len() < MAX_EXAMPLES {
            res.examples.push(msg);
        }
        true
    }
}

/// Add an operation's time and bytes to the phase it ran in (`TIMED` or the
/// `TAIL` after it).
#[inline]
fn account(res: &mut ClientResult, op: &Op, out: &Outcome, phase: u32, dt: u64) {
    let st = &mut res.ops[op.kind.index()];
    st.count += 1;
    st.total_ns += dt;
    st.max_ns = st.max_ns.max(dt);
    if phase == TIMED {
        res.bytes += out.bytes;
    } else {
        res.tail_bytes += out.bytes;
    }
}

/// Run `spec.clients` clients over `lf`; `make(n)` builds client n's backend
/// (inside the client: after the fork for processes).
pub(crate) fn run(
    lf: &Loadfile,
    spec: &Spec,
    make: &(dyn Fn(usize) -> Result<Box<dyn Backend>> + Sync),
) -> Result<Totals> {
    // The process the clients watch: this one for forked clients (dbench's
    // children watch theirs), for threads this process's own parent.
    let parent = match spec.liveness {
        Liveness::Signal => None,
        Liveness::PerOp if spec.threads => Some(nix::unistd::getppid()),
        Liveness::PerOp => Some(nix::unistd::getpid()),
    };
    run_watching(lf, spec, parent, make)
}

/// [`run`] with the watched process given (tests use a vanished one).
fn run_watching(
    lf: &Loadfile,
    spec: &Spec,
    parent: Option<nix::unistd::Pid>,
    make: &(dyn Fn(usize) -> Result<Box<dyn Backend>> + Sync),
) -> Result<Totals> {
    if spec.clients == 0 {
        bail!("at least one client is needed");
    }
    let mem = SharedMem::new(!spec.threads)?;
    let _signals = SignalGuard::new();
    let results = if spec.threads {
        std::thread::scope(|scope| -> Result<(Vec<ClientResult>, (f64, f64))> {
            let mut handles = Vec::new();
            for n in 1..=spec.clients {
                let sh = mem.get();
                let h = std::thread::Builder::new()
                    .name(format!("client{n}"))
                    .spawn_scoped(scope, move || client_main(n, lf, spec, sh, parent, make));
                match h {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        mem.get().phase.store(ABORT, Ordering::SeqCst);
                        for h in handles {
                            let _ = h.join();
                        }
                        bail!("cannot start client thread {n}: {e}");
                    }
                }
            }
            let secs = drive(mem.get(), spec, None);
            let mut out = Vec::new();
            for h in handles {
                out.push(h.join().unwrap_or_else(|_| ClientResult {
                    error: Some("a client thread panicked".into()),
                    ..Default::default()
                }));
            }
            Ok((out, secs?))
        })
    } else {
        run_processes(lf, spec, &mem, parent, make)
    };
    let (results, (secs, timed_secs)) = results?;
    let mut tot = Totals { ops: vec![OpStat::default(); OP_NAMES.len()], secs, timed_secs, ..Default::default() };
    let mut errors = Vec::new();
    for r in results {
        if let Some(e) = r.error {
            errors.push(e);
        }
        tot.add(&r.ops, [r.bytes, r.tail_bytes, r.passes, r.refused], r.examples);
    }
    if !errors.is_empty() {
        let more =
            if errors.len() > 1 { format!(" (and {} more client errors)", errors.len() - 1) } else { String::new() };
        bail!("{}{more}", errors[0]);
    }
    if INTERRUPTED.load(Ordering::SeqCst) {
        bail!("interrupted");
    }
    Ok(tot)
}

/// The parent's clock: wait for readiness, warm up, time, stop. Returns the
/// seconds of the figure's window and of the whole timed phase. `alive`
/// (processes) says whether all children still run.
fn drive(sh: &Shared, spec: &Spec, alive: Option<&dyn Fn() -> bool>) -> Result<(f64, f64)> {
    let aborted = || sh.phase.load(Ordering::SeqCst) == ABORT || INTERRUPTED.load(Ordering::SeqCst);
    let t_setup = Instant::now();
    while (sh.ready.load(Ordering::SeqCst) as usize) < spec.clients {
        if aborted() {
            sh.phase.store(ABORT, Ordering::SeqCst);
            return Ok((0.0, 0.0));
        }
        if let Some(f) = alive {
            if !f() {
                sh.phase.store(ABORT, Ordering::SeqCst);
                bail!("a client process died while setting up");
            }
        }
        if t_setup.elapsed() > SETUP_LIMIT {
            sh.phase.store(ABORT, Ordering::SeqCst);
            bail!("the clients were not ready after {} s", SETUP_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let wait = |d: Duration| -> bool {
        let end = Instant::now() + d;
        while Instant::now() < end {
            if aborted() {
                return false;
            }
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
        }
        true
    };
    sh.phase.store(WARMUP, Ordering::SeqCst);
    if !wait(spec.warmup) {
        sh.phase.store(ABORT, Ordering::SeqCst);
        return Ok((0.0, 0.0));
    }
    // Like dbench, the warm-up lasts until every client has moved payload
    // (here at most one more warm-up, so a loadfile without any never hangs).
    let extra_end = Instant::now() + spec.warmup;
    while (sh.moved.load(Ordering::SeqCst) as usize) < spec.clients && Instant::now() < extra_end {
        if aborted() {
            sh.phase.store(ABORT, Ordering::SeqCst);
            return Ok((0.0, 0.0));
        }
        std::thread::sleep((extra_end - Instant::now()).min(Duration::from_millis(5)));
    }
    let figure = figure_window(spec.time);
    sh.phase.store(TIMED, Ordering::SeqCst);
    let t1 = Instant::now();
    let mut ok = wait(figure);
    let secs = t1.elapsed().as_secs_f64();
    if ok && figure < spec.time {
        // Leave ABORT in place if a client set it.
        let _ = sh.phase.compare_exchange(TIMED, TAIL, Ordering::SeqCst, Ordering::SeqCst);
        ok = wait(spec.time - figure);
    }
    let timed = t1.elapsed().as_secs_f64();
    // Leave ABORT in place if a client set it.
    let _ = sh.phase.compare_exchange(TIMED, if ok { STOP } else { ABORT }, Ordering::SeqCst, Ordering::SeqCst);
    let _ = sh.phase.compare_exchange(TAIL, if ok { STOP } else { ABORT }, Ordering::SeqCst, Ordering::SeqCst);
    if INTERRUPTED.load(Ordering::SeqCst) {
        sh.phase.store(ABORT, Ordering::SeqCst);
    }
    Ok((secs, timed))
}

#[cfg(test)]
mod tests;

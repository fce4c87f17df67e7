//! The AIM9 timing model, shared by every `aim9.*` test.
//!
//! AIM9 calls a test's function over and over until a fixed period ends and
//! reports `rate = calls / elapsed` and `figure = rate x factor`, where the
//! factor is the fixed amount of work one call does, in the figure's unit.
//! We keep that model and fix its flaws:
//! - the clock is `Instant` (CLOCK_MONOTONIC, nanoseconds), not 10 ms ticks;
//! - the deadline is checked after every call and the overshoot (how far the
//!   last call ran past the period) is stored in the extras;
//! - one untimed call warms up caches and page tables first;
//! - the period is repeated `samples_wanted()` times, one sample per period,
//!   so the harness can give the usual statistics;
//! - the arithmetic loops are kept opaque to the optimiser (see `arith.rs`).
//!
//! A test is a [`Work`]: built once per worker (its set-up, files, sockets,
//! is not timed) and dropped afterwards, which removes whatever it created.

use super::{Factor, TestDef};
use crate::bench::{BenchInfo, Benchmark, Better, Params, Sampler};
use crate::error::bad_input;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One AIM9 test's state: `call` is the function AIM9 times.
pub trait Work {
    /// One call of the test function: the fixed work the factor counts.
    /// Returns how much work the call did, counted by the implementation in
    /// the figure's unit (messages received, bytes copied, zeros found...);
    /// tests compare it with the factor table, the timing loop drops it.
    fn call(&mut self) -> Result<f64>;

    /// Tests that must run their whole period elsewhere (the `brk` tests run
    /// it in a forked child, see `memory.rs`) return `(calls, elapsed)` here.
    fn run_period(&mut self, _period: Duration) -> Option<Result<(u64, Duration)>> {
        None
    }
}

/// What a test's set-up gets.
pub struct Ctx {
    /// A fresh directory for the test's files: under `--param dir` for the
    /// disk tests, under the sampler's tmpdir otherwise. Owned by the runner,
    /// removed after the Work is dropped.
    pub dir: PathBuf,
    /// `filesize` in bytes (disk tests; 0 elsewhere).
    pub filesize: u64,
    /// `sync=true`: the plain disk tests fsync after each call and drop the
    /// file's cached pages before each read pass.
    pub sync: bool,
}

impl Ctx {
    /// File size in whole KB (AIM9's factor for the disk tests).
    pub fn blocks(&self) -> u64 {
        self.filesize / 1024
    }
}

/// The benchmark wrapper around one table entry.
pub(crate) struct Aim9 {
    pub(crate) def: &'static TestDef,
}

pub(crate) const PERIOD_DEFAULT: &str = "1s";
pub(crate) const PERIOD_QUICK: &str = "200ms";
/// The longest period allowed (AIM9 allowed 1000 s): ten samples of it fit
/// in the worker's time limit with room for a slow O_SYNC call.
pub(crate) const MAX_PERIOD_S: u64 = 300;
/// The worker's time limit: generous, since the period is the user's choice.
pub(crate) const TIMEOUT_S: u64 = 3600;
pub(crate) const SAMPLES: usize = 3;
pub(crate) const QUICK_SAMPLES: usize = 2;

/// An AIM9 test's parameters, read once by `params` for `check` and `run`.
struct Aim9Params {
    period: Duration,
    /// Disk tests: `None` for the run's temporary directory (`dir=auto`).
    dir: Option<PathBuf>,
    /// Data tests: file size and `sync`; 0 and false for the others.
    filesize: u64,
    sync: bool,
}

impl Aim9 {
    fn params(&self, params: &Params) -> Result<Aim9Params> {
        let period = params.duration("period")?;
        if period.is_zero() || period > Duration::from_secs(MAX_PERIOD_S) {
            return Err(bad_input(format!(
                "{}: period {:?} is not allowed: expected more than 0 and at most {MAX_PERIOD_S}s",
                self.def.name,
                params.str("period")?
            )));
        }
        let (filesize, sync) = if self.def.data {
            let size = params.size("filesize")?;
            if !(2048..=(64u64 << 30)).contains(&size) {
                return Err(bad_input(format!(
                    "{}: filesize {} is not allowed: expected 2K to 64G",
                    self.def.name,
                    params.str("filesize")?
                )));
            }
            (size, params.bool("sync").map_err(crate::bench::bad_param)?)
        } else {
            (0, false)
        };
        let dir = if self.def.disk { params.text_or_auto("dir")?.map(PathBuf::from) } else { None };
        if let Some(dir) = &dir {
            if !dir.is_dir() {
                return Err(bad_input(format!(
                    "{}: dir {:?} is not an existing directory",
                    self.def.name,
                    dir.display().to_string()
                )));
            }
        }
        Ok(Aim9Params { period, dir, filesize, sync })
    }
}

impl Benchmark for Aim9 {
    fn info(&self) -> BenchInfo {
        let d = self.def;
        let mut info = BenchInfo::new(d.name, d.summary, d.unit, Better::Higher)
            .samples(SAMPLES, QUICK_SAMPLES)
            .timeout(Duration::from_secs(d.timeout_s))
            .param(super::period_param());
        if d.disk {
            info = info.param(super::dir_param());
        }
        if d.data {
            for p in super::data_params() {
                info = info.param(p);
            }
        }
        info
    }

    fn supported(&self, _env: &crate::bench::Env) -> Result<(), crate::bench::Unsupported> {
        (self.def.supported)()
    }

    fn check(&self, params: &Params) -> Result<()> {
        self.params(params).map(drop)
    }

    fn run(&self, params: &Params, s: &mut Sampler) -> Result<()> {
        let d = self.def;
        let Aim9Params { period, dir, filesize, sync } = self.params(params)?;
        let auto_dir = dir.is_none();
        let base = dir.unwrap_or_else(|| s.tmpdir().to_path_buf());
        // Our own directory inside the user's: an unpredictable name, mode
        // 0700 (nobody else can plant a link in it), owned and listed so the
        // harness removes it even when this worker is killed.
        let holder = s
            .owned_dir(&base, "kdelta-aim9-")
            .with_context(|| format!("{}: cannot create a work directory in {}", d.name, base.display()))?;
        let ctx = Ctx { dir: holder.clone(), filesize, sync };
        let factor = d.factor.per_call(&ctx);
        if factor <= 0.0 {
            let _ = std::fs::remove_dir_all(&holder);
            anyhow::bail!("{}: the work per call is zero (filesize {} B is too small)", d.name, filesize);
        }
        let r = (d.make)(&ctx)
            .with_context(|| format!("{}: set-up failed", d.name))
            .and_then(|mut work| measure(&mut *work, period, factor, d.warm_up, s));
        std::fs::remove_dir_all(&holder).with_context(|| format!("{}: removing the work directory", d.name))?;
        r?;
        s.extra("factor", factor);
        s.extra("factor_meaning", d.work);
        s.extra("period_s", period.as_secs_f64());
        if d.data {
            s.extra("filesize", filesize);
            s.extra("sync", sync);
            let kb = filesize / 1024;
            let where_ = place_of(auto_dir, &base);
            s.note(if !d.warm_up {
                format!("{} writes half of a {kb} KB file in {where_} through O_SYNC: every 1 KB write waits for the device", d.name)
            } else if sync {
                format!("{} works on a {kb} KB file in {where_} with sync=true: written data is fdatasync'd and cached pages dropped before reads on every call", d.name)
            } else {
                format!("{} works on a {kb} KB file in {where_}: a file that fits in memory measures the page cache, not the device (raise --param filesize, or --param sync=true)", d.name)
            });
        } else if d.disk {
            s.note(format!(
                "{} works in {}: metadata operations, mostly in the kernel's dentry and inode caches",
                d.name,
                place_of(auto_dir, &base)
            ));
        }
        if let Some(n) = d.note {
            s.note(n);
        }
        Ok(())
    }
}

/// Where the disk tests work, as said to the user: the given directory, or
/// for `dir=auto` the temporary directory's parent (each worker has its own
/// subdirectory, so naming it would make every round's note differ).
fn place_of(auto_dir: bool, base: &std::path::Path) -> String {
    if auto_dir {
        format!("a temporary directory under {}", std::env::temp_dir().display())
    } else {
        base.display().to_string()
    }
}

/// Warm up with one call (unless told not to), then time
/// `s.samples_wanted()` periods.
fn measure(work: &mut dyn Work, period: Duration, factor: f64, warm_up: bool, s: &mut Sampler) -> Result<()> {
    if warm_up {
        match work.run_period(Duration::ZERO) {
            Some(r) => drop(r.context("warm-up period")?),
            None => drop(work.call().context("warm-up call")?),
        }
    }
    let mut calls_v = Vec::new();
    let mut over_v = Vec::new();
    let mut share_v = Vec::new();
    for _ in 0..s.samples_wanted() {
        s.begin_sample();
        let cpu0 = thread_cpu_secs();
        let (calls, elapsed) = one_period(work, period)?;
        let cpu = thread_cpu_secs() - cpu0;
        let secs = elapsed.as_secs_f64();
        share_v.push(cpu / secs);
        let value = calls as f64 / secs * factor;
        if !value.is_finite() || value <= 0.0 {
            anyhow::bail!("non-finite or zero figure: {calls} calls in {secs} s");
        }
        calls_v.push(calls);
        over_v.push(elapsed.saturating_sub(period).as_secs_f64() * 1e3);
        s.push(value, elapsed);
    }
    let max_over = over_v.iter().cloned().fold(0.0, f64::max);
    s.extra("calls", calls_v);
    s.extra("overshoot_ms", over_v);
    s.extra("max_overshoot_ms", max_over);
    // CPU time of this thread over wall time, per sample: well below 1 on a
    // CPU-bound test means the worker was preempted (a busy machine); tests
    // that sleep in the kernel (I/O, children) are naturally below 1.
    s.extra("cpu_share", share_v);
    if max_over > period.as_secs_f64() * 1e3 {
        s.note(format!("one call outlasted the {:?} period (overshoot up to {:.0} ms): the samples count few calls; a longer period or smaller file gives steadier figures", period, max_over));
    }
    Ok(())
}

/// One AIM9 period: call until the deadline, checked after every call.
pub(crate) fn one_period(work: &mut dyn Work, period: Duration) -> Result<(u64, Duration)> {
    if let Some(r) = work.run_period(period) {
        return r;
    }
    let start = Instant::now();
    let deadline = start + period;
    let mut calls = 0u64;
    loop {
        work.call()?;
        calls += 1;
        let now = Instant::now();
        if now >= deadline {
            return Ok((calls, now - start));
        }
    }
}

/// CPU time this thread has used, in seconds (CLOCK_THREAD_CPUTIME_ID).
pub(crate) fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl Factor {
    /// Work per call in the figure's unit for this set-up.
    pub(crate) fn per_call(&self, ctx: &Ctx) -> f64 {
        match *self {
            Factor::Fixed(f) => f,
            Factor::FileKb => ctx.blocks() as f64,
            Factor::HalfFileKb => (ctx.blocks() / 2) as f64,
        }
    }
}

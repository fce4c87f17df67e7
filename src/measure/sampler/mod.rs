//! The measuring side of the harness, used by benchmarks inside the worker.
//!
//! [`Sampler::measure`] does what LMbench's `benchmp` does for one process:
//! calibrate the iteration count so that one sample lasts about the target
//! time (10 ms by default, far above the clock's resolution), warm up, then take
//! the samples, subtracting the cost of reading the clock. Whole-run benchmarks
//! (a chat run, a build) call [`Sampler::push`] once per sample instead.
//!
//! Around every sample the sampler reads what the kernel says about the
//! measured tasks ([`super::disturb`]), outside the timed loop, and keeps it
//! as the sample's [`SampleMeta`]. A disturbed sample is kept, marked, and
//! taken again (up to three times the samples asked for in this worker);
//! when half or more come out disturbed, later samples time fewer operations
//! (about 1 ms), so that a sample can fit between another task's time slices
//! on a shared CPU.
//!
//! A sampler may take turns with others in the same worker ([`turns`]):
//! then before each sample it lets every other point take one (before the
//! first, their set-up and warm-up), and warms up again for a quarter of a
//! sample (the others' work ran through the caches in between).

use super::disturb::{Probe, Snapshot};
use crate::model::sample::{SampleMeta, TaskKind};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod settings;
pub use settings::*;

mod sample_set;
pub(crate) use sample_set::*;

/// One sample's timed work: the seconds it took in all, the figure, and the
/// named raw figures the figure was derived from (none for a plain loop).
struct Timed {
    secs: f64,
    value: f64,
    parts: Vec<(&'static str, f64)>,
}

pub(crate) mod turns;

/// The extra key under which a result names the perf events that could not
/// be counted, each with its reason.
pub(crate) const COUNTERS_UNAVAILABLE: &str = "counters_unavailable";

pub struct Sampler {
    settings: SamplerSettings,
    /// This point's place in its worker's rotation, when it takes turns.
    turn: Option<turns::Member>,
    out: SampleSet,
    clock_overhead: f64,
    probe: Probe,
    kind_set: bool,
    born: Instant,
    /// Snapshot at the start of the next pushed sample.
    started: Option<Snapshot>,
    /// The profiler of a whole-run benchmark's profiled sample, while it runs.
    recording: Option<(crate::measure::profile::Recorder, Instant)>,
    /// What the profile does not cover ([`Sampler::profile_local_only`]).
    profile_notes: Vec<String>,
}

impl Sampler {
    pub fn new(settings: SamplerSettings) -> Self {
        let clock_overhead = clock_overhead_secs();
        let mut probe = Probe::new(TaskKind::Solo).with_cpu_stat(settings.cpu_stat.clone());
        if settings.counters {
            probe.count();
        }
        Sampler {
            settings,
            turn: None,
            clock_overhead,
            out: SampleSet::default(),
            probe,
            kind_set: false,
            started: None,
            born: Instant::now(),
            recording: None,
            profile_notes: Vec::new(),
        }
    }

    /// Take turns with the other points of this worker: `member` holds the
    /// turn now, and leaves the rotation when this sampler is dropped.
    pub fn taking_turns(mut self, member: turns::Member) -> Self {
        self.turn = Some(member);
        self
    }

    /// Other tasks (process or thread ids) that take part in every sample:
    /// an echo process, the members of a ring. Their CPU time counts as the
    /// measurement's, their CPUs say where the sample ran, and the benchmark
    /// is judged as one that waits by design.
    pub fn peers(&mut self, tids: &[i32]) {
        self.probe.add_peers(tids);
        self.kind_set = true;
    }

    /// Declare how the measured tasks use the CPU (default: `solo` for
    /// [`measure`](Self::measure), `whole-run` for [`push`](Self::push)).
    pub fn kind(&mut self, kind: TaskKind) {
        self.probe.set_kind(kind);
        self.kind_set = true;
    }

    /// The figure is what is left after subtracting a measured overhead; it
    /// can come out at or below zero when the difference is below resolution.
    pub fn net_of_overhead(&mut self) {
        self.out.net_of_overhead = true;
    }

    /// `--warmup N`: the untimed runs the user asked for, when counted.
    pub fn warmup_runs(&self) -> Option<u64> {
        self.settings.warmup_runs
    }

    /// Time before the harness kills this worker, when it set a limit: a
    /// benchmark that runs something of unknown length ends it sooner, and
    /// fails saying why.
    pub fn time_left(&self) -> Option<Duration> {
        self.settings.time_limit.map(|l| l.saturating_sub(self.born.elapsed()))
    }

    /// Samples a whole-run benchmark takes: the ones asked for and, with
    /// `--profile`, one more, profiled and kept apart from the others.
    pub fn samples_wanted(&self) -> usize {
        self.settings.samples + usize::from(self.settings.profile.is_some())
    }

    /// With `--profile`: the benchmark's other side runs in a process
    /// kdelta does not own (`what`, a server elsewhere), so the profile
    /// covers the local side only, and says so.
    pub fn profile_local_only(&mut self, what: &str) {
        if self.settings.profile.is_some() {
            let n = format!("profile of the local side only: {what} runs in another process");
            if !self.profile_notes.contains(&n) {
                self.profile_notes.push(n);
            }
        }
    }
    pub fn quick(&self) -> bool {
        self.settings.quick
    }
    pub fn target(&self) -> Duration {
        self.settings.target
    }
    pub fn tmpdir(&self) -> &Path {
        &self.settings.tmpdir
    }
    /// A new directory in `parent` (outside the temporary directory, such
    /// as dbench's tree in a user's `dir=`): named `prefix` and random
    /// characters, mode 0700, marked and listed so the harness removes it
    /// even if this worker is killed (see [`crate::measure::owned`]). The
    /// benchmark removes it itself when done.
    pub fn owned_dir(&self, parent: &Path, prefix: &str) -> Result<PathBuf> {
        use crate::measure::owned;
        let dir = owned::make_dir(parent, prefix, self.settings.owner.unwrap_or_else(owned::Owner::me))?;
        if let Err(e) = owned::record(&self.settings.tmpdir.join(owned::LIST), &dir) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(dir)
    }
    /// Set-up the points of this worker's rotation share: the value another
    /// point made under `key` (of the same type) and still holds, or a new
    /// one from `make`. Taking turns, only one point runs at a time, so the
    /// value is used by one at a time; a point that does not take turns
    /// always makes its own. See [`turns`].
    pub fn shared<T: std::any::Any + Send + Sync>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<T>,
    ) -> Result<std::sync::Arc<T>> {
        match &self.turn {
            Some(t) => t.shared(key, make),
            None => Ok(std::sync::Arc::new(make()?)),
        }
    }
    pub fn llc_bytes(&self) -> Option<u64> {
        self.settings.llc_bytes
    }

    /// Time a loop of a primitive. `op(n)` performs the operation `n` times and
    /// returns the time that took (set-up outside the timed part is fine);
    /// `to_value(n, seconds)` turns that into the figure recorded, e.g.
    /// microseconds per operation or MB/s.
    pub fn measure<F, C>(&mut self, mut op: F, mut to_value: C) -> Result<()>
    where
        F: FnMut(u64) -> Result<Duration>,
        C: FnMut(u64, f64) -> f64,
    {
        let n = match self.settings.iterations {
            Some(n) if n > 0 => n,
            _ => calibrate(&mut op, self.settings.target)?,
        };
        let overhead = self.clock_overhead;
        self.sample_loop(n, |m| {
            let d = op(m)?.as_secs_f64();
            Ok(Timed { secs: d, value: to_value(m, (d - overhead).max(0.0)), parts: Vec::new() })
        })
    }

    /// Time a primitive net of another measured beside it, in microseconds
    /// per operation: each sample times `gross(n)` and `base(n)` back to
    /// back (which goes first alternates from sample to sample) and records
    /// their difference per operation, so both halves see the same
    /// circumstances and a disturbance of either marks the sample. The two
    /// raw figures of every sample are kept as parts named `names`
    /// ([`SampleSet::parts`]), stored beside the result. LMbench's
    /// `lat_sig catch` (catching a signal less sending one) is this.
    pub fn measure_net_us<G, B>(&mut self, mut gross: G, mut base: B, names: [&'static str; 2]) -> Result<()>
    where
        G: FnMut(u64) -> Result<Duration>,
        B: FnMut(u64) -> Result<Duration>,
    {
        self.net_of_overhead();
        let n = match self.settings.iterations {
            Some(n) if n > 0 => n,
            // One sample (both halves) lasts about the target.
            _ => calibrate(&mut |m| Ok(gross(m)? + base(m)?), self.settings.target)?,
        };
        let overhead = self.clock_overhead;
        let mut gross_first = false;
        self.sample_loop(n, |m| {
            gross_first = !gross_first;
            let (g, b) = if gross_first {
                let g = gross(m)?;
                (g, base(m)?)
            } else {
                let b = base(m)?;
                (gross(m)?, b)
            };
            // Each half read the clock twice: its overhead comes off each,
            // and so cancels in the difference.
            let per_op = |d: Duration| (d.as_secs_f64() - overhead).max(0.0) / m as f64 * 1e6;
            let (g_us, b_us) = (per_op(g), per_op(b));
            Ok(Timed {
                secs: (g + b).as_secs_f64(),
                value: g_us - b_us,
                parts: vec![(names[0], g_us), (names[1], b_us)],
            })
        })
    }

    /// Warm up, then take the samples: `op(m)` does the timed work of one
    /// sample of `m` operations (calibrated at `n`) between two probe
    /// snapshots. Disturbed samples are kept, marked and retaken.
    fn sample_loop<F>(&mut self, n: u64, mut op: F) -> Result<()>
    where
        F: FnMut(u64) -> Result<Timed>,
    {
        self.out.iterations = Some(n);
        self.out.kind = self.probe.kind();
        // Warm-up: caches, TLB, page faults, branch predictors, and the
        // scheduler's and hypervisor's idea of the tasks (a pipe round trip is
        // ~20% slower in its first tens of milliseconds on a VM).
        // The default warm-up ends early once the loop's time has settled
        // (`settings::settled`), after `SETTLE_MIN` at least.
        let t = Instant::now();
        let mut calls = vec![op(n)?.secs];
        while t.elapsed() < self.settings.warmup {
            if self.settings.warmup_settles && t.elapsed() >= settings::SETTLE_MIN && settings::settled(&calls) {
                break;
            }
            calls.push(op(n)?.secs);
        }
        let wanted = self.settings.samples;
        let cap = if self.settings.retake { 3 * wanted } else { wanted };
        // Shortened samples still last about a millisecond.
        let target = self.settings.target.as_secs_f64().max(1e-4);
        let min_m = ((n as f64 * 1e-3 / target).ceil() as u64).clamp(1, n);
        let mut m = n;
        let (mut clean, mut taken, mut disturbed) = (0usize, 0usize, 0usize);
        // Retakes stop once they have cost as long again as the samples
        // asked for (taking turns, the others' samples and the re-warming
        // passes count too).
        let sharing = self.turn.as_ref().map_or(1.0, |t| 1.25 * t.members() as f64);
        let retake_budget = sharing * (2.0 * wanted as f64 * target + 1.0);
        let started = Instant::now();
        while (clean < wanted || !self.settings.retake) && taken < cap {
            if taken >= wanted && started.elapsed().as_secs_f64() > retake_budget {
                break;
            }
            if let Some(turn) = &self.turn {
                // The other points take one sample each (before the first,
                // their set-up and warm-up); then this one's caches, TLB and
                // predictors are warmed again, untimed.
                turn.yield_turn();
                if let Some((cpu, partners)) = turn.duet_cpus() {
                    self.probe.focus(cpu, partners);
                }
                op((m / 4).max(1))?;
            }
            let a = self.probe.snapshot();
            let timed = op(m)?;
            let b = self.probe.snapshot_end();
            let mut meta = self.probe.meta(&a, &b);
            let v = timed.value;
            if !v.is_finite() {
                bail!("measurement gave a non-finite figure ({v}) for {m} iterations in {} s", timed.secs);
            }
            if m != n {
                meta.iterations = Some(m);
            }
            taken += 1;
            if meta.disturbed {
                disturbed += 1;
                m = next_iterations(self.out.kind, m, min_m, disturbed, taken);
            } else {
                clean += 1;
            }
            for (name, x) in timed.parts {
                self.out.parts.entry(name.to_string()).or_default().push(x);
            }
            self.out.sample_secs.push(timed.secs);
            self.out.samples.push(v);
            self.out.meta.push(meta);
        }
        self.out.retaken += taken.saturating_sub(wanted);
        self.profile_loop(m, &mut op)
    }

    /// `--profile`: after the measured samples, profiled ones of `m`
    /// operations for at least the profile's time, their figures kept
    /// apart from the samples.
    fn profile_loop<F>(&mut self, m: u64, op: &mut F) -> Result<()>
    where
        F: FnMut(u64) -> Result<Timed>,
    {
        let Some(settings) = self.settings.profile.clone() else { return Ok(()) };
        let rec = self.start_recorder(&settings)?;
        let t = Instant::now();
        let mut figures = Vec::new();
        while figures.is_empty() || t.elapsed() < settings.time {
            match op(m) {
                Ok(timed) => figures.push(timed.value),
                Err(e) => {
                    let _ = rec.finish();
                    return Err(e);
                }
            }
        }
        self.keep_profile(rec.finish()?, figures);
        Ok(())
    }

    fn start_recorder(
        &mut self,
        settings: &crate::measure::profile::ProfileSettings,
    ) -> Result<crate::measure::profile::Recorder> {
        // A whole-run benchmark's work runs in other tasks (children, client
        // threads); this thread only starts and waits for it, and so do the
        // other members of its rotation (a duet's other command, whose
        // process perf follows too).
        let exclude = if self.probe.kind() == TaskKind::WholeRun {
            let me = nix::unistd::gettid().as_raw();
            let mut own = self.turn.as_ref().map(|t| t.threads()).unwrap_or_default();
            if !own.contains(&me) {
                own.push(me);
            }
            own
        } else {
            vec![]
        };
        let dir = self.settings.tmpdir.join(format!("profile-{}", nix::unistd::gettid()));
        // A whole-run benchmark's processes by process id: perf then skips a
        // thread that ends while it attaches, where a listed thread id that
        // is gone would stop it.
        let probe = &self.probe;
        let target = || match probe.processes() {
            Some(pids) => crate::measure::profile::Target::Processes(pids),
            None => crate::measure::profile::Target::Threads(probe.tasks()),
        };
        crate::measure::profile::Recorder::start(settings, target, &exclude, &dir)
    }

    fn keep_profile(&mut self, mut p: crate::model::profile::Profile, figures: Vec<f64>) {
        p.figures = figures;
        p.notes = std::mem::take(&mut self.profile_notes);
        p.bound(crate::model::profile::MAX_BYTES);
        match &mut self.out.profile {
            Some(mine) => mine.absorb(p),
            None => self.out.profile = Some(p),
        }
    }

    /// [`measure`](Self::measure) recording microseconds per operation.
    pub fn measure_us<F>(&mut self, op: F) -> Result<()>
    where
        F: FnMut(u64) -> Result<Duration>,
    {
        self.measure(op, |n, t| t / n as f64 * 1e6)
    }

    /// Mark the start of a whole-run sample (before its work, after its
    /// set-up). Without it, a pushed sample's circumstances run from the
    /// previous push.
    pub fn begin_sample(&mut self) {
        if !self.kind_set {
            self.probe.set_kind(TaskKind::WholeRun);
            self.kind_set = true;
        }
        if let (Some(turn), false) = (&self.turn, self.out.samples.is_empty()) {
            turn.yield_turn();
            if let Some((cpu, partners)) = turn.duet_cpus() {
                self.probe.focus(cpu, partners);
            }
        }
        // A duet's members start together: none waits for quiet alone.
        if self.turn.as_ref().is_none_or(|t| t.duet_cpus().is_none()) {
            self.settle();
        }
        // The sample past those asked for is the profiled one.
        if let (Some(p), true) = (self.settings.profile.clone(), self.out.samples.len() >= self.settings.samples) {
            if self.recording.is_none() {
                match self.start_recorder(&p) {
                    Ok(r) => self.recording = Some((r, Instant::now())),
                    Err(e) => self.note(format!("not profiled: {e:#}")),
                }
            }
        }
        self.started = Some(self.probe.snapshot());
    }

    /// Before a whole-run sample: when the one before it was disturbed (for
    /// the first, in an earlier worker: `quiet_first`), wait up to
    /// `quiet_wait` for the worker's CPUs to go quiet, so that the sample
    /// does not run into the same other work. A one-sided hog that comes and
    /// goes then costs a sample per burst, not every sample of it. Once a
    /// wait ends with the CPUs still busy, this worker waits no more: the
    /// samples go on, judged as ever.
    fn settle(&mut self) {
        let after_disturbed = match self.out.meta.last() {
            Some(m) => m.disturbed,
            None => self.settings.quiet_first,
        };
        if !after_disturbed
            || self.probe.kind() != TaskKind::WholeRun
            || self.settings.quiet_wait.is_zero()
            || self.out.quiet_in_vain > 0
        {
            return;
        }
        let (waited, quiet) = self.probe.wait_quiet(self.settings.quiet_wait);
        self.out.quiet_waited_s += waited.as_secs_f64();
        if !quiet {
            self.out.quiet_in_vain += 1;
        }
    }

    /// Record one sample of a whole-run benchmark and how long it took.
    pub fn push(&mut self, value: f64, elapsed: Duration) {
        if self.settings.profile.is_some() && self.out.samples.len() >= self.settings.samples {
            // The profiled sample: its stacks kept, its figure apart.
            self.started = None;
            if let Some((rec, _)) = self.recording.take() {
                match rec.finish() {
                    Ok(p) => self.keep_profile(p, vec![value]),
                    Err(e) => self.note(format!("not profiled: {e:#}")),
                }
            }
            return;
        }
        if !self.kind_set {
            self.probe.set_kind(TaskKind::WholeRun);
            self.kind_set = true;
        }
        self.out.kind = self.probe.kind();
        let b = self.probe.snapshot_end();
        let meta = match self.started.take() {
            Some(a) => self.probe.meta(&a, &b),
            // No start known: the figures are kept, the sample is not judged.
            None => SampleMeta {
                t: crate::sys::clock::unix_now() - elapsed.as_secs_f64(),
                wall_s: elapsed.as_secs_f64(),
                cpus_end: crate::sys::task::current_cpu().into_iter().collect(),
                ..Default::default()
            },
        };
        self.started = Some(b);
        self.out.samples.push(value);
        self.out.sample_secs.push(elapsed.as_secs_f64());
        self.out.meta.push(meta);
    }

    /// A raw figure of the whole-run sample just pushed (a build's user
    /// and system time), one per [`push`](Self::push): kept aligned with the
    /// samples over every worker, and stored as [`SampleSet::parts`] are
    /// (`NAME`: the median over the clean samples, `NAME_samples`: all).
    pub fn part(&mut self, name: &str, value: f64) {
        self.out.parts.entry(name.to_string()).or_default().push(value);
    }

    /// The unit of this point's samples, when its parameters chose another
    /// than the benchmark's declared one.
    pub fn unit(&mut self, unit: &str) {
        self.out.unit = Some(unit.to_string());
    }

    /// Store a benchmark-specific figure beside the result.
    pub fn extra(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.out.extras.insert(key.to_string(), value.into());
    }

    /// A remark for the user, shown with the result.
    pub fn note(&mut self, msg: impl Into<String>) {
        let m = msg.into();
        if !self.out.notes.contains(&m) {
            self.out.notes.push(m);
        }
    }

    pub fn finish(mut self) -> SampleSet {
        let uncounted = self.probe.uncounted();
        if !uncounted.is_empty() {
            // Said once per result; the report says it once per run.
            let m: serde_json::Map<String, serde_json::Value> =
                uncounted.into_iter().map(|u| (u.event.to_string(), u.reason.into())).collect();
            self.out.extras.insert(COUNTERS_UNAVAILABLE.into(), m.into());
        }
        self.out
    }
}

/// The operations the next sample times, after a disturbed one (`m` now,
/// `min_m` about a millisecond's worth). Once half the samples taken or
/// more were disturbed, another task shares the CPU: a `solo` task's
/// sample as short as a millisecond fits between its time slices and
/// measures what a quiet CPU gives. Tasks that wake each other keep their
/// length: with another task runnable on their CPU, the scheduler treats
/// every wake-up differently (which task it picks, whether the waker is
/// preempted) even in the moments the other task does not run, so a short
/// sample that escapes its time slices is still slower (a pipe round trip
/// on one CPU 6-30 % slower beside a CPU-bound loop than on a quiet CPU,
/// with no time of the loop's in the sample); such samples would be judged
/// clean and bias the figure. At full length they overlap the other
/// task's slices, are judged disturbed and retaken, or the result says it
/// is `noisy`.
pub(crate) fn next_iterations(kind: TaskKind, m: u64, min_m: u64, disturbed: usize, taken: usize) -> u64 {
    if kind == TaskKind::Solo && disturbed * 2 >= taken {
        min_m
    } else {
        m
    }
}

/// Grow `n` until one call lasts a good fraction of the target, then scale to
/// the target. Preemption on a busy machine can only make a call look slower
/// (and so `n` too small), so the scaling uses the fastest of three calls. An
/// operation slower than the target gets `n = 1`.
fn calibrate<F>(op: &mut F, target: Duration) -> Result<u64>
where
    F: FnMut(u64) -> Result<Duration>,
{
    let target = target.as_secs_f64().max(1e-4);
    let mut n: u64 = 1;
    loop {
        let d = op(n)?.as_secs_f64();
        if d >= target / 8.0 || n >= 1 << 40 {
            let mut best = d;
            if d < target {
                for _ in 0..2 {
                    best = best.min(op(n)?.as_secs_f64());
                }
            }
            let scaled = (n as f64 * target / best.max(1e-9)).ceil();
            return Ok(scaled.clamp(1.0, (1u64 << 42) as f64) as u64);
        }
        // Jump faster while far away from the target.
        n = if d < target / 1000.0 { n.saturating_mul(16) } else { n.saturating_mul(2) };
    }
}

/// Median cost of one `Instant::now()` pair, in seconds (LMbench's t_overhead).
pub(crate) fn clock_overhead_secs() -> f64 {
    let mut v: Vec<f64> = (0..64)
        .map(|_| {
            let a = Instant::now();
            let b = Instant::now();
            (b - a).as_secs_f64()
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[cfg(test)]
mod tests;

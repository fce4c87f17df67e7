//! The measuring side of the harness, used by benchmarks inside the worker.
//!
//! [`Sampler::measure`] does what LMbench's `benchmp` does for one process:
//! calibrate the iteration count so that one sample lasts about the target
//! time (10 ms by default, far above the clock's resolution), warm up, then take
//! the samples, subtracting the cost of reading the clock. Whole-run benchmarks
//! (a chat run, a build) call [`Sampler::push`] once per sample instead.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the parent wants this worker to sample.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SamplerSettings {
    pub samples: usize,
    /// Target duration of one sample.
    pub target: Duration,
    /// Minimum warm-up before the first sample (at least one call of the
    /// calibrated loop).
    #[serde(default = "default_warmup")]
    pub warmup: Duration,
    pub quick: bool,
    /// Iteration count found by an earlier worker for the same benchmark and
    /// parameters; reused so every round of every configuration times the same work.
    pub iterations: Option<u64>,
    pub tmpdir: PathBuf,
    /// Last-level cache size from sysfs, for benchmarks sized relative to it.
    pub llc_bytes: Option<u64>,
}

impl SamplerSettings {
    /// Settings for calling a benchmark directly, outside the harness (tests,
    /// measurement helpers): a 2 ms target, no warm-up, quick, no calibration
    /// carried over, LLC unknown. Change fields with struct update syntax.
    pub fn direct(samples: usize, tmpdir: impl Into<PathBuf>) -> Self {
        SamplerSettings {
            samples,
            target: Duration::from_millis(2),
            warmup: Duration::ZERO,
            quick: true,
            iterations: None,
            tmpdir: tmpdir.into(),
            llc_bytes: None,
        }
    }
}

fn default_warmup() -> Duration {
    Duration::from_millis(100)
}

/// What a worker hands back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SampleSet {
    pub samples: Vec<f64>,
    /// Wall-clock seconds each sample took (for the "too short" warning).
    pub sample_secs: Vec<f64>,
    pub iterations: Option<u64>,
    /// Benchmark-specific figures stored beside the result (counts, sub-timings).
    pub extras: serde_json::Map<String, serde_json::Value>,
    /// Remarks the benchmark wants shown (never a changed number).
    pub notes: Vec<String>,
}

pub struct Sampler {
    settings: SamplerSettings,
    out: SampleSet,
    clock_overhead: f64,
}

impl Sampler {
    pub fn new(settings: SamplerSettings) -> Self {
        let clock_overhead = clock_overhead_secs();
        Sampler { settings, out: SampleSet::default(), clock_overhead }
    }

    pub fn samples_wanted(&self) -> usize {
        self.settings.samples
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
    pub fn llc_bytes(&self) -> Option<u64> {
        self.settings.llc_bytes
    }

    /// Time a loop of a primitive. `op(n)` performs the operation `n` times and
    /// returns the time that took (set-up outside the timed part is fine);
    /// `to_value(n, seconds)` turns that into the figure recorded, e.g.
    /// microseconds per operation or MB/s.
    pub fn measure<F, C>(&mut self, mut op: F, to_value: C) -> Result<()>
    where
        F: FnMut(u64) -> Result<Duration>,
        C: Fn(u64, f64) -> f64,
    {
        let n = match self.settings.iterations {
            Some(n) if n > 0 => n,
            _ => calibrate(&mut op, self.settings.target)?,
        };
        self.out.iterations = Some(n);
        // Warm-up: caches, TLB, page faults, branch predictors, and the
        // scheduler's and hypervisor's idea of the tasks (a pipe round trip is
        // ~20% slower in its first tens of milliseconds on a VM).
        let t = Instant::now();
        op(n)?;
        while t.elapsed() < self.settings.warmup {
            op(n)?;
        }
        for _ in 0..self.settings.samples {
            let d = op(n)?.as_secs_f64();
            let t = (d - self.clock_overhead).max(0.0);
            let v = to_value(n, t);
            if !v.is_finite() {
                bail!("measurement gave a non-finite figure ({v}) for {n} iterations in {d} s");
            }
            self.out.sample_secs.push(d);
            self.out.samples.push(v);
        }
        Ok(())
    }

    /// [`measure`](Self::measure) recording microseconds per operation.
    pub fn measure_us<F>(&mut self, op: F) -> Result<()>
    where
        F: FnMut(u64) -> Result<Duration>,
    {
        self.measure(op, |n, t| t / n as f64 * 1e6)
    }

    /// Record one sample of a whole-run benchmark and how long it took.
    pub fn push(&mut self, value: f64, elapsed: Duration) {
        self.out.samples.push(value);
        self.out.sample_secs.push(elapsed.as_secs_f64());
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

    pub fn finish(self) -> SampleSet {
        self.out
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
pub fn clock_overhead_secs() -> f64 {
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
mod tests {
    use super::*;

    fn settings(samples: usize) -> SamplerSettings {
        SamplerSettings::direct(samples, std::env::temp_dir())
    }

    #[test]
    fn calibrates_to_target() {
        // A fake operation costing exactly 1 us per iteration (no real clock).
        let mut op = |n: u64| -> Result<Duration> { Ok(Duration::from_micros(n)) };
        let n = calibrate(&mut op, Duration::from_millis(10)).unwrap();
        assert!((10_000..=10_100).contains(&n), "{n}");
        let mut slow = |_n: u64| -> Result<Duration> { Ok(Duration::from_millis(50)) };
        assert_eq!(calibrate(&mut slow, Duration::from_millis(10)).unwrap(), 1);
    }

    #[test]
    fn measure_records_every_sample() {
        let mut s = Sampler::new(settings(5));
        s.measure_us(|n| Ok(Duration::from_nanos(500 * n))).unwrap();
        let out = s.finish();
        assert_eq!(out.samples.len(), 5);
        for v in &out.samples {
            assert!((*v - 0.5).abs() < 0.01, "{v}");
        }
        assert!(out.iterations.unwrap() > 1);
    }

    #[test]
    fn measure_reuses_given_iterations() {
        let mut st = settings(2);
        st.iterations = Some(7);
        let mut s = Sampler::new(st);
        let mut seen = Vec::new();
        s.measure_us(|n| {
            seen.push(n);
            Ok(Duration::from_micros(n))
        })
        .unwrap();
        assert!(seen.iter().all(|&n| n == 7));
        assert_eq!(seen.len(), 3); // warm-up + 2 samples
    }
}

//! The loops of `kdelta place`: spawning, pinning, sampling, the monitor, reaping.
//!
//! One thread does everything: every 2 ms it reaps finished children (so an
//! iteration's wall time is known to about 2 ms) and starts the loop's next
//! iteration; every `sample` it reads `/proc/PID/stat` field 39 (the CPU each
//! loop's process last ran on) to count how often two loops shared a core
//! while another core ran none of them, and under `smt-aware` lets the
//! monitor re-pin a process off a doubled core. "Idle" means running none of
//! kdelta's loops: other load on the machine is invisible here.
//!
//! Every child is a [`crate::child::Child`] stopped with SIGKILL (the stop
//! rule of `crate::child`, with SIGKILL as its signal) and reaped when
//! dropped, so children end on every path: normal end, error, panic, or the
//! stop flag (set by the SIGINT handler) being raised. Each dies with
//! kdelta too (the parent-death signal).

use super::decide::{self, Busy};
use super::job;
use crate::child::Child;
use crate::topology::Topology;
use anyhow::Context;
use nix::sched::{sched_setaffinity, CpuSet as NixCpuSet};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use rand::SeedableRng;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PlacePolicy {
    Naive,
    SmtAware,
    Kernel,
}

impl PlacePolicy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            PlacePolicy::Naive => "naive",
            PlacePolicy::SmtAware => "smt-aware",
            PlacePolicy::Kernel => "kernel",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Job {
    /// The built-in job: this many rounds of [`job::spin`] in a forked child.
    Builtin { rounds: u64 },
    /// A command and its arguments, run with stdout discarded.
    Cmd(Vec<String>),
}

#[derive(Debug, Clone)]
pub(crate) struct RunCfg {
    pub(crate) policy: PlacePolicy,
    pub(crate) loops: usize,
    pub(crate) iterations: usize,
    pub(crate) job: Job,
    pub(crate) seed: u64,
    pub(crate) sample: Duration,
}

/// One finished iteration.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct IterRec {
    pub(crate) lp: usize,
    pub(crate) iter: usize,
    /// CPU it was pinned to at start (None under `kernel`).
    pub(crate) pinned: Option<u32>,
    pub(crate) seconds: f64,
    /// Exited with status 0.
    pub(crate) ok: bool,
    /// The process that ran it (reaped by the time it is recorded).
    pub(crate) pid: i32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RunReport {
    pub(crate) iterations: Vec<IterRec>,
    /// Samples taken while at least two loops ran.
    pub(crate) samples: u64,
    /// Of those, samples where two loops shared a core while another core ran none.
    pub(crate) shared_samples: u64,
    /// Re-pins done by the smt-aware monitor.
    pub(crate) repins: u64,
    pub(crate) interrupted: bool,
}

fn one_cpu(cpu: u32) -> anyhow::Result<NixCpuSet> {
    let mut set = NixCpuSet::new();
    set.set(cpu as usize).with_context(|| format!("CPU {cpu} out of range for an affinity mask"))?;
    Ok(set)
}

/// Start one iteration, pinned to `cpu` if given.
pub(crate) fn spawn(job: &Job, cpu: Option<u32>) -> anyhow::Result<Child> {
    let mask = cpu.map(one_cpu).transpose()?;
    let child = match job {
        Job::Builtin { rounds } => {
            let rounds = *rounds;
            // SAFETY: the child only calls async-signal-safe functions
            // (signal, sched_setaffinity) and runs a register-only loop; it
            // allocates nothing and takes no lock, so forking from a
            // multi-threaded process (the test harness) is sound.
            unsafe {
                crate::child::fork(|| {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    if let Some(m) = mask {
                        if sched_setaffinity(Pid::from_raw(0), &m).is_err() {
                            return 2;
                        }
                    }
                    job::spin(rounds);
                    0
                })
            }
            .context("fork for the built-in job")?
        }
        Job::Cmd(argv) => {
            use std::os::unix::process::CommandExt;
            let (prog, args) =
                argv.split_first().ok_or_else(|| crate::error::bad_input("empty command: give a program after --"))?;
            let mut cmd = std::process::Command::new(prog);
            cmd.args(args).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
            if let Some(m) = mask {
                // SAFETY: runs in the forked child before exec; sched_setaffinity
                // is a plain system call, async-signal-safe, and `m` was built
                // before the fork (no allocation here).
                unsafe {
                    cmd.pre_exec(move || sched_setaffinity(Pid::from_raw(0), &m).map_err(std::io::Error::from));
                }
            }
            match crate::child::spawn(&mut cmd) {
                Ok(child) => child,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(crate::error::bad_input(format!("command {prog:?}: not found")))
                }
                Err(e) => return Err(anyhow::Error::new(e).context(format!("starting {prog:?}"))),
            }
        }
    };
    Ok(child.stop_signal(Signal::SIGKILL, crate::child::GRACE))
}

/// The CPU a process last ran on: field 39 of `/proc/PID/stat`.
fn last_cpu(pid: Pid) -> Option<u32> {
    crate::sys::task::stat(pid.as_raw()).map(|s| s.cpu)
}

struct Running {
    child: Child,
    start: Instant,
    pinned: Option<u32>,
    /// Last sampled CPU.
    seen: Option<u32>,
}

struct Slot {
    started: usize,
    cur: Option<Running>,
    prev: Option<u32>,
}

/// The loops under way: a slot per loop, the report so far, and the random
/// source naive placement draws from (seeded: the same seed, the same CPUs).
struct Loops<'a> {
    topo: &'a Topology,
    cfg: &'a RunCfg,
    rng: rand_chacha::ChaCha8Rng,
    slots: Vec<Slot>,
    rep: RunReport,
}

impl Loops<'_> {
    /// How many running processes are pinned to each CPU.
    fn pinned_busy(&self) -> Busy {
        let mut b = Busy::new();
        for s in &self.slots {
            if let Some(c) = s.cur.as_ref().and_then(|r| r.pinned) {
                *b.entry(c).or_default() += 1;
            }
        }
        b
    }

    /// Start loop `i`'s next iteration, placed by the policy.
    fn start_next(&mut self, i: usize) -> anyhow::Result<()> {
        let cpu = match self.cfg.policy {
            PlacePolicy::Naive => decide::naive(self.topo, &mut self.rng),
            PlacePolicy::SmtAware => decide::smt_aware(self.topo, &self.pinned_busy(), self.slots[i].prev),
            PlacePolicy::Kernel => None,
        };
        let child = spawn(&self.cfg.job, cpu)?;
        let s = &mut self.slots[i];
        s.started += 1;
        s.cur = Some(Running { child, start: Instant::now(), pinned: cpu, seen: cpu });
        Ok(())
    }

    /// Record every finished iteration and start its loop's next one.
    fn reap(&mut self) -> anyhow::Result<()> {
        for i in 0..self.slots.len() {
            let Some(r) = self.slots[i].cur.as_mut() else {
                continue;
            };
            let pid = r.child.pid();
            let Some(st) = r.child.try_wait()? else {
                continue;
            };
            let r = self.slots[i].cur.take().expect("running");
            self.rep.iterations.push(IterRec {
                lp: i,
                iter: self.slots[i].started - 1,
                pinned: r.pinned,
                seconds: r.start.elapsed().as_secs_f64(),
                ok: st.success(),
                pid: pid.as_raw(),
            });
            self.slots[i].prev = r.seen.or(r.pinned);
            if self.slots[i].started < self.cfg.iterations {
                self.start_next(i)?;
            }
        }
        Ok(())
    }

    /// Read the CPU each running loop last ran on and count a sample (shared
    /// while idle or not); under `smt-aware`, re-pin one process off a
    /// doubled core.
    fn sample_and_balance(&mut self) -> anyhow::Result<()> {
        let mut seen = Busy::new();
        let mut n = 0;
        for s in self.slots.iter_mut() {
            if let Some(r) = s.cur.as_mut() {
                r.seen = last_cpu(r.child.pid()).or(r.seen);
                if let Some(c) = r.seen {
                    *seen.entry(c).or_default() += 1;
                    n += 1;
                }
            }
        }
        if n >= 2 {
            self.rep.samples += 1;
            if decide::shared_while_idle(self.topo, &seen) {
                self.rep.shared_samples += 1;
            }
        }
        if self.cfg.policy == PlacePolicy::SmtAware {
            if let Some((from, to)) = decide::rebalance(self.topo, &self.pinned_busy()) {
                let pinned = self.slots.iter_mut().filter_map(|s| s.cur.as_mut()).find(|r| r.pinned == Some(from));
                if let Some(r) = pinned {
                    // The process may have just exited; a failed re-pin is harmless.
                    if sched_setaffinity(r.child.pid(), &one_cpu(to)?).is_ok() {
                        r.pinned = Some(to);
                        self.rep.repins += 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Run the loops. Returns early (with `interrupted`) when `stop` is raised.
pub(crate) fn run(topo: &Topology, cfg: &RunCfg, stop: &AtomicBool) -> anyhow::Result<RunReport> {
    let mut loops = Loops {
        topo,
        cfg,
        rng: rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed),
        slots: (0..cfg.loops).map(|_| Slot { started: 0, cur: None, prev: None }).collect(),
        rep: RunReport::default(),
    };
    for i in 0..cfg.loops {
        if cfg.iterations > 0 {
            loops.start_next(i)?;
        }
    }
    let mut next_sample = Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            loops.rep.interrupted = true;
            break;
        }
        loops.reap()?;
        if loops.slots.iter().all(|s| s.cur.is_none()) {
            break;
        }
        if Instant::now() >= next_sample {
            next_sample += cfg.sample;
            loops.sample_and_balance()?;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut left: Vec<Child> = loops.slots.into_iter().filter_map(|s| s.cur).map(|r| r.child).collect();
    crate::child::stop_all(&mut left);
    Ok(loops.rep)
}

/// Run one built-in job per CPU in `cpus` at once, each pinned; wall seconds of each.
pub(crate) fn run_pinned_together(cpus: &[u32], rounds: u64, stop: &AtomicBool) -> anyhow::Result<Option<Vec<f64>>> {
    let mut left: Vec<(usize, Child)> = Vec::new();
    let t0 = Instant::now();
    for (i, &c) in cpus.iter().enumerate() {
        left.push((i, spawn(&Job::Builtin { rounds }, Some(c))?));
    }
    let mut out = vec![0.0; cpus.len()];
    while !left.is_empty() {
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let mut still = Vec::new();
        for (i, mut child) in left {
            match child.try_wait()? {
                None => still.push((i, child)),
                Some(st) if st.success() => out[i] = t0.elapsed().as_secs_f64(),
                Some(st) => anyhow::bail!("built-in job on CPU {} {}", cpus[i], crate::child::describe(st)),
            }
        }
        left = still;
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_processor_field() {
        // A comm with spaces and a parenthesis.
        let mut f: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        f[39 - 3] = "7".into();
        let line = format!("1234 (a b) c) {}", f.join(" "));
        assert_eq!(crate::sys::task::parse_stat(&line).map(|s| s.cpu), Some(7));
        assert_eq!(crate::sys::task::parse_stat("garbage").map(|s| s.cpu), None);
        assert!(last_cpu(nix::unistd::getpid()).is_some());
    }
}

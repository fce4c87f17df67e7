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
//! Every child is in [`Kids`]; its `Drop` sends SIGKILL to each and reaps it,
//! so children end on every path: normal end, error, panic, or the stop flag
//! (set by the SIGINT handler) being raised.

use super::decide::{self, Busy};
use super::job;
use crate::topology::Topology;
use anyhow::Context;
use nix::sched::{sched_setaffinity, CpuSet as NixCpuSet};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use rand::SeedableRng;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PlacePolicy {
    Naive,
    SmtAware,
    Kernel,
}

impl PlacePolicy {
    pub fn name(self) -> &'static str {
        match self {
            PlacePolicy::Naive => "naive",
            PlacePolicy::SmtAware => "smt-aware",
            PlacePolicy::Kernel => "kernel",
        }
    }
}

#[derive(Debug, Clone)]
pub enum Job {
    /// The built-in job: this many rounds of [`job::spin`] in a forked child.
    Builtin { rounds: u64 },
    /// A command and its arguments, run with stdout discarded.
    Cmd(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct RunCfg {
    pub policy: PlacePolicy,
    pub loops: usize,
    pub iterations: usize,
    pub job: Job,
    pub seed: u64,
    pub sample: Duration,
}

/// One finished iteration.
#[derive(Debug, Clone, Serialize)]
pub struct IterRec {
    pub lp: usize,
    pub iter: usize,
    /// CPU it was pinned to at start (None under `kernel`).
    pub pinned: Option<u32>,
    pub seconds: f64,
    /// Exited with status 0.
    pub ok: bool,
    /// The process that ran it (reaped by the time it is recorded).
    pub pid: i32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RunReport {
    pub iterations: Vec<IterRec>,
    /// Samples taken while at least two loops ran.
    pub samples: u64,
    /// Of those, samples where two loops shared a core while another core ran none.
    pub shared_samples: u64,
    /// Re-pins done by the smt-aware monitor.
    pub repins: u64,
    pub interrupted: bool,
}

/// Live children; killed and reaped on drop.
#[derive(Default)]
pub struct Kids {
    pids: Vec<Pid>,
}

impl Kids {
    pub fn add(&mut self, pid: Pid) {
        self.pids.push(pid);
    }
    /// Forget a child that has been reaped.
    pub fn reaped(&mut self, pid: Pid) {
        self.pids.retain(|&p| p != pid);
    }
    pub fn kill_all(&mut self) {
        for pid in self.pids.drain(..) {
            let _ = kill(pid, Signal::SIGKILL);
            let _ = waitpid(pid, None);
        }
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn one_cpu(cpu: u32) -> anyhow::Result<NixCpuSet> {
    let mut set = NixCpuSet::new();
    set.set(cpu as usize).with_context(|| format!("CPU {cpu} out of range for an affinity mask"))?;
    Ok(set)
}

/// Start one iteration, pinned to `cpu` if given.
pub fn spawn(job: &Job, cpu: Option<u32>) -> anyhow::Result<Pid> {
    let mask = cpu.map(one_cpu).transpose()?;
    match job {
        Job::Builtin { rounds } => {
            let rounds = *rounds;
            // SAFETY: the child only calls async-signal-safe functions
            // (signal, sched_setaffinity, _exit) and runs a register-only
            // loop; it allocates nothing and takes no lock, so forking from a
            // multi-threaded process (the test harness) is sound.
            match unsafe { nix::unistd::fork() }.context("fork for the built-in job")? {
                nix::unistd::ForkResult::Child => {
                    // SAFETY: resetting a signal disposition in the child is async-signal-safe.
                    unsafe {
                        libc::signal(libc::SIGINT, libc::SIG_DFL);
                    }
                    if let Some(m) = mask {
                        if sched_setaffinity(Pid::from_raw(0), &m).is_err() {
                            // SAFETY: _exit is async-signal-safe and never returns.
                            unsafe { libc::_exit(2) }
                        }
                    }
                    job::spin(rounds);
                    // SAFETY: as above.
                    unsafe { libc::_exit(0) }
                }
                nix::unistd::ForkResult::Parent { child } => Ok(child),
            }
        }
        Job::Cmd(argv) => {
            use std::os::unix::process::CommandExt;
            let (prog, args) = argv.split_first().ok_or_else(|| crate::error::bad_input("empty command: give a program after --"))?;
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
            match cmd.spawn() {
                Ok(child) => Ok(Pid::from_raw(child.id() as i32)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(crate::error::bad_input(format!("command {prog:?}: not found"))),
                Err(e) => Err(anyhow::Error::new(e).context(format!("starting {prog:?}"))),
            }
        }
    }
}

/// The CPU a process last ran on: field 39 of `/proc/PID/stat`.
pub fn last_cpu(pid: Pid) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_processor(&s)
}

/// Field 39 (`processor`) of a `/proc/PID/stat` line. The command name (field
/// 2) may hold spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_stat_processor(line: &str) -> Option<u32> {
    let rest = &line[line.rfind(')')? + 1..];
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

struct Running {
    pid: Pid,
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

/// Run the loops. Returns early (with `interrupted`) when `stop` is raised.
pub fn run(topo: &Topology, cfg: &RunCfg, stop: &AtomicBool) -> anyhow::Result<RunReport> {
    let mut kids = Kids::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut rep = RunReport::default();
    let mut slots: Vec<Slot> = (0..cfg.loops).map(|_| Slot { started: 0, cur: None, prev: None }).collect();

    let pinned_busy = |slots: &[Slot]| -> Busy {
        let mut b = Busy::new();
        for s in slots {
            if let Some(c) = s.cur.as_ref().and_then(|r| r.pinned) {
                *b.entry(c).or_default() += 1;
            }
        }
        b
    };
    let start_next = |i: usize, slots: &mut Vec<Slot>, kids: &mut Kids, rng: &mut rand_chacha::ChaCha8Rng| -> anyhow::Result<()> {
        let cpu = match cfg.policy {
            PlacePolicy::Naive => decide::naive(topo, rng),
            PlacePolicy::SmtAware => decide::smt_aware(topo, &pinned_busy(slots), slots[i].prev),
            PlacePolicy::Kernel => None,
        };
        let pid = spawn(&cfg.job, cpu)?;
        kids.add(pid);
        let s = &mut slots[i];
        s.started += 1;
        s.cur = Some(Running { pid, start: Instant::now(), pinned: cpu, seen: cpu });
        Ok(())
    };

    for i in 0..cfg.loops {
        if cfg.iterations > 0 {
            start_next(i, &mut slots, &mut kids, &mut rng)?;
        }
    }
    let mut next_sample = Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            rep.interrupted = true;
            break;
        }
        // Reap.
        for i in 0..slots.len() {
            let Some(r) = slots[i].cur.as_ref() else {
                continue;
            };
            let pid = r.pid;
            let st = waitpid(pid, Some(WaitPidFlag::WNOHANG)).with_context(|| format!("waiting for child {pid}"))?;
            let ok = match st {
                WaitStatus::StillAlive => continue,
                WaitStatus::Exited(_, code) => code == 0,
                WaitStatus::Signaled(..) => false,
                _ => continue,
            };
            kids.reaped(pid);
            let r = slots[i].cur.take().expect("running");
            rep.iterations.push(IterRec {
                lp: i,
                iter: slots[i].started - 1,
                pinned: r.pinned,
                seconds: r.start.elapsed().as_secs_f64(),
                ok,
                pid: pid.as_raw(),
            });
            slots[i].prev = r.seen.or(r.pinned);
            if slots[i].started < cfg.iterations {
                start_next(i, &mut slots, &mut kids, &mut rng)?;
            }
        }
        if slots.iter().all(|s| s.cur.is_none()) {
            break;
        }
        // Sample and balance.
        if Instant::now() >= next_sample {
            next_sample += cfg.sample;
            let mut seen = Busy::new();
            let mut n = 0;
            for s in slots.iter_mut() {
                if let Some(r) = s.cur.as_mut() {
                    r.seen = last_cpu(r.pid).or(r.seen);
                    if let Some(c) = r.seen {
                        *seen.entry(c).or_default() += 1;
                        n += 1;
                    }
                }
            }
            if n >= 2 {
                rep.samples += 1;
                if decide::shared_while_idle(topo, &seen) {
                    rep.shared_samples += 1;
                }
            }
            if cfg.policy == PlacePolicy::SmtAware {
                if let Some((from, to)) = decide::rebalance(topo, &pinned_busy(&slots)) {
                    if let Some(r) = slots.iter_mut().filter_map(|s| s.cur.as_mut()).find(|r| r.pinned == Some(from)) {
                        // The process may have just exited; a failed re-pin is harmless.
                        if sched_setaffinity(r.pid, &one_cpu(to)?).is_ok() {
                            r.pinned = Some(to);
                            rep.repins += 1;
                        }
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    kids.kill_all();
    Ok(rep)
}

/// Run one built-in job per CPU in `cpus` at once, each pinned; wall seconds of each.
pub fn run_pinned_together(cpus: &[u32], rounds: u64, stop: &AtomicBool) -> anyhow::Result<Option<Vec<f64>>> {
    let mut kids = Kids::default();
    let mut left: Vec<(usize, Pid)> = Vec::new();
    let t0 = Instant::now();
    for (i, &c) in cpus.iter().enumerate() {
        let pid = spawn(&Job::Builtin { rounds }, Some(c))?;
        kids.add(pid);
        left.push((i, pid));
    }
    let mut out = vec![0.0; cpus.len()];
    while !left.is_empty() {
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let mut still = Vec::new();
        for (i, pid) in left {
            match waitpid(pid, Some(WaitPidFlag::WNOHANG))? {
                WaitStatus::StillAlive => still.push((i, pid)),
                WaitStatus::Exited(_, 0) => {
                    kids.reaped(pid);
                    out[i] = t0.elapsed().as_secs_f64();
                }
                other => {
                    kids.reaped(pid);
                    anyhow::bail!("built-in job on CPU {} ended with {other:?}", cpus[i]);
                }
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
        assert_eq!(parse_stat_processor(&line), Some(7));
        assert_eq!(parse_stat_processor("garbage"), None);
        assert!(last_cpu(nix::unistd::getpid()).is_some());
    }
}

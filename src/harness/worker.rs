//! The worker: kdelta re-executed as `kdelta __worker JOB`, one per round and
//! configuration.
//!
//! The parent writes a [`JobSpec`] as JSON, starts the worker in a process group of
//! its own (so a terminal's Ctrl-C reaches only the parent, which then kills
//! the whole group: the worker and anything it started), waits with a time
//! limit, and reads what the worker wrote: its [`SampleSet`], or why it
//! failed (so no reason is dug out of its stderr). Results travel through
//! a file, not stdout, so nothing a benchmark or its children print can
//! corrupt them. The configuration is applied in the worker before the
//! benchmark starts, so the parent's own affinity and policy never change.
//!
//! Nothing outlives kdelta, whatever ends it: a watchdog started beside each
//! worker (`watch::watchdog`, `kdelta __watchdog`) kills the worker's whole tree
//! when kdelta is gone (kill -9, or a measured command that killed it) or
//! the worker has overrun its limit by [`watch::WATCHDOG_GRACE`], and the harness
//! does the same on Ctrl-C, SIGTERM or a time limit
//! ([`crate::child::kill_tree`]). The tree, not the process group: the
//! worker is a child subreaper for its whole life, so a `setsid` daemon a
//! command started, or anything orphaned, stays below it until then. The
//! worker keeps the parent-death signal (SIGKILL when the spawning thread,
//! kdelta's main thread, ends) only until its watchdog runs
//! (`crate::child::await_watchdog`): that signal would end the worker first
//! and hand what it holds to init. The
//! directories a worker makes outside its own are removed by the harness
//! afterwards, however it ended (`crate::measure::owned`).

use super::watch::{self, Killed};
use crate::config::Config;
use crate::measure::sampler::{SampleSet, Sampler, SamplerSettings};
use crate::model::Params;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A job as its worker is told it, in the job file: the benchmark, its
/// points, the configuration to apply, the sampler's settings and where to
/// write the results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobSpec {
    pub(crate) benchmark: String,
    /// One point, or a tie: several points of one benchmark that take turns
    /// sample by sample, each on a thread of its own (`sampler::turns`), in
    /// this order.
    pub(crate) points: Vec<JobPoint>,
    pub(crate) config: Config,
    /// Shared by the points; `samples` and `iterations` come from each point.
    pub(crate) settings: SamplerSettings,
    pub(crate) result_path: PathBuf,
    /// The cgroups the worker joins before it applies its configuration
    /// (`harness::cgroups`): its limits' cgroups and, with `--isolate`, the shield.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) cgroups: Vec<PathBuf>,
    /// Draws the order of a tie's turns after the first cycle (0: in
    /// order), from the run's order seed and the worker's number.
    #[serde(default)]
    pub(crate) order_seed: u64,
    /// Duet: the CPUs the tie's points sample on at the same moment (empty:
    /// they take turns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) duet: Vec<u32>,
}

/// One point of a job: its parameters, the samples to take, and the
/// iterations per sample when calibrated by an earlier worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobPoint {
    pub(crate) params: Params,
    pub(crate) samples: usize,
    pub(crate) iterations: Option<u64>,
    /// Count perf events in this point's samples (`--counters`, or its
    /// configuration's `+counters=`): per point, since a tie may hold a
    /// configuration that counts and one that does not.
    #[serde(default)]
    pub(crate) counters: bool,
}

/// One point's samples, or why it failed.
pub(crate) type PointResult = std::result::Result<SampleSet, String>;

/// Looks a benchmark up by its exact name.
pub(crate) type Finder = fn(&str) -> Option<Box<dyn crate::measure::benchmark::Benchmark>>;

/// What a worker leaves in its result file: its samples, or why it failed.
#[derive(Debug, Serialize, Deserialize)]
enum WorkerResult {
    /// One per point of the job, in its order.
    Samples(Vec<PointResult>),
    Failed {
        reason: String,
    },
}

/// Entry point of `kdelta __worker JOB`. Returns the exit status. A failure
/// is written to the result file for the parent (and to stderr for people).
pub(crate) fn worker_main(job_path: &Path, find: Finder) -> i32 {
    // Killed with all it starts by the watchdog, not by the parent-death
    // signal, which would leave its orphans to init (see the module's doc).
    if let Err(why) = crate::child::await_watchdog() {
        eprintln!("kdelta worker: {why}");
        return 1;
    }
    // Whatever its benchmark's processes leave, setsid daemons included,
    // stays its own to end, here or by the watchdog.
    let reaper = match crate::child::Subreaper::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kdelta worker: {e:#}");
            return 1;
        }
    };
    let code = worker_job(job_path, find);
    reaper.end_orphans();
    code
}

fn worker_job(job_path: &Path, find: Finder) -> i32 {
    let job = match read_job(job_path) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("kdelta worker: {e:#}");
            return 1;
        }
    };
    let (result, code) = match measure(&job, find) {
        // The worker failed when all its points did (the only one, usually).
        Ok(sets) => match sets.iter().find_map(|r| r.as_ref().err()) {
            Some(reason) if sets.iter().all(|r| r.is_err()) => {
                eprintln!("kdelta worker: {reason}");
                (WorkerResult::Failed { reason: reason.clone() }, 1)
            }
            _ => (WorkerResult::Samples(sets), 0),
        },
        Err(e) => {
            let reason = format!("{e:#}");
            eprintln!("kdelta worker: {reason}");
            (WorkerResult::Failed { reason }, 1)
        }
    };
    match write_result(&job.result_path, &result) {
        Ok(()) => code,
        Err(e) => {
            eprintln!("kdelta worker: {e:#}");
            1
        }
    }
}

fn read_job(job_path: &Path) -> Result<JobSpec> {
    let text = std::fs::read_to_string(job_path).with_context(|| format!("reading job {}", job_path.display()))?;
    serde_json::from_str(&text).context("parsing job")
}

fn measure(job: &JobSpec, find: Finder) -> Result<Vec<PointResult>> {
    let bench = find(&job.benchmark).with_context(|| format!("unknown benchmark {}", job.benchmark))?;
    join(&job.cgroups)?;
    crate::config::apply(&job.config).with_context(|| format!("applying configuration {}", job.config.describe()))?;
    let settings = |pt: &JobPoint| SamplerSettings {
        samples: pt.samples,
        iterations: pt.iterations,
        counters: pt.counters,
        ..job.settings.clone()
    };
    let options = bench.info().option_defaults();
    let one = |pt: &JobPoint, mut s: Sampler| -> PointResult {
        let shown = || format!("{} {}", job.benchmark, pt.params.display_set(&options));
        let ran = bench.run(&pt.params, &mut s).with_context(shown);
        let out = s.finish();
        match ran {
            Err(e) => Err(format!("{e:#}")),
            Ok(()) if out.samples.is_empty() => Err(format!("{} produced no samples", job.benchmark)),
            Ok(()) => Ok(out),
        }
    };
    if let [pt] = job.points.as_slice() {
        return Ok(vec![one(pt, Sampler::new(settings(pt)))]);
    }
    // A tie: a thread per point (after the configuration is applied, so each
    // inherits its affinity and policy), one running at a time.
    let mut turns = crate::measure::sampler::turns::Turns::new(job.points.len());
    if !job.duet.is_empty() {
        turns = turns.duet(&job.duet);
    } else if job.order_seed != 0 {
        turns = turns.shuffled(job.order_seed);
    }
    let turns = std::sync::Arc::new(turns);
    std::thread::scope(|sc| {
        let threads: Vec<_> = job
            .points
            .iter()
            .enumerate()
            .map(|(k, pt)| {
                let (turns, settings, one) = (&turns, &settings, &one);
                std::thread::Builder::new()
                    .name(format!("point{k}"))
                    .stack_size(8 << 20)
                    .spawn_scoped(sc, move || one(pt, Sampler::new(settings(pt)).taking_turns(turns.enter(k))))
                    .map_err(|e| {
                        // Its turn must not wait for a thread that never came.
                        turns.leave(k);
                        format!("starting a thread for a point: {e}")
                    })
            })
            .collect();
        let done = threads
            .into_iter()
            .map(|t| t.and_then(|t| t.join().unwrap_or_else(|_| Err(format!("{} panicked", job.benchmark)))))
            .collect();
        Ok(done)
    })
}

/// Move this process into each cgroup (its `cgroup.procs`): before the
/// configuration's affinity, which a v1 cpuset would otherwise reset.
fn join(cgroups: &[PathBuf]) -> Result<()> {
    let me = std::process::id().to_string();
    for d in cgroups {
        crate::sys::cgroup::write(d, "cgroup.procs", &me).map_err(|e| anyhow::anyhow!("joining cgroup: {e}"))?;
    }
    Ok(())
}

/// Written whole, then renamed: the parent never reads half a file.
fn write_result(path: &Path, r: &WorkerResult) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec(r)?).context("writing result")?;
    std::fs::rename(&tmp, path).context("writing result")
}

/// The worker's result file, if it wrote one; what is wrong with it if it
/// cannot be read as one (truncated, garbage: the point fails with that).
fn read_result(path: &Path) -> Option<std::result::Result<WorkerResult, Unreadable>> {
    let data = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&data).map_err(|source| Unreadable { source, bytes: data.len() }))
}

/// A worker results file that does not parse (the point fails with this).
#[derive(Debug, thiserror::Error)]
#[error("worker results file unreadable: {source} ({bytes} bytes)")]
struct Unreadable {
    source: serde_json::Error,
    bytes: usize,
}

/// How a worker ended.
pub(crate) enum Outcome {
    /// The worker ran: one result per point of the job, in its order.
    Done {
        sets: Vec<PointResult>,
        cpu_secs: f64,
        max_rss: u64,
    },
    Failed {
        reason: String,
        cpu_secs: f64,
    },
    Interrupted,
}

/// Run one job in a worker process, killing it after `timeout` or when
/// `interrupted` becomes true.
pub(crate) fn run_job(job: &JobSpec, job_path: &Path, timeout: Duration, interrupted: &AtomicBool) -> Result<Outcome> {
    std::fs::write(job_path, serde_json::to_vec(job)?).with_context(|| format!("writing {}", job_path.display()))?;
    let _ = std::fs::remove_file(&job.result_path);
    let exe = std::env::current_exe().context("finding kdelta's own executable")?;
    // `--output inherit`: what the measured command writes is shown, its
    // stdout on kdelta's, its stderr (the worker's) copied to kdelta's.
    let passthrough = job.points.iter().any(|p| p.params.0.get("output").is_some_and(|o| o == "inherit"));
    let mut child = Command::new(exe);
    child
        .arg("__worker")
        .arg(job_path)
        .stdin(Stdio::piped())
        .stdout(if passthrough { Stdio::inherit() } else { Stdio::null() })
        .stderr(Stdio::piped())
        .process_group(0);
    // SIGKILL when this thread ends, until the worker has its watchdog: the
    // harness runs workers from its main thread (`app::run` calls `execute`
    // there), so when kdelta does.
    let mut child = crate::child::die_with_parent(&mut child).spawn().context("starting a worker process")?;
    let pid = child.id() as libc::pid_t;
    // Kills the worker's tree when kdelta is gone or the worker overruns
    // (see `watchdog`); stopped (by the stop rule) when this function returns.
    let watching = watch::watchdog(pid, timeout + watch::WATCHDOG_GRACE);
    // The go-ahead (`child::await_watchdog`): without it (no watchdog) the
    // worker leaves at once.
    let mut go = child.stdin.take().expect("piped stdin");
    let _watchdog = match watching {
        Ok(w) => {
            let _ = std::io::Write::write_all(&mut go, b"w");
            drop(go);
            w
        }
        Err(e) => {
            drop(go);
            crate::child::kill_tree(pid);
            let _ = child.wait();
            return Err(e);
        }
    };
    let mut stderr = child.stderr.take().expect("piped stderr");
    let err_reader = std::thread::spawn(move || {
        // The first MiB is kept; the rest is drained so the worker never
        // blocks on a full pipe.
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16384];
        loop {
            match stderr.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    if passthrough {
                        let _ = std::io::Write::write_all(&mut std::io::stderr(), &chunk[..n]);
                    }
                    let room = (1usize << 20).saturating_sub(buf.len());
                    buf.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        buf
    });
    let (waited, killed) = watch::wait(pid, timeout, interrupted);
    // Whatever the worker started and left behind goes with it.
    kill_group(pid);
    drop(child);
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let (status, cpu_secs, max_rss) = waited?;
    let ended = Ended { status, cpu_secs, max_rss, killed, stderr_tail: stderr_tail(&stderr) };
    Ok(ended.outcome(job, timeout))
}

/// How a worker process ended, as the parent saw it.
struct Ended {
    status: std::process::ExitStatus,
    cpu_secs: f64,
    max_rss: u64,
    killed: Option<Killed>,
    /// The end of what it wrote to stderr, as appended to a reason.
    stderr_tail: String,
}

impl Ended {
    /// The worker's outcome: its results file when it ran to the end, else
    /// why it did not.
    fn outcome(self, job: &JobSpec, timeout: Duration) -> Outcome {
        let Ended { status, cpu_secs, max_rss, killed, stderr_tail: tail } = self;
        if killed == Some(Killed::Interrupted) {
            return Outcome::Interrupted;
        }
        if killed == Some(Killed::Timeout) {
            let reason = format!("timed out after {:.0} s and was killed{tail}", timeout.as_secs_f64());
            return Outcome::Failed { reason, cpu_secs };
        }
        if let Some(sig) = status.signal() {
            let name = nix::sys::signal::Signal::try_from(sig).map(|s| s.as_str()).unwrap_or("?");
            let oom = oom_killed(&job.cgroups, sig).unwrap_or_default();
            return Outcome::Failed { reason: format!("worker killed by signal {sig} ({name}){oom}{tail}"), cpu_secs };
        }
        let written = read_result(&job.result_path);
        if status.code() != Some(0) {
            let reason = match written {
                Some(Ok(WorkerResult::Failed { reason })) => reason,
                _ => format!("worker exited with status {}{tail}", status.code().unwrap_or(-1)),
            };
            return Outcome::Failed { reason, cpu_secs };
        }
        // Whatever is wrong with what it left fails its points alone, with the
        // reason stored; the run goes on with the others.
        let reason = match written {
            Some(Ok(WorkerResult::Samples(sets))) if sets.len() == job.points.len() => {
                return Outcome::Done { sets, cpu_secs, max_rss }
            }
            Some(Ok(WorkerResult::Samples(sets))) => {
                format!("worker results file unreadable: {} results for {} points", sets.len(), job.points.len())
            }
            Some(Ok(WorkerResult::Failed { reason })) => reason,
            Some(Err(reason)) => format!("{reason}{tail}"),
            None => format!("worker exited without writing its results file{tail}"),
        };
        Outcome::Failed { reason, cpu_secs }
    }
}

/// What a SIGKILL of a worker was, when the kernel's OOM killer did it at
/// the memory limit of a cgroup the worker alone is in (`kdelta-PID/wN`):
/// `: the kernel's OOM killer, at the memory limit of its cgroup ...`.
fn oom_killed(cgroups: &[PathBuf], sig: i32) -> Option<String> {
    if sig != libc::SIGKILL {
        return None;
    }
    cgroups.iter().find_map(|d| {
        let n = crate::sys::cgroup::oom_kills(d).filter(|&n| n > 0)?;
        Some(format!(
            ": the kernel's OOM killer, at the memory limit of its cgroup {} (oom_kill {n} in its memory events)",
            d.display()
        ))
    })
}

fn stderr_tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(5);
    format!("; stderr: {}", lines[start..].join(" | "))
}

/// Send SIGKILL to a whole process group (killpg(3)); a group that is gone is fine.
pub(crate) fn kill_group(pgid: libc::pid_t) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_the_oom_killer_ended_is_said_so() {
        let d = tempfile::tempdir().unwrap();
        let cg = d.path().join("w1");
        std::fs::create_dir(&cg).unwrap();
        std::fs::write(cg.join("memory.events"), "low 0\nhigh 0\nmax 40\noom 1\noom_kill 0\n").unwrap();
        assert_eq!(oom_killed(std::slice::from_ref(&cg), libc::SIGKILL), None, "no OOM kill counted");
        std::fs::write(cg.join("memory.events"), "low 0\nhigh 0\nmax 40\noom 1\noom_kill 1\n").unwrap();
        let why = oom_killed(std::slice::from_ref(&cg), libc::SIGKILL).unwrap();
        assert!(why.contains("the kernel's OOM killer") && why.contains("w1"), "{why}");
        assert_eq!(oom_killed(&[cg], libc::SIGSEGV), None, "only a SIGKILL is the OOM killer's");
    }
}

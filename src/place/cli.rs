//! `kdelta place`: arguments, the live topology, the SIGINT handler, output.

use super::job;
use super::runner::{self, Job, PlacePolicy, RunCfg, RunReport};
use crate::cpuset::CpuSet;
use crate::error::bad_input;
use crate::model::fmt::TextOrJson;
use crate::simulate::summary::{histogram, Bin, Dist};
use crate::topology::{Core, Cpu, Topology};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Run N concurrent loops of a command (or a built-in CPU-bound job), each
/// iteration a new process placed by a policy; report wall times and core sharing.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PlaceArgs {
    /// Placement policy: naive (random logical CPU), smt-aware (idle core first), kernel (no pinning).
    #[arg(long, value_enum, default_value_t = PlacePolicy::SmtAware)]
    pub(crate) policy: PlacePolicy,
    /// Number of concurrent loops.
    #[arg(short = 'n', long = "loops", default_value_t = 2)]
    pub(crate) loops: usize,
    /// Iterations per loop.
    #[arg(long, default_value_t = 5)]
    pub(crate) iterations: usize,
    /// Measure the SMT rate s (one job alone against two on the siblings of one core) instead.
    #[arg(long)]
    pub(crate) measure_smt_rate: bool,
    /// Seed for the naive policy's random choices.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
    pub(crate) format: TextOrJson,
    /// Length of the built-in job, milliseconds (for tests).
    #[arg(long, default_value_t = 1000, hide = true)]
    pub(crate) job_ms: u64,
    /// Sampling period of /proc/PID/stat, milliseconds.
    #[arg(long, default_value_t = 10, hide = true)]
    pub(crate) sample_ms: u64,
    /// The command to loop (after `--`); without it, the built-in job.
    #[arg(last = true)]
    pub(crate) cmd: Vec<String>,
}

/// The live topology restricted to the CPUs this process may use, and a note
/// when it had to be guessed.
pub(crate) fn live_topology() -> (Topology, Option<String>) {
    let allowed: Option<CpuSet> = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok().map(|m| {
        CpuSet::from_iter((0..nix::sched::CpuSet::count() as u32).filter(|&c| m.is_set(c as usize).unwrap_or(false)))
    });
    match Topology::read(Path::new("/")) {
        Ok(t) => {
            let t = match &allowed {
                Some(a) => restrict(&t, a),
                None => t,
            };
            (t, None)
        }
        Err(e) => {
            let cpus = allowed.unwrap_or_else(|| {
                CpuSet::from_iter(0..std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1))
            });
            let mut t = flat(&cpus);
            // The kernel's own summary, readable without the topology reader.
            let active = std::fs::read_to_string("/sys/devices/system/cpu/smt/active").ok().map(|s| s.trim() == "1");
            t.smt_active = active;
            t.smt_control =
                std::fs::read_to_string("/sys/devices/system/cpu/smt/control").ok().map(|s| s.trim().to_string());
            let smt = match active {
                Some(false) => "smt/active is 0, so SMT is absent",
                Some(true) => "smt/active is 1: SMT is present but its siblings are unknown here",
                None => "SMT siblings are unknown",
            };
            (t, Some(format!("topology unavailable ({e:#}); treating each allowed CPU as its own core; {smt}")))
        }
    }
}

/// Whether SMT is known to be absent, known present, or unknown (None).
pub(crate) fn smt_known(t: &Topology, guessed: bool) -> Option<bool> {
    if t.has_smt() {
        Some(true)
    } else if !guessed || t.smt_active == Some(false) {
        Some(false)
    } else {
        None
    }
}

/// A topology where every CPU is its own core (no SMT).
pub fn flat(cpus: &CpuSet) -> Topology {
    let list: Vec<u32> = cpus.iter().collect();
    Topology {
        online: cpus.clone(),
        offline: CpuSet::new(),
        cpus: list
            .iter()
            .enumerate()
            .map(|(i, &id)| Cpu {
                id,
                core: i,
                package: -1,
                die: None,
                core_id: None,
                siblings: CpuSet::from_iter([id]),
                node: None,
            })
            .collect(),
        cores: list.iter().map(|&id| Core { package: -1, core_id: None, cpus: CpuSet::from_iter([id]) }).collect(),
        packages: vec![-1],
        caches: vec![],
        nodes: vec![],
        smt_control: None,
        smt_active: None,
        restriction: None,
    }
}

/// Keep only `allowed` CPUs (and cores that still have one).
pub(crate) fn restrict(t: &Topology, allowed: &CpuSet) -> Topology {
    t.restricted(allowed)
}

#[derive(Debug, Serialize)]
pub(crate) struct PlaceResult {
    pub(crate) policy: PlacePolicy,
    pub(crate) loops: usize,
    pub(crate) iterations_per_loop: usize,
    pub(crate) job: String,
    /// Whether the machine has SMT siblings; None when it cannot be told.
    pub(crate) smt_present: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) topology_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) iteration: Option<Dist>,
    pub(crate) histogram: Vec<Bin>,
    pub(crate) failed_iterations: usize,
    pub(crate) samples: u64,
    pub(crate) shared_samples: u64,
    /// shared_samples / samples, or None when no sample had two loops running.
    pub(crate) shared_fraction: Option<f64>,
    pub(crate) repins: u64,
    pub(crate) interrupted: bool,
    pub(crate) runs: Vec<runner::IterRec>,
}

#[derive(Debug, Serialize)]
pub(crate) struct SmtRateResult {
    /// s = time alone / time with the sibling busy; None with a reason when it cannot be measured.
    pub(crate) smt_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpus: Option<(u32, u32)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) alone_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pair_seconds: Option<f64>,
}

fn check(args: &PlaceArgs) -> anyhow::Result<PlacePolicy> {
    let policy = args.policy;
    if !(1..=1024).contains(&args.loops) {
        return Err(bad_input(format!("-n {}: allowed is 1 to 1024 loops", args.loops)));
    }
    if !(1..=1_000_000).contains(&args.iterations) {
        return Err(bad_input(format!("--iterations {}: allowed is 1 to 1000000", args.iterations)));
    }
    if !(1..=3_600_000).contains(&args.job_ms) {
        return Err(bad_input(format!("--job-ms {}: allowed is 1 to 3600000", args.job_ms)));
    }
    if !(1..=10_000).contains(&args.sample_ms) {
        return Err(bad_input(format!("--sample-ms {}: allowed is 1 to 10000", args.sample_ms)));
    }
    Ok(policy)
}

/// Run `place` on a given topology with a given stop flag (the testable core).
pub(crate) fn place(
    args: &PlaceArgs,
    topo: &Topology,
    topo_note: Option<String>,
    stop: &AtomicBool,
) -> anyhow::Result<PlaceResult> {
    let policy = check(args)?;
    let job = if args.cmd.is_empty() {
        Job::Builtin { rounds: job::calibrate(Duration::from_millis(args.job_ms)) }
    } else {
        Job::Cmd(args.cmd.clone())
    };
    let cfg = RunCfg {
        policy,
        loops: args.loops,
        iterations: args.iterations,
        job: job.clone(),
        seed: args.seed,
        sample: Duration::from_millis(args.sample_ms),
    };
    let rep: RunReport = runner::run(topo, &cfg, stop)?;
    let times: Vec<f64> = rep.iterations.iter().filter(|i| i.ok).map(|i| i.seconds).collect();
    let smt = smt_known(topo, topo_note.is_some());
    Ok(PlaceResult {
        policy,
        loops: args.loops,
        iterations_per_loop: args.iterations,
        job: match &job {
            Job::Builtin { rounds } => format!("built-in CPU-bound job, {rounds} rounds (calibrated to about {} ms)", args.job_ms),
            Job::Cmd(a) => a.join(" "),
        },
        smt_present: smt,
        topology_note: topo_note,
        note: match smt {
            Some(true) => None,
            Some(false) => Some(
                "SMT is absent on this machine (no core has two logical CPUs): the policies differ only in pinning, and no SMT difference is expected"
                    .to_string(),
            ),
            None => Some("SMT siblings unknown (no topology): core sharing is counted per logical CPU".to_string()),
        },
        iteration: Dist::of(&times),
        histogram: histogram(&times, 10),
        failed_iterations: rep.iterations.iter().filter(|i| !i.ok).count(),
        samples: rep.samples,
        shared_samples: rep.shared_samples,
        shared_fraction: (rep.samples > 0).then(|| rep.shared_samples as f64 / rep.samples as f64),
        repins: rep.repins,
        interrupted: rep.interrupted,
        runs: rep.iterations,
    })
}

/// `--measure-smt-rate` on a given topology.
pub(crate) fn measure_smt_rate(
    args: &PlaceArgs,
    topo: &Topology,
    topo_note: Option<&str>,
    stop: &AtomicBool,
) -> anyhow::Result<SmtRateResult> {
    check(args)?;
    let Some(core) = topo.cores.iter().find(|c| c.cpus.len() >= 2) else {
        let mut reason = match smt_known(topo, topo_note.is_some()) {
            Some(_) => {
                "needs SMT siblings (two logical CPUs of one core); this machine has none: SMT is absent".to_string()
            }
            None => "needs SMT siblings (two logical CPUs of one core); none are known here".to_string(),
        };
        if let Some(n) = topo_note {
            reason.push_str(&format!(" ({n})"));
        }
        return Ok(SmtRateResult {
            smt_rate: None,
            reason: Some(reason),
            cpus: None,
            alone_seconds: None,
            pair_seconds: None,
        });
    };
    let v = core.cpus.to_vec();
    let (a, b) = (v[0], v[1]);
    let rounds = job::calibrate(Duration::from_millis(args.job_ms));
    let mut alone = Vec::new();
    let mut pair = Vec::new();
    for _ in 0..3 {
        let Some(x) = runner::run_pinned_together(&[a], rounds, stop)? else {
            return Ok(interrupted());
        };
        alone.push(x[0]);
        let Some(y) = runner::run_pinned_together(&[a, b], rounds, stop)? else {
            return Ok(interrupted());
        };
        pair.push((y[0] + y[1]) / 2.0);
    }
    let med = |v: &[f64]| Dist::of(v).map(|d| d.median).unwrap_or(f64::NAN);
    let (ta, tp) = (med(&alone), med(&pair));
    Ok(SmtRateResult {
        smt_rate: Some(ta / tp),
        reason: None,
        cpus: Some((a, b)),
        alone_seconds: Some(ta),
        pair_seconds: Some(tp),
    })
}

fn interrupted() -> SmtRateResult {
    SmtRateResult {
        smt_rate: None,
        reason: Some("interrupted".into()),
        cpus: None,
        alone_seconds: None,
        pair_seconds: None,
    }
}

pub(crate) fn main(args: &PlaceArgs) -> anyhow::Result<ExitCode> {
    check(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    let id = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))
        .map_err(|e| anyhow::anyhow!("installing the SIGINT handler: {e}"))?;
    let (topo, note) = live_topology();
    let out = if args.measure_smt_rate {
        measure_smt_rate(args, &topo, note.as_deref(), &stop)
            .map(|r| (render_rate(args, &r), r.reason.as_deref() == Some("interrupted")))
    } else {
        place(args, &topo, note, &stop).map(|r| (render_place(args, &r), r.interrupted))
    };
    signal_hook::low_level::unregister(id);
    let (text, interrupted) = out?;
    print!("{text}");
    Ok(if interrupted { ExitCode::from(crate::error::exit::INTERRUPTED) } else { ExitCode::SUCCESS })
}

fn render_rate(args: &PlaceArgs, r: &SmtRateResult) -> String {
    if args.format == TextOrJson::Json {
        return serde_json::to_string_pretty(r).unwrap_or_default() + "\n";
    }
    match (r.smt_rate, r.cpus, r.alone_seconds, r.pair_seconds) {
        (Some(s), Some((a, b)), Some(ta), Some(tp)) => format!(
            "SMT rate s = {s:.3} (one job alone on CPU {a}: {ta:.3} s; two at once on siblings {a} and {b}: {tp:.3} s each; medians of 3)\nfeed it to the simulator: kdelta simulate --smt-rate {s:.2}\n"
        ),
        _ => format!("SMT rate not measured: {}\n", r.reason.as_deref().unwrap_or("unknown reason")),
    }
}

fn render_place(args: &PlaceArgs, r: &PlaceResult) -> String {
    if args.format == TextOrJson::Json {
        return serde_json::to_string_pretty(r).unwrap_or_default() + "\n";
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "place: policy {}, {} loops x {} iterations of {}",
        args.policy.name(),
        r.loops,
        r.iterations_per_loop,
        r.job
    );
    if let Some(n) = &r.topology_note {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(n) = &r.note {
        let _ = writeln!(s, "note: {n}");
    }
    if r.interrupted {
        let _ = writeln!(s, "interrupted: partial results");
    }
    match &r.iteration {
        Some(d) => {
            let _ = writeln!(
                s,
                "iteration wall time: min {:.3} s, median {:.3} s, mean {:.3} s, max {:.3} s (n = {}, spread max/min {:.2})",
                d.min,
                d.median,
                d.mean,
                d.max,
                d.n,
                d.max / d.min
            );
            let most = r.histogram.iter().map(|b| b.count).max().unwrap_or(1).max(1);
            for b in &r.histogram {
                let _ = writeln!(
                    s,
                    "  {:>8.3}-{:<8.3} {:>5} {}",
                    b.lo,
                    b.hi,
                    b.count,
                    "#".repeat((b.count * 40).div_ceil(most))
                );
            }
        }
        None => {
            let _ = writeln!(s, "no iteration completed successfully");
        }
    }
    if r.failed_iterations > 0 {
        let _ = writeln!(s, "failed iterations (non-zero exit or killed): {}", r.failed_iterations);
    }
    match r.shared_fraction {
        Some(f) => {
            let _ = writeln!(
                s,
                "two loops shared a core while another core ran none: {} of {} samples ({:.1}%)",
                r.shared_samples,
                r.samples,
                f * 100.0
            );
        }
        None => {
            let _ = writeln!(s, "core sharing: no sample had two loops running");
        }
    }
    if r.policy == PlacePolicy::SmtAware {
        let _ = writeln!(s, "monitor re-pins: {}", r.repins);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::place::decide::tests::{two_by_four_by_two, two_by_two_interleaved};
    use clap::Parser;

    #[derive(clap::Parser)]
    struct T {
        #[command(flatten)]
        a: PlaceArgs,
    }

    fn args(s: &str) -> PlaceArgs {
        T::try_parse_from(std::iter::once("x").chain(s.split_whitespace())).unwrap().a
    }

    /// Children of this process that are still around (zombies included).
    fn my_children() -> Vec<i32> {
        let me = std::process::id() as i32;
        crate::sys::task::all_pids()
            .into_iter()
            .filter(|&p| crate::sys::task::stat(p).is_some_and(|st| st.ppid == me))
            .collect()
    }

    fn local_topo() -> Topology {
        // The CPUs this test may use, as a no-SMT topology (the live reader is not relied on).
        let m = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
        flat(&CpuSet::from_iter((0..nix::sched::CpuSet::count() as u32).filter(|&c| m.is_set(c as usize).unwrap())))
    }

    // One test for all process-spawning cases, so the leftover check is not
    // disturbed by another test's children.
    #[test]
    fn every_policy_runs_and_leaves_no_process_behind() {
        let topo = local_topo();
        let stop = AtomicBool::new(false);
        for p in ["naive", "smt-aware", "kernel"] {
            let a = args(&format!("--policy {p} -n 2 --iterations 2 --job-ms 20 --sample-ms 2"));
            let r = place(&a, &topo, None, &stop).unwrap();
            assert_eq!(r.runs.len(), 4, "{p}");
            assert_eq!(r.failed_iterations, 0);
            assert!(r.smt_present == Some(false) && r.note.is_some());
            assert!(render_place(&a, &r).contains("iteration wall time"));
            // Other tests in this binary fork too: check the processes this run started.
            let left: Vec<i32> = r.runs.iter().map(|x| x.pid).filter(|p| my_children().contains(p)).collect();
            assert!(left.is_empty(), "{p}: {left:?}");
        }
        // A command, one failing.
        let a = args("--policy smt-aware -n 2 --iterations 2 -- false");
        let r = place(&a, &topo, None, &stop).unwrap();
        assert_eq!(r.failed_iterations, 4);
        let e = place(&args("-- /nonexistent/kdelta-no-such-cmd"), &topo, None, &stop).unwrap_err();
        assert!(crate::error::is_bad_input(&e));
        // Interrupted: long jobs, stop raised from another thread; all killed and reaped.
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            s2.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let a = args("--policy naive -n 2 --iterations 3 --job-ms 60000");
        let t0 = std::time::Instant::now();
        let r = place(&a, &topo, None, &stop).unwrap();
        h.join().unwrap();
        assert!(r.interrupted && t0.elapsed() < Duration::from_secs(10));
        // Other tests in this binary fork short-lived children too; a leaked
        // 60 s job (a fork of this binary, never exec'd) would still be here
        // after they are gone. Programs other tests start and exec (the
        // report tests' headless Chromium) may outlive the wait: they are
        // not this run's jobs.
        let own_exe = std::fs::read_link("/proc/self/exe").ok();
        let forks = || -> Vec<i32> {
            my_children().into_iter().filter(|p| std::fs::read_link(format!("/proc/{p}/exe")).ok() == own_exe).collect()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !forks().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(forks().is_empty(), "{:?}", forks());
    }

    #[test]
    fn smt_rate_needs_siblings() {
        let r = measure_smt_rate(&args("--measure-smt-rate"), &local_topo(), None, &AtomicBool::new(false)).unwrap();
        assert!(r.smt_rate.is_none());
        assert!(r.reason.unwrap().contains("SMT is absent"));
    }

    #[test]
    fn bad_arguments() {
        for a in ["-n 0", "--iterations 0", "--job-ms 0"] {
            let e = place(&args(a), &local_topo(), None, &AtomicBool::new(false)).unwrap_err();
            assert!(crate::error::is_bad_input(&e), "{a}");
        }
        // Closed sets are refused by the parser itself, naming what is allowed.
        for a in ["--policy random", "--format yaml"] {
            let Err(e) = T::try_parse_from(std::iter::once("x").chain(a.split_whitespace())) else {
                panic!("{a} was accepted")
            };
            assert!(e.to_string().contains("possible values"), "{a}: {e}");
        }
    }

    #[test]
    fn restrict_keeps_allowed_cpus() {
        let t = restrict(&two_by_four_by_two(), &CpuSet::parse_list("0-3,8").unwrap());
        assert_eq!(t.cores.len(), 4);
        assert_eq!(t.cores[0].cpus, CpuSet::parse_list("0,8").unwrap());
        assert!(t.has_smt());
        let t = restrict(&two_by_two_interleaved(), &CpuSet::parse_list("0-1").unwrap());
        assert!(!t.has_smt());
        assert_eq!(t.cpus.iter().map(|c| c.core).collect::<Vec<_>>(), vec![0, 1]);
    }
}

//! `kdelta simulate`: arguments, validation and text/JSON output.

use super::engine::EngineCfg;
use super::policy::PolicyName;
use super::shape::Shape;
use super::summary::{summarize, PolicyResult};
use super::workload::loops::LoopsCfg;
use super::workload::make::{MakeCfg, DEFAULT_JOBS};
use super::{run, SimConfig, WorkloadCfg, DEFAULT_CROSS_CORE_RATE, DEFAULT_SMT_RATE};
use crate::error::bad_input;
use crate::model::fmt::TextOrJson;
use serde::Serialize;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

/// One value of `--policy`: a policy, or `all` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PolicyArg {
    All,
    One(PolicyName),
}

impl clap::ValueEnum for PolicyArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            PolicyArg::One(PolicyName::Stock2002),
            PolicyArg::One(PolicyName::HtAware2002),
            PolicyArg::One(PolicyName::Modern),
            PolicyArg::All,
        ]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            PolicyArg::All => Some(clap::builder::PossibleValue::new("all").help("every policy")),
            PolicyArg::One(p) => p.to_possible_value(),
        }
    }
}

/// Simulate SMT scheduling policies on a model machine (results are simulated, not measured).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SimulateArgs {
    /// Workload: `loops` (K loops of a CPU-bound job) or `make` (a -jN build).
    #[arg(long, value_enum, default_value_t = WorkloadKind::Loops)]
    pub(crate) workload: WorkloadKind,
    /// Machine shape PACKAGESxCORESxTHREADS (Molnar's P4 HT box: 2x1x2).
    #[arg(long, default_value = "2x1x2")]
    pub(crate) topology: String,
    /// Policies, comma separated, or `all`.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub(crate) policy: Vec<PolicyArg>,
    /// Rate of a task while its SMT sibling is busy (0.55: Molnar's P4; 0.68 and 0.79 are typical of later cores).
    #[arg(long, default_value_t = DEFAULT_SMT_RATE)]
    pub(crate) smt_rate: f64,
    /// Rate factor while another core is busy too (shared bus/cache; 1 disables).
    #[arg(long, default_value_t = DEFAULT_CROSS_CORE_RATE)]
    pub(crate) cross_core_rate: f64,
    /// loops: number of concurrent loops K.
    #[arg(short = 'k', long, default_value_t = 2)]
    pub(crate) loops: usize,
    /// loops: seconds of work per iteration at full rate.
    #[arg(long, default_value_t = 2.55)]
    pub(crate) work: f64,
    /// loops: iterations per loop.
    #[arg(long, default_value_t = 100)]
    pub(crate) iterations: usize,
    /// loops: relative spread of the work per iteration (0.01 = ±1%).
    #[arg(long, default_value_t = 0.01)]
    pub(crate) jitter: f64,
    /// make: jobs in parallel (-jN).
    #[arg(short = 'j', long = "parallel", default_value_t = 2)]
    pub(crate) parallel: usize,
    /// make: number of compile jobs in the build.
    #[arg(long, default_value_t = DEFAULT_JOBS)]
    pub(crate) jobs: usize,
    /// Seeded repetitions (default: 1 for loops, 10 for make).
    #[arg(long)]
    pub(crate) reps: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Balance interval, milliseconds.
    #[arg(long, default_value_t = 4.0)]
    pub(crate) balance_ms: f64,
    /// Time slice, milliseconds.
    #[arg(long, default_value_t = 100.0)]
    pub(crate) timeslice_ms: f64,
    /// Print the timeline of which task ran where (first repetition).
    #[arg(long)]
    pub(crate) trace: bool,
    /// Repeat the simulation for at least a second per policy and report simulated events per second.
    #[arg(long)]
    pub(crate) bench_speed: bool,
    /// Store the result in the results database as a run (each policy a
    /// configuration, marked simulated), to compare, show or chart later.
    #[arg(long)]
    pub(crate) store: bool,
    /// A label for the stored run.
    #[arg(long, requires = "store", value_parser = crate::cli::label)]
    pub(crate) label: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
    pub(crate) format: TextOrJson,
}

/// The workloads the simulator models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum WorkloadKind {
    Loops,
    Make,
}

fn check_range(name: &str, v: f64, lo: f64, hi: f64, lo_open: bool) -> anyhow::Result<()> {
    let ok = v.is_finite() && v <= hi && if lo_open { v > lo } else { v >= lo };
    if ok {
        Ok(())
    } else {
        let l = if lo_open { "(" } else { "[" };
        Err(bad_input(format!("--{name} {v}: allowed is a number in {l}{lo}, {hi}]")))
    }
}

fn check_count(name: &str, v: usize, lo: usize, hi: usize) -> anyhow::Result<()> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(bad_input(format!("--{name} {v}: allowed is {lo} to {hi}")))
    }
}

/// Validate the arguments into a configuration (without the policy) and the policy list.
pub(crate) fn config(a: &SimulateArgs) -> anyhow::Result<(SimConfig, Vec<PolicyName>)> {
    let shape = Shape::parse(&a.topology)?;
    check_range("smt-rate", a.smt_rate, 0.0, 1.0, true)?;
    check_range("cross-core-rate", a.cross_core_rate, 0.0, 1.0, true)?;
    check_range("balance-ms", a.balance_ms, 0.01, 60_000.0, false)?;
    check_range("timeslice-ms", a.timeslice_ms, 0.1, 60_000.0, false)?;
    let workload = match a.workload {
        WorkloadKind::Loops => {
            check_count("loops", a.loops, 1, 4096)?;
            check_count("iterations", a.iterations, 1, 1_000_000)?;
            check_range("work", a.work, 0.0, 1e6, true)?;
            check_range("jitter", a.jitter, 0.0, 0.5, false)?;
            WorkloadCfg::Loops(LoopsCfg { loops: a.loops, work: a.work, iterations: a.iterations, jitter: a.jitter })
        }
        WorkloadKind::Make => {
            check_count("parallel", a.parallel, 1, 4096)?;
            check_count("jobs", a.jobs, 1, 1_000_000)?;
            WorkloadCfg::Make(MakeCfg { parallel: a.parallel, jobs: a.jobs })
        }
    };
    let reps = a.reps.unwrap_or(match workload {
        WorkloadCfg::Loops(_) => 1,
        WorkloadCfg::Make(_) => 10,
    });
    check_count("reps", reps, 1, 10_000)?;
    let mut policies = Vec::new();
    for p in &a.policy {
        let names = match p {
            PolicyArg::All => &PolicyName::ALL[..],
            PolicyArg::One(n) => std::slice::from_ref(n),
        };
        for n in names {
            if !policies.contains(n) {
                policies.push(*n);
            }
        }
    }
    let cfg = SimConfig {
        shape,
        engine: EngineCfg {
            smt_rate: a.smt_rate,
            cross_core_rate: a.cross_core_rate,
            timeslice: a.timeslice_ms / 1e3,
            balance: a.balance_ms / 1e3,
        },
        policy: PolicyName::Stock2002,
        workload,
        seed: a.seed,
        reps,
        trace: a.trace,
    };
    Ok((cfg, policies))
}

#[derive(Serialize)]
struct Doc<'a> {
    simulated: bool,
    config: &'a SimConfig,
    results: &'a [PolicyResult],
}

/// Run every requested policy.
pub(crate) fn simulate_all(
    cfg: &SimConfig,
    policies: &[PolicyName],
    bench_speed: bool,
) -> anyhow::Result<Vec<PolicyResult>> {
    let mut out = Vec::new();
    for p in policies {
        let mut c = cfg.clone();
        c.policy = *p;
        let t0 = Instant::now();
        let reps = run(&c)?;
        let mut res = summarize(&c, p.as_str(), reps, t0.elapsed().as_secs_f64(), c.trace);
        if bench_speed {
            // Re-run (without trace) until a second has passed, for a steadier rate.
            c.trace = false;
            let (mut ev, t1) = (0u64, Instant::now());
            while t1.elapsed().as_secs_f64() < 1.0 {
                ev += run(&c)?.iter().map(|r| r.counters.events).sum::<u64>();
            }
            res.wall_seconds = t1.elapsed().as_secs_f64();
            res.events = ev;
            res.events_per_sec = ev as f64 / res.wall_seconds;
        }
        out.push(res);
    }
    Ok(out)
}

pub(crate) fn main(args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let (cfg, policies) = config(args)?;
    let results = simulate_all(&cfg, &policies, args.bench_speed)?;
    if args.format == TextOrJson::Json {
        println!("{}", render_json(&cfg, &results)?);
    } else {
        print!("{}", render_text(&cfg, &results));
    }
    Ok(ExitCode::SUCCESS)
}

/// The JSON document: `{"simulated": true, "config": .., "results": [..]}`.
pub(crate) fn render_json(cfg: &SimConfig, results: &[PolicyResult]) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&Doc { simulated: true, config: cfg, results })?)
}

/// The text report.
pub(crate) fn render_text(cfg: &SimConfig, results: &[PolicyResult]) -> String {
    let mut s = String::new();
    let e = &cfg.engine;
    let _ = writeln!(
        s,
        "SIMULATED (not measured): topology {} ({} logical CPUs), smt-rate {}, cross-core rate {}, balance {} ms, slice {} ms, seed {}",
        cfg.shape,
        cfg.shape.ncpus(),
        e.smt_rate,
        e.cross_core_rate,
        e.balance * 1e3,
        e.timeslice * 1e3,
        cfg.seed
    );
    match cfg.workload {
        WorkloadCfg::Loops(l) => render_loops(&mut s, &l, cfg.reps, results),
        WorkloadCfg::Make(m) => render_make(&mut s, &m, cfg.reps, results),
    }
    let _ = writeln!(s, "\n(doubled s: simulated time a core ran two tasks while another core was fully idle)");
    for r in results {
        let _ = writeln!(
            s,
            "{}: {} events in {:.3} s wall = {:.0} events/s, {} running-task migrations",
            r.policy, r.events, r.wall_seconds, r.events_per_sec, r.migrations_running
        );
    }
    for r in results {
        for rep in &r.reps {
            if let Some(tr) = &rep.trace {
                let _ = writeln!(s, "\ntrace of {} (rep {}): start - end  cpu  task(tag)  end", r.policy, rep.rep);
                for seg in tr {
                    let _ = writeln!(
                        s,
                        "  {:>11.6} - {:>11.6}  cpu{:<3} {}({})  {}",
                        seg.start, seg.end, seg.cpu, seg.task, seg.tag, seg.end_reason
                    );
                }
            }
        }
    }
    s
}

/// The loops workload: its line, the iteration times per policy and a
/// histogram of them for each policy.
fn render_loops(s: &mut String, l: &LoopsCfg, reps: usize, results: &[PolicyResult]) {
    let _ = writeln!(
        s,
        "workload: {} loops x {} iterations of {} s work (±{}%), {} rep(s)\n",
        l.loops,
        l.iterations,
        l.work,
        l.jitter * 100.0,
        reps
    );
    let _ = writeln!(
        s,
        "{:<14} {:>8} {:>8} {:>8} {:>8} {:>7}   {:>10}",
        "policy", "min s", "median", "mean", "max", "n", "doubled s"
    );
    for r in results {
        if let Some(l) = &r.loops {
            let d = &l.iteration;
            let _ = writeln!(
                s,
                "{:<14} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>7}   {:>10.3}",
                r.policy, d.min, d.median, d.mean, d.max, d.n, r.doubled_time
            );
        }
    }
    for r in results {
        if let Some(l) = &r.loops {
            let _ = writeln!(s, "\n{} iteration times:", r.policy);
            let most = l.histogram.iter().map(|b| b.count).max().unwrap_or(1).max(1);
            for b in &l.histogram {
                let bar = "#".repeat((b.count * 40).div_ceil(most));
                let _ = writeln!(s, "  {:>7.3}-{:<7.3} {:>6} {}", b.lo, b.hi, b.count, bar);
            }
        }
    }
}

/// The make workload: its line and the build times per policy.
fn render_make(s: &mut String, m: &MakeCfg, reps: usize, results: &[PolicyResult]) {
    let _ = writeln!(s, "workload: make -j{} of {} compile jobs, {} seeded rep(s)\n", m.parallel, m.jobs, reps);
    let _ = writeln!(s, "{:<14} {:>9} {:>9} {:>9}   {:>10}", "policy", "best s", "mean", "worst", "doubled s");
    for r in results {
        if let Some(mk) = &r.make {
            let _ = writeln!(
                s,
                "{:<14} {:>9.2} {:>9.2} {:>9.2}   {:>10.2}",
                r.policy, mk.best, mk.mean, mk.worst, r.doubled_time
            );
        }
    }
}

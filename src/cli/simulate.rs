//! `kdelta simulate`'s arguments, validated into a simulation's configuration.

use super::parse::label;
use crate::error::bad_input;
use crate::model::fmt::TextOrJson;
use crate::simulate::engine::EngineCfg;
use crate::simulate::policy::PolicyName;
use crate::simulate::shape::Shape;
use crate::simulate::workload::loops::LoopsCfg;
use crate::simulate::workload::make::{MakeCfg, DEFAULT_JOBS};
use crate::simulate::{
    SimConfig, WorkloadCfg, DEFAULT_BALANCE_MS, DEFAULT_CROSS_CORE_RATE, DEFAULT_JITTER, DEFAULT_SEED,
    DEFAULT_SMT_RATE, DEFAULT_TIMESLICE_MS,
};

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
    #[arg(long, default_value_t = DEFAULT_JITTER)]
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
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub(crate) seed: u64,
    /// Balance interval, milliseconds.
    #[arg(long, default_value_t = DEFAULT_BALANCE_MS)]
    pub(crate) balance_ms: f64,
    /// Time slice, milliseconds.
    #[arg(long, default_value_t = DEFAULT_TIMESLICE_MS)]
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
    #[arg(long, requires = "store", value_parser = label)]
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

impl SimulateArgs {
    /// Validate the arguments into a configuration (without the policy) and the policy list.
    pub(crate) fn config(&self) -> anyhow::Result<(SimConfig, Vec<PolicyName>)> {
        let a = self;
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
                WorkloadCfg::Loops(LoopsCfg {
                    loops: a.loops,
                    work: a.work,
                    iterations: a.iterations,
                    jitter: a.jitter,
                })
            }
            WorkloadKind::Make => {
                check_count("parallel", a.parallel, 1, 4096)?;
                check_count("jobs", a.jobs, 1, 1_000_000)?;
                WorkloadCfg::Make(MakeCfg { parallel: a.parallel, jobs: a.jobs })
            }
        };
        let reps = a.reps.unwrap_or(workload.default_reps());
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
}

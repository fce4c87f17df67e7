//! `kdelta run`'s arguments (which `check` and `submit` take too).

use super::parse::{
    budget, ci_target, label, meta_pair, param, quiet_wait, runs, sample_time, sort, style, threshold, time_unit,
    timeout, warmup, Setting, Style, Warmup,
};
use crate::bench::cmd::summary::{Order, TimeUnit};
use crate::harness::plan;
use crate::report::Format;
use clap::Args;
use std::time::Duration;

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// Benchmarks: a family (lat), a name (lat.syscall) or a glob ('lat.sel*').
    #[arg(required = true)]
    pub(crate) selectors: Vec<String>,

    /// Configurations to compare, comma-separated: all, up, noht (smp), ht (smt),
    /// noht1, ht1, smpN, cpus=LIST, each optionally +sched=POLICY,
    /// +tunables=NAME=V:NAME=V, +env=NAME=VALUE. A piece starting with a
    /// digit continues a cpus= list: 'up,cpus=0,2-3,noht' is three. Default: all.
    #[arg(long, short = 'c', value_name = "A,B,...")]
    pub(crate) config: Vec<String>,

    /// Set a parameter; a comma-separated list is swept. Repeatable. Scope it to
    /// some benchmarks with SELECTOR:NAME=V (e.g. 'bw.mem.*:size=1M').
    #[arg(long, short = 'p', value_name = "NAME=V1,V2", value_parser = param)]
    pub(crate) param: Vec<Setting>,

    /// Clean samples per result: N, or auto (each benchmark's own count, usually
    /// 10, then more interleaved rounds until each median's 95% interval is
    /// within --ci-target, up to 3x). Default: auto when comparing
    /// (several configurations or a swept parameter) without --quick, else
    /// each benchmark's own count. Disturbed samples are always retaken.
    #[arg(long, short = 'r', value_name = "N|auto", value_parser = runs)]
    pub(crate) runs: Option<plan::Runs>,

    /// With --runs auto: the half-width of each median's 95% interval to
    /// reach, in percent, for a result compared with nothing (a compared
    /// one samples until its comparison is different or the same).
    #[arg(long, default_value_t = crate::stats::defaults::CI_TARGET_PCT, value_name = "PCT", value_parser = ci_target)]
    pub(crate) ci_target: f64,

    /// With --runs auto: start no extra round once the run has taken this
    /// long (a comparison still unknown then is reported as unknown).
    /// Default: extra rounds take at most twice the planned rounds' time;
    /// `check` defaults to 60s.
    #[arg(long, value_name = "DURATION", value_parser = budget)]
    pub(crate) budget: Option<Duration>,

    /// List every warning of every result instead of one summary line per kind.
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,

    /// Fewer samples and smaller sweeps: a first look in seconds.
    #[arg(long)]
    pub(crate) quick: bool,

    /// Count, in every sample, what the measured tasks did (perf_event_open):
    /// task clock, context switches, CPU migrations, minor and major page
    /// faults, and where a hardware PMU exists cycles, instructions, cache
    /// references and misses, branch, LLC and dTLB misses (otherwise said
    /// unavailable, with the reason). Stored with each sample, shown per
    /// operation under each result and compared like figures. A
    /// configuration's `+counters=on|off` overrides it.
    #[arg(long)]
    pub(crate) counters: bool,

    /// A label to find this run by later (compare, show, export).
    #[arg(long, short = 'l', value_parser = label)]
    pub(crate) label: Option<String>,

    /// Record configurations this machine cannot give as unavailable and run the rest.
    #[arg(long)]
    pub(crate) skip_unavailable: bool,

    /// Keep every other task off the CPUs the configurations measure on, for
    /// the run (an exclusive cpuset, as `cset shield`; v2: an isolated
    /// partition), put back after; needs root and a CPU left for the rest.
    #[arg(long)]
    pub(crate) isolate: bool,

    /// Target length of one sample of a micro-benchmark.
    #[arg(long, default_value = "10ms", value_name = "DURATION", value_parser = sample_time)]
    pub(crate) sample_time: Duration,

    /// Warm-up in each worker before its first sample: a DURATION (a
    /// micro-benchmark's minimum warm-up), or N untimed runs, as hyperfine
    /// counts them (a whole-run benchmark such as cmd runs N times first; a
    /// micro-benchmark warms up for N sample times). Default: until the
    /// loop's time settles (3 calls within 2 %), 30 ms to 100 ms; none for
    /// a whole-run benchmark.
    #[arg(long, short = 'w', value_name = "DURATION|N", value_parser = warmup)]
    pub(crate) warmup: Option<Warmup>,

    /// Time limit for one worker (overrides each benchmark's own); a worker
    /// whose points take turns gets it once per point.
    #[arg(long, value_name = "DURATION", value_parser = timeout)]
    pub(crate) timeout: Option<Duration>,

    /// After a whole-run sample (cmd, build, dbench, chat) that other work
    /// disturbed, and before a retake's first sample, wait up to this long
    /// for the worker's CPUs to go quiet before the next sample; a worker
    /// that waited in vain does not wait again. 0 never waits.
    #[arg(long, default_value = "3s", value_name = "DURATION", value_parser = quiet_wait)]
    pub(crate) quiet_wait: Duration,

    /// How the values of the parameter you compare (of those given, one
    /// naming alternatives, e.g. --param impl=libc,tuned, before one on a
    /// scale such as size=, then the fewest values) alternate: samples (in
    /// one worker, sample by sample, each cycle's order drawn at random, for
    /// benchmarks that allow it, so both see the same moments of the
    /// machine), lockstep (the same, always in one order), duet (each
    /// cycle's samples at the same moment, on CPUs of the configuration
    /// that swap each cycle; needs as many CPUs as values) or workers (a
    /// worker per value, side by side). Default: the way `kdelta doctor`
    /// found gives tighter pairs on this machine, else samples.
    #[arg(long, value_enum)]
    pub(crate) interleave: Option<InterleaveArg>,

    /// Noise threshold in percent for marking a change significant.
    #[arg(long, default_value_t = crate::stats::defaults::THRESHOLD_PCT, value_name = "PCT", value_parser = threshold)]
    pub(crate) threshold: f64,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,

    /// Colour and the progress bar, as hyperfine's --style: auto (colour
    /// when stdout is a terminal and NO_COLOR is unset; the bar on a
    /// terminal), full (colour always, the bar), basic or nocolor (the bar,
    /// no colour), color (colour always, no bar), none (neither).
    #[arg(long, value_name = "STYLE", default_value = "auto", value_parser = style)]
    pub(crate) style: Style,

    /// Metadata stored with the run, shown by runs and show, carried by
    /// export and push (commit=abc123, branch=main). Repeatable: a key is
    /// letters, digits, '_', '-' and '.' (up to 64), a value up to 1 KiB
    /// of printable text, at most 64 keys, each once.
    #[arg(long, value_name = "KEY=VALUE", value_parser = meta_pair)]
    pub(crate) meta: Vec<(String, String)>,

    /// Sample the measured tasks' stacks (kernel and user) in every
    /// configuration, in extra profiled samples apart from the measured ones;
    /// each result keeps its folded stacks, drawn by `report` and `profile`.
    /// Needs perf(1) and permission to open perf events.
    #[arg(long)]
    pub(crate) profile: bool,

    /// cmd: show times in microsecond (us), millisecond (ms, as stored) or
    /// second (s), as hyperfine's -u; text and markdown only (json and csv
    /// keep milliseconds, as hyperfine's keep seconds).
    #[arg(long, short = 'u', value_name = "UNIT", value_parser = time_unit, help_heading = CMD_HEADING)]
    pub(crate) time_unit: Option<TimeUnit>,

    /// cmd: the order of the mean ± σ lines: auto (default, as command),
    /// command (as given) or mean-time (fastest first). The tables keep the
    /// first command as the base of every change.
    #[arg(long, value_name = "ORDER", value_parser = sort, help_heading = CMD_HEADING)]
    pub(crate) sort: Option<Order>,
}

/// Where `--help` lists the flags of the cmd family.
const CMD_HEADING: &str = "Commands (the cmd family)";

/// `--interleave`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum InterleaveArg {
    Samples,
    Lockstep,
    Duet,
    Workers,
}

impl From<InterleaveArg> for plan::Interleave {
    fn from(a: InterleaveArg) -> plan::Interleave {
        match a {
            InterleaveArg::Samples => plan::Interleave::Samples,
            InterleaveArg::Lockstep => plan::Interleave::Lockstep,
            InterleaveArg::Duet => plan::Interleave::Duet,
            InterleaveArg::Workers => plan::Interleave::Workers,
        }
    }
}

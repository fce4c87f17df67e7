//! The command line (clap derive). `main` dispatches on [`Command`].
//!
//! Every value arrives in its final type: durations, percentages, labels,
//! `--param` settings and the rest go through the value parsers at the end
//! of this file, each check written once. A value they refuse is reported
//! as [`BadInput`]: one line naming the value and what is allowed, exit 2,
//! before anything runs (`app::main` prints it).

use crate::cpuset::CpuSet;
use crate::error::BadInput;
use crate::harness::plan;
use crate::report::Format;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// kdelta: what does this change do to the speed of my system?
///
/// Runs benchmarks under configurations derived from the machine's topology
/// (one CPU, one CPU per core, every SMT sibling, scheduling policies, ...),
/// interleaved, keeps every raw sample in a results database, and compares
/// configurations or runs with statistics.
///
/// Exit status: 0 ok, 1 a benchmark failed, 2 bad input (or a configuration
/// this machine cannot give), 130 interrupted.
#[derive(Parser, Debug)]
#[command(name = "kdelta", version = env!("KDELTA_VERSION"), about, long_about, max_term_width = 100)]
pub(crate) struct Cli {
    /// Results database: a file path (SQLite) or postgresql://USER@HOST[:PORT]/DBNAME,
    /// a store shared by many hosts (default: $KDELTA_DB, else
    /// ~/.local/share/kdelta/results.db).
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub(crate) db: Option<PathBuf>,

    /// Let kdelta make its own schema (`kdelta`) in a PostgreSQL database
    /// that holds other tables; without it such a database is refused
    /// untouched.
    #[arg(long, global = true)]
    pub(crate) init_schema: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// What `kdelta profile` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProfileFormat {
    /// A flame graph (SVG).
    Svg,
    /// Folded stacks, one `stack COUNT` line each.
    Folded,
    /// The top functions (and the change table with --against).
    Text,
}

/// `compare --by`: what pooled runs are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PoolBy {
    Kernel,
    Host,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Show the machine as kdelta sees it: packages, cores, SMT siblings, caches,
    /// NUMA nodes, kernel, preemption model, C library, mitigations, the
    /// CPU set of every named configuration, and every kernel setting kdelta
    /// can switch (its value here and whether it can change it).
    Topo {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Is this machine fit to measure on? Every setting that moves
    /// measurements (cpufreq governor and boost, SMT, ASLR, THP, swap, the
    /// IRQs the measured CPUs serve, isolcpus/nohz_full, the perf sample
    /// rate, cpuidle, steal time and the busiest other processes over one
    /// second, whether this is a VM): its value, why it matters and what
    /// kdelta recommends.
    Doctor {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Make the changes kdelta can make, each kernel file's original
        /// journaled first; restored at the end of the next run, by
        /// `kdelta doctor --reset` or by `kdelta restore`.
        #[arg(long, conflicts_with = "reset")]
        apply: bool,
        /// Put back what `--apply` changed (replays the journal).
        #[arg(long)]
        reset: bool,
        /// The CPUs you will measure on (default: every CPU kdelta may use),
        /// for the IRQ and cpuidle checks.
        #[arg(long, value_name = "LIST", value_parser = doctor_cpus)]
        cpus: Option<CpuSet>,
    },
    /// List every benchmark: family, unit, direction, parameters with their
    /// defaults, and whether it is supported here (and why not).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Only benchmarks matching these selectors.
        selectors: Vec<String>,
    },
    /// Run benchmarks, store every sample, print the results (a comparison
    /// when several configurations are given).
    Run(RunArgs),
    /// Compare two configurations of one run, or the same benchmarks in two
    /// runs (by id or label). Without arguments: the latest complete run.
    Compare {
        /// A run id or label (default: the latest complete run).
        run_a: Option<String>,
        /// A second run, to compare run against run.
        run_b: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Noise threshold in percent: smaller changes are never marked significant.
        #[arg(long, default_value_t = 1.0, value_name = "PCT", value_parser = threshold)]
        threshold: f64,
        /// List every warning of every result instead of one summary line per kind.
        #[arg(long, short = 'v')]
        verbose: bool,
        /// Show each result's perf counters per operation (taken with `run
        /// --counters`) as rows under it, compared like figures.
        #[arg(long)]
        counters: bool,
        /// Pool the complete runs (of --label, if given) by kernel release or
        /// by host: one column each, runs as the unit of significance.
        #[arg(long, value_enum, conflicts_with_all = ["run_a", "run_b"])]
        by: Option<PoolBy>,
        /// With --by: only the runs with this label.
        #[arg(long, requires = "by")]
        label: Option<String>,
    },
    /// List stored runs, newest first.
    Runs {
        /// How many.
        #[arg(long, default_value_t = 30)]
        limit: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        select: RunSelect,
    },
    /// Copy runs from a local SQLite database (--db) to a shared PostgreSQL
    /// store, raw samples and host snapshot included. Pushing a run twice
    /// stores it once.
    Push {
        /// Run ids or labels (default: every finished run).
        runs: Vec<String>,
        /// The shared store: postgresql://USER@HOST[:PORT]/DBNAME.
        #[arg(long, value_name = "URL", value_parser = shared_store)]
        to: String,
    },
    /// Show one stored run.
    Show {
        /// A run id or label.
        run: String,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// List every warning of every result instead of one summary line per kind.
        #[arg(long, short = 'v')]
        verbose: bool,
        /// Print only the warnings, one line each, with the retake and noise counts.
        #[arg(long)]
        warnings: bool,
        /// Show each result's perf counters per operation (taken with `run
        /// --counters`) as rows under it, compared like figures.
        #[arg(long)]
        counters: bool,
    },
    /// Export one stored run with every raw sample.
    Export {
        /// A run id or label.
        run: String,
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
    },
    /// Draw a stored run as an SVG chart: a line per configuration for each
    /// benchmark swept over a numeric parameter, and bars of the speedup of each
    /// configuration against the first for the rest.
    Chart {
        /// A run id or label (default: the latest complete run).
        run: Option<String>,
        /// Output file.
        #[arg(long, short = 'o', default_value = "kdelta.svg")]
        out: PathBuf,
    },
    /// Write one self-contained HTML page of stored runs (ids or labels; a
    /// label names its newest run): the tables as `show` prints them, charts
    /// as inline SVG (bars per configuration, lines over a swept parameter,
    /// speedups with their intervals), the host snapshot, the warnings and
    /// the command that produced each run. Later runs are also compared
    /// with the first. Opens from disk; nothing is fetched.
    Report {
        /// Run ids or labels (each label its newest run); with --host,
        /// --kernel or --label, every finished run they select is added.
        #[arg(required_unless_present_any = ["host", "kernel", "label", "meta", "history"], value_name = "RUN_OR_LABEL")]
        runs: Vec<String>,
        #[command(flatten)]
        select: RunSelect,
        /// Instead of runs: these benchmarks followed over the stored runs,
        /// as `kdelta history` follows them (--host, --kernel, --label and
        /// --meta choose the runs, --config, --param, --since, --alpha,
        /// --min-segment, --permutations and --seed as there): a chart per
        /// series with each run's median and interval, segment medians and
        /// change points, then its change points and runs as tables.
        #[arg(long, num_args = 1.., value_name = "SELECTOR", conflicts_with = "runs")]
        history: Vec<String>,
        #[command(flatten)]
        search: HistorySearch,
        /// Output file.
        #[arg(long, short = 'o', value_name = "FILE.html")]
        out: PathBuf,
        /// The page's title (default: the runs named).
        #[arg(long, value_parser = title)]
        title: Option<String>,
    },
    /// Write a flame graph of a profile stored by `run --profile`: one
    /// configuration's (--config, default the first profiled), or with
    /// --against B the differential one from B to --config's (red: a larger
    /// share of samples under --config, blue: a smaller one). The SVG keeps
    /// inferno's search and zoom script; it reads without it. `--format
    /// folded` writes the folded stacks instead (`stack COUNT`, or with
    /// --against `stack A B`, for FlameGraph, inferno and speedscope);
    /// `--format text` the top functions by share (and with --against each
    /// function's share under both and the change).
    Profile {
        /// A run id or label.
        run: String,
        /// The benchmark (its exact name in the run).
        benchmark: String,
        /// The configuration drawn (default: the first with a profile).
        #[arg(long, short = 'c', value_name = "A")]
        config: Option<String>,
        /// Draw the change from this configuration to --config's.
        #[arg(long, value_name = "B", requires = "config")]
        against: Option<String>,
        /// The point, when the benchmark has several (NAME=VALUE, repeatable).
        #[arg(long, short = 'p', value_name = "NAME=VALUE", value_parser = param)]
        param: Vec<Setting>,
        /// What is written: the flame graph, the folded stacks or the tables.
        #[arg(long, value_enum, default_value = "svg")]
        format: ProfileFormat,
        /// Output file (needed for svg; folded and text go to stdout without it).
        #[arg(long, short = 'o', visible_alias = "output", value_name = "FILE.svg")]
        out: Option<PathBuf>,
    },
    /// Run a benchmark's server alone, so clients on another machine can drive
    /// it (`kdelta run chat --param server=HOST:PORT`). Stops on Ctrl-C.
    ///
    /// Limits, every one counted when it bites and the counts said on stop:
    /// connections past --max-conns are closed as soon as accepted; a chat
    /// HELLO for a run past --max-runs is refused (the connection closed); a
    /// connection that sends nothing for --idle-timeout is closed; a receiver
    /// that takes no byte for --write-timeout is dropped. A chat receiver
    /// that falls behind holds back its room: the server stops reading the
    /// room's senders while one member has more than 256 KiB waiting (events
    /// model) or 64 messages queued (threads model), so a member that stops
    /// reading costs bounded memory and at most --write-timeout of its
    /// room's time; other rooms go on. A HELLO costs what arrives, not what
    /// it announces. The log says at most 10 lines per 10 s, then how many
    /// it left out.
    ///
    /// The benchmark protocols have no authentication: the server listens on
    /// loopback unless --public is given.
    Serve {
        /// Which server: chat or tbench.
        #[arg(value_name = "SERVER")]
        name: String,
        /// Address to listen on; one that is not loopback (0.0.0.0:P, [::]:P,
        /// a LAN address) needs --public.
        #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR:PORT")]
        listen: String,
        /// Allow a --listen address other machines can reach (anyone who can
        /// connect can use the server: there is no authentication).
        #[arg(long)]
        public: bool,
        /// Connections open at once.
        #[arg(long, default_value_t = 4096, value_name = "N", value_parser = serve_limit)]
        max_conns: usize,
        /// Chat runs being seated or served at once.
        #[arg(long, default_value_t = 64, value_name = "N", value_parser = serve_limit)]
        max_runs: usize,
        /// Close a connection that sends nothing for this long (e.g. 300s, 5m).
        #[arg(long, default_value = "300s", value_name = "DURATION", value_parser = idle_timeout)]
        idle_timeout: Duration,
        /// Drop a receiver that takes no byte of its output for this long.
        #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = write_timeout)]
        write_timeout: Duration,
        /// Server parameters (e.g. server_model=events). Repeatable.
        #[arg(long, short = 'p', value_name = "NAME=VALUE", value_parser = param)]
        param: Vec<Setting>,
    },
    /// Simulate SMT-aware and naive scheduling on any topology (Molnar's 2002
    /// experiment): loops of CPU-bound jobs or a make -jN build.
    Simulate(crate::simulate::cli::SimulateArgs),
    /// Run N concurrent loops of a command (each iteration a new process) under
    /// naive, SMT-aware or kernel placement and report per-iteration times.
    Place(crate::place::cli::PlaceArgs),
    /// Run a classic study (ht-2003, threads-2004, sched-2002, tuning-2001)
    /// as one stored run and print it in the study's shape, the published
    /// figures beside today's; `study list` shows what each needs and takes.
    Study(crate::study::cli::StudyArgs),
    /// Put back the kernel settings (`+thp=`, `+smt=`, ...) a kdelta that was
    /// killed left changed, from its journal, and unmount a debugfs it mounted.
    /// Only a journal kdelta wrote is replayed, and only files below /sys and
    /// /proc/sys are written; any other is refused and kept.
    Restore {
        /// Remove the journal without restoring anything (one that is refused,
        /// garbage included); never a directory or device, never through a link.
        #[arg(long)]
        discard: bool,
    },
    /// Write a completion script for bash, zsh or fish to stdout (see the
    /// README for where to put it).
    Completions {
        /// The shell.
        #[arg(value_parser = ShellParser)]
        shell: Shell,
    },
    /// Write kdelta's manual page (roff) to stdout: `kdelta man | man -l -`.
    Man,
    /// Follow benchmark points over the stored runs and find where they
    /// changed: one series per benchmark, parameters, configuration and
    /// host (the hostname of each run's host snapshot), each run's median
    /// with its 95% interval, and the change points E-divisive means finds
    /// in the run medians (a permutation test at --alpha), each with the
    /// runs on either side, the change in percent with its 95% interval,
    /// and whether the raw samples agree. Complete runs only, in run order.
    History(HistoryArgs),

    /// A regression gate: run benchmarks (or take a stored run with --run)
    /// and judge each row against a baseline run. Exit status: 0 nothing
    /// regressed, 1 a row regressed, 125 a row that matters cannot be judged
    /// (what `git bisect run` takes as "skip"), 2 bad input.
    Check(CheckArgs),
    /// Serve a shared store's job queue on this host: register the host
    /// (its snapshot, labels and usable CPUs), then take one job at a time
    /// queued for it (`kdelta submit`), run it as `kdelta run` would, store
    /// the run in the same store and report the job done, failed (with the
    /// reason) or refused (a configuration this host cannot give). A job's
    /// lease is renewed while it runs; one whose agent died goes back to the
    /// queue when its lease runs out. Takes no job while `kdelta restore` is
    /// needed. SIGTERM stops the running job (the machine put back as found),
    /// puts it back in the queue and exits.
    Agent(AgentArgs),
    /// Queue a run on the fleet's hosts: one job per registered host that
    /// --hosts selects, each run by that host's `kdelta agent`. Takes the
    /// selectors and run options of `kdelta run`; prints each job's id and host.
    Submit(SubmitArgs),
    /// The fleet's jobs, newest first: host, state, attempts, run, and why
    /// an attempt or the job ended as it did; then the registered hosts.
    Jobs(JobsArgs),
    /// Cancel a job: a queued one at once, a running one at its agent's next
    /// lease renewal (its run is then kept as incomplete).
    Cancel {
        /// The job's id (from `submit` or `jobs`).
        job: i64,
    },
    /// Internal: run one job in a worker process.
    #[command(name = "__worker", hide = true)]
    Worker { job: PathBuf },
    /// Internal: a worker's watchdog (`harness::worker::watchdog_main`).
    #[command(name = "__watchdog", hide = true)]
    Watchdog { worker: i32, parent: i32, limit_ms: u64 },
    /// Internal: the guard of a run's journals (`harness::journal::guard_main`).
    #[command(name = "__guard", hide = true)]
    Guard { pid: i32, start: u64 },
}

/// Which stored runs `runs` lists, `report` adds and `history` follows:
/// those from a host, a kernel, with a label or metadata (every one given
/// must match). One definition for these commands, so they select alike.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct RunSelect {
    /// Runs from this host (its hostname).
    #[arg(long, value_name = "HOST")]
    pub(crate) host: Option<String>,
    /// Runs under this kernel release (`uname -r`).
    #[arg(long, value_name = "RELEASE")]
    pub(crate) kernel: Option<String>,
    /// Runs with this label.
    #[arg(long)]
    pub(crate) label: Option<String>,
    /// Runs whose metadata has KEY=VALUE, or KEY with any value (given
    /// with `run --meta`). Repeatable: every one must match.
    #[arg(long, value_name = "KEY[=VALUE]", value_parser = meta_filter)]
    pub(crate) meta: Vec<crate::model::meta::MetaFilter>,
}

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
    #[arg(long, value_name = "N|auto", value_parser = runs)]
    pub(crate) runs: Option<plan::Runs>,

    /// With --runs auto: the half-width of each median's 95% interval to
    /// reach, in percent, for a result compared with nothing (a compared
    /// one samples until its comparison is different or the same).
    #[arg(long, default_value_t = 1.0, value_name = "PCT", value_parser = ci_target)]
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
    /// micro-benchmark warms up for N sample times).
    #[arg(long, default_value = "100ms", value_name = "DURATION|N", value_parser = warmup)]
    pub(crate) warmup: Warmup,

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
    /// one worker, sample by sample, for benchmarks that allow it, so both
    /// see the same moments of the machine) or workers (a worker per value,
    /// side by side).
    #[arg(long, value_enum, default_value_t = InterleaveArg::Samples)]
    pub(crate) interleave: InterleaveArg,

    /// Noise threshold in percent for marking a change significant.
    #[arg(long, default_value_t = 1.0, value_name = "PCT", value_parser = threshold)]
    pub(crate) threshold: f64,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,

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
}

/// `kdelta history`.
#[derive(Args, Debug)]
pub(crate) struct HistoryArgs {
    /// Benchmarks: a family (lat), a name (lat.syscall) or a glob ('lat.sel*').
    #[arg(required = true)]
    pub(crate) selectors: Vec<String>,
    #[command(flatten)]
    pub(crate) runs: RunSelect,
    #[command(flatten)]
    pub(crate) search: HistorySearch,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

/// Which results a history follows within the runs chosen, and how it looks
/// for change points: one definition for `history` and `report --history`.
#[derive(Args, Debug, Clone)]
pub(crate) struct HistorySearch {
    /// Only results of this configuration (as `show` names it: up, noht, ...).
    #[arg(long, short = 'c', value_name = "NAME")]
    pub(crate) config: Option<String>,
    /// Only results with this parameter value. Repeatable.
    #[arg(long, short = 'p', value_name = "NAME=VALUE", value_parser = param)]
    pub(crate) param: Vec<Setting>,
    /// Runs started on or after this date (YYYY-MM-DD, UTC) or time
    /// (YYYY-MM-DDTHH:MM:SSZ).
    #[arg(long, value_name = "DATE", value_parser = since)]
    pub(crate) since: Option<String>,
    /// Significance level of the change-point test.
    #[arg(long, default_value_t = 0.05, value_parser = alpha)]
    pub(crate) alpha: f64,
    /// Fewest runs on each side of a change point; a series needs twice as many.
    #[arg(long, default_value_t = 5, value_name = "RUNS", value_parser = min_segment)]
    pub(crate) min_segment: usize,
    /// Shuffles of the permutation test (p moves in steps of 1/(N+1)).
    #[arg(long, default_value_t = 199, value_name = "N", value_parser = permutations)]
    pub(crate) permutations: usize,
    /// Seed of the shuffles: the same seed gives the same answer; another
    /// seed, fresh permutations.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
}

/// `kdelta check`: the run options of `kdelta run`, a baseline, and the limit.
#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// The baseline: a run id, or a label (its newest run).
    #[arg(long, value_name = "RUN|LABEL", required_unless_present = "within")]
    pub(crate) against: Option<String>,

    /// No stored baseline: judge what the run compares (its --config
    /// values, a --param's values, its --cmd commands), each against the
    /// first, measured interleaved in the same run.
    #[arg(long, conflicts_with_all = ["against", "any_host"])]
    pub(crate) within: bool,

    /// Judge this stored run (an id or a label) instead of running; the
    /// selectors, if given, pick its rows.
    #[arg(long = "run", value_name = "RUN|LABEL")]
    pub(crate) stored: Option<String>,

    /// The slowdown allowed, in percent, in each benchmark's direction: a
    /// row regresses when its change is significant and worse than this.
    /// Default: the noise threshold (--threshold).
    #[arg(long, value_name = "PCT", value_parser = max_regression)]
    pub(crate) max_regression: Option<f64>,

    /// Judge against a baseline measured on another machine (different CPU
    /// model, topology, memory or architecture).
    #[arg(long)]
    pub(crate) any_host: bool,

    #[command(flatten)]
    pub(crate) run: RunArgs,
}

/// `kdelta agent`.
#[derive(Args, Debug)]
pub(crate) struct AgentArgs {
    /// This host's name in the queue and in the runs it stores (default:
    /// its kernel host name). Jobs are queued by this name.
    #[arg(long, value_name = "NAME", value_parser = host_name)]
    pub(crate) host_name: Option<String>,
    /// Labels `submit --hosts KEY=VALUE` selects this host by (every host
    /// also has host=NAME). Comma-separated or repeated.
    #[arg(long, value_name = "KEY=VALUE,...", value_delimiter = ',', value_parser = host_label)]
    pub(crate) labels: Vec<(String, String)>,
    /// Take at most one job, and exit when none is queued.
    #[arg(long)]
    pub(crate) once: bool,
    /// How long a job stays this agent's without a renewal (renewed every
    /// third of it): a job whose agent died is taken again this long after
    /// its last renewal.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = lease)]
    pub(crate) lease: Duration,
    /// Look at the queue at least this often (a submission wakes the agent at once).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = poll)]
    pub(crate) poll: Duration,
}

/// `kdelta submit`: where, then what (`kdelta run`'s selectors and options).
#[derive(Args, Debug)]
pub(crate) struct SubmitArgs {
    /// Which registered hosts get a job: all, or those with label KEY=VALUE
    /// (host=NAME names one).
    #[arg(long, value_name = "KEY=VALUE|all", value_parser = hosts)]
    pub(crate) hosts: crate::fleet::queue::Hosts,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    /// The arguments of the run each job makes, as given (filled by `app`).
    #[arg(skip)]
    pub(crate) raw: Vec<String>,
}

/// `kdelta jobs`.
#[derive(Args, Debug)]
pub(crate) struct JobsArgs {
    /// Only the jobs submitted with this label.
    #[arg(long)]
    pub(crate) label: Option<String>,
    /// How many jobs, newest first.
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "watch")]
    pub(crate) json: bool,
    /// Print again every 2 s until every job shown has ended.
    #[arg(long)]
    pub(crate) watch: bool,
}

/// `--interleave`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum InterleaveArg {
    Samples,
    Workers,
}

impl From<InterleaveArg> for plan::Interleave {
    fn from(a: InterleaveArg) -> plan::Interleave {
        match a {
            InterleaveArg::Samples => plan::Interleave::Samples,
            InterleaveArg::Workers => plan::Interleave::Workers,
        }
    }
}

impl PoolBy {
    /// The field of a run's host snapshot that names its group.
    pub(crate) fn host_key(self) -> &'static str {
        match self {
            PoolBy::Kernel => "kernel_release",
            PoolBy::Host => "hostname",
        }
    }

    /// What a group is called in the table's heading.
    pub(crate) fn name(self) -> &'static str {
        match self {
            PoolBy::Kernel => "kernel",
            PoolBy::Host => "host",
        }
    }
}

/// One `--param NAME=VALUE` (the value may be a comma-separated sweep, the
/// name a `SELECTOR:NAME` scope); which names exist is the benchmark's to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    pub(crate) name: String,
    pub(crate) value: String,
}

/// `completions SHELL`: the shells kdelta writes a completion script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl From<Shell> for clap_complete::Shell {
    fn from(s: Shell) -> clap_complete::Shell {
        match s {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// Parses [`Shell`] and lists its values for `--help` and the completion
/// scripts, like clap's own enum parser, but refuses an unknown shell on
/// one line ([`BadInput`]) instead of clap's usage block.
#[derive(Clone)]
struct ShellParser;

impl clap::builder::TypedValueParser for ShellParser {
    type Value = Shell;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Shell, clap::Error> {
        let one = |s: String| {
            <Shell as clap::ValueEnum>::from_str(&s, false).map_err(|_| {
                let names: Vec<String> = possible_shells().map(|v| v.get_name().to_string()).collect();
                BadInput(format!("unknown shell {s:?}: allowed: {}", names.join(", ")))
            })
        };
        clap::builder::StringValueParser::new().try_map(one).parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(possible_shells()))
    }
}

fn possible_shells() -> impl Iterator<Item = clap::builder::PossibleValue> {
    <Shell as clap::ValueEnum>::value_variants().iter().filter_map(clap::ValueEnum::to_possible_value)
}

// The value parsers. Each returns the value in its final type or the
// refusal. A [`BadInput`] is the whole one-line message, flag and value
// included; any other error (a number that does not parse) clap reports
// in its own words, as it does for the options without a parser of ours.

/// A refusal: [`BadInput`], or a parse error clap words itself.
type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// `--runs`: a whole number from 1 to 10000, or `auto`.
fn runs(s: &str) -> Result<plan::Runs, String> {
    if s == "auto" {
        return Ok(plan::Runs::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if (1..=10000).contains(&n) => Ok(plan::Runs::Fixed(n)),
        _ => Err(format!("{s:?} is not allowed: expected auto or a whole number from 1 to 10000")),
    }
}

/// `--threshold` (run and compare): a percentage from 0 up to 1000.
fn threshold(s: &str) -> Result<f64, Refusal> {
    let pct: f64 = s.parse()?;
    if !(0.0..1000.0).contains(&pct) {
        return Err(BadInput(format!("--threshold {pct} is out of range: allowed 0 .. 1000 (percent)")).into());
    }
    Ok(pct)
}

/// `check --max-regression`: a percentage from 0 up to 1000.
fn max_regression(s: &str) -> Result<f64, Refusal> {
    let pct: f64 = s.parse()?;
    if !(0.0..=1000.0).contains(&pct) {
        return Err(BadInput(format!("--max-regression {pct} is out of range: allowed 0 .. 1000 (percent)")).into());
    }
    Ok(pct)
}

/// `--ci-target`: a percentage above 0 up to 100.
fn ci_target(s: &str) -> Result<f64, Refusal> {
    let pct: f64 = s.parse()?;
    if !(pct > 0.0 && pct <= 100.0) {
        return Err(BadInput(format!("--ci-target {pct} is out of range: allowed above 0 up to 100 (percent)")).into());
    }
    Ok(pct)
}

/// A duration as benchmark parameters write it (`10ms`, `2s`, `5m`).
fn duration(flag: &str, s: &str) -> Result<Duration, BadInput> {
    crate::model::params::parse_duration(s).map_err(|e| BadInput(format!("{flag}: {e}")))
}

fn out_of_range(flag: &str, s: &str, allowed: &str) -> BadInput {
    BadInput(format!("{flag} {s} is out of range: allowed {allowed}"))
}

/// `--sample-time`: 100us to 60s.
fn sample_time(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--sample-time", s)?;
    if d.as_secs_f64() < 1e-4 || d.as_secs_f64() > 60.0 {
        return Err(out_of_range("--sample-time", s, "100us .. 60s"));
    }
    Ok(d)
}

/// `--warmup`: a time or a count of runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Warmup {
    /// At least this long (`100ms`).
    Time(Duration),
    /// This many untimed runs (`3`).
    Runs(u64),
}

/// `--warmup`: up to 60s, or a bare count of runs up to 10000.
fn warmup(s: &str) -> Result<Warmup, BadInput> {
    if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
        return match s.parse::<u64>() {
            Ok(n) if n <= 10_000 => Ok(Warmup::Runs(n)),
            _ => Err(out_of_range("--warmup", s, "0 .. 10000 runs, or a duration up to 60s")),
        };
    }
    let d = duration("--warmup", s)?;
    if d.as_secs_f64() > 60.0 {
        return Err(out_of_range("--warmup", s, "0 .. 60s"));
    }
    Ok(Warmup::Time(d))
}

/// `--quiet-wait`: 0 to 60s.
/// `--budget`: 1s up to a week.
fn budget(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--budget", s)?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(7 * 24 * 3600) {
        return Err(out_of_range("--budget", s, "1s .. 7days"));
    }
    Ok(d)
}

fn quiet_wait(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--quiet-wait", s)?;
    if d > Duration::from_secs(60) {
        return Err(out_of_range("--quiet-wait", s, "0 .. 60s"));
    }
    Ok(d)
}

/// `--timeout`: 1ms or more.
fn timeout(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--timeout", s)?;
    if d < Duration::from_millis(1) {
        return Err(out_of_range("--timeout", s, "1ms and above"));
    }
    Ok(d)
}

/// What `serve` says of a limit of zero, whichever it is.
const SERVE_ZERO: &str = "--max-conns, --max-runs and the timeouts must be above zero";

/// `serve --max-conns` and `--max-runs`: above zero.
fn serve_limit(s: &str) -> Result<usize, Refusal> {
    match s.parse::<usize>()? {
        0 => Err(BadInput(SERVE_ZERO.to_string()).into()),
        n => Ok(n),
    }
}

/// `serve --idle-timeout`: above zero.
fn idle_timeout(s: &str) -> Result<Duration, BadInput> {
    serve_timeout("--idle-timeout", s)
}

/// `serve --write-timeout`: above zero.
fn write_timeout(s: &str) -> Result<Duration, BadInput> {
    serve_timeout("--write-timeout", s)
}

fn serve_timeout(flag: &str, s: &str) -> Result<Duration, BadInput> {
    let d = duration(flag, s)?;
    if d.is_zero() {
        return Err(BadInput(SERVE_ZERO.to_string()));
    }
    Ok(d)
}

/// `--param NAME=VALUE`: both sides non-empty. A name given twice is
/// refused by [`crate::app`], which sees the whole list.
fn param(s: &str) -> Result<Setting, BadInput> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => {
            Ok(Setting { name: name.to_string(), value: value.to_string() })
        }
        _ => Err(BadInput(format!("malformed --param {s:?}: expected NAME=VALUE or NAME=V1,V2"))),
    }
}

/// `--label` of a run to be stored (`run`, `study`, `simulate --store`):
/// bounded ([`crate::model::text::LABEL_MAX`] bytes) and printable.
pub(crate) fn label(s: &str) -> Result<String, BadInput> {
    crate::model::text::check_free_text("--label", s, crate::model::text::LABEL_MAX).map_err(BadInput)?;
    Ok(s.to_string())
}

/// `report --title`: bounded ([`crate::model::text::TITLE_MAX`] bytes) and printable.
fn title(s: &str) -> Result<String, BadInput> {
    crate::model::text::check_free_text("--title", s, crate::model::text::TITLE_MAX).map_err(BadInput)?;
    Ok(s.to_string())
}

/// `history --since`: a date (`2024-05-01`, midnight UTC) or an RFC 3339
/// time in UTC (`2024-05-01T10:00:00Z`), as the stored start times are
/// written, so the two compare as text.
fn since(s: &str) -> Result<String, BadInput> {
    let full = if s.len() == 10 { format!("{s}T00:00:00Z") } else { s.to_string() };
    match humantime::parse_rfc3339(&full) {
        Ok(t) => Ok(humantime::format_rfc3339_seconds(t).to_string()),
        Err(_) => Err(BadInput(format!("--since {s:?} is not a date: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"))),
    }
}

/// `history --alpha`: above 0, below 1.
fn alpha(s: &str) -> Result<f64, Refusal> {
    let a: f64 = s.parse()?;
    if !(a > 0.0 && a < 1.0) {
        return Err(out_of_range("--alpha", s, "above 0 and below 1").into());
    }
    Ok(a)
}

/// `history --min-segment`: 1 to 1000 runs.
fn min_segment(s: &str) -> Result<usize, Refusal> {
    match s.parse::<usize>()? {
        n @ 1..=1000 => Ok(n),
        _ => Err(out_of_range("--min-segment", s, "1 .. 1000 (runs)").into()),
    }
}

/// `history --permutations`: 1 to 100000.
fn permutations(s: &str) -> Result<usize, Refusal> {
    match s.parse::<usize>()? {
        n @ 1..=100_000 => Ok(n),
        _ => Err(out_of_range("--permutations", s, "1 .. 100000").into()),
    }
}

/// `push --to`: a PostgreSQL URL (a file path is not a shared store).
fn shared_store(s: &str) -> Result<String, BadInput> {
    use crate::store::location::{locate, redact_arg, Location};
    match locate(std::path::Path::new(s)) {
        Ok(Location::Postgres(_)) => Ok(s.to_string()),
        Ok(_) => Err(BadInput(format!(
            "--to {:?} is not a shared store: give postgresql://USER@HOST[:PORT]/DBNAME",
            redact_arg(s)
        ))),
        Err(e) => Err(BadInput(e.to_string())),
    }
}

/// One `--meta KEY=VALUE` of `run` or `study`: the key and the value
/// checked ([`crate::model::meta::pair`]); the whole list is checked by
/// [`run_meta`].
pub(crate) fn meta_pair(s: &str) -> Result<(String, String), BadInput> {
    crate::model::meta::pair(s).map_err(BadInput)
}

/// Every `--meta` of a run as its metadata: at most 64 keys, none twice.
pub(crate) fn run_meta(pairs: &[(String, String)]) -> Result<crate::model::meta::RunMeta, BadInput> {
    crate::model::meta::RunMeta::from_pairs(pairs).map_err(BadInput)
}

/// `runs --meta KEY=VALUE` or `--meta KEY`.
fn meta_filter(s: &str) -> Result<crate::model::meta::MetaFilter, BadInput> {
    crate::model::meta::MetaFilter::parse(s).map_err(BadInput)
}

/// `agent --host-name`: what a label may hold, without blanks or commas.
fn host_name(s: &str) -> Result<String, BadInput> {
    crate::model::text::check_free_text("--host-name", s, crate::model::text::LABEL_MAX).map_err(BadInput)?;
    if s.chars().any(|c| c.is_whitespace() || c == ',' || c == '=') {
        return Err(BadInput(format!("--host-name {s:?}: no blanks, ',' or '=' in a host name")));
    }
    Ok(s.to_string())
}

/// One `agent --labels KEY=VALUE`: as a `--meta` pair, the value without ','.
fn host_label(s: &str) -> Result<(String, String), BadInput> {
    let (k, v) = crate::model::meta::pair(s).map_err(|e| BadInput(format!("--labels: {e}")))?;
    if k == "host" {
        return Err(BadInput("--labels host=...: every host has host=NAME already (see --host-name)".into()));
    }
    Ok((k, v))
}

/// `submit --hosts`: `all` or `KEY=VALUE`.
fn hosts(s: &str) -> Result<crate::fleet::queue::Hosts, BadInput> {
    if s == "all" {
        return Ok(crate::fleet::queue::Hosts::All);
    }
    let (k, v) =
        crate::model::meta::pair(s).map_err(|e| BadInput(format!("--hosts {s:?}: expected all or KEY=VALUE ({e})")))?;
    Ok(crate::fleet::queue::Hosts::Label(k, v))
}

/// `agent --lease`: 1 s to 30 min.
fn lease(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--lease", s)?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(1800) {
        return Err(out_of_range("--lease", s, "1s .. 30m"));
    }
    Ok(d)
}

/// `agent --poll`: 100 ms to 10 min.
fn poll(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--poll", s)?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(600) {
        return Err(out_of_range("--poll", s, "100ms .. 10m"));
    }
    Ok(d)
}

/// `doctor --cpus LIST`: a CPU list (checked against the machine by the command).
fn doctor_cpus(s: &str) -> Result<CpuSet, String> {
    CpuSet::parse_list(s)
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| format!("malformed CPU list {s:?}: expected e.g. 1 or 0-3,8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_take_their_bounds_as_documented() {
        assert_eq!(threshold("0").unwrap(), 0.0);
        assert_eq!(threshold("999.5").unwrap(), 999.5);
        for bad in ["1000", "-1", "NaN", "inf"] {
            let e = threshold(bad).unwrap_err();
            assert!(e.downcast_ref::<BadInput>().is_some(), "{bad}: {e}");
        }
        // Not a number at all: clap's own words, not ours.
        assert!(threshold("abc").unwrap_err().downcast_ref::<BadInput>().is_none());
        assert_eq!(ci_target("100").unwrap(), 100.0);
        assert!(ci_target("0").is_err());
        assert_eq!(sample_time("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(sample_time("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(sample_time("50us").unwrap_err().0, "--sample-time 50us is out of range: allowed 100us .. 60s");
        assert_eq!(warmup("0s").unwrap(), Warmup::Time(Duration::ZERO));
        assert_eq!(warmup("3").unwrap(), Warmup::Runs(3));
        assert!(warmup("10001").unwrap_err().0.contains("0 .. 10000 runs"));
        assert!(warmup("99999999999999999999999").is_err());
        assert_eq!(timeout("1ms").unwrap(), Duration::from_millis(1));
        assert_eq!(timeout("0.5ms").unwrap_err().0, "--timeout 0.5ms is out of range: allowed 1ms and above");
        assert_eq!(runs("auto").unwrap(), plan::Runs::Auto);
        assert_eq!(runs("10000").unwrap(), plan::Runs::Fixed(10000));
        assert!(runs("0").is_err() && runs("10001").is_err());
    }

    #[test]
    fn serve_limits_are_above_zero() {
        assert_eq!(serve_limit("1").unwrap(), 1);
        assert_eq!(serve_limit("0").unwrap_err().to_string(), SERVE_ZERO);
        assert_eq!(idle_timeout("0s").unwrap_err().0, SERVE_ZERO);
        assert_eq!(write_timeout("2s").unwrap(), Duration::from_secs(2));
    }

    #[test]
    fn a_setting_is_split_at_its_first_equals_sign() {
        let s = param("bw.mem.*:size=1M,2M").unwrap();
        assert_eq!((s.name.as_str(), s.value.as_str()), ("bw.mem.*:size", "1M,2M"));
        assert_eq!(param("env=A=1").unwrap().value, "A=1");
        for bad in ["size", "=1", "size="] {
            assert!(param(bad).unwrap_err().0.starts_with("malformed --param"), "{bad}");
        }
    }

    #[test]
    fn meta_is_checked_pair_by_pair_then_as_a_whole() {
        let cli = Cli::try_parse_from(["kdelta", "run", "lat", "--meta", "commit=abc", "--meta", "b=x=y"]).unwrap();
        let Command::Run(a) = cli.command else { panic!("not run") };
        let m = run_meta(&a.meta).unwrap();
        assert_eq!((m.get("commit"), m.get("b")), (Some("abc"), Some("x=y")));
        let twice = [("k".to_string(), "1".to_string()), ("k".to_string(), "2".to_string())];
        assert!(run_meta(&twice).unwrap_err().0.contains("given twice"));
        for bad in ["com/mit=x", "=x", "commit"] {
            let e = Cli::try_parse_from(["kdelta", "run", "lat", "--meta", bad]).unwrap_err();
            let why = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<BadInput>()).expect("ours");
            assert!(why.0.starts_with("--meta"), "{bad}: {why}");
        }
        let cli = Cli::try_parse_from(["kdelta", "runs", "--meta", "commit", "--meta", "b=x"]).unwrap();
        let Command::Runs { select, .. } = cli.command else { panic!("not runs") };
        assert_eq!(select.meta.len(), 2);
        assert_eq!(select.meta[0].value, None);
    }

    #[test]
    fn history_values_are_checked() {
        assert_eq!(since("2024-05-01").unwrap(), "2024-05-01T00:00:00Z");
        assert_eq!(since("2024-05-01T10:20:30Z").unwrap(), "2024-05-01T10:20:30Z");
        for bad in ["yesterday", "2024-13-01", "2024-05-01T25:00:00Z", ""] {
            assert!(since(bad).unwrap_err().0.starts_with("--since"), "{bad}");
        }
        assert_eq!(alpha("0.01").unwrap(), 0.01);
        for bad in ["0", "1", "-0.1", "NaN"] {
            assert!(alpha(bad).unwrap_err().downcast_ref::<BadInput>().is_some(), "{bad}");
        }
        assert_eq!(min_segment("1").unwrap(), 1);
        assert!(min_segment("0").is_err() && min_segment("1001").is_err());
        assert_eq!(permutations("100000").unwrap(), 100_000);
        assert!(permutations("0").is_err());
    }

    /// The derive and the parsers agree: every default goes through its parser.
    #[test]
    fn the_command_line_is_well_formed() {
        <Cli as clap::CommandFactory>::command().debug_assert();
        let cli = Cli::try_parse_from(["kdelta", "run", "lat"]).unwrap();
        let Command::Run(a) = cli.command else { panic!("not run") };
        assert_eq!(
            (a.sample_time, a.warmup, a.timeout),
            (Duration::from_millis(10), Warmup::Time(Duration::from_millis(100)), None)
        );
        assert_eq!((a.threshold, a.ci_target, a.runs), (1.0, 1.0, None));
    }
}

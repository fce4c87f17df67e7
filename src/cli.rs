//! The command line (clap derive). `main` dispatches on [`Command`].

use crate::report::Format;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

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
#[command(name = "kdelta", version, about, long_about, max_term_width = 100)]
pub struct Cli {
    /// Results database: a file path (SQLite) or postgresql://USER@HOST[:PORT]/DBNAME,
    /// a store shared by many hosts (default: $KDELTA_DB, else
    /// ~/.local/share/kdelta/results.db).
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,

    /// Let kdelta make its own schema (`kdelta`) in a PostgreSQL database
    /// that holds other tables; without it such a database is refused
    /// untouched.
    #[arg(long, global = true)]
    pub init_schema: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// `compare --by`: what pooled runs are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PoolBy {
    Kernel,
    Host,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show the machine as kdelta sees it: packages, cores, SMT siblings, caches,
    /// NUMA nodes, kernel, preemption model, C library, mitigations, the
    /// CPU set of every named configuration, and every kernel setting kdelta
    /// can switch (its value here and whether it can change it).
    Topo {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
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
        #[arg(long, default_value_t = 1.0, value_name = "PCT")]
        threshold: f64,
        /// List every warning of every result instead of one summary line per kind.
        #[arg(long, short = 'v')]
        verbose: bool,
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
        #[arg(long, value_name = "URL")]
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
        #[arg(required_unless_present_any = ["host", "kernel", "label"], value_name = "RUN_OR_LABEL")]
        runs: Vec<String>,
        #[command(flatten)]
        select: RunSelect,
        /// Output file.
        #[arg(long, short = 'o', value_name = "FILE.html")]
        out: PathBuf,
        /// The page's title (default: the runs named).
        #[arg(long)]
        title: Option<String>,
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
        #[arg(long, default_value_t = 4096, value_name = "N")]
        max_conns: usize,
        /// Chat runs being seated or served at once.
        #[arg(long, default_value_t = 64, value_name = "N")]
        max_runs: usize,
        /// Close a connection that sends nothing for this long (e.g. 300s, 5m).
        #[arg(long, default_value = "300s", value_name = "DURATION")]
        idle_timeout: String,
        /// Drop a receiver that takes no byte of its output for this long.
        #[arg(long, default_value = "30s", value_name = "DURATION")]
        write_timeout: String,
        /// Server parameters (e.g. server_model=events). Repeatable.
        #[arg(long, short = 'p', value_name = "NAME=VALUE")]
        param: Vec<String>,
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
    /// Internal: run one job in a worker process.
    #[command(name = "__worker", hide = true)]
    Worker { job: PathBuf },
}

/// Which stored runs `runs` lists and `report` adds: those from a host, a
/// kernel or with a label (every one given must match). One definition for
/// both commands, so they select alike.
#[derive(Args, Debug, Clone, Default)]
pub struct RunSelect {
    /// Runs from this host (its hostname).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Runs under this kernel release (`uname -r`).
    #[arg(long, value_name = "RELEASE")]
    pub kernel: Option<String>,
    /// Runs with this label.
    #[arg(long)]
    pub label: Option<String>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Benchmarks: a family (lat), a name (lat.syscall) or a glob ('lat.sel*').
    #[arg(required = true)]
    pub selectors: Vec<String>,

    /// Configurations to compare, comma-separated: all, up, noht (smp), ht (smt),
    /// noht1, ht1, smpN, cpus=LIST, each optionally +sched=POLICY,
    /// +tunables=NAME=V:NAME=V, +env=NAME=VALUE. A piece starting with a
    /// digit continues a cpus= list: 'up,cpus=0,2-3,noht' is three. Default: all.
    #[arg(long, short = 'c', value_name = "A,B,...")]
    pub config: Vec<String>,

    /// Set a parameter; a comma-separated list is swept. Repeatable. Scope it to
    /// some benchmarks with SELECTOR:NAME=V (e.g. 'bw.mem.*:size=1M').
    #[arg(long, short = 'p', value_name = "NAME=V1,V2")]
    pub param: Vec<String>,

    /// Clean samples per result: N, or auto (each benchmark's own count, usually
    /// 10, then more interleaved rounds until each median's 95% interval is
    /// within --ci-target, up to 3x). Default: auto when comparing
    /// (several configurations or a swept parameter) without --quick, else
    /// each benchmark's own count. Disturbed samples are always retaken.
    #[arg(long, value_name = "N|auto", value_parser = parse_runs)]
    pub runs: Option<RunsArg>,

    /// With --runs auto: the half-width of each median's 95% interval to
    /// reach, in percent.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub ci_target: f64,

    /// List every warning of every result instead of one summary line per kind.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Fewer samples and smaller sweeps: a first look in seconds.
    #[arg(long)]
    pub quick: bool,

    /// A label to find this run by later (compare, show, export).
    #[arg(long, short = 'l')]
    pub label: Option<String>,

    /// Record configurations this machine cannot give as unavailable and run the rest.
    #[arg(long)]
    pub skip_unavailable: bool,

    /// Target length of one sample of a micro-benchmark.
    #[arg(long, default_value = "10ms", value_name = "DURATION")]
    pub sample_time: String,

    /// Minimum warm-up of a micro-benchmark in each worker before its first sample.
    #[arg(long, default_value = "100ms", value_name = "DURATION")]
    pub warmup: String,

    /// Time limit for one worker (overrides each benchmark's own); a worker
    /// whose points take turns gets it once per point.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,

    /// How the values of the parameter you compare (of those given, one
    /// naming alternatives, e.g. --param impl=libc,tuned, before one on a
    /// scale such as size=, then the fewest values) alternate: samples (in
    /// one worker, sample by sample, for benchmarks that allow it, so both
    /// see the same moments of the machine) or workers (a worker per value,
    /// side by side).
    #[arg(long, value_enum, default_value_t = InterleaveArg::Samples)]
    pub interleave: InterleaveArg,

    /// Noise threshold in percent for marking a change significant.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub threshold: f64,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `--interleave`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InterleaveArg {
    Samples,
    Workers,
}

/// `--runs N` or `--runs auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsArg {
    Fixed(u64),
    Auto,
}

fn parse_runs(s: &str) -> Result<RunsArg, String> {
    if s == "auto" {
        return Ok(RunsArg::Auto);
    }
    match s.parse::<u64>() {
        Ok(n) if (1..=10000).contains(&n) => Ok(RunsArg::Fixed(n)),
        _ => Err(format!("{s:?} is not allowed: expected auto or a whole number from 1 to 10000")),
    }
}

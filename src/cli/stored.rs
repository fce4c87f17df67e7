//! The arguments of the commands that read stored runs (`runs`, `compare`,
//! `show`, `report`, `profile`, `history`): which runs, how a history
//! searches, `compare --by`.

use super::parse::{alpha, meta_filter, meta_key, min_segment, param, permutations, since, threshold, title, Setting};
use crate::report::Format;
use clap::Args;
use std::path::PathBuf;

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

/// `kdelta compare`.
#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// A run id or label (default: the latest complete run).
    pub(crate) run_a: Option<String>,
    /// A second run, to compare run against run.
    pub(crate) run_b: Option<String>,
    #[command(flatten)]
    pub(crate) shown: Shown,
    /// Noise threshold in percent: smaller changes are never marked significant.
    #[arg(long, default_value_t = crate::stats::defaults::THRESHOLD_PCT, value_name = "PCT", value_parser = threshold)]
    pub(crate) threshold: f64,
    /// Pool the complete runs (of --label, if given) by kernel release or
    /// by host: one column each, runs as the unit of significance.
    #[arg(long, value_enum, conflicts_with_all = ["run_a", "run_b"])]
    pub(crate) by: Option<PoolBy>,
    /// With --by: only the runs with this label.
    #[arg(long, requires = "by")]
    pub(crate) label: Option<String>,
}

/// `kdelta show` (and `export`, with every raw sample).
#[derive(Args, Debug)]
pub(crate) struct ShowArgs {
    /// A run id or label.
    pub(crate) run: String,
    #[command(flatten)]
    pub(crate) shown: Shown,
    /// Print only the warnings, one line each, with the retake and noise counts.
    #[arg(long)]
    pub(crate) warnings: bool,
}

/// How `compare` and `show` print a stored run's report.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct Shown {
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// List every warning of every result instead of one summary line per kind.
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,
    /// Show each result's perf counters per operation (taken with `run
    /// --counters`) as rows under it, compared like figures.
    #[arg(long)]
    pub(crate) counters: bool,
}

/// `kdelta runs`.
#[derive(Args, Debug)]
pub(crate) struct RunsArgs {
    /// How many.
    #[arg(long, default_value_t = 30)]
    pub(crate) limit: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) select: RunSelect,
}

/// `kdelta report`.
#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Run ids or labels (each label its newest run); with --host,
    /// --kernel or --label, every finished run they select is added.
    #[arg(required_unless_present_any = ["host", "kernel", "label", "meta", "history"], value_name = "RUN_OR_LABEL")]
    pub(crate) runs: Vec<String>,
    #[command(flatten)]
    pub(crate) select: RunSelect,
    /// Instead of runs: these benchmarks followed over the stored runs,
    /// as `kdelta history` follows them (--host, --kernel, --label and
    /// --meta choose the runs, --config, --param, --since, --alpha,
    /// --min-segment, --permutations and --seed as there): a chart per
    /// series with each run's median and interval, segment medians and
    /// change points, then its change points and runs as tables.
    #[arg(long, num_args = 1.., value_name = "SELECTOR", conflicts_with = "runs")]
    pub(crate) history: Vec<String>,
    #[command(flatten)]
    pub(crate) search: HistorySearch,
    /// Output file.
    #[arg(long, short = 'o', value_name = "FILE.html")]
    pub(crate) out: PathBuf,
    /// The page's title (default: the runs named).
    #[arg(long, value_parser = title)]
    pub(crate) title: Option<String>,
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

/// `kdelta profile`.
#[derive(Args, Debug)]
pub(crate) struct ProfileArgs {
    /// A run id or label.
    pub(crate) run: String,
    /// The benchmark (its exact name in the run).
    pub(crate) benchmark: String,
    /// The configuration drawn (default: the first with a profile).
    #[arg(long, short = 'c', value_name = "A")]
    pub(crate) config: Option<String>,
    /// Draw the change from this configuration to --config's.
    #[arg(long, value_name = "B", requires = "config")]
    pub(crate) against: Option<String>,
    /// The point, when the benchmark has several (NAME=VALUE, repeatable).
    #[arg(long, short = 'p', value_name = "NAME=VALUE", value_parser = param)]
    pub(crate) param: Vec<Setting>,
    /// What is written: the flame graph, the folded stacks or the tables.
    #[arg(long, value_enum, default_value = "svg")]
    pub(crate) format: ProfileFormat,
    /// Output file (needed for svg; folded and text go to stdout without it).
    #[arg(long, short = 'o', visible_alias = "output", value_name = "FILE.svg")]
    pub(crate) out: Option<PathBuf>,
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
    #[arg(long, default_value_t = crate::stats::defaults::ALPHA, value_parser = alpha)]
    pub(crate) alpha: f64,
    /// Fewest runs on each side of a change point; a series needs twice as many.
    #[arg(long, default_value_t = crate::stats::defaults::MIN_SEGMENT, value_name = "RUNS", value_parser = min_segment)]
    pub(crate) min_segment: usize,
    /// Shuffles of the permutation test (p moves in steps of 1/(N+1)).
    #[arg(long, default_value_t = crate::stats::defaults::PERMUTATIONS, value_name = "N", value_parser = permutations)]
    pub(crate) permutations: usize,
    /// Seed of the shuffles: the same seed gives the same answer; another
    /// seed, fresh permutations.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Order each series by this key of the runs' metadata (`run --meta
    /// KEY=VALUE`: a commit's position, a backfilled date) instead of by
    /// start time: numerically when every value is a number, else as text.
    /// Runs without the key are left out.
    #[arg(long, value_name = "KEY", value_parser = meta_key)]
    pub(crate) order_by: Option<String>,
}

/// `compare --by`: what pooled runs are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PoolBy {
    Kernel,
    Host,
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

//! The command line (clap derive): every command's arguments, one file per
//! group of commands (ripgrep's `flags/` habit). `app` dispatches on
//! [`Command`].
//!
//! Every value arrives in its final type: durations, percentages, labels,
//! `--param` settings and the rest go through the value parsers in
//! [`parse`], each check written once. A value they refuse is reported
//! as [`crate::error::BadInput`]: one line naming the value and what is allowed, exit 2,
//! before anything runs (`app::main` prints it).

mod check;
mod doctor;
mod fleet;
mod parse;
mod place;
mod run;
mod serve;
mod shell;
mod simulate;
mod stored;
mod study;

#[cfg(test)]
mod tests;

pub(crate) use check::CheckArgs;
pub(crate) use doctor::DoctorArgs;
pub(crate) use fleet::{AgentArgs, JobsArgs, SubmitArgs, SubmitWhat};
pub(crate) use parse::run_meta;
pub(crate) use parse::{Setting, Warmup};
pub(crate) use place::PlaceArgs;
pub(crate) use run::RunArgs;
pub(crate) use serve::ServeArgs;
pub(crate) use shell::Shell;
pub(crate) use simulate::SimulateArgs;
pub(crate) use stored::{
    CompareArgs, HistoryArgs, HistorySearch, PoolBy, ProfileArgs, ProfileFormat, ReportArgs, RunSelect, RunsArgs,
    ShowArgs, Shown,
};
pub(crate) use study::{StudyArg, StudyArgs};

use crate::report::Format;
use clap::{Parser, Subcommand};
use parse::shared_store;
use shell::ShellParser;
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
    Doctor(DoctorArgs),
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
    Compare(CompareArgs),
    /// List stored runs, newest first.
    Runs(RunsArgs),
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
    Show(ShowArgs),
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
    Report(ReportArgs),
    /// Write a flame graph of a profile stored by `run --profile`: one
    /// configuration's (--config, default the first profiled), or with
    /// --against B the differential one from B to --config's (red: a larger
    /// share of samples under --config, blue: a smaller one). The SVG keeps
    /// inferno's search and zoom script; it reads without it. `--format
    /// folded` writes the folded stacks instead (`stack COUNT`, or with
    /// --against `stack A B`, for FlameGraph, inferno and speedscope);
    /// `--format text` the top functions by share (and with --against each
    /// function's share under both and the change).
    Profile(ProfileArgs),
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
    Serve(ServeArgs),
    /// Simulate SMT-aware and naive scheduling on any topology (Molnar's 2002
    /// experiment): loops of CPU-bound jobs or a make -jN build.
    Simulate(SimulateArgs),
    /// Run N concurrent loops of a command (each iteration a new process) under
    /// naive, SMT-aware or kernel placement and report per-iteration times.
    Place(PlaceArgs),
    /// Run a classic study (ht-2003, threads-2004, sched-2002, tuning-2001)
    /// as one stored run and print it in the study's shape, the published
    /// figures beside today's; `study list` shows what each needs and takes.
    Study(StudyArgs),
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
    /// Write kdelta's manual page (roff) to stdout: `kdelta man | man -l -`;
    /// with --all DIR, one page per command and subcommand into DIR instead
    /// (kdelta.1, kdelta-run.1, ...), made if missing.
    Man {
        /// Write every page into this directory (then, for instance,
        /// `man -l DIR/kdelta-run.1`).
        #[arg(long, value_name = "DIR")]
        all: Option<PathBuf>,
    },
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
    /// (what `git bisect run` takes as "skip"), 128 bad input or another
    /// failure before a verdict (above 127: `git bisect run` stops).
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
    /// selectors and run options of `kdelta run`; prints each job's id and
    /// host. `submit study NAME ...` and `submit check ...` queue a study or
    /// a check instead.
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
    /// Internal: a worker's watchdog (`harness::watch::watchdog_main`).
    #[command(name = "__watchdog", hide = true)]
    Watchdog { worker: i32, parent: i32, limit_ms: u64 },
    /// Internal: the guard of a run's journals (`harness::journal::guard_main`).
    #[command(name = "__guard", hide = true)]
    Guard { pid: i32, start: u64 },
}

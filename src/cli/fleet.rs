//! The fleet's arguments: `agent`, `submit`, `jobs`.

use super::parse::{host_label, host_name, hosts, lease, poll};
use super::run::RunArgs;
use crate::model::reach::Reach;
use clap::Args;
use std::collections::BTreeSet;
use std::time::Duration;

fn reach_list(s: &str) -> Result<BTreeSet<Reach>, String> {
    Reach::parse_list(s)
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
    /// What a job may do beyond running kdelta's benchmarks: `commands`
    /// (its own commands: `cmd`, a build of your tree, `env=`,
    /// `preload=PATH`), `settings` (kernel settings, cgroups, `--isolate`),
    /// `files` (files it names: `output=FILE`, dbench's `dir=`), `network`
    /// (`server=HOST:PORT`); `all` or `none`. Anyone who can write the store
    /// can queue a job, so by default none: a job that needs more is refused
    /// with the class to allow.
    #[arg(long, default_value = "none", value_name = "CLASS,...", value_parser = reach_list)]
    pub(crate) allow: BTreeSet<Reach>,
}

/// `kdelta submit`: where, then what: `kdelta run`'s selectors and options,
/// or `study NAME ...` / `check ...` with theirs (named first).
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct SubmitArgs {
    /// A study or a check instead of a run.
    #[command(subcommand)]
    pub(crate) what: Option<SubmitWhat>,
    /// Which registered hosts get a job: all, or those with label KEY=VALUE
    /// (host=NAME names one).
    #[arg(long, value_name = "KEY=VALUE|all", value_parser = hosts, required = true)]
    pub(crate) hosts: Option<crate::fleet::queue::Hosts>,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    /// The arguments of the command each job runs, as given (filled by `app`).
    #[arg(skip)]
    pub(crate) raw: Vec<String>,
}

/// `kdelta submit study` and `kdelta submit check`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum SubmitWhat {
    /// Queue a study on the fleet's hosts: one job per host --hosts selects,
    /// each run by its agent as `kdelta study NAME ...` would (one stored
    /// run per host). Takes `kdelta study`'s options but --resume.
    Study(Box<OnHosts<super::StudyArgs>>),
    /// Queue a regression check on the fleet's hosts: each agent runs
    /// `kdelta check ...` and stores its run; the job ends done with the
    /// check's verdict and exit status as its note. Takes `kdelta check`'s
    /// options but --run (a stored run is judged where it is).
    Check(Box<OnHosts<super::CheckArgs>>),
}

/// `kdelta submit study` and `kdelta submit check`: the command's own
/// arguments (`args`), and the hosts that get a job.
#[derive(Args, Debug)]
pub(crate) struct OnHosts<T: Args> {
    /// Which registered hosts get a job: all, or those with label KEY=VALUE.
    #[arg(long, value_name = "KEY=VALUE|all", value_parser = hosts)]
    pub(crate) hosts: crate::fleet::queue::Hosts,
    #[command(flatten)]
    pub(crate) args: T,
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

//! The `cmd` family: any command as a benchmark, as hyperfine times one, under
//! every configuration kdelta has. `cmd.run` takes a sample per run of the
//! command: wall milliseconds (or `figure=user|sys|cpu`, or peak RSS in KB,
//! faults or context switches with `figure=rss|faults|switches`), with all
//! of those stored beside it as parts.
//!
//! Several `--cmd [NAME=]COMMAND` are the values of the `cmd` parameter (one
//! line each, [`spec`]), so they are compared with each other as `impl=` is:
//! interleaved, starred, a speedup column. Parameters the benchmark does not
//! declare fill `{NAME}` placeholders (`--cmd 'xz -T{t}' --param t=1,2`).
//!
//! Each worker runs `setup`, then measures the shell's own start-up
//! (`SHELL -c ''`, [`SHELL_RUNS`] times, as the command is run), then makes
//! `warmup` untimed runs, in hyperfine's order: the timed runs follow runs of
//! the command itself (after fifty runs of an empty shell instead, a CPU-bound
//! command ran 20 % slower on a 2-vCPU VM). The shell's mean wall, user and
//! system time is subtracted from every run, as hyperfine does; `prepare`
//! runs untimed before every run, `conclude` after it, `cleanup` once at the
//! end. `setup_once` and `cleanup_once` run in the parent, once per point,
//! before the run's first worker and after its last ([`Benchmark::before_run`]).
//! A run [`exec`] makes is killed with all it started at `timeout`; processes
//! it leaves behind are killed and counted (the worker is their subreaper).

mod dry;
pub(crate) mod escape;
pub(crate) mod exec;
pub(crate) mod spec;
pub(crate) mod summary;

use super::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, RunFlag, Sampler};
use crate::error::bad_input;
use crate::model::reach::Reach;
use anyhow::{bail, Context, Result};
use exec::{How, Output, Ran};
use spec::{CMD, NONE};
use std::path::PathBuf;
use std::time::Duration;

pub(crate) const FAMILY: super::Family =
    super::Family { benchmarks, summary: Some(summary::summary), server: None, command: None, run_flags: &FLAGS };

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![Box::new(CmdRun)]
}

/// Runs of `SHELL -c ''` whose mean is the shell's start-up cost.
pub(crate) const SHELL_RUNS: usize = 50;

crate::model::params::choice! {
    /// `figure=`: which of a run's costs is its sample's value.
    pub(crate) enum Figure {
        Wall = "wall", User = "user", Sys = "sys", Cpu = "cpu", Rss = "rss", Faults = "faults", Switches = "switches",
    }
}

/// The parameters `cmd.run` declares (others are placeholders).
const DECLARED: [&str; 15] = [
    "cmd",
    "commands",
    "shell",
    "prepare",
    "conclude",
    "setup",
    "cleanup",
    "setup_once",
    "cleanup_once",
    "output",
    "input",
    "ignore_failure",
    "warmup",
    "timeout",
    "figure",
];

pub(crate) struct CmdRun;

/// One point's settings, read once by [`Plan::from`].
struct Plan {
    text: String,
    how: How,
    prepare: Option<String>,
    conclude: Option<String>,
    setup: Option<String>,
    cleanup: Option<String>,
    setup_once: Option<String>,
    cleanup_once: Option<String>,
    ignore_failure: bool,
    warmup: u64,
    figure: Figure,
}

/// The command a point of `cmd.run` runs, its placeholders filled (`None`
/// for a point of another benchmark): what exports give as its `command`.
pub(crate) fn command_text(p: &Params) -> Option<String> {
    p.0.contains_key(CMD).then(|| spec::command_of(p).ok()).flatten().map(|t| spec::fill(&t, p, &DECLARED))
}

fn optional(p: &Params, k: &str) -> Result<Option<String>> {
    let v = p.str(k)?;
    Ok((v != NONE).then(|| spec::fill(v, p, &DECLARED)))
}

impl Plan {
    /// How to make the next run: with `timeout=0`, its limit falls just
    /// inside the worker's (5 %, at least 200 ms, up to half of what is
    /// left), so a hang ends as this run's failure rather than the worker's.
    fn limited(&self, s: &Sampler) -> How {
        let mut how = self.how.clone();
        if how.timeout.is_none() {
            how.timeout = s.time_left().map(|left| {
                let margin = (left / 20).max(Duration::from_millis(200)).min(left / 2);
                (left - margin).max(Duration::from_millis(1))
            });
        }
        how
    }

    fn from(p: &Params) -> Result<Plan> {
        let text = spec::fill(&spec::command_of(p)?, p, &DECLARED);
        if text.trim().is_empty() {
            return Err(bad_input(format!("cmd {:?}: the command is empty", p.str("cmd")?)));
        }
        let shell = match p.str("shell")? {
            NONE => None,
            s => Some(s.to_string()),
        };
        let timeout = p.duration("timeout")?;
        let how = How {
            shell,
            output: Output::parse(p.str("output")?),
            input: (p.str("input")? != "null").then(|| PathBuf::from(p.str("input").unwrap_or_default())),
            timeout: (timeout > Duration::ZERO).then_some(timeout),
        };
        Ok(Plan {
            text,
            how,
            prepare: optional(p, "prepare")?,
            conclude: optional(p, "conclude")?,
            setup: optional(p, "setup")?,
            cleanup: optional(p, "cleanup")?,
            setup_once: optional(p, "setup_once")?,
            cleanup_once: optional(p, "cleanup_once")?,
            ignore_failure: p.bool("ignore_failure")?,
            warmup: p.u64("warmup")?,
            figure: p.choice("figure")?,
        })
    }
}

impl Benchmark for CmdRun {
    fn info(&self) -> BenchInfo {
        BenchInfo::new("cmd.run", "one run of your command (--cmd), wall milliseconds", "ms", Better::Lower)
            .param(
                ParamSpec::new(CMD, ParamKind::Lines, "", "the commands compared, one per line (--cmd)")
                    .reaches(Reach::Commands, &[]),
            )
            .param(text("commands", "NAME=COMMAND lines naming commands (--cmd NAME=COMMAND)"))
            .param(
                ParamSpec::new("shell", ParamKind::Text, "sh", "the shell run as SHELL -c COMMAND, or none")
                    .option()
                    .reaches(Reach::Commands, &["none"]),
            )
            .param(text("prepare", "a command run before every timed run, untimed (--prepare)").option())
            .param(text("conclude", "a command run after every timed run, untimed (--conclude)").option())
            .param(text("setup", "a command run once in each worker before its runs (--setup)").option())
            .param(text("cleanup", "a command run once in each worker after its runs (--cleanup)").option())
            .param(text("setup_once", "a command run once before the whole run, untimed (--setup-once)").option())
            .param(text("cleanup_once", "a command run once after the whole run, untimed (--cleanup-once)").option())
            .param(
                ParamSpec::new("output", ParamKind::Text, "null", "stdout: null, pipe, inherit or a FILE")
                    .option()
                    .reaches(Reach::Files, &["pipe", "inherit"]),
            )
            .param(
                ParamSpec::new("input", ParamKind::Text, "null", "stdin: null or a FILE")
                    .option()
                    .reaches(Reach::Files, &[]),
            )
            .param(
                ParamSpec::new("ignore_failure", ParamKind::Bool, "false", "a non-zero exit is not a failure").option(),
            )
            .param(
                ParamSpec::new(
                    "warmup",
                    ParamKind::Int { min: 0, max: 10_000 },
                    "0",
                    "untimed runs in each worker first (--warmup N sets it)",
                )
                .option(),
            )
            .param(
                ParamSpec::new("timeout", ParamKind::Duration, "0", "a run's limit (0: just inside the worker's)")
                    .option(),
            )
            .param(
                ParamSpec::new(
                    "figure",
                    ParamKind::choice::<Figure>(),
                    "wall",
                    "the value: wall|user|sys|cpu (ms), rss (KB), faults or switches",
                )
                .option(),
            )
            .samples(10, 3)
            .timeout(Duration::from_secs(3600))
            // Commands compared take turns in one worker, run by run, so
            // both see the same moments of a machine whose speed moves.
            .lockstep()
            .open()
    }

    fn check(&self, p: &Params) -> Result<()> {
        let plan = Plan::from(p).map_err(super::bad_param)?;
        // A FIFO or a device would block the command's every run (until the
        // worker's hour), or take what it writes: refused before anything runs.
        if let Some(f) = &plan.how.input {
            match std::fs::metadata(f) {
                Ok(m) if m.is_file() || f.as_path() == std::path::Path::new("/dev/null") => {}
                Ok(m) => {
                    return Err(bad_input(format!(
                        "input {}: {}: the input must be a regular file, /dev/null or null",
                        f.display(),
                        crate::sys::output::file_kind(m.file_type())
                    )))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(bad_input(format!("input {}: no such file", f.display())))
                }
                Err(e) => return Err(bad_input(format!("input {}: {e}", f.display()))),
            }
        }
        if let Output::File(f) = &plan.how.output {
            crate::sys::output::check_output_path("output", f)?;
        }
        dry::dry_run(&plan.text, &plan.how).map_err(|e| match spec::name_of(p) {
            // `--cmd 'i=0; ...'` is named `i`: say how to run it as written.
            Some(name) if !e.to_string().starts_with("shell ") => bad_input(format!(
                "{e} (read as --cmd NAME=COMMAND, named {name:?}; start it with `=` to run `{name}={}` as written)",
                plan.text
            )),
            None => dry::assignment_hint(e, &plan.text),
            _ => e,
        })?;
        let helpers = [&plan.prepare, &plan.conclude, &plan.setup, &plan.cleanup, &plan.setup_once, &plan.cleanup_once];
        for c in helpers.into_iter().flatten() {
            dry::dry_run(c, &plan.how)?;
        }
        Ok(())
    }

    /// hyperfine's per-benchmark `--setup`: in kdelta's parent, before any
    /// worker, each command's (each point's) in the order given.
    fn before_run(&self, p: &Params) -> Result<()> {
        let plan = Plan::from(p)?;
        match &plan.setup_once {
            Some(c) => once(c, &plan, p, "setup-once"),
            None => Ok(()),
        }
    }

    /// hyperfine's per-benchmark `--cleanup`: after the run's last worker.
    fn after_run(&self, p: &Params) -> Result<()> {
        let plan = Plan::from(p)?;
        match &plan.cleanup_once {
            Some(c) => once(c, &plan, p, "cleanup-once"),
            None => Ok(()),
        }
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let plan = Plan::from(p)?;
        let reaper = &crate::child::Subreaper::new()?;
        s.extra("command", plan.text.clone());
        // Its commands are compared with each other as configurations are.
        s.extra("compared_on", CMD);
        if let Some(c) = &plan.setup {
            must(exec::run(c, &plan.how, reaper)?, "setup")?;
        }
        // As hyperfine orders them: the shell's cost, then the warm-up, so
        // the timed runs follow runs of the command itself.
        // Stored with every sample (`shell_wall_s_samples`): each worker
        // measures its own, so a sample is read against the cost taken off it.
        let shell = shell_cost(&plan.how, reaper)?;
        // `--param warmup=N`, or `--warmup N` (hyperfine's count) made that
        // parameter by the plan.
        for _ in 0..plan.warmup {
            if let Some(c) = &plan.prepare {
                must(exec::run(c, &plan.how, reaper)?, "prepare")?;
            }
            judge(exec::run(&plan.text, &plan.limited(s), reaper)?, &plan, "warm-up run")?;
            if let Some(c) = &plan.conclude {
                must(exec::run(c, &plan.how, reaper)?, "conclude")?;
            }
        }
        let measured = measure(&plan, &shell, s, reaper);
        if let Some(c) = &plan.cleanup {
            must(exec::run(c, &plan.how, reaper)?, "cleanup")?;
        }
        measured
    }
}

/// A command (or `commands`' names of commands) given as text.
fn text(name: &'static str, help: &'static str) -> ParamSpec {
    ParamSpec::new(name, ParamKind::Text, NONE, help).reaches(Reach::Commands, &[])
}

/// The timed runs.
fn measure(plan: &Plan, shell: &Cost, s: &mut Sampler, reaper: &crate::child::Subreaper) -> Result<()> {
    let mut left = 0;
    match plan.figure {
        Figure::Rss => s.unit("KB"),
        Figure::Faults => s.unit("faults"),
        Figure::Switches => s.unit("switches"),
        Figure::Wall | Figure::User | Figure::Sys | Figure::Cpu => {}
    }
    // Whether a run leaves its CPUs or cgroup (`escape`).
    let mut watch = escape::Watch::open();
    for _ in 0..s.samples_wanted() {
        if let Some(c) = &plan.prepare {
            must(exec::run(c, &plan.how, reaper)?, "prepare")?;
        }
        s.begin_sample();
        watch.start();
        let r = exec::run(&plan.text, &plan.limited(s), reaper)?;
        watch.stop(r.usage.user_s + r.usage.sys_s, r.wall.as_secs_f64());
        left += r.left;
        s.part("left_processes", r.left as f64);
        let r = judge(r, plan, "run")?;
        let wall = (r.wall.as_secs_f64() - shell.wall).max(0.0);
        let user = (r.usage.user_s - shell.user).max(0.0);
        let sys = (r.usage.sys_s - shell.sys).max(0.0);
        let u = &r.usage;
        let value = match plan.figure {
            Figure::Wall => wall * 1e3,
            Figure::User => user * 1e3,
            Figure::Sys => sys * 1e3,
            Figure::Cpu => (user + sys) * 1e3,
            Figure::Rss => (u.max_rss / 1024) as f64,
            Figure::Faults => (u.minor_faults + u.major_faults) as f64,
            Figure::Switches => (u.voluntary_switches + u.involuntary_switches) as f64,
        };
        s.push(value, r.wall);
        // hyperfine's --conclude: after the run, untimed (after its sample ends).
        if let Some(c) = &plan.conclude {
            must(exec::run(c, &plan.how, reaper)?, "conclude")?;
        }
        for (k, v) in [
            ("wall_s", wall),
            ("shell_wall_s", shell.wall),
            ("user_s", user),
            ("sys_s", sys),
            ("max_rss_kb", (r.usage.max_rss / 1024) as f64),
            ("minor_faults", r.usage.minor_faults as f64),
            ("major_faults", r.usage.major_faults as f64),
            ("voluntary_switches", r.usage.voluntary_switches as f64),
            ("involuntary_switches", r.usage.involuntary_switches as f64),
        ] {
            s.part(k, v);
        }
    }
    if let Some(n) = watch.note() {
        s.note(n);
    }
    if left > 0 {
        s.note(format!("the command left {left} processes in its process group; they were killed after each run"));
    }
    Ok(())
}

/// A run's failure, unless failures are ignored.
fn judge(r: Ran, plan: &Plan, what: &str) -> Result<Ran> {
    match r.failure() {
        Some(why) if r.timed_out => bail!("{what} of `{}` failed: {why}", plan.text),
        Some(why) if !plan.ignore_failure => {
            bail!("{what} of `{}` failed: {why} (--ignore-failure to time it anyway)", plan.text)
        }
        _ => Ok(r),
    }
}

/// `--setup-once` or `--cleanup-once` of one command, run in the parent:
/// its failure names the flag, the helper and the command it was for.
fn once(helper: &str, plan: &Plan, p: &Params, what: &str) -> Result<()> {
    match exec::run_untimed(helper, &plan.how)? {
        None => Ok(()),
        Some(why) => {
            let name = p.str(CMD).map(|n| format!("cmd={n}")).unwrap_or_else(|_| format!("`{}`", plan.text));
            bail!("--{what} `{helper}` (for {name}) failed: {why}")
        }
    }
}

/// A helper command (`setup`, `prepare`, `cleanup`) must succeed.
fn must(r: Ran, what: &str) -> Result<()> {
    match r.failure() {
        Some(why) => bail!("the {what} command failed: {why}"),
        None => Ok(()),
    }
}

/// The mean cost of starting the shell: subtracted from every run.
#[derive(Debug, Default)]
struct Cost {
    wall: f64,
    user: f64,
    sys: f64,
}

fn shell_cost(how: &How, reaper: &crate::child::Subreaper) -> Result<Cost> {
    if how.shell.is_none() {
        return Ok(Cost::default());
    }
    let how = How { output: Output::Null, input: None, ..how.clone() };
    for _ in 0..3 {
        must(exec::run("", &how, reaper).context("starting the shell")?, "shell's empty")?;
    }
    let mut c = Cost::default();
    for _ in 0..SHELL_RUNS {
        let r = exec::run("", &how, reaper)?;
        c.wall += r.wall.as_secs_f64() / SHELL_RUNS as f64;
        c.user += r.usage.user_s / SHELL_RUNS as f64;
        c.sys += r.usage.sys_s / SHELL_RUNS as f64;
    }
    Ok(c)
}

fn flag(id: &'static str, help: &'static str) -> clap::Arg {
    clap::Arg::new(id).long(id).value_name("COMMAND").help(help).help_heading("Commands (the cmd family)")
}

/// Parameters `cmd.run` declared later, with the value runs stored before
/// them ran under: filled into stored results ([`super::canonical_results`])
/// so an old baseline keeps its rows (`check --against`, history series).
pub(crate) const ADDED: [(&str, &str); 3] = [("conclude", NONE), ("setup_once", NONE), ("cleanup_once", NONE)];

/// A flag standing for one parameter of `cmd.run` (its last value wins).
macro_rules! one {
    ($param:literal) => {
        |v: &[String]| Ok(v.last().map(|x| ($param.to_string(), x.clone())).into_iter().collect())
    };
}

/// The flags `cmd` adds to `kdelta run`, as hyperfine spells them.
const FLAGS: [RunFlag; 13] = [
    RunFlag {
        arg: || {
            flag(
                "cmd",
                "A command to time (cmd family), [NAME=]COMMAND; several are compared. NAME: letters, digits, _-. \
                 (a NAME in capitals only, LANG=C, is an environment assignment)",
            )
            .action(clap::ArgAction::Append)
        },
        settings: spec::cmd_settings,
    },
    RunFlag {
        arg: || {
            flag("command-name", "cmd: a name for the --cmd of the same place, as hyperfine's -n (or --cmd NAME=...)")
                .short('n')
                .value_name("NAME")
                .action(clap::ArgAction::Append)
        },
        // Read with `--cmd`'s values (`spec::with_names`), not on its own.
        settings: |_| Ok(Vec::new()),
    },
    RunFlag { arg: || flag("prepare", "cmd: a command run before every timed run"), settings: one!("prepare") },
    RunFlag { arg: || flag("conclude", "cmd: a command run after every timed run"), settings: one!("conclude") },
    RunFlag { arg: || flag("setup", "cmd: a command run once per worker, first"), settings: one!("setup") },
    RunFlag { arg: || flag("cleanup", "cmd: a command run once per worker, last"), settings: one!("cleanup") },
    RunFlag {
        arg: || flag("setup-once", "cmd: a command run once per command before the whole run (hyperfine's --setup)"),
        settings: one!("setup_once"),
    },
    RunFlag {
        arg: || flag("cleanup-once", "cmd: a command run once per command after the whole run (hyperfine's --cleanup)"),
        settings: one!("cleanup_once"),
    },
    RunFlag {
        arg: || flag("shell", "cmd: the shell (default sh), or none to exec the words").value_name("SHELL"),
        settings: one!("shell"),
    },
    RunFlag {
        arg: || flag("output", "cmd: stdout to null (default), pipe, inherit or a FILE").value_name("WHERE"),
        settings: one!("output"),
    },
    RunFlag {
        arg: || flag("input", "cmd: a FILE as stdin (default /dev/null)").value_name("FILE"),
        settings: one!("input"),
    },
    RunFlag {
        arg: || {
            flag("ignore-failure", "cmd: time runs that exit non-zero")
                .short('i')
                .num_args(0)
                .action(clap::ArgAction::SetTrue)
        },
        settings: |_| Ok(vec![("ignore_failure".to_string(), "true".to_string())]),
    },
    RunFlag {
        arg: || {
            flag("figure", "cmd: the compared figure: wall (default), user, sys, cpu, rss, faults or switches")
                .value_name("FIGURE")
        },
        settings: one!("figure"),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_names_the_command_and_only_the_options_set_away_from_their_default() {
        let defaults = crate::bench::option_defaults("cmd.run");
        let names: Vec<&str> = defaults.iter().map(|(n, _)| *n).collect();
        assert!(!names.contains(&CMD) && !names.contains(&"commands"), "{names:?}");
        assert!(names.contains(&"shell") && names.contains(&"warmup") && names.contains(&"figure"), "{names:?}");
        let mut p = Params::default();
        for (n, d) in &defaults {
            p.set(n, *d);
        }
        p.set(CMD, "gzip -1 data");
        assert_eq!(p.display_set(&defaults), "cmd=gzip -1 data");
        p.set("warmup", "3");
        assert_eq!(p.display_set(&defaults), "cmd=gzip -1 data warmup=3");
        // Every parameter is still kept and shown where all are asked for.
        assert!(p.display().contains("shell=sh") && p.display().contains("figure=wall"));
        assert!(crate::bench::option_defaults("no.such").is_empty());
    }
}

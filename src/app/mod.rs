//! The top level: parse the command line, dispatch, map errors to exit
//! statuses. One file per group of commands, as `kdelta --help` lists them.

mod between;
mod check;
mod doctor;
mod fleet;
mod history;
mod html;
mod info;
mod place;
mod push;
mod run;
mod serve;
mod shell;
mod simulate;
mod stored;
mod study;

use crate::bench::{self, Env};
use crate::cli::{Cli, Command, RunArgs, Setting, Warmup};
use crate::error::{bad_input, exit, is_bad_input, BadInput};
use crate::harness::plan::{self, Request};
use crate::report::{self, Format, Report};
use crate::stats::CompareOptions;
use crate::store::{self, Store};
use crate::topology::Topology;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn main() -> ExitCode {
    let commands = family_commands();
    let parsed = command_of(&commands).try_get_matches().and_then(|m| {
        let own = m.subcommand().and_then(|(name, sub)| {
            commands.iter().find(|c| (c.command)().get_name() == name).map(|c| (c, sub.clone()))
        });
        match own {
            Some((c, sub)) => Ok(Parsed::Family(c.run, sub)),
            None => <Cli as clap::FromArgMatches>::from_arg_matches(&m).map(|cli| Parsed::Cli(Box::new(cli), m)),
        }
    });
    // `check`'s statuses are read by `git bisect run`, where 1 to 127 mean
    // "bad": anything but a verdict stops the bisection instead.
    let check = is_check(std::env::args_os().skip(1));
    let refused = |code: u8| ExitCode::from(if check { exit::CHECK_REFUSED } else { code });
    let result = match parsed {
        Ok(Parsed::Cli(cli, m)) => with_run_flags(*cli, &m).and_then(dispatch),
        Ok(Parsed::Family(run, m)) => run(&m).map(|()| exit::OK),
        Err(e) => {
            // A value our parsers refused (`cli`): one line, like every bad input.
            if let Some(bad) = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<BadInput>()) {
                eprintln!("kdelta: {bad}");
                return refused(exit::BAD_INPUT);
            }
            let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
            if let Some(hint) = forgot_cmd(&e, &args).or_else(|| hyperfine_flag(&e, &args)) {
                eprintln!("kdelta: {hint}");
                return refused(exit::BAD_INPUT);
            }
            let _ = e.print();
            return if e.use_stderr() { refused(exit::BAD_INPUT) } else { ExitCode::from(exit::OK) };
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let code =
                if is_bad_input(&e) || e.chain().any(|c| c.downcast_ref::<crate::config::Unavailable>().is_some()) {
                    exit::BAD_INPUT
                } else {
                    exit::FAILED
                };
            eprintln!("kdelta: {}", one_line(&e));
            refused(code)
        }
    }
}

/// `kdelta run --cmd X` with no benchmark named: what to type instead.
fn forgot_cmd(e: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::MissingRequiredArgument {
        return None;
    }
    // Only when what is missing is the benchmark (`check --cmd X` without
    // --against lacks --against, and is told so by clap).
    let missing = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::String(v)) => vec![v.clone()],
        _ => Vec::new(),
    };
    if !missing.iter().any(|m| m.starts_with("<SELECTORS>")) {
        return None;
    }
    let sub = timing_command(args)?;
    args.iter().any(|a| a == "--cmd" || a.starts_with("--cmd=")).then(|| cmd_hint(sub))
}

/// The subcommand that times (`run`, `check` or `submit`) among `args`, if any.
fn timing_command(args: &[String]) -> Option<&str> {
    args.iter().map(String::as_str).find(|a| ["run", "check", "submit"].contains(a))
}

/// hyperfine's options that kdelta spells otherwise (docs/cmd.md's table),
/// and what to say of each.
const HYPERFINE_FLAGS: &[(&[&str], &str)] = &[
    (&["-N"], "kdelta spells it --shell none"),
    (&["-S"], "kdelta spells it --shell SHELL"),
    (&["-P", "--parameter-scan"], "kdelta spells it --param NAME=MIN..MAX"),
    (&["-D", "--parameter-step-size"], "kdelta spells it --param NAME=MIN..MAX:STEP"),
    (&["-L", "--parameter-list"], "kdelta spells it --param NAME=A,B"),
    (&["-m", "--min-runs", "-M", "--max-runs"], "kdelta spells it --runs auto with --budget DURATION"),
    (&["-s"], "kdelta spells it --setup-once COMMAND"),
    (&["-C"], "kdelta spells it --conclude COMMAND"),
    (&["--show-output"], "kdelta spells it --output inherit"),
    (&["--export-json"], "kdelta spells it --format json, or kdelta export RUN"),
    (&["--export-csv"], "kdelta spells it --format csv, or kdelta export RUN --format csv"),
    (&["--export-markdown"], "kdelta spells it --format markdown"),
    (&["--export-asciidoc"], "kdelta spells it --format asciidoc"),
    (&["--export-orgmode"], "kdelta spells it --format orgmode"),
    (&["--reference"], "kdelta's reference is the first --cmd, which every change is measured against"),
];

/// A hyperfine option clap did not know, given to a command that times
/// (`run`, `check`, `submit`), with kdelta's spelling of it.
fn hyperfine_flag(e: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::UnknownArgument || timing_command(args).is_none() {
        return None;
    }
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidArg) else { return None };
    let flag = given.split('=').next().unwrap_or(given);
    let (_, ours) = HYPERFINE_FLAGS.iter().find(|(names, _)| names.contains(&flag))?;
    Some(format!("{flag} is hyperfine's; {ours} (docs/cmd.md lists every hyperfine option)"))
}

/// What `--cmd` with no benchmark named should have been, for `sub`command.
pub(super) fn cmd_hint(sub: &str) -> String {
    format!("--cmd times a command with the cmd family, named first: kdelta {sub} cmd --cmd 'COMMAND' ...")
}

/// Whether the command line is `kdelta [GLOBAL OPTIONS] check ...`: its
/// first word that is neither a global option nor `--db`'s value.
fn is_check(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let mut args = args;
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--db") => {
                args.next();
            }
            Some(s) if s.starts_with("--db=") || s == "--init-schema" => {}
            Some(s) => return s == "check",
            None => return false,
        }
    }
    false
}

/// The families' own subcommands (`kdelta loadfile`), which join the derived ones.
fn family_commands() -> Vec<bench::FamilyCommand> {
    bench::families().into_iter().filter_map(|f| f.command).collect()
}

fn command_of(families: &[bench::FamilyCommand]) -> clap::Command {
    let cmd = <Cli as clap::CommandFactory>::command()
        .mut_subcommand("run", |run| bench::run_flags().iter().fold(run, |run, f| run.arg((f.arg)())))
        .mut_subcommand("submit", |submit| {
            // `submit check` takes what `check` takes, the families' flags included.
            let submit = submit.mut_subcommand("check", |c| bench::run_flags().iter().fold(c, |c, f| c.arg((f.arg)())));
            bench::run_flags().iter().fold(submit, |s, f| s.arg((f.arg)()))
        })
        .mut_subcommand("check", |check| {
            // `check --run RUN` judges a stored run: its selectors are optional.
            let check = check.mut_arg("selectors", |a| a.required(false));
            bench::run_flags().iter().fold(check, |check, f| check.arg((f.arg)()))
        })
        .mut_subcommand("report", |report| {
            // The search settings of `report --history` mean nothing without it
            // (and beside runs named, which it excludes).
            let search = <crate::cli::HistorySearch as clap::Args>::augment_args(clap::Command::new("search"));
            search
                .get_arguments()
                .fold(report, |report, a| report.mut_arg(a.get_id(), |a| a.requires("history").conflicts_with("runs")))
        });
    families.iter().fold(cmd, |cmd, c| cmd.subcommand((c.command)()))
}

/// `kdelta run` (and `check`) with the flags families add to it (`--cmd`)
/// turned into the parameter settings they stand for, after those given
/// with `--param`.
fn with_run_flags(mut cli: Cli, m: &clap::ArgMatches) -> Result<Cli> {
    let (a, sub) = match (&mut cli.command, m.subcommand()) {
        (Command::Run(a), Some(("run", sub))) => (a, sub),
        (Command::Submit(s), Some(("submit", sub))) => match (&mut s.what, sub.subcommand()) {
            (None, _) => {
                s.raw = fleet::submitted_args(&["submit"], sub);
                (&mut s.run, sub)
            }
            (Some(crate::cli::SubmitWhat::Check(c)), Some(("check", sub))) => {
                s.raw = fleet::submitted_args(&["submit", "check"], sub);
                (&mut c.args.run, sub)
            }
            (Some(_), Some((name, sub))) => {
                s.raw = fleet::submitted_args(&["submit", name], sub);
                return Ok(cli);
            }
            (Some(_), None) => return Ok(cli),
        },
        (Command::Check(c), Some(("check", sub))) => (&mut c.run, sub),
        _ => return Ok(cli),
    };
    for flag in bench::run_flags() {
        let arg = (flag.arg)();
        if sub.value_source(arg.get_id().as_str()) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let raw = |id: &str| -> Vec<String> {
            sub.get_raw(id).into_iter().flatten().map(|v| v.to_string_lossy().into_owned()).collect()
        };
        if arg.get_id() == "command-name" && sub.value_source("cmd") != Some(clap::parser::ValueSource::CommandLine) {
            return Err(bad_input("--command-name (-n) names the --cmd commands, in order: give them with --cmd"));
        }
        let mut given = raw(arg.get_id().as_str());
        // hyperfine's `-n NAME`, paired in order with the `--cmd` given.
        if arg.get_id() == "cmd" && sub.value_source("command-name") == Some(clap::parser::ValueSource::CommandLine) {
            given = bench::cmd::spec::with_names(&given, &raw("command-name")).map_err(|e| bad_input(e.to_string()))?;
        }
        for (name, value) in (flag.settings)(&given).map_err(|e| bad_input(e.to_string()))? {
            a.param.push(Setting { name, value });
        }
    }
    Ok(cli)
}

/// The whole command line as `main` parses it, families' subcommands
/// included: what the completion scripts and the manual describe.
fn command() -> clap::Command {
    command_of(&family_commands())
}

/// What the command line asked for: a built-in command, or a family's own.
enum Parsed {
    Cli(Box<Cli>, clap::ArgMatches),
    Family(fn(&clap::ArgMatches) -> Result<()>, clap::ArgMatches),
}

/// The error and its causes on one line, outermost first, without repeats.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// Write to stdout; a closed pipe (`kdelta ... | head`) ends quietly.
/// Everything kdelta prints on stdout: bidirectional controls shown as
/// `[U+202E]` (JSON writes them as `\u202e` before it gets here), so a
/// stored label cannot reorder the lines after it.
fn out(s: &str) {
    let s = crate::model::text::neutral(s);
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|_| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// JSON on stdout, one value and a newline: bidirectional controls inside
/// its strings written as `\u202e` escapes (the same value, nothing raw).
fn out_json(json: &str) {
    out(&(crate::model::text::json_escape_bidi(json).into_owned() + "\n"));
}

fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The sysfs root: `/`, or `$KDELTA_SYSFS_ROOT` (tests point it at fake trees).
pub(crate) fn sysfs_root() -> PathBuf {
    std::env::var_os("KDELTA_SYSFS_ROOT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
}

fn read_topology() -> Result<Topology> {
    let root = sysfs_root();
    Topology::read(&root).with_context(|| format!("reading the CPU topology under {}", root.display()))
}

/// The host snapshot stored with every run: topology plus software (CPU model,
/// kernel, preemption model, libc, mitigations).
/// In a study or check an agent started, the host is the agent's
/// (`--host-name`), not the kernel's node name.
fn host_snapshot() -> Result<crate::topology::Host> {
    let root = sysfs_root();
    let mut host = crate::topology::Host::read(&root)
        .with_context(|| format!("reading the host description under {}", root.display()))?;
    if let Some(name) = std::env::var(fleet::HOST_ENV).ok().filter(|n| !n.is_empty()) {
        host.hostname = name;
    }
    Ok(host)
}

/// The fleet job this `study` or `check` runs for, when an agent started
/// it: recorded with its run, so the job's run is stored once.
fn agent_job() -> Option<i64> {
    std::env::var(fleet::JOB_ENV).ok()?.parse().ok()
}

/// What the agent that started this `check` or `study` lets its job reach
/// (`kdelta agent --allow`, passed in [`fleet::ALLOW_ENV`]); `None` outside
/// an agent. A value that does not read allows nothing.
fn agent_allowed() -> Option<std::collections::BTreeSet<crate::model::reach::Reach>> {
    let v = std::env::var_os(fleet::ALLOW_ENV)?;
    Some(v.to_str().and_then(|s| crate::model::reach::Reach::parse_list(s).ok()).unwrap_or_default())
}

fn open_store(db: &Option<PathBuf>) -> Result<Store> {
    let path = db.clone().unwrap_or_else(store::default_path);
    Store::open(&path)
}

/// Before a command: sweep what a killed kdelta left, and say which kernel
/// settings it left changed.
fn tidy_and_warn(command: &Command) {
    // What a kdelta killed with SIGKILL left (its temporary directory, the
    // trees its workers made in `dir=`) goes with the next command; `run`
    // sweeps in the harness, a worker never does. `completions` and `man`
    // only print text (a shell may run them at every start): they neither
    // sweep nor warn.
    let quiet = matches!(
        command,
        Command::Worker { .. }
            | Command::Watchdog { .. }
            | Command::Guard { .. }
            | Command::Completions { .. }
            | Command::Man { .. }
    );
    if !quiet && !matches!(command, Command::Run(_)) {
        crate::measure::owned::sweep(&std::env::temp_dir());
    }
    // Kernel settings a killed kdelta left changed: said by every command.
    if !quiet
        && !matches!(command, Command::Restore { .. } | Command::Doctor(crate::cli::DoctorArgs { reset: true, .. }))
    {
        if let Some(w) = crate::harness::journal::warning(&sysfs_root()) {
            eprintln!("{w}");
        }
    }
}

fn dispatch(cli: Cli) -> Result<u8> {
    if cli.init_schema {
        store::allow_init_schema();
    }
    tidy_and_warn(&cli.command);
    match cli.command {
        Command::Worker { job } => Ok(crate::harness::worker::worker_main(&job, bench::find) as u8),
        Command::Guard { pid, start } => Ok(crate::harness::journal::guard_main(&sysfs_root(), pid, start)),
        Command::Watchdog { worker, parent, limit_ms } => {
            Ok(crate::harness::watch::watchdog_main(worker, parent, std::time::Duration::from_millis(limit_ms)))
        }
        Command::Topo { json } => info::cmd_topo(json),
        Command::Doctor(a) => doctor::cmd_doctor(&a),
        Command::List { json, selectors } => info::cmd_list(json, &selectors),
        Command::Run(args) => run::cmd_run(&cli.db, args),
        Command::Compare(a) => match a.by {
            Some(by) => stored::cmd_compare_pooled(&cli.db, by, a.label.as_deref(), a.threshold),
            None => stored::cmd_compare(&cli.db, &a),
        },
        Command::Runs(a) => stored::cmd_runs(&cli.db, &a),
        Command::Push { runs, to } => push::cmd_push(&cli.db, &runs, &to),
        Command::Show(a) => stored::cmd_show(&cli.db, &a),
        Command::Export { run, format } => {
            let shown = crate::cli::Shown { format, verbose: false, counters: false };
            let a = crate::cli::ShowArgs { run, shown, warnings: false };
            stored::cmd_show(&cli.db, &a)
        }
        Command::Chart { run, out: path } => stored::cmd_chart(&cli.db, run, &path),
        Command::Profile(a) => html::cmd_profile(&cli.db, &a),
        Command::Report(a) => html::cmd_report(&cli.db, &a),
        Command::Serve(a) => serve::cmd_serve(&a),
        Command::Simulate(a) if a.store => simulate::cmd_simulate_store(&cli.db, &a),
        Command::Simulate(a) => simulate::cmd_simulate(&a),
        Command::Place(a) => place::cmd_place(&a),
        Command::Study(a) => study::cmd_study(&cli.db, a),
        Command::Restore { discard } => info::cmd_restore(discard),
        Command::Completions { shell } => shell::cmd_completions(shell),
        Command::Man { all: None } => shell::cmd_man(),
        Command::Man { all: Some(dir) } => shell::cmd_man_all(&dir),
        Command::History(a) => history::cmd_history(&cli.db, a),
        Command::Check(a) => check::cmd_check(&cli.db, a),
        Command::Agent(a) => fleet::cmd_agent(&cli.db, a),
        Command::Submit(a) => fleet::cmd_submit(&cli.db, a),
        Command::Jobs(a) => fleet::cmd_jobs(&cli.db, a),
        Command::Cancel { job } => fleet::cmd_cancel(&cli.db, job),
    }
}

/// The `--param` settings by name; a name given twice is refused.
fn overrides(list: &[Setting]) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for Setting { name, value } in list {
        if m.insert(name.clone(), value.clone()).is_some() {
            return Err(bad_input(format!("--param {name} given twice: give one list instead ({name}=A,B)")));
        }
    }
    Ok(m)
}

/// The report of one run, with the lines its benchmarks' families add.
fn run_report(run: crate::model::RunRecord, results: Vec<crate::model::ResultRecord>, opt: &CompareOptions) -> Report {
    let mut rep = Report::for_run(run, results, opt);
    rep.summaries = bench::family_summaries(&rep.results);
    rep
}

/// The command line as a shell would take it back: each argument quoted
/// when it holds anything but plain characters (`'lat.sel*'`), so the
/// command stored with a run can be pasted to run it again. The password
/// of a `--db` URL is never kept (`postgresql://kd:***@host/db`; give it
/// through `PGPASSWORD` or `~/.pgpass`). Arguments need not be UTF-8 (a
/// --db path): recorded lossily.
fn command_line() -> String {
    command_line_of(std::env::args_os().map(|a| a.to_string_lossy().into_owned()))
}

fn command_line_of(args: impl Iterator<Item = String>) -> String {
    args.map(|a| shell_quote(&store::location::redact_arg(&a))).collect::<Vec<_>>().join(" ")
}

fn shell_quote(a: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./=,:+@%^-".contains(c);
    if !a.is_empty() && a.chars().all(plain) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod quote_tests {
    #[test]
    fn arguments_are_quoted_only_when_a_shell_would_change_them() {
        assert_eq!(super::shell_quote("lat.syscall"), "lat.syscall");
        assert_eq!(super::shell_quote("--param=size=4k,64k"), "--param=size=4k,64k");
        assert_eq!(super::shell_quote("lat.sel*"), "'lat.sel*'");
        assert_eq!(super::shell_quote("a b"), "'a b'");
        assert_eq!(super::shell_quote("it's"), "'it'\\''s'");
        assert_eq!(super::shell_quote(""), "''");
    }

    #[test]
    fn check_is_found_after_the_global_options() {
        let is = |a: &[&str]| super::is_check(a.iter().map(std::ffi::OsString::from));
        assert!(is(&["check", "--against", "x"]));
        assert!(is(&["--db", "check.db", "check"]));
        assert!(is(&["--db=x", "--init-schema", "check"]));
        assert!(!is(&["--db", "check"]));
        assert!(!is(&["run", "check"]));
        assert!(!is(&["--help"]));
        assert!(!is(&[]));
    }

    #[test]
    fn the_stored_command_keeps_no_password() {
        let args = [
            "kdelta",
            "--db",
            "postgresql://kd:s/e?c@r%40t@h/db",
            "run",
            "--db=postgres://kd@h/db?password=x&sslmode=require",
            "lat.*",
        ];
        assert_eq!(
            super::command_line_of(args.iter().map(|s| s.to_string())),
            "kdelta --db 'postgresql://kd:***@h/db' run '--db=postgres://kd@h/db?password=***&sslmode=require' 'lat.*'"
        );
    }
}

//! `kdelta agent`, `submit`, `jobs` and `cancel`: the fleet's commands
//! (`src/fleet/`). A job holds the arguments of the `kdelta run` it makes,
//! as given to `submit`; the agent parses them with this same parser and
//! runs them in its own process through `run::request` and the harness, as
//! `kdelta run` does: no child kdelta, so a job's run is refused, planned,
//! interrupted and stored exactly as a run from the command line is, and
//! its job id goes with it to the store.

use super::*;
use crate::cli::{AgentArgs, JobsArgs, SubmitArgs, SubmitWhat};
use crate::fleet::agent::{self, RunEnd, Runner};
use crate::fleet::queue::{JobRow, Queue};

mod child;
pub(super) use child::{ALLOW_ENV, HOST_ENV, JOB_ENV};

/// The arguments of the command each job runs, from the matches of the
/// subcommand at `path` (`submit`, `submit study`, `submit check`): every
/// option given on the command line (not `--hosts` or the global ones),
/// then `--` and the positional ones (selectors, a study's name), as given.
pub(super) fn submitted_args(path: &[&str], m: &clap::ArgMatches) -> Vec<String> {
    let mut cmd = command();
    for name in path {
        let Some(sub) = cmd.find_subcommand(name) else { return Vec::new() };
        cmd = sub.clone();
    }
    let sub = &cmd;
    let (mut args, mut positional) = (Vec::new(), Vec::new());
    for arg in sub.get_arguments() {
        let id = arg.get_id().as_str();
        if ["hosts", "db", "init_schema", "help", "version"].contains(&id)
            || m.try_get_raw(id).ok().flatten().is_none()
            || m.value_source(id) != Some(clap::parser::ValueSource::CommandLine)
        {
            continue;
        }
        let raw: Vec<String> = m.get_raw(id).into_iter().flatten().map(|v| v.to_string_lossy().into_owned()).collect();
        match arg.get_long() {
            None => positional.extend(raw),
            Some(long) if !arg.get_action().takes_values() => args.push(format!("--{long}")),
            Some(long) => args.extend(raw.into_iter().map(|v| format!("--{long}={v}"))),
        }
    }
    args.push("--".into());
    args.extend(positional);
    args
}

/// Tell the submitter what a job needs an agent to allow (`agent --allow`),
/// as planning on this machine finds it: by default an agent refuses it.
fn reach_note(req: &plan::Request) -> Option<String> {
    let topo = read_topology().ok()?;
    reach_note_of(&plan::reach_needed(req, &topo, bench::registry))
}

fn reach_note_of(needed: &[(crate::model::reach::Reach, String)]) -> Option<String> {
    let (_, example) = needed.first()?;
    let classes: Vec<&str> = needed.iter().map(|(r, _)| r.name()).collect();
    Some(format!(
        "kdelta: note: an agent runs these jobs only with `kdelta agent --allow {}` ({example}); others refuse them",
        classes.join(",")
    ))
}

pub(super) fn cmd_submit(db: &Option<PathBuf>, a: SubmitArgs) -> Result<u8> {
    // What can be checked here is checked here (the parameters, metadata,
    // that each selector names a benchmark); configurations are the hosts'.
    let (kind, hosts, label, note) = match &a.what {
        None => {
            let req = run::request(&a.run)?;
            plan::select(&a.run.selectors, bench::registry())?;
            let hosts = a.hosts.clone().ok_or_else(|| bad_input("--hosts: say which hosts (all, or KEY=VALUE)"))?;
            ("run", hosts, a.run.label.clone(), reach_note(&req))
        }
        Some(SubmitWhat::Study(s)) => {
            child::check_study(&s.args)?;
            ("study", s.hosts.clone(), s.args.label.clone(), reach_note_of(&super::study::reach_needed(&s.args)))
        }
        Some(SubmitWhat::Check(c)) => {
            child::check_check(db, &c.args)?;
            ("check", c.hosts.clone(), c.args.run.label.clone(), reach_note(&run::request(&c.args.run)?))
        }
    };
    let mut q = Queue::open(&db.clone().unwrap_or_else(store::default_path))?;
    let jobs = q.submit(&hosts, kind, &a.raw, label.as_deref(), &command_line())?;
    let mut s = String::new();
    for (id, host) in &jobs {
        s.push_str(&format!("{id}\t{host}\n"));
    }
    out(&s);
    let n = jobs.len();
    eprintln!("kdelta: {n} job{} queued; `kdelta jobs --watch` follows them", if n == 1 { "" } else { "s" });
    if let Some(note) = note {
        eprintln!("{note}");
    }
    // A host whose agent is not running keeps its job queued until it is.
    for h in q.hosts()?.iter().filter(|h| jobs.iter().any(|(_, name)| name == &h.name)) {
        if h.state == "stopped" || h.idle_s > 300.0 {
            eprintln!(
                "kdelta: note: host {} was last seen {} ({}): its job waits for its agent",
                h.name, h.seen, h.state
            );
        }
    }
    Ok(exit::OK)
}

pub(super) fn cmd_cancel(db: &Option<PathBuf>, job: i64) -> Result<u8> {
    let mut q = Queue::open(&db.clone().unwrap_or_else(store::default_path))?;
    out(&format!("{}\n", q.cancel(job)?));
    Ok(exit::OK)
}

pub(super) fn cmd_jobs(db: &Option<PathBuf>, a: JobsArgs) -> Result<u8> {
    let Some(mut q) = Queue::open_existing(&db.clone().unwrap_or_else(store::default_path))? else {
        if a.json {
            out_json(r#"{"jobs": [], "hosts": []}"#);
        } else {
            eprintln!("kdelta: no jobs: this store has no queue yet (`kdelta agent` or `kdelta submit` makes it)");
        }
        return Ok(exit::OK);
    };
    loop {
        let jobs = q.jobs(a.label.as_deref(), a.limit)?;
        let hosts = q.hosts()?;
        if a.json {
            out_json(&serde_json::to_string_pretty(&serde_json::json!({"jobs": jobs, "hosts": hosts}))?);
            return Ok(exit::OK);
        }
        out(&jobs_text(&jobs, &hosts));
        if !a.watch || jobs.iter().all(JobRow::finished) {
            return Ok(exit::OK);
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        out("\n");
    }
}

/// For `report --label L` on a shared store: the jobs submitted with that
/// label, a row per job: which hosts ran it (and the run), which refused
/// it or failed, and why. `None` without a queue or such jobs.
pub(super) fn jobs_table(db: &Option<PathBuf>, label: &str) -> Result<Option<crate::report::extra::ExtraTable>> {
    let path = db.clone().unwrap_or_else(store::default_path);
    if !matches!(store::location::locate(&path)?, store::location::Location::Postgres(_)) {
        return Ok(None);
    }
    let Some(mut q) = Queue::open_existing(&path)? else { return Ok(None) };
    let mut jobs = q.jobs(Some(label), 100_000)?;
    if jobs.is_empty() {
        return Ok(None);
    }
    jobs.sort_by(|a, b| (&a.host, a.id).cmp(&(&b.host, b.id)));
    let rows = jobs
        .iter()
        .map(|j| {
            vec![
                j.host.clone(),
                j.id.to_string(),
                j.state.clone(),
                j.attempts.len().to_string(),
                j.run.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                j.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let count = |s: &str| jobs.iter().filter(|j| j.state == s).count();
    Ok(Some(crate::report::extra::ExtraTable {
        title: format!("Fleet: the jobs labelled {label}"),
        before: vec![format!(
            "{} jobs on {} hosts: {} done, {} refused, {} failed, {} not ended",
            jobs.len(),
            {
                let mut h: Vec<&str> = jobs.iter().map(|j| j.host.as_str()).collect();
                h.dedup();
                h.len()
            },
            count(crate::fleet::queue::DONE),
            count(crate::fleet::queue::REFUSED),
            count(crate::fleet::queue::FAILED),
            jobs.iter().filter(|j| !j.finished()).count()
        )],
        header: ["host", "job", "state", "attempts", "run", "why"].iter().map(|s| s.to_string()).collect(),
        rows,
        after: vec![],
    }))
}

/// `kdelta jobs` as text: a line per job, under it a line per attempt that
/// did not end it (lost, failed, put back), then the hosts.
fn jobs_text(jobs: &[JobRow], hosts: &[crate::fleet::queue::HostRow]) -> String {
    let mut s = format!(
        "{:>6}  {:<16} {:<10} {:>8}  {:>6}  {:<16} {}\n",
        "job", "host", "state", "attempts", "run", "label", "what"
    );
    for j in jobs {
        let what: Vec<&str> = j.args.iter().map(String::as_str).filter(|a| *a != "--").collect();
        s.push_str(&format!(
            "{:>6}  {:<16} {:<10} {:>8}  {:>6}  {:<16} {} {}\n",
            j.id,
            j.host,
            if j.cancel && j.state == crate::fleet::queue::RUNNING { "cancelling" } else { &j.state },
            j.attempts.len(),
            j.run.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            j.label.as_deref().unwrap_or("-"),
            j.kind,
            what.join(" ")
        ));
        for at in &j.attempts {
            let ended = match (&at.ended, &at.outcome) {
                (Some(t), Some(o)) => format!("{o} at {t}"),
                _ => "running".to_string(),
            };
            let run = at.run.map(|r| format!(", run {r}")).unwrap_or_default();
            let reason = at.reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default();
            s.push_str(&format!(
                "{:>8}attempt {} by {} started {}, {ended}{run}{reason}\n",
                "", at.attempt, at.agent, at.started
            ));
        }
        if let (Some(r), false) = (&j.reason, j.state == crate::fleet::queue::DONE) {
            if j.attempts.is_empty() || j.state == crate::fleet::queue::FAILED {
                s.push_str(&format!("{:>8}{r}\n", ""));
            }
        }
    }
    if !hosts.is_empty() {
        s.push_str("\nhosts:\n");
        for h in hosts {
            let labels: Vec<String> = h.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!(
                "  {:<16} {:<15} CPUs {:<8} labels {:<24} seen {} ({:.0} s ago){}\n",
                h.name,
                h.state,
                h.cpus,
                if labels.is_empty() { "-".to_string() } else { labels.join(",") },
                h.seen,
                h.idle_s.max(0.0),
                h.note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
            ));
        }
    }
    s
}

pub(super) fn cmd_agent(db: &Option<PathBuf>, a: AgentArgs) -> Result<u8> {
    let db = db.clone().unwrap_or_else(store::default_path);
    let host = host_snapshot()?;
    let host_json = serde_json::to_value(&host)?;
    let name = match a.host_name {
        Some(n) => n,
        None => agent::default_name(&host_json)
            .ok_or_else(|| bad_input("this host has no host name: give --host-name NAME"))?,
    };
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in a.labels {
        if labels.insert(k.clone(), v).is_some() {
            return Err(bad_input(format!("--labels {k} given twice")));
        }
    }
    let settings = agent::Settings {
        db: db.clone(),
        name: name.clone(),
        labels,
        cpus: host.topology.online.to_string(),
        host: host_json,
        once: a.once,
        lease: a.lease,
        poll: a.poll,
        root: sysfs_root(),
        allows: crate::model::reach::Reach::show_list(&a.allow),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let runner = AppRunner { db, name, allowed: a.allow };
    agent::serve(&settings, &runner, stop)?;
    Ok(exit::OK)
}

/// Runs a job as `kdelta run` runs its command line.
struct AppRunner {
    db: PathBuf,
    /// The agent's host name, stored as the run's host name.
    name: String,
    /// What its jobs may reach (`--allow`).
    allowed: std::collections::BTreeSet<crate::model::reach::Reach>,
}

impl Runner for AppRunner {
    fn run(&self, job: &crate::fleet::queue::Job, interrupt: Arc<AtomicBool>) -> RunEnd {
        match self.try_run(job, interrupt) {
            Ok(end) => end,
            Err(e) => RunEnd::Failed(one_line(&e)),
        }
    }
}

impl AppRunner {
    fn try_run(&self, job: &crate::fleet::queue::Job, interrupt: Arc<AtomicBool>) -> Result<RunEnd> {
        match job.kind.as_str() {
            "run" => {}
            "study" | "check" => return child::run(&self.db, &self.name, &self.allowed, job, &interrupt),
            other => {
                return Ok(RunEnd::Refused(format!(
                    "a {other:?} job: this kdelta's agent runs `run`, `study` and `check` jobs"
                )))
            }
        }
        let mut argv = vec!["kdelta".to_string(), "run".to_string()];
        argv.extend(job.args.iter().cloned());
        let a = match parse_run(&argv) {
            Ok(a) => a,
            Err(e) => return Ok(RunEnd::Refused(format!("its arguments do not parse here: {}", one_line(&e)))),
        };
        let mut req = match run::request(&a) {
            Ok(r) => r,
            Err(e) => return Ok(RunEnd::Refused(one_line(&e))),
        };
        req.job = Some(job.id);
        req.allowed = Some(self.allowed.clone());
        req.command = command_line_of(argv.into_iter());
        let mut host = host_snapshot()?;
        host.hostname = self.name.clone();
        let topo = host.topology.clone();
        // A request this host cannot plan (a configuration it cannot give, a
        // benchmark it does not support) is refused, with planning's reason.
        let plan = match plan::plan(&req, &topo, bench::registry()) {
            Ok(p) => p,
            Err(e) => return Ok(RunEnd::Refused(cause_first(&e))),
        };
        for item in &plan.items {
            if let Some(line) = item.bench.preamble(&item.params) {
                eprintln!("{}: {line}", item.info.name);
            }
        }
        let mut store = open_store(&Some(self.db.clone()))?;
        let output =
            crate::harness::run::execute(&req, plan, &topo, serde_json::to_value(&host)?, &mut store, interrupt)?;
        let failed = output.results.iter().filter(|r| r.status == crate::model::record::Status::Failed).count();
        Ok(RunEnd::Stored {
            run: output.run.id,
            interrupted: output.interrupted,
            note: (failed > 0).then(|| format!("{failed} of its {} results failed", output.results.len())),
        })
    }
}

/// An error on one line, its root cause first (what the host lacks, then
/// what `kdelta run` would advise).
fn cause_first(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain().collect::<Vec<_>>().into_iter().rev() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// A job's `kdelta run ...` command line into `run`'s options, by the same
/// parser (families' flags included).
fn parse_run(argv: &[String]) -> Result<RunArgs> {
    let m = command().try_get_matches_from(argv).map_err(|e| {
        let text = e.render().to_string();
        bad_input(text.lines().find(|l| !l.trim().is_empty()).unwrap_or("unparsable").trim().to_string())
    })?;
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m).map_err(|e| bad_input(e.to_string()))?;
    match with_run_flags(cli, &m)?.command {
        Command::Run(a) => Ok(a),
        _ => Err(bad_input("not a run")),
    }
}

//! The top level: parse the command line, dispatch, map errors to exit statuses.

use crate::bench::{self, Env};
use crate::cli::{Cli, Command, RunArgs};
use crate::error::{bad_input, exit, is_bad_input};
use crate::harness::plan::{self, Request};
use crate::harness::run;
use crate::report::{self, Format, Report};
use crate::stats::CompareOptions;
use crate::store::{self, Store};
use crate::topology::Topology;
use anyhow::{Context, Result};
use clap::Parser;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::BAD_INPUT } else { exit::OK });
        }
    };
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let code =
                if is_bad_input(&e) || e.chain().any(|c| c.downcast_ref::<crate::config::Unavailable>().is_some()) { exit::BAD_INPUT } else { exit::FAILED };
            eprintln!("kdelta: {}", one_line(&e));
            ExitCode::from(code)
        }
    }
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
fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|_| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The sysfs root: `/`, or `$KDELTA_SYSFS_ROOT` (tests point it at fake trees).
pub fn sysfs_root() -> PathBuf {
    std::env::var_os("KDELTA_SYSFS_ROOT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
}

fn read_topology() -> Result<Topology> {
    let root = sysfs_root();
    Topology::read(&root).with_context(|| format!("reading the CPU topology under {}", root.display()))
}

/// The host snapshot stored with every run: topology plus software (CPU model,
/// kernel, preemption model, libc, mitigations).
fn host_snapshot() -> Result<crate::topology::Host> {
    let root = sysfs_root();
    crate::topology::Host::read(&root).with_context(|| format!("reading the host description under {}", root.display()))
}

fn open_store(db: &Option<PathBuf>) -> Result<Store> {
    let path = db.clone().unwrap_or_else(store::default_path);
    Store::open(&path)
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Worker { job } => Ok(crate::harness::worker::worker_main(&job, bench::find) as u8),
        Command::Topo { json } => cmd_topo(json),
        Command::List { json, selectors } => cmd_list(json, &selectors),
        Command::Run(args) => cmd_run(&cli.db, args),
        Command::Compare { run_a, run_b, format, threshold, verbose } => cmd_compare(&cli.db, run_a, run_b, format, threshold, verbose),
        Command::Runs { limit, json } => cmd_runs(&cli.db, limit, json),
        Command::Show { run, format, verbose, warnings } => cmd_show(&cli.db, &run, format, verbose, warnings),
        Command::Export { run, format } => cmd_show(&cli.db, &run, format, false, false),
        Command::Chart { run, out: path } => cmd_chart(&cli.db, run, &path),
        Command::Serve { name, listen, param } => cmd_serve(&name, &listen, &param),
        Command::Loadfile(crate::cli::LoadfileCommand::Generate(a)) => {
            crate::bench::dbench::cli::loadfile_generate(&a)?;
            Ok(exit::OK)
        }
        Command::Simulate(a) if a.store => cmd_simulate_store(&cli.db, &a),
        Command::Simulate(a) => exit_code(crate::simulate::cli::main(&a)?),
        Command::Place(a) => exit_code(crate::place::cli::main(&a)?),
    }
}

fn cmd_topo(json: bool) -> Result<u8> {
    let host = host_snapshot()?;
    if json {
        out(&(serde_json::to_string_pretty(&host)? + "\n"));
        return Ok(exit::OK);
    }
    let mut s = crate::topology::show::render(&host);
    s.push_str(&configs_text(&host.topology));
    out(&s);
    Ok(exit::OK)
}

/// Every named configuration and what it resolves to here.
pub fn configs_text(topo: &Topology) -> String {
    let mut s = String::from("\nconfigurations:\n");
    for name in ["all", "up", "noht", "ht", "noht1", "ht1"] {
        match crate::config::resolve(name, topo) {
            Ok(c) => s.push_str(&format!("  {:<6} cpus {}\n", name, c.cpus)),
            Err(e) => s.push_str(&format!(
                "  {:<6} unavailable: {}\n",
                name,
                e.downcast_ref::<crate::config::Unavailable>().map(|u| u.reason.clone()).unwrap_or_else(|| e.to_string())
            )),
        }
    }
    s.push_str(&format!("  smpN   N = 1..{} (one CPU on each of N cores)\n", topo.cores.len()));
    s
}

fn cmd_list(json: bool, selectors: &[String]) -> Result<u8> {
    let topo = read_topology().ok();
    let benches = if selectors.is_empty() { bench::registry() } else { plan::select(selectors, bench::registry())? };
    let mut rows = Vec::new();
    for b in &benches {
        let info = b.info();
        let supported = match &topo {
            Some(t) => b.supported(&Env { topology: t }),
            None => Err("the CPU topology could not be read".into()),
        };
        rows.push((info, supported));
    }
    if json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(i, s)| {
                serde_json::json!({
                    "name": i.name, "family": i.family, "summary": i.summary, "unit": i.unit,
                    "better": i.better.as_str(),
                    "params": i.params.iter().map(|p| serde_json::json!({
                        "name": p.name, "kind": p.kind_name(), "default": p.default, "quick": p.quick.unwrap_or(p.default), "help": p.help,
                    })).collect::<Vec<_>>(),
                    "samples": i.samples, "quick_samples": i.quick_samples,
                    "supported": s.is_ok(), "reason": s.as_ref().err(),
                })
            })
            .collect();
        out(&(serde_json::to_string_pretty(&v)? + "\n"));
        return Ok(exit::OK);
    }
    let mut s = String::new();
    let mut fam = "";
    for (i, sup) in &rows {
        if i.family != fam {
            fam = i.family;
            s.push_str(&format!("\n{fam}\n"));
        }
        let dir = if i.better == bench::Better::Lower { "lower is better" } else { "higher is better" };
        s.push_str(&format!("  {:<20} {:<8} {:<17} {}\n", i.name, i.unit, dir, i.summary));
        for p in &i.params {
            let q = p.quick.map(|q| format!(", quick {q}")).unwrap_or_default();
            s.push_str(&format!("  {:<20}   --param {}={} ({}{q}): {}\n", "", p.name, p.default, p.kind_name(), p.help));
        }
        if let Err(why) = sup {
            s.push_str(&format!("  {:<20}   unsupported here: {why}\n", ""));
        }
    }
    out(s.trim_start());
    Ok(exit::OK)
}

fn parse_overrides(list: &[String]) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for p in list {
        let (k, v) = p.split_once('=').ok_or_else(|| bad_input(format!("malformed --param {p:?}: expected NAME=VALUE or NAME=V1,V2")))?;
        if k.is_empty() || v.is_empty() {
            return Err(bad_input(format!("malformed --param {p:?}: expected NAME=VALUE or NAME=V1,V2")));
        }
        if m.insert(k.to_string(), v.to_string()).is_some() {
            return Err(bad_input(format!("--param {k} given twice: give one list instead ({k}=A,B)")));
        }
    }
    Ok(m)
}

fn cmd_run(db: &Option<PathBuf>, a: RunArgs) -> Result<u8> {
    let sample_time = bench::params::parse_duration(&a.sample_time).map_err(|e| bad_input(format!("--sample-time: {e}")))?;
    if sample_time.as_secs_f64() < 1e-4 || sample_time.as_secs_f64() > 60.0 {
        return Err(bad_input(format!("--sample-time {} is out of range: allowed 100us .. 60s", a.sample_time)));
    }
    let warmup = bench::params::parse_duration(&a.warmup).map_err(|e| bad_input(format!("--warmup: {e}")))?;
    if warmup.as_secs_f64() > 60.0 {
        return Err(bad_input(format!("--warmup {} is out of range: allowed 0 .. 60s", a.warmup)));
    }
    let timeout = match &a.timeout {
        Some(t) => Some(bench::params::parse_duration(t).map_err(|e| bad_input(format!("--timeout: {e}")))?),
        None => None,
    };
    if !(a.threshold >= 0.0 && a.threshold < 1000.0) {
        return Err(bad_input(format!("--threshold {} is out of range: allowed 0 .. 1000 (percent)", a.threshold)));
    }
    if !(a.ci_target > 0.0 && a.ci_target <= 100.0) {
        return Err(bad_input(format!("--ci-target {} is out of range: allowed above 0 up to 100 (percent)", a.ci_target)));
    }
    let req = Request {
        selectors: a.selectors.clone(),
        configs: a.config.clone(),
        overrides: parse_overrides(&a.param)?,
        runs: match a.runs {
            None => plan::Runs::Default,
            Some(crate::cli::RunsArg::Auto) => plan::Runs::Auto,
            Some(crate::cli::RunsArg::Fixed(n)) => plan::Runs::Fixed(n as usize),
        },
        ci_target_pct: a.ci_target,
        quick: a.quick,
        label: a.label.clone(),
        skip_unavailable: a.skip_unavailable,
        sample_time,
        warmup,
        timeout,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let host = host_snapshot()?;
    let topo = host.topology.clone();
    let plan = plan::plan(&req, &topo, bench::registry())?;
    for item in &plan.items {
        if let Some(line) = item.bench.preamble(&item.params) {
            eprintln!("{}: {line}", item.info.name);
        }
    }
    // The store is opened only once the request is known to be good, and a
    // bad file is refused before anything runs.
    let mut store = open_store(db)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, interrupted.clone()).context("installing signal handlers")?;
    }
    let output = run::execute(&req, plan, &topo, serde_json::to_value(&host)?, &mut store, interrupted)?;
    let failed = output.results.iter().any(|r| r.status == crate::model::record::Status::Failed);
    let opt = CompareOptions { threshold_pct: a.threshold, ..Default::default() };
    let interrupted = output.interrupted;
    let mut rep = run_report(output.run, output.results, &opt);
    rep.verbose = a.verbose;
    out(&report::render(&rep, a.format, color()));
    if interrupted {
        eprintln!("kdelta: interrupted; run {} is marked incomplete", rep.runs[0].id);
        return Ok(exit::INTERRUPTED);
    }
    Ok(if failed { exit::FAILED } else { exit::OK })
}

/// The report of one run, with the lines its benchmarks' families add.
fn run_report(run: crate::model::RunRecord, results: Vec<crate::model::ResultRecord>, opt: &CompareOptions) -> Report {
    let mut rep = Report::for_run(run, results, opt);
    rep.summaries = bench::family_summaries(&rep.results);
    rep
}

fn load(store: &Store, key: &str) -> Result<(crate::model::record::RunRecord, Vec<crate::model::record::ResultRecord>)> {
    let run = store.find_run(key)?;
    let results = store.results(run.id)?;
    Ok((run, results))
}

fn cmd_compare(db: &Option<PathBuf>, a: Option<String>, b: Option<String>, format: Format, threshold: f64, verbose: bool) -> Result<u8> {
    if !(threshold >= 0.0 && threshold < 1000.0) {
        return Err(bad_input(format!("--threshold {threshold} is out of range: allowed 0 .. 1000 (percent)")));
    }
    let store = open_existing(db)?;
    let opt = CompareOptions { threshold_pct: threshold, ..Default::default() };
    let mut rep = match (a, b) {
        (None, _) => {
            let run =
                store.latest_complete()?.ok_or_else(|| bad_input(format!("no complete run in {} yet: run `kdelta run ...` first", store.path().display())))?;
            let results = store.results(run.id)?;
            run_report(run, results, &opt)
        }
        (Some(a), None) => {
            let (run, results) = load(&store, &a)?;
            run_report(run, results, &opt)
        }
        (Some(a), Some(b)) => Report::for_two_runs(load(&store, &a)?, load(&store, &b)?, &opt),
    };
    if rep.tables.is_empty() {
        let n = rep.runs.iter().map(|r| r.configs.len()).max().unwrap_or(0);
        eprintln!("kdelta: nothing to compare: run {} has {n} configuration(s); give two runs, or run with --config A,B", rep.runs[0].id);
    }
    rep.verbose = verbose;
    out(&report::render(&rep, format, color()));
    Ok(exit::OK)
}

fn cmd_runs(db: &Option<PathBuf>, limit: usize, json: bool) -> Result<u8> {
    let store = open_existing(db)?;
    let runs = store.runs(limit)?;
    if json {
        let v: Vec<serde_json::Value> = runs
            .iter()
            .map(|(r, n)| serde_json::json!({"id": r.id, "label": r.label, "started": r.started, "status": r.status, "results": n, "configs": r.configs, "command": r.command}))
            .collect();
        out(&(serde_json::to_string_pretty(&v)? + "\n"));
        return Ok(exit::OK);
    }
    let mut s = format!("{:>5}  {:<20}  {:<10}  {:>7}  {:<16}  {}\n", "id", "started", "status", "results", "label", "configs");
    for (r, n) in runs {
        let cfgs: Vec<String> = r.configs.iter().map(|c| format!("{} [{}]", c.name, c.cpus)).collect();
        s.push_str(&format!("{:>5}  {:<20}  {:<10}  {:>7}  {:<16}  {}\n", r.id, r.started, r.status.as_str(), n, r.label.unwrap_or_default(), cfgs.join(", ")));
    }
    out(&s);
    Ok(exit::OK)
}

fn cmd_show(db: &Option<PathBuf>, key: &str, format: Format, verbose: bool, warnings: bool) -> Result<u8> {
    let store = open_existing(db)?;
    let (run, results) = load(&store, key)?;
    let mut rep = run_report(run, results, &CompareOptions::default());
    rep.verbose = verbose;
    if warnings {
        out(&report::text::warnings(&rep));
        return Ok(exit::OK);
    }
    out(&report::render(&rep, format, color()));
    Ok(exit::OK)
}

/// Reading commands never create a database.
fn open_existing(db: &Option<PathBuf>) -> Result<Store> {
    let path = db.clone().unwrap_or_else(store::default_path);
    if !Path::new(&path).exists() {
        return Err(bad_input(format!("no results database at {}: run `kdelta run ...` first, or give --db PATH", path.display())));
    }
    Store::open(&path)
}

fn cmd_chart(db: &Option<PathBuf>, key: Option<String>, path: &Path) -> Result<u8> {
    let store = open_existing(db)?;
    let run = match key {
        Some(k) => store.find_run(&k)?,
        None => store.latest_complete()?.ok_or_else(|| bad_input(format!("no complete run in {} yet", store.path().display())))?,
    };
    let results = store.results(run.id)?;
    let id = run.id;
    let rep = run_report(run, results, &CompareOptions::default());
    crate::report::chart::write_svg(&rep, path).map_err(|e| if e.is::<crate::report::chart::NothingToChart>() { bad_input(format!("run {id}: {e}")) } else { e })?;
    eprintln!("kdelta: wrote {}", path.display());
    Ok(exit::OK)
}

/// The helpers' `ExitCode`s carry no readable value; they use 0, 1, 2 and 130.
fn exit_code(c: ExitCode) -> Result<u8> {
    for v in [exit::OK, exit::FAILED, exit::BAD_INPUT, exit::INTERRUPTED] {
        if c == ExitCode::from(v) {
            return Ok(v);
        }
    }
    Ok(exit::FAILED)
}

fn cmd_serve(name: &str, listen: &str, param: &[String]) -> Result<u8> {
    let all = bench::servers();
    let Some(server) = all.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        return Err(bad_input(format!("unknown server {name:?}: allowed: {}", names.join(", "))));
    };
    let mut overrides = parse_overrides(param)?;
    // A server takes one value per parameter: the first of a default sweep.
    let specs = (server.params)();
    for spec in specs.iter() {
        if !overrides.contains_key(spec.name) {
            let first = spec.default.split(',').next().unwrap_or(spec.default);
            overrides.insert(spec.name.to_string(), first.to_string());
        }
    }
    let mut points = bench::params::expand(&specs, &overrides, false, name).map_err(|e| bad_input(e.to_string()))?;
    if points.len() != 1 {
        return Err(bad_input("a server takes one value per parameter, not a list"));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    (server.serve)(listen, &points.remove(0), stop)?;
    Ok(exit::OK)
}

/// `kdelta simulate --store`: print as usual, then store one run whose
/// configurations are the policies and whose samples are the simulated
/// iteration times (loops) or makespans (make), marked simulated.
fn cmd_simulate_store(db: &Option<PathBuf>, a: &crate::simulate::cli::SimulateArgs) -> Result<u8> {
    use crate::model::record::{ResultRecord, RunRecord, RunStatus, Status};
    let (cfg, policies) = crate::simulate::cli::config(a)?;
    let results = crate::simulate::cli::simulate_all(&cfg, &policies, false)?;
    let mut store = open_store(db)?;
    if a.format == "json" {
        out(&(crate::simulate::cli::render_json(&cfg, &results)? + "\n"));
    } else {
        out(&crate::simulate::cli::render_text(&cfg, &results));
    }
    let (name, mut params) = match &cfg.workload {
        crate::simulate::WorkloadCfg::Loops(l) => {
            let mut p = bench::Params::default();
            p.set("loops", l.loops.to_string());
            p.set("work", l.work.to_string());
            p.set("iterations", l.iterations.to_string());
            ("sim.loops", p)
        }
        crate::simulate::WorkloadCfg::Make(m) => {
            let mut p = bench::Params::default();
            p.set("parallel", m.parallel.to_string());
            p.set("jobs", m.jobs.to_string());
            ("sim.make", p)
        }
    };
    params.set("topology", cfg.shape.to_string());
    params.set("smt_rate", cfg.engine.smt_rate.to_string());
    params.set("seed", cfg.seed.to_string());
    let run = RunRecord {
        id: 0,
        label: a.label.clone(),
        started: crate::model::record::now_rfc3339(),
        finished: None,
        status: RunStatus::Running,
        kdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        pid: Some(std::process::id()),
        configs: Vec::new(),
        host: serde_json::json!({ "simulated": true, "topology": cfg.shape.to_string() }),
        environment: serde_json::Value::Null,
    };
    let id = store.begin_run(&run)?;
    for (seq, r) in results.iter().enumerate() {
        let samples: Vec<f64> = match (&r.loops, &r.make) {
            (Some(l), _) => l.times.clone(),
            (_, Some(m)) => m.makespans.clone(),
            _ => Vec::new(),
        };
        let mut extras = serde_json::Map::new();
        extras.insert("doubled_time_s".into(), r.doubled_time.into());
        extras.insert("migrations_running".into(), r.migrations_running.into());
        extras.insert("events".into(), r.events.into());
        let rec = ResultRecord {
            benchmark: name.to_string(),
            family: "sim".to_string(),
            params: params.clone(),
            config: r.policy.clone(),
            cpus: format!("simulated {}", cfg.shape),
            unit: "s".to_string(),
            better: bench::Better::Lower,
            status: Status::Ok,
            reason: None,
            summary: crate::stats::summarize(&samples, false),
            iterations: None,
            extras,
            notes: vec!["simulated, not measured".to_string()],
            warnings: crate::stats::warnings::for_samples(&samples, &[]),
            samples,
            samples_meta: Vec::new(),
            quality: None,
            placement: Vec::new(),
            below_resolution: None,
            simulated: true,
        };
        store.add_result(id, seq, &rec)?;
    }
    store.finish_run(id, RunStatus::Complete, &serde_json::json!({ "simulated": true }))?;
    eprintln!("kdelta: stored as run {id} (simulated)");
    Ok(exit::OK)
}

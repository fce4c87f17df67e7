//! The stored runs: `kdelta compare`, `runs`, `show`, `export` and `chart`.

use super::*;

pub(super) fn load(store: &Store, key: &str) -> Result<(crate::model::record::RunRecord, Vec<crate::model::record::ResultRecord>)> {
    let run = store.find_run(key)?;
    let results = store.results(run.id)?;
    Ok((run, results))
}

pub(super) fn cmd_compare(db: &Option<PathBuf>, a: Option<String>, b: Option<String>, format: Format, threshold: f64, verbose: bool) -> Result<u8> {
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

pub(super) fn cmd_runs(db: &Option<PathBuf>, limit: usize, json: bool) -> Result<u8> {
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

pub(super) fn cmd_show(db: &Option<PathBuf>, key: &str, format: Format, verbose: bool, warnings: bool) -> Result<u8> {
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
pub(super) fn open_existing(db: &Option<PathBuf>) -> Result<Store> {
    let path = db.clone().unwrap_or_else(store::default_path);
    if !Path::new(&path).exists() {
        return Err(bad_input(format!("no results database at {}: run `kdelta run ...` first, or give --db PATH", path.display())));
    }
    Store::open(&path)
}

pub(super) fn cmd_chart(db: &Option<PathBuf>, key: Option<String>, path: &Path) -> Result<u8> {
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

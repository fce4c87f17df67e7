//! The stored runs: `kdelta compare`, `runs`, `show`, `export` and `chart`.

use super::*;
use crate::cli::{CompareArgs, ShowArgs, Shown};

pub(super) fn load(
    store: &Store,
    key: &str,
) -> Result<(crate::model::record::RunRecord, Vec<crate::model::record::ResultRecord>)> {
    let run = store.find_run(key)?;
    let results = results(store, run.id)?;
    Ok((run, results))
}

/// A run's stored results in today's names and spellings
/// ([`bench::canonical_results`]), so runs stored before a rename or a new
/// spelling compare with new ones.
pub(super) fn results(store: &Store, run_id: i64) -> Result<Vec<crate::model::record::ResultRecord>> {
    let mut rs = store.results(run_id)?;
    bench::canonical_results(&mut rs);
    Ok(rs)
}

pub(super) fn cmd_compare(db: &Option<PathBuf>, args: &CompareArgs) -> Result<u8> {
    let CompareArgs { run_a: a, run_b: b, shown, threshold, .. } = args;
    let store = open_existing(db)?;
    let opt = CompareOptions { threshold_pct: *threshold, ..Default::default() };
    let rep = match (a, b) {
        (None, _) => {
            let run = store.latest_complete()?.ok_or_else(|| {
                bad_input(format!("no complete run in {} yet: run `kdelta run ...` first", store.path().display()))
            })?;
            let results = results(&store, run.id)?;
            run_report(run, results, &opt)
        }
        (Some(a), None) => {
            let (run, results) = load(&store, a)?;
            run_report(run, results, &opt)
        }
        (Some(a), Some(b)) => {
            let (a, b) = (load(&store, a)?, load(&store, b)?);
            warn_if_not_comparable(&a.0, &b.0);
            let ids = (a.0.id, b.0.id);
            let (rep, bar) = two_runs(a, b, &opt);
            if let Some(bar) = bar {
                super::between::say(ids.0, &[(ids.1, bar)]);
            }
            rep
        }
    };
    if rep.tables.is_empty() {
        let n = rep.runs.iter().map(|r| r.configs.len()).max().unwrap_or(0);
        eprintln!(
            "kdelta: nothing to compare: run {} has {n} configuration(s); give two runs, or run with --config A,B",
            rep.runs[0].id
        );
    }
    print(rep, shown, &opt)
}

/// `compare` and `show`: the report as asked, on stdout.
fn print(mut rep: Report, shown: &Shown, opt: &CompareOptions) -> Result<u8> {
    rep.verbose = shown.verbose;
    if shown.counters {
        rep.add_counters(opt);
    }
    out(&report::render(&rep, shown.format, color())?);
    Ok(exit::OK)
}

/// Two stored runs compared (`compare RUN_A RUN_B`, a report's later runs
/// against its first), judged as `check --against` judges them: where the
/// machine changed between or during the runs, a star needs a change
/// beyond what that explains (`between::withholding`), and the bar is given
/// back for the caller to say (`between::say`).
pub(super) fn two_runs(
    a: (crate::model::RunRecord, Vec<crate::model::ResultRecord>),
    b: (crate::model::RunRecord, Vec<crate::model::ResultRecord>),
    opt: &CompareOptions,
) -> (Report, Option<super::between::Bar>) {
    let allowed = opt.threshold_pct + crate::stats::defaults::DRIFT_PCT;
    let bar = super::between::withholding((&a.0, &format!("run {}", a.0.id)), &b.0, opt.threshold_pct, allowed);
    let mut rep = Report::for_two_runs(a, b, opt);
    if let Some(bar) = &bar {
        rep.withhold_within(bar.beyond);
    }
    (rep, bar)
}

/// `kdelta runs --host H --kernel K --label L`: each given one must match.
#[derive(Default)]
pub(super) struct RunFilter {
    pub(crate) host: Option<String>,
    pub(crate) kernel: Option<String>,
    pub(crate) label: Option<String>,
    /// `--meta KEY=VALUE` or `--meta KEY`: every one must match.
    pub(crate) meta: Vec<crate::model::meta::MetaFilter>,
}

impl From<crate::cli::RunSelect> for RunFilter {
    fn from(s: crate::cli::RunSelect) -> RunFilter {
        RunFilter { host: s.host, kernel: s.kernel, label: s.label, meta: s.meta }
    }
}

impl RunFilter {
    pub(super) fn any(&self) -> bool {
        self.host.is_some() || self.kernel.is_some() || self.label.is_some() || !self.meta.is_empty()
    }

    pub(super) fn keeps(&self, r: &crate::model::record::RunRecord) -> bool {
        let host = |k: &str| r.host.get(k).and_then(|v| v.as_str());
        self.host.as_deref().is_none_or(|h| host("hostname") == Some(h))
            && self.kernel.as_deref().is_none_or(|k| host("kernel_release") == Some(k))
            && self.label.as_deref().is_none_or(|l| r.label.as_deref() == Some(l))
            && self.meta.iter().all(|m| m.keeps(&r.meta))
    }
}

/// Warn (stderr, one line each) when two runs come from machines whose
/// fingerprints differ in anything but the kernel, and say what differs.
fn warn_if_not_comparable(a: &crate::model::record::RunRecord, b: &crate::model::record::RunRecord) {
    use crate::report::fingerprint::{differences, Fingerprint};
    let (machine, kernel) = differences(&Fingerprint::of(&a.host), &Fingerprint::of(&b.host));
    if !machine.is_empty() {
        eprintln!("kdelta: warning: runs {} and {} come from different machines: {}", a.id, b.id, machine.join("; "));
    }
    if !kernel.is_empty() {
        eprintln!("kdelta: runs {} and {} differ in the kernel: {}", a.id, b.id, kernel.join("; "));
    }
}

/// `compare --by kernel|host [--label L]`: complete runs pooled by group.
pub(super) fn cmd_compare_pooled(
    db: &Option<PathBuf>,
    by: crate::cli::PoolBy,
    label: Option<&str>,
    threshold: f64,
) -> Result<u8> {
    let store = open_existing(db)?;
    let mut runs: Vec<_> = store
        .runs(i64::MAX as usize)?
        .into_iter()
        .map(|(r, _)| r)
        .filter(|r| {
            r.status == crate::model::record::RunStatus::Complete && label.is_none_or(|l| r.label.as_deref() == Some(l))
        })
        .collect();
    runs.reverse();
    if runs.is_empty() {
        return Err(bad_input(format!(
            "no complete run{} in {}",
            label.map(|l| format!(" labelled {l:?}")).unwrap_or_default(),
            store.path().display()
        )));
    }
    let mut pooled = Vec::new();
    for r in runs {
        let group = r.host.get(by.host_key()).and_then(|v| v.as_str()).unwrap_or("unknown").to_string();
        pooled.push(crate::report::pooled::PooledRun { group, results: results(&store, r.id)? });
    }
    out(&crate::report::pooled::render(&pooled, by.name(), threshold));
    Ok(exit::OK)
}

/// `kdelta runs`: the stored runs, newest first, those selected.
pub(super) fn cmd_runs(db: &Option<PathBuf>, a: &crate::cli::RunsArgs) -> Result<u8> {
    let (limit, json, filter) = (a.limit, a.json, &RunFilter::from(a.select.clone()));
    let store = open_existing(db)?;
    let runs = if filter.any() {
        // Label, host and kernel are chosen in SQL (by index), metadata here;
        // results are counted only for the runs listed.
        let q = crate::store::HistoryQuery {
            label: filter.label.clone(),
            hostname: filter.host.clone(),
            kernel: filter.kernel.clone(),
            since: None,
        };
        let kept: Vec<_> = store.runs_where(&q)?.into_iter().filter(|r| filter.keeps(r)).take(limit).collect();
        let counts = store.result_counts(&kept.iter().map(|r| r.id).collect::<Vec<_>>())?;
        kept.into_iter()
            .map(|r| {
                let n = counts.get(&r.id).copied().unwrap_or(0);
                (r, n)
            })
            .collect()
    } else {
        store.runs(limit)?
    };
    if json {
        let v: Vec<serde_json::Value> = runs
            .iter()
            .map(|(r, n)| {
                serde_json::json!({"id": r.id, "label": r.label, "started": r.started, "status": r.status, "results": n, "configs": r.configs, "command": r.command,
                                   "hostname": r.host.get("hostname"), "kernel": r.host.get("kernel_release"), "meta": r.meta})
            })
            .collect();
        out_json(&serde_json::to_string_pretty(&v)?);
        return Ok(exit::OK);
    }
    out(&runs_table(runs));
    Ok(exit::OK)
}

/// `kdelta runs` as text: one line per run, with a `meta` column (each
/// run's `k=v` pairs) when any listed run has metadata.
fn runs_table(runs: Vec<(crate::model::record::RunRecord, usize)>) -> String {
    let metas: Vec<String> = runs.iter().map(|(r, _)| r.meta.compact()).collect();
    let width = metas.iter().map(|m| m.chars().count()).max().filter(|&w| w > 0).map(|w| w.max(4));
    let meta = |m: &str| width.map(|w| format!("{m:<w$}  ")).unwrap_or_default();
    let mut s = format!(
        "{:>5}  {:<20}  {:<10}  {:>7}  {:<16}  {}{}\n",
        "id",
        "started",
        "status",
        "results",
        "label",
        meta("meta"),
        "configs"
    );
    for ((r, n), m) in runs.into_iter().zip(&metas) {
        let cfgs: Vec<String> = r.configs.iter().map(|c| format!("{} [{}]", c.name, c.cpus)).collect();
        s.push_str(&format!(
            "{:>5}  {:<20}  {:<10}  {:>7}  {:<16}  {}{}\n",
            r.id,
            r.started,
            r.status.as_str(),
            n,
            r.label.unwrap_or_default(),
            meta(m),
            cfgs.join(", ")
        ));
    }
    s
}

pub(super) fn cmd_show(db: &Option<PathBuf>, a: &ShowArgs) -> Result<u8> {
    let store = open_existing(db)?;
    let (run, results) = load(&store, &a.run)?;
    let opt = CompareOptions::default();
    let rep = run_report(run, results, &opt);
    if a.warnings {
        out(&report::text::warnings(&rep));
        return Ok(exit::OK);
    }
    print(rep, &a.shown, &opt)
}

/// Reading commands never create a database, and open it read-only: they
/// work on a read-only file or directory and never write to the file.
pub(super) fn open_existing(db: &Option<PathBuf>) -> Result<Store> {
    let path = db.clone().unwrap_or_else(store::default_path);
    let is_file = matches!(store::location::locate(&path)?, store::location::Location::File(_));
    if is_file && !Path::new(&path).exists() {
        return Err(bad_input(format!(
            "no results database at {}: run `kdelta run ...` first, or give --db PATH",
            path.display()
        )));
    }
    Store::open_read_only(&path)
}

pub(super) fn cmd_chart(db: &Option<PathBuf>, key: Option<String>, path: &Path) -> Result<u8> {
    crate::sys::output::check_output_path("-o", path)?;
    let store = open_existing(db)?;
    let run = match key {
        Some(k) => store.find_run(&k)?,
        None => store
            .latest_complete()?
            .ok_or_else(|| bad_input(format!("no complete run in {} yet", store.path().display())))?,
    };
    let results = results(&store, run.id)?;
    let id = run.id;
    let rep = run_report(run, results, &CompareOptions::default());
    let svg = report::Renderer::render(&report::chart::Chart, std::slice::from_ref(&rep)).map_err(|e| {
        if e.is::<crate::report::chart::NothingToChart>() {
            bad_input(format!("run {id}: {e}"))
        } else {
            e
        }
    })?;
    crate::sys::output::write_output("-o", path, svg.as_bytes())?;
    eprintln!("kdelta: wrote {}", path.display());
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::{ResultRecord, RunRecord, RunStatus};
    use crate::model::Params;

    fn result(bench: &str, kv: &[(&str, &str)], samples: &[f64]) -> ResultRecord {
        let mut params = Params::default();
        for (k, v) in kv {
            params.set(k, *v);
        }
        ResultRecord { params, ..crate::testing::stored::ok_result(bench, samples) }
    }

    fn stored_run(store: &mut Store, results: &[ResultRecord]) -> String {
        let run = RunRecord {
            id: 0,
            label: None,
            started: "2024-05-01T10:00:00Z".into(),
            finished: None,
            status: RunStatus::Running,
            kdelta_version: "0.1.0".into(),
            command: "kdelta run".into(),
            pid: None,
            configs: vec![],
            host: serde_json::json!({}),
            environment: Default::default(),
            meta: Default::default(),
            job: None,
        };
        let id = store.begin_run(&run).unwrap();
        for (i, r) in results.iter().enumerate() {
            store.add_result(id, i, r).unwrap();
        }
        store.finish_run(id, RunStatus::Complete, &Default::default()).unwrap();
        id.to_string()
    }

    /// Runs stored under the old spellings (`model=thread`, the benchmark
    /// `chat`, tbench's `server=auto`) compare row by row with new ones.
    #[test]
    fn old_spellings_compare_with_new_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("k.db")).unwrap();
        let old = stored_run(
            &mut store,
            &[
                result("thread.ctx", &[("threads", "2"), ("size", "0"), ("model", "thread")], &[1.0, 1.1, 1.2]),
                result("chat", &[("rooms", "2"), ("server", "local"), ("server_model", "threads")], &[5.0, 5.1, 5.2]),
                result(
                    "tbench.throughput",
                    &[("clients", "2"), ("model", "processes"), ("server", "auto")],
                    &[9.0, 9.1, 9.2],
                ),
            ],
        );
        let new = stored_run(
            &mut store,
            &[
                result("thread.ctx", &[("threads", "2"), ("size", "0"), ("model", "threads")], &[2.0, 2.1, 2.2]),
                result(
                    "chat.rooms",
                    &[("rooms", "2"), ("server", "local"), ("server_model", "threads")],
                    &[6.0, 6.1, 6.2],
                ),
                result(
                    "tbench.throughput",
                    &[("clients", "2"), ("model", "processes"), ("server", "local")],
                    &[8.0, 8.1, 8.2],
                ),
            ],
        );
        let (a, b) = (load(&store, &old).unwrap(), load(&store, &new).unwrap());
        assert_eq!(a.1[0].params.0["model"], "threads");
        assert_eq!((a.1[1].benchmark.as_str(), a.1[1].family.as_str()), ("chat.rooms", "chat"));
        let rep = Report::for_two_runs(a, b, &CompareOptions::default());
        assert_eq!(rep.tables.len(), 1);
        let rows = &rep.tables[0].rows;
        let names: Vec<&str> = rows.iter().map(|r| r.benchmark.as_str()).collect();
        assert_eq!(names, ["thread.ctx", "chat.rooms", "tbench.throughput"]);
        for r in rows {
            assert!(r.cells.iter().all(|c| c.is_some()), "{} {}: a side is missing", r.benchmark, r.params.display());
            assert!(r.changes[0].is_some(), "{}: no comparison", r.benchmark);
        }
    }
}

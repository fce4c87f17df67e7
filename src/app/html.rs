//! `kdelta report RUN_OR_LABEL... -o FILE.html`: stored runs as one
//! self-contained HTML page (`report::html`); `kdelta report --history
//! SELECTOR... -o FILE.html`: benchmark points followed over the runs, as
//! `kdelta history` follows them, drawn as such a page. The file is written beside its
//! final name and renamed into place, so an interrupted or failed write
//! leaves no half page.

use super::stored::{load, open_existing};
use super::*;
use crate::report::html::Page;
use crate::report::Renderer;

pub(super) fn cmd_report(
    db: &Option<PathBuf>,
    keys: &[String],
    filter: &super::stored::RunFilter,
    path: &Path,
    title: Option<String>,
) -> Result<u8> {
    let dir = output_dir(path)?;
    let store = open_existing(db)?;
    let opt = CompareOptions::default();
    let mut loaded: Vec<(crate::model::RunRecord, Vec<crate::model::ResultRecord>)> = Vec::new();
    // Runs named one by one, then every finished run the selections pick,
    // oldest first (as `kdelta runs --host/--kernel/--label` lists them).
    let mut keys: Vec<String> = keys.to_vec();
    if filter.any() {
        let mut picked: Vec<i64> = store
            .runs(i64::MAX as usize)?
            .into_iter()
            .filter(|(r, _)| filter.keeps(r) && r.status == crate::model::record::RunStatus::Complete)
            .map(|(r, _)| r.id)
            .collect();
        if picked.is_empty() {
            return Err(bad_input(
                "no finished run matches --host/--kernel/--label: see kdelta runs with the same options".to_string(),
            ));
        }
        picked.sort();
        keys.extend(picked.iter().map(|id| id.to_string()));
    }
    for k in &keys {
        let (run, results) = load(&store, k)?;
        // The same run named twice (by id and by label) is shown once.
        if !loaded.iter().any(|(r, _)| r.id == run.id) {
            loaded.push((run, results));
        }
    }
    // A study's run brings its published-against-measured tables.
    let mut extra = Vec::new();
    for (r, _) in &loaded {
        if let Some(tables) = crate::study::tables_for_run(&store, r.id)? {
            extra.extend(tables);
        }
    }
    // Runs a fleet made: which hosts ran, refused or failed the jobs of the label, and why.
    if let Some(label) = &filter.label {
        extra.extend(super::fleet::jobs_table(db, label)?);
    }
    let comparisons: Vec<Report> =
        loaded.iter().skip(1).map(|b| Report::for_two_runs(loaded[0].clone(), b.clone(), &opt)).collect();
    let names: Vec<String> = loaded
        .iter()
        .map(|(r, _)| {
            r.label.as_ref().map(|l| format!("run {} ({l})", r.id)).unwrap_or_else(|| format!("run {}", r.id))
        })
        .collect();
    let runs: Vec<Report> = loaded.into_iter().map(|(r, rs)| run_report(r, rs, &opt)).collect();
    let title = title.unwrap_or_else(|| format!("kdelta report: {}", names.join(", ")));
    let shown = runs.len();
    let mut reports: Vec<Report> = runs.into_iter().chain(comparisons).collect();
    // Runs taken with --counters show their counters per operation.
    for rep in &mut reports {
        if rep.results.iter().any(|r| r.samples_meta.iter().any(|m| !m.counters.is_empty())) {
            rep.add_counters(&opt);
        }
    }
    let page = Page { title, extra: &extra }.render(&reports)?;
    let charts = page.matches("<svg ").count();
    write_into_place(&dir, path, &page)?;
    eprintln!("kdelta: wrote {} ({} bytes, {} run(s), {charts} charts)", path.display(), page.len(), shown);
    Ok(exit::OK)
}

/// `kdelta report --history SELECTOR... -o FILE.html`: the series
/// `kdelta history` follows, as a page of charts and tables
/// (`report::html::history`), written as `report` writes its page.
pub(super) fn cmd_report_history(
    db: &Option<PathBuf>,
    selectors: &[String],
    select: &crate::cli::RunSelect,
    search: &crate::cli::HistorySearch,
    path: &Path,
    title: Option<String>,
) -> Result<u8> {
    let dir = output_dir(path)?;
    let h = super::history::follow(db, selectors, select, search)?;
    let title = title.unwrap_or_else(|| format!("kdelta history: {}", selectors.join(" ")));
    let page = crate::report::html::history::page(&h, &title);
    write_into_place(&dir, path, &page)?;
    let changes: usize = h.series.iter().map(|s| s.changes.len()).sum();
    eprintln!(
        "kdelta: wrote {} ({} bytes, {} series, {changes} change point(s))",
        path.display(),
        page.len(),
        h.series.len()
    );
    Ok(exit::OK)
}

/// The directory `--out` writes into, after checking `path` names a file
/// there that a page may replace (not a directory, FIFO or device).
/// `kdelta profile RUN BENCHMARK [--config A [--against B]] -o FILE.svg`:
/// one stored profile's flame graph, or the differential one from B to A,
/// written as `report` writes its page.
pub(super) fn cmd_profile(
    db: &Option<PathBuf>,
    key: &str,
    benchmark: &str,
    config: Option<&str>,
    against: Option<&str>,
    param: &[crate::cli::Setting],
    path: &Path,
) -> Result<u8> {
    let dir = output_dir(path)?;
    let store = open_existing(db)?;
    let (run, results) = load(&store, key)?;
    let name = format!("run {}", run.id);
    let of_bench: Vec<&crate::model::ResultRecord> = results
        .iter()
        .filter(|r| r.benchmark == benchmark)
        .filter(|r| param.iter().all(|s| r.params.0.get(&s.name).map(String::as_str) == Some(s.value.as_str())))
        .collect();
    if of_bench.is_empty() {
        let mut names: Vec<&str> = results.iter().map(|r| r.benchmark.as_str()).collect();
        names.dedup();
        let what = if param.is_empty() { String::new() } else { " at the --param point given".to_string() };
        return Err(bad_input(format!(
            "{name} has no result of {benchmark}{what}: it holds {}",
            if names.is_empty() { "no results".to_string() } else { names.join(", ") }
        )));
    }
    let profiled: Vec<&crate::model::ResultRecord> = of_bench.iter().copied().filter(|r| r.profile.is_some()).collect();
    if profiled.is_empty() {
        return Err(bad_input(format!(
            "{name} has no profile of {benchmark}: it was measured without --profile (kdelta run {benchmark} --profile ...)"
        )));
    }
    let mut points: Vec<String> = profiled.iter().map(|r| r.params.display()).collect();
    points.sort();
    points.dedup();
    if points.len() > 1 {
        return Err(bad_input(format!(
            "{benchmark} has {} profiled points in {name} ({}): choose one with --param NAME=VALUE",
            points.len(),
            points.join("; ")
        )));
    }
    let configs: Vec<&str> = profiled.iter().map(|r| r.config.as_str()).collect();
    let pick = |c: &str, flag: &str| {
        profiled.iter().copied().find(|r| r.config == c).ok_or_else(|| {
            bad_input(format!(
                "{flag} {c}: {name} has no profile of {benchmark} under {c}; it has: {}",
                configs.join(", ")
            ))
        })
    };
    let a = match config {
        Some(c) => pick(c, "--config")?,
        None => profiled[0],
    };
    let p = a.profile.as_ref().expect("a profiled result");
    let title = format!("{benchmark} [{}] ({name})", a.config);
    let svg = match against {
        Some(b) if b == a.config => {
            return Err(bad_input(format!(
                "--against {b} is --config itself: give another configuration ({})",
                configs.join(", ")
            )))
        }
        Some(b) => {
            let base = pick(b, "--against")?;
            let bp = base.profile.as_ref().expect("a profiled result");
            crate::report::flame::differential(
                bp,
                p,
                &format!("{benchmark}: {b} -> {} ({name})", a.config),
                &format!(
                    "{} samples under {}, {} under {b}; red: a larger share under {}, blue: a smaller one",
                    p.samples, a.config, bp.samples, a.config
                ),
            )?
        }
        None => crate::report::flame::flame(p, &title, &format!("{} {} samples at {} Hz", p.samples, p.event, p.hz))?,
    };
    let svg = svg.file();
    write_into_place(&dir, path, &svg)?;
    eprintln!("kdelta: wrote {} ({} bytes)", path.display(), svg.len());
    Ok(exit::OK)
}

fn output_dir(path: &Path) -> Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if path.is_dir() {
        return Err(bad_input(format!(
            "--out {} is a directory: give a file name such as report.html",
            path.display()
        )));
    }
    // A FIFO or device is refused too: the page replaces only a regular file.
    crate::sys::output::check_output_path("--out", path)?;
    if !dir.is_dir() {
        return Err(bad_input(format!("--out {}: the directory {} does not exist", path.display(), dir.display())));
    }
    Ok(dir)
}

/// Write `page` beside its final name `path` (in `dir`), with the ordinary
/// permissions (the umask's), then rename it into place; the temporary
/// file is removed again if anything fails.
fn write_into_place(dir: &Path, path: &Path, page: &str) -> Result<()> {
    let tmp = dir.join(format!(".kdelta-report-{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| {
        bad_input(format!("cannot write --out {}: creating {} failed: {e}", path.display(), tmp.display()))
    })?;
    let written = f.write_all(page.as_bytes()).and_then(|_| f.sync_all()).and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::Error::new(e).context(format!("cannot write {}", path.display())));
    }
    Ok(())
}

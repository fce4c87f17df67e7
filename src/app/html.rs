//! `kdelta report RUN_OR_LABEL... -o FILE.html`: stored runs as one
//! self-contained HTML page (`report::html`); `kdelta report --history
//! SELECTOR... -o FILE.html`: benchmark points followed over the runs, as
//! `kdelta history` follows them, drawn as such a page. The file is written beside its
//! final name and renamed into place, so an interrupted or failed write
//! leaves no half page.

use super::stored::{load, open_existing};
use super::*;
use crate::report::html::Page;
use crate::report::profile_tables::{compared_on, point, side};
use crate::report::Renderer;

/// `kdelta report`: the runs named and selected, or with `--history` the
/// series followed over them.
pub(super) fn cmd_report(db: &Option<PathBuf>, a: &crate::cli::ReportArgs) -> Result<u8> {
    if a.history.is_empty() {
        report_runs(db, a)
    } else {
        report_history(db, a)
    }
}

fn report_runs(db: &Option<PathBuf>, a: &crate::cli::ReportArgs) -> Result<u8> {
    let (path, title) = (a.out.as_path(), a.title.clone());
    let filter = super::stored::RunFilter::from(a.select.clone());
    let dir = output_dir(path)?;
    let store = open_existing(db)?;
    let opt = CompareOptions::default();
    let mut loaded: Vec<(crate::model::RunRecord, Vec<crate::model::ResultRecord>)> = Vec::new();
    // Runs named one by one, then every finished run the selections pick,
    // oldest first (as `kdelta runs --host/--kernel/--label` lists them).
    let mut keys: Vec<String> = a.runs.clone();
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
    let mut comparisons = Vec::new();
    let mut withheld = Vec::new();
    for b in loaded.iter().skip(1) {
        let (rep, bar) = super::stored::two_runs(loaded[0].clone(), b.clone(), &opt);
        comparisons.push(rep);
        withheld.extend(bar.map(|bar| (b.0.id, bar)));
    }
    if let Some((first, _)) = loaded.first() {
        super::between::say(first.id, &withheld);
    }
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
fn report_history(db: &Option<PathBuf>, a: &crate::cli::ReportArgs) -> Result<u8> {
    let path = a.out.as_path();
    let dir = output_dir(path)?;
    let h = super::history::follow(db, &a.history, &a.select, &a.search)?;
    let title = a.title.clone().unwrap_or_else(|| format!("kdelta history: {}", a.history.join(" ")));
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

/// `kdelta profile RUN BENCHMARK [--config A [--against B]] [--format F] [-o FILE]`:
/// one stored profile's flame graph, or the differential one from B to A,
/// written as `report` writes its page; or their folded stacks or tables,
/// to the file or to stdout.
pub(super) fn cmd_profile(db: &Option<PathBuf>, pick: &crate::cli::ProfileArgs) -> Result<u8> {
    use crate::cli::ProfileFormat;
    let (key, benchmark, format, path) = (&pick.run, pick.benchmark.as_str(), pick.format, pick.out.as_deref());
    let dir = match (path, format) {
        (Some(p), _) => Some(output_dir(p)?),
        (None, ProfileFormat::Svg) => {
            return Err(bad_input("--format svg needs --out FILE.svg (folded and text may go to stdout)".to_string()))
        }
        (None, _) => None,
    };
    let store = open_existing(db)?;
    let (run, results) = load(&store, key)?;
    let name = format!("run {}", run.id);
    let (a, base) = pick_profiles(&name, &results, benchmark, pick)?;
    let text = render(benchmark, &name, a, base, format)?;
    match (dir, path) {
        (Some(dir), Some(path)) => {
            write_into_place(&dir, path, &text)?;
            eprintln!("kdelta: wrote {} ({} bytes)", path.display(), text.len());
        }
        _ => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                // A closed pipe (`| head`) ends the output, not kdelta with an error.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(anyhow::Error::new(e).context("writing to stdout"));
                }
            }
        }
    }
    Ok(exit::OK)
}

/// What `kdelta profile` writes of profiled result `a` (against `base`),
/// in `format`; `name` names the run.
fn render(
    benchmark: &str,
    name: &str,
    a: &crate::model::ResultRecord,
    base: Option<&crate::model::ResultRecord>,
    format: crate::cli::ProfileFormat,
) -> Result<String> {
    use crate::cli::ProfileFormat;
    let p = a.profile.as_ref().expect("a profiled result");
    Ok(match (format, base) {
        (ProfileFormat::Svg, Some(base)) => {
            let bp = base.profile.as_ref().expect("a profiled result");
            let (sa, b) = (side(a), side(base));
            crate::report::flame::differential(
                bp,
                p,
                &format!("{benchmark}: {b} -> {sa} ({name})"),
                &format!(
                    "{} samples under {sa}, {} under {b}; red: a larger share under {sa}, blue: a smaller one",
                    p.samples, bp.samples
                ),
            )?
            .file()
        }
        (ProfileFormat::Svg, None) => crate::report::flame::flame(
            p,
            &heading(benchmark, a, name),
            &format!("{} {} samples at {} Hz", p.samples, p.event, p.hz),
        )?
        .file(),
        (ProfileFormat::Folded, Some(base)) => {
            lines_text(crate::report::flame::differential_folded(base.profile.as_ref().expect("profiled"), p)?)
        }
        (ProfileFormat::Folded, None) => lines_text(crate::report::flame::folded(p)),
        (ProfileFormat::Text, base) => {
            use crate::report::profile_tables as t;
            let mut s = String::new();
            if let Some(base) = base {
                let bp = base.profile.as_ref().expect("profiled");
                s.push_str(&t::top_text(bp, &heading(benchmark, base, name), t::TOP));
                s.push('\n');
            }
            s.push_str(&t::top_text(p, &heading(benchmark, a, name), t::TOP));
            if let Some(base) = base {
                s.push('\n');
                let bp = base.profile.as_ref().expect("profiled");
                s.push_str(&t::changes_text(bp, p, &side(base), &side(a), t::TOP));
            }
            s
        }
    })
}

fn lines_text(lines: Vec<String>) -> String {
    let mut s = lines.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// The profiled result `pick` names in `results` (`name`: the run, for
/// messages), and the one `--against` names: each refusal in one line.
fn pick_profiles<'r>(
    name: &str,
    results: &'r [crate::model::ResultRecord],
    benchmark: &str,
    pick: &crate::cli::ProfileArgs,
) -> Result<(&'r crate::model::ResultRecord, Option<&'r crate::model::ResultRecord>)> {
    let of_bench: Vec<&crate::model::ResultRecord> = results
        .iter()
        .filter(|r| r.benchmark == benchmark)
        .filter(|r| pick.param.iter().all(|s| r.params.0.get(&s.name).map(String::as_str) == Some(s.value.as_str())))
        .collect();
    if of_bench.is_empty() {
        let mut names: Vec<&str> = results.iter().map(|r| r.benchmark.as_str()).collect();
        names.dedup();
        let what = if pick.param.is_empty() { String::new() } else { " at the --param point given".to_string() };
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
    // The point, less the parameter its sides are compared on (`cmd`'s
    // commands): the sides are configurations, or that parameter's values.
    let mut points: Vec<String> = profiled.iter().map(|r| point(r).display()).collect();
    points.sort();
    points.dedup();
    if points.len() > 1 {
        return Err(bad_input(format!(
            "{benchmark} has {} profiled points in {name} ({}): choose one with --param NAME=VALUE",
            points.len(),
            points.join("; ")
        )));
    }
    let sides: Vec<String> = profiled.iter().map(|r| side(r)).collect();
    let find = |c: &str, flag: &str| {
        let hits: Vec<&crate::model::ResultRecord> = profiled.iter().copied().filter(|r| names_side(r, c)).collect();
        match hits.as_slice() {
            [one] => Ok(*one),
            [] => Err(bad_input(format!(
                "{flag} {c}: {name} has no profile of {benchmark} under {c}; it has: {}",
                sides.join(", ")
            ))),
            _ => Err(bad_input(format!(
                "{flag} {c}: {name} has {} profiles of {benchmark} under {c}; name one of: {}",
                hits.len(),
                sides.join(", ")
            ))),
        }
    };
    let a = match pick.config.as_deref() {
        Some(c) => find(c, "--config")?,
        None => profiled[0],
    };
    let base = match pick.against.as_deref() {
        Some(b) if names_side(a, b) => {
            return Err(bad_input(format!(
                "--against {b} is --config itself: give another configuration ({})",
                sides.join(", ")
            )))
        }
        Some(b) => Some(find(b, "--against")?),
        None => None,
    };
    Ok((a, base))
}

/// `cmd.run cmd=fast [all] (run 1)`, `lat.pipe [up] (run 1)`: a profile's title.
fn heading(benchmark: &str, r: &crate::model::ResultRecord, name: &str) -> String {
    match side(r) {
        s if s == r.config => format!("{benchmark} [{s}] ({name})"),
        s => format!("{benchmark} {s} ({name})"),
    }
}

/// Whether `given` (`--config`, `--against`) names `r`'s side: its
/// configuration, or the compared parameter's value (`fast`, `cmd=fast`).
fn names_side(r: &crate::model::ResultRecord, given: &str) -> bool {
    if r.config == given || side(r) == given {
        return true;
    }
    match compared_on(r) {
        Some(on) => {
            let v = &r.params.0[on];
            given == v || given.strip_prefix(on).and_then(|x| x.strip_prefix('=')) == Some(v.as_str())
        }
        None => false,
    }
}

/// The directory `--out` writes into, after checking `path` names a file
/// there that a page may replace (not a directory, FIFO or device).
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

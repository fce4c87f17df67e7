//! `kdelta history`: benchmark points followed over the stored runs, and
//! where they changed.
//!
//! The store gives the complete runs the run filters select
//! ([`Store::history`]); here their results are grouped into series (one
//! per benchmark, parameters, configuration and hostname), each series
//! searched for change points in its run medians
//! ([`crate::stats::changepoint`]), and each change point described from
//! the runs and raw samples on either side.

use super::*;
use crate::cli::{HistoryArgs, HistorySearch, RunSelect};
use crate::model::record::{ResultRecord, RunRecord, Status};
use crate::report::history::{Change, History, RunPoint, RunRef, Series};
use crate::stats::changepoint::{self, Detection, Options, Sides};
use crate::store::{HistoryQuery, Pick};

/// One series as it is gathered: its description, and each run's point
/// with the run's clean samples.
struct Gathered {
    series: Series,
    samples: Vec<Vec<f64>>,
}

pub(super) fn cmd_history(db: &Option<PathBuf>, a: HistoryArgs) -> Result<u8> {
    if matches!(a.format, Format::Asciidoc | Format::Orgmode) {
        return Err(crate::report::history::unsupported(a.format));
    }
    let h = follow(db, &a.selectors, &a.runs, &a.search)?;
    let text = crate::report::history::render(&h, a.format)?;
    match a.format {
        Format::Json => out_json(text.trim_end()),
        _ => out(&text),
    }
    Ok(exit::OK)
}

/// The benchmarks `selectors` name followed over the complete runs `select`
/// chooses, grouped into series and searched for change points: what
/// `history` prints and `report --history` draws.
pub(super) fn follow(
    db: &Option<PathBuf>,
    selectors: &[String],
    select: &RunSelect,
    how: &HistorySearch,
) -> Result<History> {
    let store = stored::open_existing(db)?;
    let query = HistoryQuery {
        label: select.label.clone(),
        hostname: select.host.clone(),
        kernel: select.kernel.clone(),
        since: how.since.clone(),
    };
    let pats = patterns(selectors)?;
    let wanted = |b: &str, f: &str| pats.iter().any(|(s, p)| s == b || s == f || p.matches(b));
    // A selector without glob characters names a benchmark or a family as
    // it is.
    let plain = selectors.iter().all(|s| glob::Pattern::escape(s) == *s);
    let pick = if plain { Pick::Names(selectors.to_vec()) } else { Pick::Matching(&wanted) };
    let got = store.history(&query, &pick)?;
    if got.runs.is_empty() {
        // Every filter of a run found names a stored value: only an empty
        // answer needs the list of every run's (a scan of the runs).
        check_filters(&store, &query)?;
    }
    // A damaged row, or a run or result holding values no run can have,
    // costs its own point: one warning naming it, and the history goes on.
    for (_, why) in &got.damaged {
        eprintln!("kdelta: warning: {}; left out of the history", why.trim_end_matches("; nothing was changed"));
    }
    let mut runs: Vec<(RunRecord, Vec<ResultRecord>)> = got
        .runs
        .into_iter()
        .filter(|(r, _)| select.meta.iter().all(|m| m.keeps(&r.meta)))
        .filter(|(r, _)| match garbage_run(r) {
            Some(why) => {
                eprintln!("kdelta: warning: run {} {why}; left out of the history", r.id);
                false
            }
            None => true,
        })
        .collect();
    for (run, rs) in runs.iter_mut() {
        rs.retain(|r| match garbage_result(r) {
            Some(why) => {
                let name = crate::model::text::printable(&r.benchmark);
                eprintln!("kdelta: warning: result {name} of run {} {why}; left out of the history", run.id);
                false
            }
            None => true,
        });
    }
    if runs.is_empty() {
        let meta: String = select
            .meta
            .iter()
            .map(|m| match &m.value {
                Some(v) => format!(" --meta {}={v}", m.key),
                None => format!(" --meta {}", m.key),
            })
            .collect();
        return Err(bad_input(format!(
            "no complete run in {} matches {}{meta}",
            store.path().display(),
            describe(&query)
        )));
    }
    if let Some(key) = &how.order_by {
        order_by_meta(&mut runs, key)?;
    }
    for (_, rs) in runs.iter_mut() {
        bench::canonical_results(rs);
    }
    let gathered = gather(&runs, &|| store.names_in(&got.ids), selectors, how)?;
    let a = how;
    let opt = Options { alpha: a.alpha, min_segment: a.min_segment, permutations: a.permutations, seed: a.seed };
    let series = gathered.into_iter().map(|g| search(g, &opt)).collect();
    Ok(History { alpha: a.alpha, min_segment: a.min_segment, permutations: a.permutations, seed: a.seed, series })
}

/// Why a stored run cannot be placed in a history (a start that is no
/// date: its place in time is unknown), or `None`.
fn garbage_run(r: &RunRecord) -> Option<String> {
    match humantime::parse_rfc3339_weak(&r.started) {
        Ok(_) => None,
        Err(_) => Some(format!(
            "has a start time that is not a date ({:?})",
            crate::model::text::printable(&r.started).chars().take(40).collect::<String>()
        )),
    }
}

/// Why a stored result's samples cannot be followed (a figure no
/// measurement gives: below zero, or not finite), or `None`.
fn garbage_result(r: &ResultRecord) -> Option<String> {
    let bad = r.samples.iter().find(|v| !v.is_finite() || **v < 0.0)?;
    Some(format!("holds the sample {bad}, which no measurement gives (times, rates and sizes are 0 or more)"))
}

/// The run filters given, as the error messages name them.
fn describe(q: &HistoryQuery) -> String {
    let mut parts = Vec::new();
    for (flag, v) in [("--label", &q.label), ("--host", &q.hostname), ("--kernel", &q.kernel), ("--since", &q.since)] {
        if let Some(v) = v {
            parts.push(format!("{flag} {v:?}"));
        }
    }
    if parts.is_empty() {
        "the filters given".into()
    } else {
        parts.join(" ")
    }
}

/// A label, host or kernel that no stored run has is bad input: said on one
/// line with the values that are stored.
/// Each value is looked up alone; every run is read only to list the
/// stored values when one is unknown.
fn check_filters(store: &Store, q: &HistoryQuery) -> Result<()> {
    use crate::store::RunKey;
    for (key, given) in [(RunKey::Label, &q.label), (RunKey::Host, &q.hostname), (RunKey::Kernel, &q.kernel)] {
        let Some(value) = given else { continue };
        if store.has_run_key(key, value)? {
            continue;
        }
        let keys = store.run_keys()?;
        let pick = |k: &crate::store::RunKeys| match key {
            RunKey::Label => k.0.clone(),
            RunKey::Host => k.1.clone(),
            RunKey::Kernel => k.2.clone(),
        };
        let what = match key {
            RunKey::Label => "label",
            RunKey::Host => "host",
            RunKey::Kernel => "kernel",
        };
        known(what, given, keys.iter().filter_map(pick))?;
    }
    Ok(())
}

/// `given`, when given, must be one of `stored`.
fn known(what: &str, given: &Option<String>, stored: impl Iterator<Item = String>) -> Result<()> {
    let Some(given) = given else { return Ok(()) };
    let mut stored: Vec<String> = stored.collect();
    stored.sort();
    stored.dedup();
    if stored.contains(given) {
        return Ok(());
    }
    Err(bad_input(format!("unknown {what} {given:?}: no stored run has it; stored: {}", listed(&stored))))
}

/// Up to ten values, comma-separated, and how many more.
fn listed(v: &[String]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let shown: Vec<&str> = v.iter().take(10).map(String::as_str).collect();
    let more = if v.len() > 10 { format!(" and {} more", v.len() - 10) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

/// Whether a stored benchmark name is one a selector names.
fn selected(pats: &[(String, glob::Pattern)], r: &ResultRecord) -> bool {
    pats.iter().any(|(s, p)| *s == r.benchmark || *s == r.family || p.matches(&r.benchmark))
}

/// The results of the runs grouped into series, in the order first seen.
fn gather(
    runs: &[(RunRecord, Vec<ResultRecord>)],
    names: &dyn Fn() -> Result<Vec<String>>,
    selectors: &[String],
    a: &HistorySearch,
) -> Result<Vec<Gathered>> {
    let pats = patterns(selectors)?;
    let stored: Vec<&ResultRecord> = runs.iter().flat_map(|(_, rs)| rs).collect();
    for (s, p) in &pats {
        if !stored.iter().any(|r| selected(&[(s.clone(), p.clone())], r)) {
            return Err(bad_input(format!(
                "unknown benchmark {s:?}: no stored result in the runs selected; stored: {}",
                listed(&names()?)
            )));
        }
    }
    let mut out: Vec<Gathered> = Vec::new();
    for (run, rs) in runs {
        let host = run.host.get("hostname").and_then(|v| v.as_str()).unwrap_or("unknown").to_string();
        for r in rs.iter().filter(|r| selected(&pats, r) && kept(r, a)) {
            add(&mut out, run, &host, r);
        }
    }
    if out.is_empty() {
        return Err(bad_input(format!(
            "no stored result of {} matches{}{}",
            selectors.join(" "),
            a.config.as_ref().map(|c| format!(" --config {c:?}")).unwrap_or_default(),
            a.param.iter().map(|s| format!(" --param {}={}", s.name, s.value)).collect::<String>()
        )));
    }
    Ok(out)
}

fn patterns(selectors: &[String]) -> Result<Vec<(String, glob::Pattern)>> {
    selectors
        .iter()
        .map(|s| {
            let p = glob::Pattern::new(s).map_err(|e| bad_input(format!("bad selector {s:?}: {e}")))?;
            Ok((s.clone(), p))
        })
        .collect()
}

/// A result with samples to follow that passes `--config` and `--param`.
fn kept(r: &ResultRecord, a: &HistorySearch) -> bool {
    r.status == Status::Ok
        && a.config.as_ref().is_none_or(|c| r.config == *c)
        && a.param.iter().all(|s| r.params.0.get(&s.name) == Some(&s.value))
}

/// Add one run's result to its series (a second result of the same point
/// in one run is left out: a series has one point per run).
fn add(out: &mut Vec<Gathered>, run: &RunRecord, host: &str, r: &ResultRecord) {
    let clean = r.clean_samples();
    if clean.is_empty() {
        return;
    }
    let same =
        |s: &Series| s.benchmark == r.benchmark && s.params == r.params && s.config == r.config && s.host == host;
    let i = match out.iter().position(|g| same(&g.series)) {
        Some(i) => i,
        None => {
            out.push(Gathered { series: new_series(r, host), samples: Vec::new() });
            out.len() - 1
        }
    };
    let g = &mut out[i];
    if g.series.runs.last().is_some_and(|p| p.run.id == run.id) {
        return;
    }
    g.series.runs.push(RunPoint {
        run: RunRef { id: run.id, started: run.started.clone(), label: run.label.clone(), meta: run.meta.clone() },
        median: crate::stats::summary::median(&clean),
        ci: crate::stats::trust::median_ci(&clean),
        n: clean.len(),
    });
    g.samples.push(clean);
}

fn new_series(r: &ResultRecord, host: &str) -> Series {
    Series {
        benchmark: r.benchmark.clone(),
        params: r.params.clone(),
        config: r.config.clone(),
        host: host.to_string(),
        unit: r.unit.clone(),
        better: r.better,
        runs: Vec::new(),
        too_short: None,
        modes: None,
        changes: Vec::new(),
    }
}

/// Search one series and describe its change points; a series whose runs
/// fall into two speeds that take turns (`stats::run_modes`) is searched
/// speed by speed, each change named by its runs in the whole series.
fn search(g: Gathered, opt: &Options) -> Series {
    let medians: Vec<f64> = g.series.runs.iter().map(|p| p.median).collect();
    let Some(modes) = crate::stats::run_modes::of(&medians) else { return search_one(g, opt) };
    let mut s = g.series.clone();
    s.modes = Some(modes.speeds.clone());
    let mut too_short = Vec::new();
    for high in [false, true] {
        let at = modes.positions(high);
        let mut part = g.series.clone();
        part.runs = at.iter().map(|&i| g.series.runs[i].clone()).collect();
        let samples = at.iter().map(|&i| g.samples[i].clone()).collect();
        let found = search_one(Gathered { series: part, samples }, opt);
        too_short.extend(found.too_short);
        s.changes.extend(found.changes.into_iter().map(|mut c| {
            c.index = at[c.index];
            c
        }));
    }
    s.changes.sort_by_key(|c| c.index);
    if s.changes.is_empty() {
        s.too_short = too_short.into_iter().next();
    }
    s
}

/// Search one series (or one speed of it) for change points.
fn search_one(g: Gathered, opt: &Options) -> Series {
    let mut s = g.series;
    let medians: Vec<f64> = s.runs.iter().map(|p| p.median).collect();
    let (detection, cut_short) = changepoint::detect_bounded(&medians, opt, changepoint::MAX_SHUFFLED);
    let found = match detection {
        Detection::TooShort { len, needed } => {
            s.too_short = Some((len, needed));
            return s;
        }
        Detection::Found(c) => c,
    };
    if cut_short {
        eprintln!(
            "kdelta: warning: {} --config {} on host {} ({} runs): the change-point search stopped after {} change point(s), \
             at its bound of {} values shuffled; fewer --permutations finds the rest",
            crate::model::text::printable(&s.benchmark),
            crate::model::text::printable(&s.config),
            crate::model::text::printable(&s.host),
            medians.len(),
            found.len(),
            changepoint::MAX_SHUFFLED
        );
    }
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(found.iter().map(|c| c.index));
    bounds.push(medians.len());
    for (k, cp) in found.iter().enumerate() {
        let (lo, mid, hi) = (bounds[k], bounds[k + 1], bounds[k + 2]);
        let pool = |a: usize, b: usize| g.samples[a..b].concat();
        let (sb, sa) = (pool(lo, mid), pool(mid, hi));
        let sides = Sides {
            medians_before: &medians[lo..mid],
            medians_after: &medians[mid..hi],
            samples_before: &sb,
            samples_after: &sa,
        };
        if let Some(step) = changepoint::step(&sides, opt.alpha) {
            s.changes.push(Change::of(cp, &s.runs, step));
        }
    }
    s
}

/// `--order-by KEY`: the runs that have metadata KEY, ordered by its value
/// (as numbers when every value is one, else as text; ties by start time)
/// rather than by start time. None having it is bad input.
fn order_by_meta(runs: &mut Vec<(RunRecord, Vec<ResultRecord>)>, key: &str) -> Result<()> {
    runs.retain(|(r, _)| r.meta.get(key).is_some());
    if runs.is_empty() {
        return Err(bad_input(format!(
            "--order-by {key}: no run chosen has metadata {key} (given with run --meta {key}=VALUE)"
        )));
    }
    let value = |r: &RunRecord| r.meta.get(key).unwrap_or_default().to_string();
    let numeric = runs.iter().all(|(r, _)| value(r).parse::<f64>().is_ok_and(f64::is_finite));
    // Stable: runs of one value keep their start-time order.
    if numeric {
        runs.sort_by(|(a, _), (b, _)| {
            value(a).parse::<f64>().unwrap_or(0.0).total_cmp(&value(b).parse().unwrap_or(0.0))
        });
    } else {
        runs.sort_by_key(|(r, _)| value(r));
    }
    Ok(())
}

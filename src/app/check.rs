//! `kdelta check`: a regression gate. The selected benchmarks are run (and
//! stored like any run) or a stored run is taken (`--run`), and each row is
//! judged against a baseline run with the comparison `kdelta compare A B`
//! makes (`Report::for_two_runs`, so `stats::compare_sides` decides every
//! star). The exit status is what CI and `git bisect run` read:
//!
//! Each comparison answers *different*, *same* or *unknown*
//! (`stats::verdict`); a row is judged from that answer:
//!
//! - 0: every row is ok: the same (within the noise threshold), better, or
//!   worse by less than `--max-regression` with its whole interval within
//!   that limit (a non-inferiority test);
//! - 1: a row regressed: different (starred) and worse, in the benchmark's
//!   direction, than `--max-regression` (by default the noise threshold);
//! - 125: no row regressed, but a row that matters is unknown at the end of
//!   `--budget`: its interval still reaches past the limit, a side's star
//!   was withheld (noisy, busy, too few rounds), a failed result on either
//!   side (with `--within`, a compared side that failed, the baseline or
//!   any other: a crashing build never passes, and `git bisect run` skips
//!   it), or a figure below the timer's resolution;
//! - 128: bad input, before anything runs: an unknown run or label, a
//!   selector matching nothing in the baseline, a baseline measured on
//!   another machine (without `--any-host`), no row in common; or a failure
//!   before a verdict. Above 127, `git bisect run` stops rather than take
//!   it as "bad" (`app::main` maps every error of `check` to it).
//!
//! The machine is its hardware as the host snapshot records it (CPU model,
//! topology, architecture, memory within 5 %), not its software: bisecting a
//! kernel or a C library changes those, and the baseline stays comparable.

use super::*;
use crate::cli::CheckArgs;
use crate::model::record::{ResultRecord, RunRecord, Status};
use crate::report::fingerprint::{differences, Fingerprint};
use crate::report::model::{Cell, Row, Table};
use crate::stats::verdict::Answer;
use crate::stats::Comparison;
use serde_json::Value;

/// The verdict on one row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Not regressed; the note says why when it is not plain.
    Ok(Option<String>),
    /// Significantly better.
    Improved,
    /// Significantly worse, beyond the limit.
    Regressed,
    /// It cannot be judged, and it matters: why.
    CannotTell(String),
}

impl Verdict {
    fn text(&self) -> String {
        match self {
            Verdict::Ok(None) => "ok".into(),
            Verdict::Ok(Some(why)) => format!("ok ({why})"),
            Verdict::Improved => "improved".into(),
            Verdict::Regressed => "regressed".into(),
            Verdict::CannotTell(why) => format!("cannot tell ({why})"),
        }
    }
}

/// What a row is judged by: the comparison's options and the slowdown allowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) opt: CompareOptions,
    pub(crate) max_regression_pct: f64,
    /// Allowed beyond `max_regression_pct` for the machine's drift between
    /// a stored run and this one (`--drift`); 0 within one run.
    pub(crate) drift_pct: f64,
}

impl Limits {
    /// The slowdown a row may show before it regresses, in percent.
    fn allowed_pct(&self) -> f64 {
        self.max_regression_pct + self.drift_pct
    }

    /// The limit as the lines name it: `--max-regression 1%`, and against
    /// a stored run `--max-regression 1% + --drift 2%`.
    fn named(&self) -> String {
        match self.drift_pct {
            d if d > 0.0 => format!("--max-regression {}% + --drift {d}%", self.max_regression_pct),
            _ => format!("--max-regression {}%", self.max_regression_pct),
        }
    }
}

/// True when B is worse than A by at least `pct`, on the log scale as the
/// noise threshold is (a 2x slowdown of a time and a halved rate alike).
fn worse_beyond(c: &Comparison, pct: f64) -> bool {
    c.speedup < 1.0 && -c.speedup.ln() >= (1.0 + pct / 100.0).ln() - 1e-12
}

fn failed(side: &str, c: &Cell) -> Option<Verdict> {
    if c.status == Status::Ok {
        return None;
    }
    let why = c.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    Some(Verdict::CannotTell(format!("{side} result {}{why}", c.status.as_str())))
}

/// The verdict on one row: the baseline's cell, the new one, and the
/// comparison between them (`None` where either has no figure).
pub(crate) fn judge(base: &Cell, new: &Cell, change: Option<&Comparison>, lim: &Limits) -> Verdict {
    if let Some(v) = failed("the baseline's", base).or_else(|| failed("this", new)) {
        return v;
    }
    if base.below_resolution.is_some() || new.below_resolution.is_some() {
        return Verdict::CannotTell("a side is below the timer's resolution".into());
    }
    let Some(c) = change else {
        return Verdict::CannotTell("no samples to compare".into());
    };
    let worse = worse_beyond(c, lim.allowed_pct());
    if c.significant {
        return if c.speedup > 1.0 {
            Verdict::Improved
        } else if worse {
            Verdict::Regressed
        } else {
            Verdict::Ok(Some(format!("worse, within {}", lim.named())))
        };
    }
    if c.answer == Answer::Same && lim.allowed_pct() >= lim.opt.threshold_pct {
        return Verdict::Ok(Some("same".into()));
    }
    // Not different: ok only when even the interval's worse end is within
    // the limit (non-inferiority); otherwise it is not known yet.
    let (Some(low), Some(high)) = (c.ci_low, c.ci_high) else {
        return Verdict::CannotTell(c.withheld.map_or("no interval of the change".into(), |w| w.describe().into()));
    };
    let limit = (1.0 + lim.allowed_pct() / 100.0).ln();
    if -low.ln() < limit {
        return Verdict::Ok(Some(format!("within {}", lim.named())));
    }
    // As a slowdown (+ worse), the sign a time's change is printed with.
    let interval = format!("of the slowdown {:+.1}% to {:+.1}%", (1.0 / high - 1.0) * 100.0, (1.0 / low - 1.0) * 100.0);
    // Sampling let go of it early (the futility stop): more --budget is
    // what could change that, not a longer wait for the same budget.
    let early = if base.futile || new.futile {
        "; sampling stopped early: the most samples --budget allows could not settle it"
    } else {
        ""
    };
    match c.withheld {
        Some(w) if w != crate::stats::Withheld::FewSamples => {
            Verdict::CannotTell(format!("{}; interval {interval}{early}", w.describe()))
        }
        _ if crate::stats::compare::best_rank_p(base.n, new.n) >= lim.opt.alpha => Verdict::CannotTell(format!(
            "too few clean samples to be significant ({} and {}): give more --runs or --budget",
            base.n, new.n
        )),
        _ if !early.is_empty() => {
            Verdict::CannotTell(format!("interval {interval} reaches past {}{early}", lim.named()))
        }
        _ => Verdict::CannotTell(format!("interval {interval} reaches past {}: give more --budget", lim.named())),
    }
}

/// The exit status of a check: a regression wins over a row that cannot be
/// told, which wins over ok.
pub(crate) fn status(verdicts: &[&Verdict]) -> u8 {
    if verdicts.iter().any(|v| matches!(v, Verdict::Regressed)) {
        exit::FAILED
    } else if verdicts.iter().any(|v| matches!(v, Verdict::CannotTell(_))) {
        exit::CANNOT_TELL
    } else {
        exit::OK
    }
}

/// What differs between two host snapshots: (the machine's hardware, which
/// forbids the comparison, and the rest: kernel, microcode, mitigations, C
/// library, which does not).
pub(crate) fn machine_differences(base: &Value, here: &Value) -> (Vec<String>, Vec<String>) {
    const HARDWARE: [&str; 3] = ["CPU model", "topology", "architecture"];
    let (a, b) = (Fingerprint::of(base), Fingerprint::of(here));
    let part = |f: &Fingerprint, hw: bool| Fingerprint {
        machine: f.machine.iter().filter(|(n, _)| *n != "memory" && HARDWARE.contains(n) == hw).cloned().collect(),
        kernel: if hw { Vec::new() } else { f.kernel.clone() },
    };
    let (mut hardware, _) = differences(&part(&a, true), &part(&b, true));
    let (soft, kernel) = differences(&part(&a, false), &part(&b, false));
    let mem = |h: &Value| h.get("mem_total_bytes").and_then(Value::as_u64);
    if let (Some(x), Some(y)) = (mem(base), mem(here)) {
        // MemTotal moves by a few MiB from kernel to kernel: 5 % is another machine.
        if x.abs_diff(y) as f64 > 0.05 * x.max(y) as f64 {
            hardware.push(format!("memory: {} MiB vs {} MiB", x >> 20, y >> 20));
        }
    }
    (hardware, kernel.into_iter().chain(soft).collect())
}

/// Refuse a baseline from another machine unless `--any-host`; say what
/// else differs either way.
fn same_machine(base: &RunRecord, here: &Value, any_host: bool) -> Result<()> {
    let (hardware, other) = machine_differences(&base.host, here);
    if !hardware.is_empty() && !any_host {
        return Err(bad_input(format!(
            "{} was measured on another machine ({}): give --any-host to judge against it anyway",
            crate::report::header::run_name(base),
            hardware.join("; ")
        )));
    }
    if !hardware.is_empty() {
        eprintln!("kdelta: warning: the baseline comes from another machine: {}", hardware.join("; "));
    }
    if !other.is_empty() {
        eprintln!("kdelta: differs from the baseline in: {}", other.join("; "));
    }
    Ok(())
}

/// A result a selector picks: its family, its name or a glob of it; every
/// result when there is no selector.
fn selected(selectors: &[String], r: &ResultRecord) -> bool {
    selectors.is_empty()
        || selectors.iter().any(|s| {
            r.family == *s || r.benchmark == *s || glob::Pattern::new(s).is_ok_and(|p| p.matches(&r.benchmark))
        })
}

/// Every selector must pick something in the baseline.
fn selectors_in_baseline(selectors: &[String], base: &RunRecord, results: &[ResultRecord]) -> Result<()> {
    for s in selectors {
        glob::Pattern::new(s).map_err(|e| bad_input(format!("bad selector {s:?}: {e}")))?;
        if !results.iter().any(|r| selected(std::slice::from_ref(s), r)) {
            let mut names: Vec<&str> = results.iter().map(|r| r.benchmark.as_str()).collect();
            names.dedup();
            return Err(bad_input(format!(
                "selector {s:?} matches nothing in {}: it has {}",
                crate::report::header::run_name(base),
                if names.is_empty() { "no results".to_string() } else { names.join(", ") }
            )));
        }
    }
    Ok(())
}

/// `--run RUN` judges a stored run: options for a run to make are refused.
fn no_run_options(a: &RunArgs) -> Result<()> {
    if !a.config.is_empty() || !a.param.is_empty() || a.runs.is_some() || a.label.is_some() || a.quick {
        return Err(bad_input(
            "--run judges a stored run: --config, --param, --cmd (and the other family flags), --runs, --quick \
             and --label are for a run check makes; drop them or drop --run",
        ));
    }
    Ok(())
}

/// `check`'s `--budget` when none is given: an answer near a minute.
const CHECK_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);

pub(super) fn cmd_check(db: &Option<PathBuf>, mut a: CheckArgs) -> Result<u8> {
    let began = std::time::Instant::now();
    if a.stored.is_none() {
        a.run.budget = a.run.budget.or(Some(CHECK_BUDGET));
    } else if a.run.budget.is_some() {
        return Err(bad_input("--run judges a stored run: --budget is for a run check makes; drop one"));
    }
    let mut lim = Limits {
        opt: CompareOptions { threshold_pct: a.run.threshold, ..Default::default() },
        max_regression_pct: a.max_regression.unwrap_or(a.run.threshold),
        drift_pct: 0.0,
    };
    if a.run.format != Format::Text || a.run.verbose {
        return Err(bad_input("check prints one line per row: --format and --verbose are for `kdelta run`"));
    }
    if a.run.sort.is_some() {
        return Err(bad_input("check prints one line per row, in the order of the table: --sort is for `kdelta run`"));
    }
    let Some(against) = a.against.clone() else { return check_within(db, &a, &lim) };
    let within_lim = lim;
    lim.drift_pct = a.drift;
    let rebase = a.baseline_cmd.as_deref().map(|c| rebase::settings(&a.run, c)).transpose()?;
    let Some((base, mut base_results, run, mut results)) = baseline_and_run(db, &a, &against)? else {
        return Ok(exit::INTERRUPTED);
    };
    let (base_name, run_name) = (crate::report::header::run_name(&base), crate::report::header::run_name(&run));
    let rules = super::between::withholding((&base, "the baseline"), &run, lim.max_regression_pct, lim.allowed_pct());
    run::shown_in_unit(&mut base_results, &a.run);
    run::shown_in_unit(&mut results, &a.run);
    let rep = Report::for_two_runs((base, base_results), (run, results), &lim.opt);
    let mut rows: Vec<Line> = rep.tables.iter().flat_map(|t| lines(t, &lim, false)).collect();
    let withheld_why = rules.map(|bar| {
        rules::withhold(&mut rows, &bar.why, bar.beyond);
        bar.why
    });
    let verdicts: Vec<&Verdict> = rows.iter().filter_map(|l| l.verdict.as_ref()).collect();
    if let Some(settings) = rebase.filter(|_| status(&verdicts) == exit::CANNOT_TELL) {
        let why = withheld_why.unwrap_or_else(|| format!("a stored run cannot tell within {}", lim.named()));
        eprintln!(
            "kdelta: {why}: measuring the baseline's build (--baseline-cmd) again, interleaved with this \
             one, and judging the two as --within does"
        );
        rebase::within(&mut a, settings, began);
        return check_within(db, &a, &within_lim);
    }
    if rows.iter().all(|l| l.verdict.is_none()) {
        return Err(bad_input(format!(
            "{run_name} has no row {base_name} has (benchmark, parameters and configuration): \
             see `kdelta compare` of the two"
        )));
    }
    Ok(verdict_out(&rows, &lim, &format!("{run_name} against {base_name}")))
}

/// The baseline `against` names and the run judged against it (the stored
/// `--run`, or one measured now and stored), each with its selected
/// results; `None` when the measured run was interrupted.
#[allow(clippy::type_complexity)]
fn baseline_and_run(
    db: &Option<PathBuf>,
    a: &CheckArgs,
    against: &str,
) -> Result<Option<(RunRecord, Vec<ResultRecord>, RunRecord, Vec<ResultRecord>)>> {
    let store = stored::open_existing(db)?;
    let base = store.find_run(against)?;
    let mut base_results = stored::results(&store, base.id)?;
    selectors_in_baseline(&a.run.selectors, &base, &base_results)?;
    base_results.retain(|r| selected(&a.run.selectors, r));
    let (run, mut results) = match &a.stored {
        Some(key) => {
            no_run_options(&a.run)?;
            let (run, results) = stored::load(&store, key)?;
            same_machine(&base, &run.host, a.any_host)?;
            (run, results)
        }
        None => {
            let host = host_snapshot()?;
            same_machine(&base, &serde_json::to_value(&host)?, a.any_host)?;
            drop(store);
            let req = run::request(&a.run)?;
            let plan = planned_run(&a.run, &req, &host)?;
            planned::share_a_row(&plan, &crate::report::header::run_name(&base), &base_results)?;
            match measured(db, &req, plan, host)? {
                Some(got) => got,
                None => return Ok(None),
            }
        }
    };
    results.retain(|r| selected(&a.run.selectors, r));
    for note in modes::within_speeds(&stored::open_existing(db)?, against, &base, &mut base_results, &results)? {
        eprintln!("kdelta: {note}");
    }
    Ok(Some((base, base_results, run, results)))
}

/// The plan of the run `req` (made of `a`) asks for: every mistake in it
/// is refused here, before anything runs or is stored.
fn planned_run(
    a: &RunArgs,
    req: &crate::harness::plan::Request,
    host: &crate::topology::Host,
) -> Result<crate::harness::plan::Plan> {
    if a.selectors.is_empty() && a.param.iter().any(|s| s.name == "cmd") {
        return Err(bad_input(format!("no benchmark given: {}", super::cmd_hint("check"))));
    }
    if a.selectors.is_empty() {
        return Err(bad_input("no benchmark given: name what to run (as `kdelta run` takes it), or --run RUN"));
    }
    plan::plan(req, &host.topology, bench::registry())
}

/// Run `plan` (of `req`) and store it: the run and its results, or `None`
/// when it was interrupted.
fn measured(
    db: &Option<PathBuf>,
    req: &crate::harness::plan::Request,
    plan: crate::harness::plan::Plan,
    host: crate::topology::Host,
) -> Result<Option<(RunRecord, Vec<ResultRecord>)>> {
    let output = run::measure_planned(db, req, plan, host)?;
    if output.interrupted {
        eprintln!("kdelta: interrupted; run {} is marked incomplete", output.run.id);
        return Ok(None);
    }
    eprintln!("kdelta: stored as {}", crate::report::header::run_name(&output.run));
    let mut results = output.results;
    bench::canonical_results(&mut results);
    Ok(Some((output.run, results)))
}

/// `--within`: judge what one run compares (its configurations, the values
/// of a swept parameter, `--cmd` alternatives), each against the first,
/// interleaved round by round in the same run: on a machine whose speed
/// drifts from run to run, the comparison a stored baseline cannot give.
fn check_within(db: &Option<PathBuf>, a: &CheckArgs, lim: &Limits) -> Result<u8> {
    let (run, mut results) = match &a.stored {
        Some(key) => {
            no_run_options(&a.run)?;
            stored::load(&stored::open_existing(db)?, key)?
        }
        None => {
            let req = run::request(&a.run)?;
            let host = host_snapshot()?;
            let plan = planned_run(&a.run, &req, &host)?;
            if !planned::compares(&plan) {
                return Err(bad_input(WITHIN_NOTHING));
            }
            match measured(db, &req, plan, host)? {
                Some(got) => got,
                None => return Ok(exit::INTERRUPTED),
            }
        }
    };
    results.retain(|r| selected(&a.run.selectors, r));
    let run_name = crate::report::header::run_name(&run);
    // Sides that could not be measured at all (every compared command
    // failed): no table compares them, and each is a row that cannot be told.
    let unmeasured: Vec<Line> = results.iter().filter(|r| r.status != Status::Ok).map(unmeasured).collect();
    run::shown_in_unit(&mut results, &a.run);
    let rep = Report::for_run(run, results, &lim.opt);
    let mut rows: Vec<Line> = rep.tables.iter().flat_map(|t| lines(t, lim, true)).collect();
    if rows.iter().all(|l| l.verdict.is_none()) {
        if unmeasured.is_empty() {
            return Err(bad_input(format!("{run_name}: {WITHIN_NOTHING}")));
        }
        rows = unmeasured;
    }
    Ok(verdict_out(&rows, lim, &format!("{run_name}, each against the first it compares")))
}

/// The row of a result that failed, judged on its own: it cannot be told.
fn unmeasured(r: &ResultRecord) -> Line {
    let params = r.params.display_set(&crate::bench::option_defaults(&r.benchmark));
    let name = format!("{} {} [{}]", r.benchmark, one_line(&params), r.config);
    let why = r.reason.as_deref().map(|x| format!(": {}", crate::model::text::printable(x))).unwrap_or_default();
    let verdict = Verdict::CannotTell(format!("result {}{why}", r.status.as_str()));
    Line { text: format!("{name}: {}", verdict.text()), name, verdict: Some(verdict), change: None }
}

const WITHIN_NOTHING: &str = "--within judges what one run compares, each against the first: give two or more \
     --config values, values of a --param (a,b) or --cmd commands (the first is the baseline)";

/// Print the rows and the verdict's line; the exit status.
fn verdict_out(rows: &[Line], lim: &Limits, what: &str) -> u8 {
    let mut text: String = rows.iter().map(|l| l.text.clone() + "\n").collect();
    let verdicts: Vec<&Verdict> = rows.iter().filter_map(|l| l.verdict.as_ref()).collect();
    let code = status(&verdicts);
    text.push_str(&summary(code, rows, lim, what));
    out(&text);
    code
}

/// One printed row, and its verdict (`None` for a row the baseline lacks).
struct Line {
    text: String,
    name: String,
    verdict: Option<Verdict>,
    /// The change's log speedup, where it was compared (> 0: better).
    change: Option<f64>,
}

/// The rows of one table (a configuration of the baseline against one of
/// the new run) that the new run has.
fn lines(t: &Table, lim: &Limits, within: bool) -> Vec<Line> {
    let config = |i: usize| t.columns[i].results.first().map(|r| r.config.clone()).unwrap_or_default();
    // Two runs: the configurations compared; within a run: the columns,
    // each against the first.
    let configs = |col: usize| {
        let (ca, cb) =
            if within { (t.columns[col].name.clone(), t.columns[0].name.clone()) } else { (config(0), config(col)) };
        if ca == cb {
            ca
        } else {
            format!("{ca} vs {cb}")
        }
    };
    // Only the parameters that differ between rows name one.
    let varying: Vec<&String> = t
        .rows
        .first()
        .map(|r0| r0.params.0.keys().filter(|k| t.rows.iter().any(|r| r.params.0.get(*k) != r0.params.0.get(*k))))
        .into_iter()
        .flatten()
        .collect();
    let mut out = Vec::new();
    for row in &t.rows {
        for col in 1..t.columns.len() {
            let (Some(Some(new)), Some(change)) = (row.cells.get(col), row.changes.get(col - 1)) else { continue };
            let params: String =
                varying.iter().filter_map(|k| row.params.0.get(*k).map(|v| format!(" {k}={}", one_line(v)))).collect();
            let name = format!("{}{params} [{}]", row.benchmark, configs(col));
            let Some(base) = row.cells[0].as_ref() else {
                out.push(Line { text: format!("{name}: not in the baseline"), name, verdict: None, change: None });
                continue;
            };
            let verdict = judge(base, new, change.as_ref(), lim);
            let figures = figures(base, new, row, change.as_ref());
            let log = change.as_ref().map(|c| c.speedup.ln()).filter(|x| x.is_finite());
            out.push(Line {
                text: format!("{name}: {figures}: {}", verdict.text()),
                name,
                verdict: Some(verdict),
                change: log,
            });
        }
    }
    out
}

fn one_line(v: &str) -> String {
    crate::model::params::one_line(v).into_owned()
}

/// `23.0 -> 46.1 ms (+100.2%, 2.00x slower, worse)`: the medians, then the
/// change judged, in percent of the figure and as a factor. Where the sides
/// took turns (`--within`), the change judged is the adjacent pairs', which
/// may differ from the medians' ratio: it says so, so that its percent and
/// its factor never disagree with each other.
fn figures(base: &Cell, new: &Cell, row: &Row, change: Option<&Comparison>) -> String {
    let unit = &row.unit;
    let median = |c: &Cell| c.median.map(report::fmt_num).unwrap_or_else(|| c.status.as_str().to_string());
    let mut s = format!("{} -> {} {unit}", median(base), median(new));
    let judged = change.map(|c| c.speedup).filter(|x| x.is_finite() && *x > 0.0);
    let pct = match (judged, base.median, new.median) {
        // The figure's own change from the speedup (B against A, > 1 better).
        (Some(x), _, _) => Some(match row.better {
            crate::model::Better::Lower => 1.0 / x - 1.0,
            crate::model::Better::Higher => x - 1.0,
        }),
        (None, Some(a), Some(b)) if a != 0.0 => Some(b / a - 1.0),
        _ => None,
    };
    if let Some(pct) = pct {
        let pairs = if change.is_some_and(|c| c.paired.is_some()) { " in adjacent pairs" } else { "" };
        let way = match judged {
            Some(x) if x < 1.0 => format!(", {}, worse", report::fmt_factor(x, unit)),
            Some(x) if x > 1.0 => format!(", {}, better", report::fmt_factor(x, unit)),
            _ => String::new(),
        };
        s.push_str(&format!(" ({:+.1}%{pairs}{way})", pct * 100.0));
    }
    s
}

/// The last line: the verdict of the whole check, naming what decided it.
fn summary(code: u8, rows: &[Line], lim: &Limits, what: &str) -> String {
    let named = |pick: fn(&Verdict) -> bool| {
        rows.iter().filter(|l| l.verdict.as_ref().is_some_and(pick)).map(|l| l.name.as_str()).collect::<Vec<_>>()
    };
    let judged = rows.iter().filter(|l| l.verdict.is_some()).count();
    match code {
        exit::FAILED => format!(
            "regressed: {} ({what}, beyond {}%)\n",
            named(|v| matches!(v, Verdict::Regressed)).join(", "),
            lim.allowed_pct()
        ),
        exit::CANNOT_TELL => {
            format!("cannot tell: {} ({what})\n", named(|v| matches!(v, Verdict::CannotTell(_))).join(", "))
        }
        _ => format!("ok: {judged} row(s), none regressed beyond {}% ({what})\n", lim.allowed_pct()),
    }
}

mod modes;
mod planned;
mod rebase;
mod rules;
#[cfg(test)]
mod tests;

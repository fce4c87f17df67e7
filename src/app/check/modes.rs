//! `check --against LABEL` when the label's runs of a row fall into two
//! speeds that take turns (`stats::run_modes`, as `history` finds them): a
//! VM can run a whole run at one of two speeds, and the newest baseline run
//! may be in the other speed than the new run, which then reads as a change
//! the build did not make, or hides one. Such a row is judged against the
//! newest baseline run in the new run's own speed, and a note names the
//! speeds. A baseline given by run id, or a label with too few runs, is
//! judged as it is.

use crate::model::record::{ResultRecord, RunRecord, RunStatus, Status};
use crate::report::fmt_num;
use crate::stats::run_modes;
use crate::store::{HistoryQuery, Store};
use anyhow::Result;

/// The label's runs a series is read from at most (the newest).
const MOST_RUNS: usize = 40;
/// Fewer runs of a row than this make no series to find speeds in.
const FEWEST_RUNS: usize = 6;

/// Replace, in `base_results` (the rows of `base`, the newest run labelled
/// `against`), each row whose label series falls into two speeds with the
/// newest run's row in the speed `new`'s row is in; the notes to print, one
/// per row judged within a speed.
pub(super) fn within_speeds(
    store: &Store,
    against: &str,
    base: &RunRecord,
    base_results: &mut [ResultRecord],
    new: &[ResultRecord],
) -> Result<Vec<String>> {
    if base.label.as_deref() != Some(against) {
        return Ok(Vec::new());
    }
    let q = HistoryQuery { label: Some(against.to_string()), ..Default::default() };
    let mut runs: Vec<RunRecord> =
        store.runs_where(&q)?.into_iter().filter(|r| r.status == RunStatus::Complete).take(MOST_RUNS).collect();
    if runs.len() < FEWEST_RUNS {
        return Ok(Vec::new());
    }
    runs.reverse();
    let series: Vec<(i64, Vec<ResultRecord>)> =
        runs.iter().map(|r| Ok((r.id, super::stored::results(store, r.id)?))).collect::<Result<_>>()?;
    let mut notes = Vec::new();
    for b in base_results.iter_mut() {
        let same = |r: &&ResultRecord| r.config == b.config && r.point_key() == b.point_key();
        let Some(n) = new.iter().find(same).and_then(|n| median(n).map(|m| (n, m))) else { continue };
        let found: Vec<(i64, &ResultRecord, f64)> = series
            .iter()
            .filter_map(|(id, rs)| rs.iter().find(same).and_then(|r| median(r).map(|m| (*id, r, m))))
            .collect();
        if found.len() < FEWEST_RUNS {
            continue;
        }
        let medians: Vec<f64> = found.iter().map(|f| f.2).collect();
        let Some(modes) = run_modes::of(&medians) else { continue };
        let (lo, hi) = (modes.speeds.low.median, modes.speeds.high.median);
        let new_high = (n.1 / lo).ln().abs() > (n.1 / hi).ln().abs();
        let Some(k) = modes.high.iter().rposition(|&h| h == new_high) else { continue };
        let (id, chosen, _) = found[k];
        let speed = |high: bool| if high { fmt_num(hi) } else { fmt_num(lo) };
        notes.push(format!(
            "{} [{}]: the runs labelled {against} fall into two speeds that take turns ({} near {} {unit}, {} near \
             {} {unit}); this run is near {}, so it is judged against run {id}, the newest near it",
            b.benchmark,
            b.config,
            modes.speeds.low.workers,
            fmt_num(lo),
            modes.speeds.high.workers,
            fmt_num(hi),
            speed(new_high),
            unit = b.unit,
        ));
        if id != base.id {
            *b = chosen.clone();
        }
    }
    Ok(notes)
}

fn median(r: &ResultRecord) -> Option<f64> {
    r.summary.as_ref().filter(|_| r.status == Status::Ok).map(|s| s.median).filter(|m| m.is_finite() && *m > 0.0)
}

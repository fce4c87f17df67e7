//! The lines under a table: why a result failed, where its tasks ran, and
//! its warnings, either one line per kind with counts and the worst case
//! (the default) or every remark of every result (`--verbose`,
//! `kdelta show RUN --warnings`).

use super::fmt_num;
use super::model::Cell;
use crate::model::record::Status;
use crate::stats::Warning;

/// One result as the remarks see it.
pub(crate) struct Entry<'a> {
    /// `bench.a procs=2 size=16 [up]`
    pub(crate) who: String,
    pub(crate) unit: &'a str,
    pub(crate) cell: &'a Cell,
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::Unavailable => "n/a",
    }
}

/// Every remark of one result, one line each.
pub(crate) fn full(e: &Entry) -> Vec<String> {
    let c = e.cell;
    let mut v = Vec::new();
    if let Some(r) = &c.reason {
        v.push(format!("{}: {}: {r}", e.who, status_word(c.status)));
    }
    if !c.placement.is_empty() {
        v.push(format!("{}: {}", e.who, crate::stats::trust::describe_split(&c.placement, e.unit, fmt_num)));
    }
    if let Some(b) = c.below_resolution {
        v.push(format!(
            "{}: below resolution (< {} {}): the interval of the net figure reaches zero",
            e.who,
            fmt_num(b),
            e.unit
        ));
    }
    if c.disturbed > 0 {
        v.push(format!(
            "{}: {} samples disturbed by other work (kept, not used), {} retaken",
            e.who, c.disturbed, c.retaken
        ));
    }
    if c.noisy {
        v.push(format!("{}: noisy: {} clean samples of {} wanted; never marked significant", e.who, c.n, c.wanted));
    }
    for w in &c.warnings {
        v.push(format!("{}: {w}", e.who));
    }
    for n in &c.notes {
        v.push(format!("{}: {n}", e.who));
    }
    v
}

/// The remarks of many results: in full with `verbose`, else summarised.
pub(crate) fn lines(entries: &[Entry], verbose: bool) -> Vec<String> {
    if verbose {
        return entries.iter().flat_map(full).collect();
    }
    let ok = entries.iter().filter(|e| e.cell.status == Status::Ok).count();
    let mut out = Vec::new();
    reason_lines(&mut out, entries);
    // Placement splits are the finding itself: each one in full.
    for e in entries.iter().filter(|e| !e.cell.placement.is_empty()) {
        out.push(format!("{}: {}", e.who, crate::stats::trust::describe_split(&e.cell.placement, e.unit, fmt_num)));
    }
    sample_lines(&mut out, entries, ok);
    warning_lines(&mut out, entries, ok);
    note_lines(&mut out, entries);
    out
}

fn reason_lines(out: &mut Vec<String>, entries: &[Entry]) {
    // Why results failed or are unavailable, once per distinct reason.
    let mut reasons: Vec<(Status, &str, Vec<&str>)> = Vec::new();
    for e in entries {
        if let Some(r) = &e.cell.reason {
            match reasons.iter_mut().find(|(s, x, _)| *s == e.cell.status && *x == r.as_str()) {
                Some(g) => g.2.push(&e.who),
                None => reasons.push((e.cell.status, r, vec![&e.who])),
            }
        }
    }
    for (s, r, who) in reasons {
        out.push(format!("{}: {}: {r}", name_list(&who), status_word(s)));
    }
}

/// Figures below resolution, noisy results, disturbed samples: one line each.
fn sample_lines(out: &mut Vec<String>, entries: &[Entry], ok: usize) {
    let below: Vec<String> = entries
        .iter()
        .filter_map(|e| e.cell.below_resolution.map(|b| format!("{} < {} {}", e.who, fmt_num(b), e.unit)))
        .collect();
    if !below.is_empty() {
        out.push(format!(
            "below resolution (the subtracted overhead is as large as the difference) in {} of {ok} results: {}",
            below.len(),
            list(&below)
        ));
    }
    let noisy: Vec<&Entry> = entries.iter().filter(|e| e.cell.noisy).collect();
    if let Some(w) =
        noisy.iter().min_by(|a, b| frac(a.cell.clean, a.cell.wanted).total_cmp(&frac(b.cell.clean, b.cell.wanted)))
    {
        out.push(format!(
            "noisy (fewer clean samples than wanted; never marked significant) in {} of {ok} results (worst: {}, {} of {} clean)",
            noisy.len(),
            w.who,
            w.cell.clean,
            w.cell.wanted
        ));
    }
    let dist: Vec<&Entry> = entries.iter().filter(|e| e.cell.disturbed > 0).collect();
    if let Some(w) = dist.iter().max_by_key(|e| e.cell.disturbed) {
        let retaken: usize = dist.iter().map(|e| e.cell.retaken).sum();
        let total: usize = dist.iter().map(|e| e.cell.disturbed).sum();
        out.push(format!(
            "disturbed samples (other work on the CPU; kept, not used) in {} of {ok} results: {total} in all, {retaken} retaken (most: {}, {})",
            dist.len(),
            w.who,
            w.cell.disturbed
        ));
    }
}

/// One line per kind of warning, naming the worst case.
fn warning_lines(out: &mut Vec<String>, entries: &[Entry], ok: usize) {
    for kind in [Kind::Variation, Kind::Outliers, Kind::Clusters, Kind::Short] {
        let hits: Vec<(&Entry, &Warning)> = entries
            .iter()
            .flat_map(|e| e.cell.warnings.iter().filter(|w| kind_of(w) == kind).map(move |w| (e, w)))
            .collect();
        let Some((we, ww)) = hits.iter().max_by(|a, b| severity(a.1).total_cmp(&severity(b.1))) else { continue };
        let n = hits.iter().map(|(e, _)| e.who.as_str()).collect::<std::collections::BTreeSet<_>>().len();
        let (what, worst) = match ww {
            Warning::HighVariation { cv, .. } => ("high variation", format!("cv {}", pct(*cv))),
            Warning::Outliers { count, n } => ("outliers beyond 1.5 IQR", format!("{count} of {n} samples")),
            Warning::TwoClusters { low, high, .. } => {
                ("two clusters of samples", format!("near {} and {} {}", fmt_num(*low), fmt_num(*high), we.unit))
            }
            Warning::ShortSamples { secs } => ("samples short for the clock", format!("{:.0} us", secs * 1e6)),
            Warning::BusyMachine { .. } | Warning::SpeedChanged { .. } => continue,
        };
        let label = if kind == Kind::Short { "shortest" } else { "worst" };
        out.push(format!("{what} in {n} of {ok} results ({label}: {}, {worst})", we.who));
    }
}

fn note_lines(out: &mut Vec<String>, entries: &[Entry]) {
    // Benchmark notes: each distinct text once, with the results it concerns.
    let mut notes: Vec<(&str, Vec<&str>)> = Vec::new();
    for e in entries {
        for n in &e.cell.notes {
            match notes.iter_mut().find(|(x, _)| *x == n.as_str()) {
                Some(g) => g.1.push(&e.who),
                None => notes.push((n, vec![&e.who])),
            }
        }
    }
    for (n, who) in notes {
        out.push(format!("{}: {n}", name_list(&who)));
    }
}

/// The pointer to the full list, after the summary lines (when there is more to see).
pub(crate) fn hint(entries: &[Entry], verbose: bool) -> Option<String> {
    (!verbose && entries.iter().any(|e| !full(e).is_empty()))
        .then(|| "(every remark of every result: --verbose, or kdelta show RUN --warnings)".to_string())
}

fn frac(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

fn pct(f: f64) -> String {
    if f >= 1.0 {
        format!("{:.0}%", f * 100.0)
    } else {
        format!("{:.1}%", f * 100.0)
    }
}

/// The kinds of result warnings, one summary line each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Variation,
    Outliers,
    Clusters,
    Short,
    Busy,
}

fn kind_of(w: &Warning) -> Kind {
    match w {
        Warning::HighVariation { .. } => Kind::Variation,
        Warning::Outliers { .. } => Kind::Outliers,
        Warning::TwoClusters { .. } => Kind::Clusters,
        Warning::ShortSamples { .. } => Kind::Short,
        Warning::BusyMachine { .. } | Warning::SpeedChanged { .. } => Kind::Busy,
    }
}

/// Larger is worse.
fn severity(w: &Warning) -> f64 {
    match w {
        Warning::HighVariation { cv, .. } => *cv,
        Warning::Outliers { count, n } => frac(*count, *n),
        Warning::TwoClusters { low, high, .. } => high / low,
        Warning::ShortSamples { secs } => -secs,
        Warning::BusyMachine { .. } | Warning::SpeedChanged { .. } => 0.0,
    }
}

/// `a`, `a and b`, or `a, b and 3 more`.
fn name_list(who: &[&str]) -> String {
    match who.len() {
        0 => String::new(),
        1 => who[0].to_string(),
        2 => format!("{} and {}", who[0], who[1]),
        n => format!("{}, {} and {} more", who[0], who[1], n - 2),
    }
}

fn list(items: &[String]) -> String {
    if items.len() <= 3 {
        items.join(", ")
    } else {
        format!("{}, ... ({} more)", items[..3].join(", "), items.len() - 3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(cv: f64) -> Cell {
        Cell {
            status: Status::Ok,
            median: Some(1.0),
            cv: Some(cv),
            n: 10,
            reason: None,
            remarks: vec![],
            below_resolution: None,
            noisy: false,
            placement: vec![],
            warnings: if cv > 0.05 { vec![Warning::HighVariation { cv, threshold: 0.05 }] } else { vec![] },
            notes: vec![],
            disturbed: 0,
            retaken: 0,
            wanted: 10,
            clean: 10,
            p99: None,
            throttling: None,
            futile: false,
        }
    }

    #[test]
    fn one_line_per_kind_with_the_worst() {
        let cells: Vec<Cell> = [0.01, 0.2, 8.66, 0.07].iter().map(|&cv| cell(cv)).collect();
        let entries: Vec<Entry> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| Entry { who: format!("lat.x{i} [up]"), unit: "us", cell: c })
            .collect();
        let l = lines(&entries, false);
        assert_eq!(l[0], "high variation in 3 of 4 results (worst: lat.x2 [up], cv 866%)");
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(hint(&entries, false).is_some() && hint(&entries, true).is_none());
        let full = lines(&entries, true);
        assert_eq!(full.len(), 3);
        assert!(full[1].starts_with("lat.x2 [up]: high variation: cv 866.0%"), "{full:?}");
    }

    #[test]
    fn reasons_and_notes_grouped() {
        let mut a = cell(0.0);
        a.status = Status::Unavailable;
        a.reason = Some("needs SMT".into());
        a.notes = vec!["ext4 without a journal".into()];
        let b = a.clone();
        let entries = vec![
            Entry { who: "x [ht]".into(), unit: "us", cell: &a },
            Entry { who: "y [ht]".into(), unit: "us", cell: &b },
        ];
        let l = lines(&entries, false);
        assert_eq!(l[0], "x [ht] and y [ht]: n/a: needs SMT");
        assert_eq!(l[1], "x [ht] and y [ht]: ext4 without a journal");
    }

    #[test]
    fn a_noisy_result_counts_its_clean_samples() {
        // Every sample disturbed: the figure is of all 30, none of them clean.
        let mut a = cell(0.0);
        a.noisy = true;
        a.n = 30;
        a.clean = 0;
        a.disturbed = 30;
        a.retaken = 20;
        let entries = vec![Entry { who: "lat.pipe [cpus=0]".into(), unit: "us", cell: &a }];
        let l = lines(&entries, false);
        assert!(l.iter().any(|l| l.contains("(worst: lat.pipe [cpus=0], 0 of 10 clean)")), "{l:?}");
    }
}

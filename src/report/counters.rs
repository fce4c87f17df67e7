//! Counters as figures: a result whose samples carry perf counts
//! (`SampleMeta::counters`, taken with `run --counters`) gives, per event,
//! a derived result of the counts per operation in each sample (per run for
//! a whole-run benchmark), and IPC where cycles and instructions were both
//! counted. Derived results keep the source's sample records, so the same
//! samples are clean or disturbed, in the same rounds, and they are compared
//! as any figure is: medians, intervals, stars ([`crate::stats::compare`]).
//! They are named `BENCHMARK LABEL` and carry the event in their extras
//! (`Extras::counter`); they never enter a family's geometric mean.

#[cfg(test)]
use super::table::{Column, Table};
use crate::model::record::{ResultRecord, Status};
use crate::model::Better;
use crate::stats;
#[cfg(test)]
use crate::stats::CompareOptions;

/// Events as shown: perf's name, the label of the derived row, and whether
/// the count is nanoseconds (task-clock) rather than events.
const SHOWN: &[(&str, &str, bool)] = &[
    ("context-switches", "ctx-switches", false),
    ("cpu-migrations", "migrations", false),
    ("minor-faults", "minor-faults", false),
    ("major-faults", "major-faults", false),
    ("task-clock", "task-clock", true),
    ("cycles", "cycles", false),
    ("instructions", "instructions", false),
    ("cache-references", "cache-references", false),
    ("cache-misses", "cache-misses", false),
    ("branch-misses", "branch-misses", false),
    ("LLC-load-misses", "LLC-load-misses", false),
    ("dTLB-load-misses", "dTLB-load-misses", false),
];

/// The label IPC is shown under.
const IPC: &str = "IPC";

/// Wake-ups of a task on another CPU: the sum of the two tracepoints that
/// mark one (`sys::perf::EVENTS`), shown as one row.
const REMOTE_WAKEUPS: (&str, &str, &str) = ("ipi:ipi_send_cpu", "sched:sched_wake_idle_without_ipi", "remote-wakeups");

/// Each sample's count of `event`, when every sample has one.
fn counts(r: &ResultRecord, event: &str) -> Option<Vec<f64>> {
    if r.samples_meta.len() != r.samples.len() || r.samples.is_empty() {
        return None;
    }
    r.samples_meta.iter().map(|m| m.counters.get(event).map(|&c| c as f64)).collect()
}

/// The operations each sample timed (1 for a whole-run sample).
pub(crate) fn ops(r: &ResultRecord) -> Vec<f64> {
    r.samples_meta.iter().map(|m| m.iterations.or(r.iterations).unwrap_or(1).max(1) as f64).collect()
}

/// The derived results of `r`, one per event counted in every sample, then
/// IPC; none for a result that failed or was not counted.
pub(crate) fn derive(r: &ResultRecord) -> Vec<ResultRecord> {
    if r.status != Status::Ok || r.extras.counter.is_some() {
        return Vec::new();
    }
    let per = if r.iterations.is_some() { "op" } else { "run" };
    let ops = ops(r);
    let mut out = Vec::new();
    for &(event, label, ns) in SHOWN {
        let Some(c) = counts(r, event) else { continue };
        let v = c.iter().zip(&ops).map(|(c, n)| c / n).collect();
        let unit = if ns { format!("ns/{per}") } else { format!("/{per}") };
        out.push(derived(r, event, label, unit, Better::Lower, v));
    }
    let (ipi, polled, label) = REMOTE_WAKEUPS;
    if let (Some(x), Some(y)) = (counts(r, ipi), counts(r, polled)) {
        let v = x.iter().zip(&y).zip(&ops).map(|((x, y), n)| (x + y) / n).collect();
        out.push(derived(
            r,
            "ipi:ipi_send_cpu+sched:sched_wake_idle_without_ipi",
            label,
            format!("/{per}"),
            Better::Lower,
            v,
        ));
    }
    if let (Some(cy), Some(ins)) = (counts(r, "cycles"), counts(r, "instructions")) {
        if cy.iter().all(|&c| c > 0.0) {
            let v = ins.iter().zip(&cy).map(|(i, c)| i / c).collect();
            out.push(derived(r, "instructions/cycles", IPC, "insn/cycle".into(), Better::Higher, v));
        }
    }
    out
}

fn derived(r: &ResultRecord, event: &str, label: &str, unit: String, better: Better, v: Vec<f64>) -> ResultRecord {
    let mut meta = r.samples_meta.clone();
    for m in &mut meta {
        m.counters.clear();
    }
    let extras = crate::model::extras::Extras {
        counter: Some(event.to_string()),
        compared_on: r.extras.compared_on.clone(),
        ..Default::default()
    };
    let mut d = ResultRecord {
        benchmark: format!("{} {label}", r.benchmark),
        unit,
        better,
        samples: v,
        samples_meta: meta,
        placement: Vec::new(),
        below_resolution: None,
        summary: None,
        extras,
        notes: Vec::new(),
        warnings: Vec::new(),
        // The stacks are the result's own, drawn once under it, not again
        // under each of its counters.
        profile: None,
        ..r.clone()
    };
    d.summary = stats::summarize(&d.clean_samples(), false);
    d
}

/// Each result followed by its derived counter results.
pub(super) fn expand(rs: &[ResultRecord]) -> Vec<ResultRecord> {
    rs.iter().flat_map(|r| std::iter::once(r.clone()).chain(derive(r))).collect()
}

/// The events no result of the report could count, each with its reason,
/// said once.
pub(super) fn uncounted(results: &[ResultRecord]) -> Vec<String> {
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for r in results {
        let Some(m) = &r.extras.counters_unavailable else { continue };
        for (event, why) in m {
            let why = why.as_str().unwrap_or("unavailable").to_string();
            match by_reason.iter_mut().find(|(w, _)| *w == why) {
                Some((_, evs)) if evs.contains(event) => {}
                Some((_, evs)) => evs.push(event.clone()),
                None => by_reason.push((why, vec![event.clone()])),
            }
        }
    }
    by_reason.into_iter().map(|(why, evs)| format!("counters unavailable: {}: {why}", evs.join(", "))).collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::record::SampleMeta;

    /// A `lat.pipe` result in `config` with samples `us` (microseconds per
    /// operation, `iterations` a sample) and each sample's counts.
    pub(in crate::report) fn counted_in(
        config: &str,
        us: &[f64],
        iterations: u64,
        per_sample: &[(&str, &[u64])],
    ) -> ResultRecord {
        let meta = (0..us.len())
            .map(|i| SampleMeta {
                round: i as u32 + 1,
                counters: per_sample.iter().map(|(e, v)| (e.to_string(), v[i])).collect(),
                ..Default::default()
            })
            .collect();
        ResultRecord {
            config: config.into(),
            samples_meta: meta,
            iterations: Some(iterations),
            ..crate::testing::stored::ok_result("lat.pipe", us)
        }
    }

    fn counted(iterations: u64, per_sample: &[(&str, &[u64])]) -> ResultRecord {
        counted_in("up", &vec![1.0; per_sample[0].1.len()], iterations, per_sample)
    }

    #[test]
    fn counts_become_figures_per_operation_with_ipc() {
        let r = counted(
            100,
            &[
                ("context-switches", &[200, 200, 210]),
                ("cycles", &[1000, 1000, 1000]),
                ("instructions", &[500, 600, 700]),
            ],
        );
        let d = derive(&r);
        let names: Vec<&str> = d.iter().map(|r| r.benchmark.as_str()).collect();
        assert_eq!(names, ["lat.pipe ctx-switches", "lat.pipe cycles", "lat.pipe instructions", "lat.pipe IPC"]);
        assert_eq!(d[0].samples, [2.0, 2.0, 2.1]);
        assert_eq!(d[0].unit, "/op");
        assert_eq!(d[3].samples, [0.5, 0.6, 0.7]);
        assert_eq!(d[3].better, Better::Higher);
        assert_eq!(d[0].summary.as_ref().unwrap().median, 2.0);
        // Rounds and disturbance marks are the source's.
        assert_eq!(d[0].samples_meta[2].round, 3);
        assert!(d[0].samples_meta.iter().all(|m| m.counters.is_empty()));
        // A derived result derives nothing further.
        assert!(derive(&d[0]).is_empty());
        // Nor does it carry its result's profile (drawn once, for the result).
        let mut r = r;
        r.profile = Some(Default::default());
        assert!(derive(&r).iter().all(|d| d.profile.is_none()));
    }

    #[test]
    fn a_sample_without_the_count_leaves_the_event_out() {
        let mut r = counted(10, &[("context-switches", &[1, 2])]);
        r.samples_meta[1].counters.clear();
        assert!(derive(&r).is_empty());
        let mut whole = counted(1, &[("cpu-migrations", &[3, 4])]);
        whole.iterations = None;
        let d = derive(&whole);
        assert_eq!((d[0].unit.as_str(), d[0].samples.clone()), ("/run", vec![3.0, 4.0]));
    }

    #[test]
    fn counter_rows_say_nothing_their_result_does_not() {
        // A result with one disturbed sample: the line under the table counts
        // it once, for the result, not again for each of its counters.
        let mut r = counted_in("up", &[1.0, 1.1, 1.2, 9.0], 10, &[("context-switches", &[20, 21, 20, 40])]);
        r.samples_meta[3].disturbed = true;
        r.quality = Some(crate::model::record::Quality { disturbed: 1, clean: 3, wanted: 3, ..Default::default() });
        let mut b = r.clone();
        b.config = "noht".into();
        let cols = [r, b]
            .into_iter()
            .map(|x| Column { name: x.config.clone(), cpus: "0".into(), results: expand(&[x]) })
            .collect();
        let t = Table::build(cols, &CompareOptions::default());
        assert_eq!(t.rows.len(), 2, "the figure and its counter");
        let g = super::super::grid::comparison(&t, 1.0, false);
        let line = g.notes.iter().find(|n| n.starts_with("disturbed samples")).expect("said");
        assert!(line.contains("in 2 of 2 results") && !line.contains("ctx-switches"), "{line}");
    }

    #[test]
    fn each_unavailable_reason_is_said_once() {
        let mut a = counted(1, &[("task-clock", &[1])]);
        let why = serde_json::json!({"cycles": "no PMU", "instructions": "no PMU"});
        a.extras.counters_unavailable = why.as_object().cloned();
        let b = a.clone();
        assert_eq!(uncounted(&[a, b]), ["counters unavailable: cycles, instructions: no PMU"]);
    }
}

//! Two parts of judging a sample, beside `Probe::meta`: a whole run's
//! rule by its best wait source, and the perf counts between snapshots.

use super::*;

impl Probe {
    /// A whole-run sample (`m`, its wall time and steal set) judged: the
    /// CPU time of the process and its group, other work on the watched
    /// CPUs, and what the tasks waited, by the best source there is.
    pub(super) fn whole_run(&self, m: &mut SampleMeta, a: &Snapshot, b: &Snapshot, throttled: f64) {
        let wall = m.wall_s;
        m.cpu_s = (b.process_cpu - a.process_cpu).max(0.0) + (b.group_cpu - a.group_cpu).max(0.0);
        m.nivcsw = b.process_nivcsw.saturating_sub(a.process_nivcsw);
        m.others_s = others(&self.watch, &self.watch, wall, m.cpu_s, &a.idle, &b.idle);
        let (seen_run, seen_wait) = seen(a, b);
        let fig = WholeRun {
            wall,
            others: m.others_s,
            unresolved: tick_resolution(self.watch.len(), wall),
            pressure: match (&self.pressure, a.pressure, b.pressure) {
                (Some((src, _)), Some(x), Some(y)) => Some((*src, (y - x).max(0.0))),
                _ => None,
            },
            seen_wait: (m.cpu_s > 0.0 && seen_run + 1.0 / clock::clk_tck() >= SEEN_COVERS * m.cpu_s)
                .then_some(seen_wait),
            throttled,
        };
        m.run_delay_s = Some(seen_wait);
        let (source, lost, disturbed) = judge_whole_run(&fig);
        m.wait_source = Some(source);
        m.lost_s = lost;
        m.disturbed = disturbed || stolen(wall, m.steal_s);
    }

    /// The counts between two snapshots, by event name: none when counting
    /// is off or the counters were reopened in between.
    pub(super) fn counted(&self, a: &Snapshot, b: &Snapshot) -> std::collections::BTreeMap<String, u64> {
        let mut out = std::collections::BTreeMap::new();
        let (Some((ga, ca)), Some((gb, cb))) = (&a.counts, &b.counts) else { return out };
        if ga != gb {
            return out;
        }
        let Some((_, counters)) = &*self.counters.borrow() else { return out };
        for ((name, x), y) in counters.names().into_iter().zip(ca).zip(cb) {
            if let (Some(x), Some(y)) = (x, y) {
                out.insert(name.to_string(), y.saturating_sub(*x));
            }
        }
        out
    }
}

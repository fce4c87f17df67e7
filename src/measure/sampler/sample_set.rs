//! What a worker hands back: its samples, their circumstances and profile.

use super::*;

/// What a worker hands back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SampleSet {
    pub samples: Vec<f64>,
    /// Wall-clock seconds each sample took (for the "too short" warning).
    pub(crate) sample_secs: Vec<f64>,
    pub(crate) iterations: Option<u64>,
    /// Benchmark-specific figures stored beside the result (counts, sub-timings).
    pub extras: serde_json::Map<String, serde_json::Value>,
    /// Remarks the benchmark wants shown (never a changed number).
    pub notes: Vec<String>,
    /// One per sample: its circumstances and whether it was disturbed.
    #[serde(default)]
    pub(crate) meta: Vec<SampleMeta>,
    #[serde(default)]
    pub(crate) kind: TaskKind,
    /// Samples taken beyond the count asked for, because some were disturbed.
    #[serde(default)]
    pub(crate) retaken: usize,
    /// Seconds whole-run samples waited for quiet CPUs before they began,
    /// and how many such waits ended with the CPUs still busy.
    #[serde(default)]
    pub(crate) quiet_waited_s: f64,
    #[serde(default)]
    pub(crate) quiet_in_vain: usize,
    /// The figure is a difference: a measured overhead was subtracted.
    #[serde(default)]
    pub(crate) net_of_overhead: bool,
    /// The raw figures a derived sample was computed from, by name, one per
    /// sample (aligned with `samples`): `catch_us` and `send_us` of
    /// `lat.sig.catch`. The stored result's extras keep each one's median
    /// over the clean samples (`NAME`) and every value (`NAME_samples`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parts: BTreeMap<String, Vec<f64>>,
    /// The samples' unit when the benchmark's parameters chose another than
    /// its declared one (`cmd.run` with `figure=rss`: KB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unit: Option<String>,
    /// The stacks of the profiled samples (`--profile`), never among `samples`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) profile: Option<crate::model::profile::Profile>,
}

impl SampleSet {
    /// Append another worker's samples (same benchmark and point).
    pub fn absorb(&mut self, set: SampleSet) {
        self.samples.extend(set.samples);
        self.sample_secs.extend(set.sample_secs);
        self.meta.extend(set.meta);
        self.iterations = self.iterations.or(set.iterations);
        self.kind = set.kind;
        self.retaken += set.retaken;
        self.quiet_waited_s += set.quiet_waited_s;
        self.quiet_in_vain += set.quiet_in_vain;
        self.net_of_overhead |= set.net_of_overhead;
        self.unit = self.unit.take().or(set.unit);
        match (&mut self.profile, set.profile) {
            (Some(mine), Some(theirs)) => mine.absorb(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        for (k, v) in set.parts {
            self.parts.entry(k).or_default().extend(v);
        }
        for (k, v) in set.extras {
            self.extras.insert(k, v);
        }
        for n in set.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    /// Samples not judged disturbed (all of them when there is no meta).
    pub fn clean(&self) -> usize {
        self.samples.len() - self.meta.iter().filter(|m| m.disturbed).count()
    }
}

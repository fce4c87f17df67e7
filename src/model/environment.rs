//! What a run records of its own circumstances when it ends: load, other
//! processes' CPU time, the workers' footprint, run-wide warnings, how many
//! samples were asked for and how the rounds ran. Stored as JSON in the
//! run's `environment` column; fields this version does not know (written by
//! a newer kdelta) are kept as they are.

use super::Warning;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How many samples the run was asked for (`--runs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunsAsked {
    /// Each benchmark's own count.
    Default,
    /// `--runs auto`: refined until the median's interval met the target.
    Auto,
    /// `--runs N`.
    Fixed(u64),
}

/// Stored as a number, `"auto"` or `"default"`.
impl Serialize for RunsAsked {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RunsAsked::Default => s.serialize_str("default"),
            RunsAsked::Auto => s.serialize_str("auto"),
            RunsAsked::Fixed(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for RunsAsked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            N(u64),
            S(String),
        }
        match Repr::deserialize(d)? {
            Repr::N(n) => Ok(RunsAsked::Fixed(n)),
            Repr::S(s) if s == "auto" => Ok(RunsAsked::Auto),
            Repr::S(s) if s == "default" => Ok(RunsAsked::Default),
            Repr::S(s) => Err(serde::de::Error::custom(format!("runs {s:?}: expected a number, auto or default"))),
        }
    }
}

/// The reference loops' figures at one moment (`measure::reference`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reference {
    pub(crate) kinds: Vec<ReferenceKind>,
}

/// One kind of reference loop: its median nanoseconds per iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReferenceKind {
    pub(crate) name: String,
    pub(crate) ns: f64,
}

/// A run's environment. Every field is optional: runs from older versions,
/// interrupted runs and simulated runs carry fewer of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunEnvironment {
    /// Load average (1 min) before and after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) load_before: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) load_after: Option<f64>,
    /// CPUs' worth of time other processes used during the run: the machine's
    /// busy time less kdelta's own and its reaped children's (older runs
    /// left out only the workers').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) others_cpus: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) elapsed_s: Option<f64>,
    /// CPU time of all workers together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workers_cpu_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) peak_worker_rss_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) peak_parent_rss_bytes: Option<u64>,
    /// Warnings about the run as a whole (a busy machine). Entries of kinds
    /// this version does not know are dropped when read.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "known_warnings")]
    pub(crate) warnings: Vec<Warning>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) runs: Option<RunsAsked>,
    /// `--ci-target` (percent), with `--runs auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ci_target_pct: Option<f64>,
    /// With `--runs auto`: results whose median met the target, and those
    /// that stopped at the cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) auto_met: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) auto_capped: Option<Vec<String>>,
    /// Samples retaken because they were disturbed; results left noisy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retaken: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) noisy: Option<u64>,
    /// `[result index, round]` of each worker, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) schedule: Vec<[u64; 2]>,
    /// The reference loops before the first worker and after the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reference_before: Option<Reference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reference_after: Option<Reference>,
    /// What drew the order of every tie's turns (`sampler::turns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) order_seed: Option<u64>,
    /// How compared values alternated (`--interleave`) when not the
    /// default (`samples`): `lockstep`, `duet` or `workers`; or any, when
    /// `kdelta doctor`'s record chose it (`interleave_why`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) interleave: Option<String>,
    /// Why: what `kdelta doctor` measured, when the run did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) interleave_why: Option<String>,
    /// `--interleave duet`: the CPUs each configuration's ties sampled on
    /// (`0,1 [noht]`), and the configurations whose ties took turns
    /// instead, having fewer CPUs than points.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) duet: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) duet_fell_back: Vec<String>,
    /// `--budget`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) budget_s: Option<f64>,
    /// `--isolate`: how the measured CPUs were kept free of other tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) isolated: Option<String>,
    /// The run came from `kdelta simulate --store`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) simulated: bool,
    /// Fields written by another version, kept untouched.
    #[serde(flatten)]
    pub(crate) other: serde_json::Map<String, serde_json::Value>,
}

fn known_warnings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Warning>, D::Error> {
    let raw = Option::<Vec<serde_json::Value>>::deserialize(d)?.unwrap_or_default();
    Ok(raw.into_iter().filter_map(|w| serde_json::from_value(w).ok()).collect())
}

impl RunEnvironment {
    /// Read a stored environment; anything unreadable (NULL, not an object,
    /// a field of the wrong type) reads as empty rather than failing the run.
    pub(crate) fn from_json(v: serde_json::Value) -> RunEnvironment {
        serde_json::from_value(v).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_run_whose_machine_changed_speed_says_so() {
        let v = json!({ "warnings": [{ "kind": "speed_changed", "reference": "table loop", "pct": 15.04 }] });
        let e = RunEnvironment::from_json(v);
        assert_eq!(
            e.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
            ["the machine's speed changed during the run: its reference table loop ran 15.0% slower after it \
              than before; `check --against` this run judges only a change of 2x or more"]
        );
        assert_eq!(serde_json::to_value(&e).unwrap()["warnings"][0]["kind"], "speed_changed");
    }

    #[test]
    fn round_trips_and_keeps_unknown_fields() {
        let v = json!({
            "load_before": 0.5, "others_cpus": null, "runs": "auto", "ci_target_pct": 2.0,
            "auto_met": 3, "auto_capped": ["lat.pipe"], "retaken": 4, "noisy": 0,
            "schedule": [[0, 1], [1, 1]], "from_the_future": {"x": 1},
            "warnings": [{"kind": "busy_machine", "load_before": 1.0, "load_after": 2.0, "others_cpus": 0.5}, {"kind": "unheard_of"}]
        });
        let e = RunEnvironment::from_json(v);
        assert_eq!(e.runs, Some(RunsAsked::Auto));
        assert_eq!(e.others_cpus, None);
        assert_eq!(e.schedule, vec![[0, 1], [1, 1]]);
        assert_eq!(e.warnings.len(), 1, "the unknown kind is dropped, the known one kept");
        let back = serde_json::to_value(&e).unwrap();
        assert_eq!(back["from_the_future"], json!({"x": 1}));
        assert_eq!(back["runs"], json!("auto"));
        assert!(back.get("others_cpus").is_none());
    }

    #[test]
    fn runs_asked_spellings() {
        for (j, r) in
            [(json!(5), RunsAsked::Fixed(5)), (json!("auto"), RunsAsked::Auto), (json!("default"), RunsAsked::Default)]
        {
            assert_eq!(serde_json::from_value::<RunsAsked>(j.clone()).unwrap(), r);
            assert_eq!(serde_json::to_value(r).unwrap(), j);
        }
        assert!(serde_json::from_value::<RunsAsked>(json!("often")).is_err());
    }

    #[test]
    fn empty_and_foreign_read_as_empty() {
        assert_eq!(RunEnvironment::from_json(serde_json::Value::Null), RunEnvironment::default());
        assert_eq!(RunEnvironment::from_json(json!([1, 2])), RunEnvironment::default());
        assert_eq!(RunEnvironment::from_json(json!({"retaken": "many"})), RunEnvironment::default());
        assert_eq!(serde_json::to_value(RunEnvironment::default()).unwrap(), json!({}));
    }
}

//! A kernel setting a configuration asks for (`+thp=never`): which knob and
//! which value, as recorded with the configuration. Checking one against a
//! machine lives in `config/knobs.rs`, the kernel files in `sys/knobs.rs`.

use serde::{Deserialize, Serialize};

/// A machine-wide kernel setting kdelta can switch between rounds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Knob {
    /// The preemption model of a `PREEMPT_DYNAMIC` kernel.
    Preempt,
    /// SMT control: `off` takes the siblings offline.
    Smt,
    /// The CPU frequency governor of every cpufreq policy.
    Governor,
    /// Frequency boost (turbo).
    Boost,
    /// Transparent huge pages.
    Thp,
    /// A sysctl by its sysctl(8) name (`kernel.sched_autogroup_enabled`).
    Sysctl(String),
    /// A file below `/sys` or `/proc/sys`, by its absolute path.
    Sysfs(String),
}

impl Knob {
    /// `thp`, `sysctl=kernel.x`, `sysfs=/sys/...`: one name per knob, so two
    /// settings of one knob in one configuration conflict.
    pub(crate) fn label(&self) -> String {
        match self {
            Knob::Preempt => "preempt".into(),
            Knob::Smt => "smt".into(),
            Knob::Governor => "governor".into(),
            Knob::Boost => "boost".into(),
            Knob::Thp => "thp".into(),
            Knob::Sysctl(n) => format!("sysctl={n}"),
            Knob::Sysfs(p) => format!("sysfs={p}"),
        }
    }
}

/// One knob set to one value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KnobSetting {
    pub(crate) knob: Knob,
    pub(crate) value: String,
}

impl KnobSetting {
    /// The modifier as written canonically: `thp=never`, `sysctl=kernel.x=1`.
    pub(crate) fn name(&self) -> String {
        format!("{}={}", self.knob.label(), self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(KnobSetting { knob: Knob::Thp, value: "never".into() }.name(), "thp=never");
        assert_eq!(
            KnobSetting { knob: Knob::Sysctl("kernel.x".into()), value: "1".into() }.name(),
            "sysctl=kernel.x=1"
        );
        let j = serde_json::to_value(KnobSetting { knob: Knob::Sysfs("/sys/a".into()), value: "1".into() }).unwrap();
        assert_eq!(j, serde_json::json!({"knob": {"sysfs": "/sys/a"}, "value": "1"}));
    }
}

//! Studies: the classic experiments as plans of benchmarks, parameters and
//! configurations handed to the harness, with the published figures
//! (`published/`, data) printed beside today's. A study is one stored run
//! whose environment records which study it is (`other["study"]`, a
//! [`Meta`]); [`tables_for_run`] rebuilds its tables from the store.
//!
//! The harness knows nothing of studies: `run.rs` builds an ordinary
//! [`Request`](crate::harness::plan::Request), plans it, drops the points a
//! resumed run already has, and executes the rest into the study's run.

pub(crate) mod estimate;
mod ht2003;
pub(crate) mod published;
pub(crate) mod run;
mod sched2002;
pub(crate) mod tables;
mod threads2004;
mod tuning2001;

#[cfg(test)]
mod tests;

use crate::report::extra::ExtraTable;
use crate::store::Store;
use crate::topology::Topology;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The studies `kdelta study` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StudyName {
    /// Hyper-Threading speeds Linux (2003): LMbench, AIM9, chat, dbench, tbench, SMT off against on.
    #[value(name = "ht-2003")]
    Ht2003,
    /// NPTL against LinuxThreads (2004): thread creation, context switch, paced chat on UP, SMP and SMT.
    #[value(name = "threads-2004")]
    Threads2004,
    /// Molnar's HT-aware scheduler (2002): simulated and real builds.
    #[value(name = "sched-2002")]
    Sched2002,
    /// Kernel tuning gives 40% (2001): memory routines and builds.
    #[value(name = "tuning-2001")]
    Tuning2001,
}

/// Which SMT pair ht-2003 compares: the study's own (one core, one or both
/// siblings) or the whole machine's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Variant {
    /// `noht1` against `ht1`: one physical CPU with two logical CPUs, as the study had.
    #[default]
    Faithful,
    /// `noht` against `ht`: every core, one sibling against all.
    Whole,
}

/// A study's definition: data (the published file) and a little code.
pub(crate) struct Def {
    pub(crate) name: StudyName,
    pub(crate) id: &'static str,
    /// What it measures, one line.
    pub(crate) what: &'static str,
    /// The configurations it needs, one line.
    pub(crate) needs: &'static str,
    pub(crate) published: &'static str,
    /// The configuration of each role on this machine.
    /// The configuration each role gets on this machine: its topology, the
    /// variant, the host snapshot and the sysfs root kernel settings are
    /// judged under.
    pub(crate) roles: fn(&Topology, Variant, &serde_json::Value, &std::path::Path) -> Vec<RoleUse>,
    /// The parts of its plan (`--quick` or not), run one after the other
    /// into the study's one run.
    pub(crate) request: fn(bool) -> Vec<Parts>,
}

/// One part of a study's plan: benchmarks, their parameters (scoped
/// overrides), the roles whose configurations they run in, and how many
/// samples, when the study says.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parts {
    pub(crate) selectors: Vec<String>,
    pub(crate) overrides: BTreeMap<String, String>,
    /// The roles whose configurations this part runs in; empty: every role's.
    pub(crate) roles: Vec<&'static str>,
    /// Samples per point when the study fixes them (a mean of 5 builds);
    /// none: the benchmarks' own counts.
    pub(crate) runs: Option<crate::harness::plan::Runs>,
}

impl Parts {
    pub(crate) fn new(selectors: &[&str], overrides: &[(&str, &str)]) -> Parts {
        Parts {
            selectors: selectors.iter().map(|s| s.to_string()).collect(),
            overrides: overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            roles: Vec::new(),
            runs: None,
        }
    }

    /// Run only in these roles' configurations.
    pub(crate) fn in_roles(mut self, roles: &[&'static str]) -> Parts {
        self.roles = roles.to_vec();
        self
    }

    /// Exactly `n` clean samples per point.
    pub(crate) fn samples(mut self, n: usize) -> Parts {
        self.runs = Some(crate::harness::plan::Runs::Fixed(n));
        self
    }

    /// Whether this part runs `bench`: a selector names it, its family or a
    /// glob matching it.
    pub(crate) fn selects(&self, bench: &str) -> bool {
        let family = bench.split('.').next().unwrap_or(bench);
        self.selectors
            .iter()
            .any(|s| s == bench || s == family || glob::Pattern::new(s).is_ok_and(|p| p.matches(bench)))
    }
}

pub(crate) const STUDIES: [Def; 4] = [ht2003::DEF, threads2004::DEF, sched2002::DEF, tuning2001::DEF];

pub(crate) fn def(name: StudyName) -> &'static Def {
    STUDIES.iter().find(|d| d.name == name).expect("every study is defined")
}

pub(crate) fn def_by_id(id: &str) -> Option<&'static Def> {
    STUDIES.iter().find(|d| d.id == id)
}

/// A role of a study (`A`, `B`, `up`, `smt`, ...) and the configuration it
/// got on this machine: the wanted one, a labelled substitute, or none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RoleUse {
    pub(crate) role: String,
    /// The configuration the study wants (`ht1`).
    pub(crate) wanted: String,
    /// The configuration used (`smp2`), if any.
    pub(crate) config: Option<String>,
    pub(crate) cpus: Option<String>,
    /// Why a substitute is used, when `config` is not `wanted`.
    pub(crate) substitute: Option<String>,
    /// Why the role has no configuration here.
    pub(crate) unavailable: Option<String>,
}

impl RoleUse {
    fn got(role: &str, wanted: &str, c: &crate::config::Config, substitute: Option<String>) -> RoleUse {
        RoleUse {
            role: role.into(),
            wanted: wanted.into(),
            config: Some(c.name.clone()),
            cpus: Some(c.cpus.to_string()),
            substitute,
            unavailable: None,
        }
    }

    fn none(role: &str, wanted: &str, why: String) -> RoleUse {
        RoleUse {
            role: role.into(),
            wanted: wanted.into(),
            config: None,
            cpus: None,
            substitute: None,
            unavailable: Some(why),
        }
    }

    /// `smp2 (cpus 0-1)` or `unavailable`.
    pub(crate) fn describe(&self) -> String {
        match (&self.config, &self.cpus) {
            (Some(c), Some(cpus)) => format!("{c} (cpus {cpus})"),
            _ => "unavailable".into(),
        }
    }
}

/// One role on its own: the wanted configuration or unavailable with the reason.
pub(crate) fn single(role: &str, wanted: &str, topo: &Topology) -> RoleUse {
    match crate::config::resolve(wanted, topo) {
        Ok(c) => RoleUse::got(role, wanted, &c, None),
        Err(e) => RoleUse::none(role, wanted, unavailable_reason(&e)),
    }
}

/// A pair of roles: the wanted pair if this machine gives both, else the
/// substitute pair with the note, else both unavailable.
pub(crate) fn pair(
    roles: [&str; 2],
    wanted: [&str; 2],
    substitute: [&str; 2],
    note: &str,
    topo: &Topology,
) -> Vec<RoleUse> {
    let want: Vec<_> = wanted.iter().map(|w| crate::config::resolve(w, topo)).collect();
    if let (Ok(a), Ok(b)) = (&want[0], &want[1]) {
        return vec![RoleUse::got(roles[0], wanted[0], a, None), RoleUse::got(roles[1], wanted[1], b, None)];
    }
    let why = want.iter().filter_map(|r| r.as_ref().err()).map(unavailable_reason).next().unwrap_or_default();
    let sub: Vec<_> = substitute.iter().map(|w| crate::config::resolve(w, topo)).collect();
    match (&sub[0], &sub[1]) {
        (Ok(a), Ok(b)) => {
            let n = format!(
                "{} against {} is not available here ({why}); {} against {} is used instead, {note}",
                wanted[0], wanted[1], a.name, b.name
            );
            vec![RoleUse::got(roles[0], wanted[0], a, Some(n.clone())), RoleUse::got(roles[1], wanted[1], b, Some(n))]
        }
        _ => {
            let also = sub.iter().filter_map(|r| r.as_ref().err()).map(unavailable_reason).next().unwrap_or_default();
            let n = format!(
                "{why}; the substitute {} against {} is not available either ({also})",
                substitute[0], substitute[1]
            );
            vec![RoleUse::none(roles[0], wanted[0], n.clone()), RoleUse::none(roles[1], wanted[1], n)]
        }
    }
}

fn unavailable_reason(e: &anyhow::Error) -> String {
    match e.downcast_ref::<crate::config::Unavailable>() {
        Some(u) => u.reason.clone(),
        None => e.to_string(),
    }
}

/// What a stored study run records in its environment (`other["study"]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Meta {
    pub(crate) name: String,
    pub(crate) quick: bool,
    pub(crate) variant: Variant,
    pub(crate) roles: Vec<RoleUse>,
    /// Run with the tiny plan of the tests (`--tiny-plan-for-tests`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) tiny: bool,
}

/// The key of [`Meta`] in a run environment's `other` map.
pub(crate) const META_KEY: &str = "study";

impl Meta {
    pub(crate) fn of_run(run: &crate::model::record::RunRecord) -> Option<Meta> {
        run.environment.other.get(META_KEY).and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    pub(crate) fn role(&self, role: &str) -> Option<&RoleUse> {
        self.roles.iter().find(|r| r.role == role)
    }
}

/// A stored run's study tables, or `None` when the run is not a study.
pub(crate) fn tables_for_run(store: &Store, run_id: i64) -> Result<Option<Vec<ExtraTable>>> {
    let run = store.find_run(&run_id.to_string())?;
    let Some(meta) = Meta::of_run(&run) else { return Ok(None) };
    let Some(d) = def_by_id(&meta.name) else { return Ok(None) };
    let mut results = store.results(run_id)?;
    crate::bench::canonical_results(&mut results);
    Ok(Some(tables::build(d, &meta, &results)?))
}

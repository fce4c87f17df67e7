//! sched-2002: Molnar's fully HT-aware scheduler (2002). His box is
//! simulated (`kdelta simulate`: 2 packages x 1 core x 2 threads, two loops
//! of 2.55 s, `make -j2` and `-j5`, stock-2002 against ht-aware-2002), and
//! the experiment runs for real on this machine: the builds with both jobs
//! on one core's two siblings (what the stock scheduler could do) against
//! one per core (what the HT-aware one does), and two loops of a CPU-bound
//! job placed by `kdelta place`'s policies (`place.loops`: naive,
//! smt-aware, kernel) on every logical CPU (role `machine`, config `all`).

use super::{pair, single, Def, Parts, RoleUse, StudyName, Variant};
use crate::simulate::engine::EngineCfg;
use crate::simulate::policy::PolicyName;
use crate::simulate::shape::Shape;
use crate::simulate::workload::loops::LoopsCfg;
use crate::simulate::workload::make::{MakeCfg, DEFAULT_JOBS};
use crate::simulate::{simulate_all, SimConfig, WorkloadCfg, DEFAULT_JITTER, DEFAULT_SEED};
use crate::topology::Topology;

pub(super) const DEF: Def = Def {
    name: StudyName::Sched2002,
    id: "sched-2002",
    what: "Molnar's HT-aware scheduler (2002): his 2x1x2 box simulated (loops of 2.55 s, make -j2 and -j5, stock against HT-aware), and here build.make at -j2 and -j5 and two loops placed by kdelta place (naive, smt-aware, kernel)",
    needs: "ht1 (both jobs on one core's siblings) against noht (one per core); all (every logical CPU) for kdelta place",
    published: super::published::SCHED_2002,
    roles,
    request,
};

fn roles(topo: &Topology, _variant: Variant, _host: &serde_json::Value, _root: &std::path::Path) -> Vec<RoleUse> {
    let mut r = pair(
        ["A", "B"],
        ["ht1", "noht"],
        ["up", "smp2"],
        "which answers what spreading the jobs over a second CPU does rather than over a second core's sibling",
        topo,
    );
    // kdelta place decides among every logical CPU, siblings included.
    r.push(single("machine", "all", topo));
    r
}

/// The builds in the A and B configurations; then Molnar's loops placed by
/// kdelta place's three policies on the whole machine.
fn request(_quick: bool) -> Vec<Parts> {
    vec![
        Parts::new(&["build.make"], &[("build.make:jobs", "2,5")]).in_roles(&["A", "B"]),
        Parts::new(&["place.loops"], &[("place.loops:loops", "2"), ("place.loops:policy", "naive,smt-aware,kernel")])
            .in_roles(&["machine"]),
    ]
}

/// Why a `sim.*` row has no simulated samples.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoSimulation {
    #[error("parallel {0:?}: allowed is 1 to 4096")]
    Parallel(String),
    #[error("no simulation named {0}")]
    Unknown(String),
    /// The simulator refused its configuration, or failed.
    #[error("{0}")]
    Failed(String),
    #[error("the simulation gave no result")]
    NoResult,
}

/// The simulated samples of a `sim.*` row: per-loop times (loops) or
/// makespans (make) of stock-2002 (A) or ht-aware-2002 (B). Deterministic
/// (seeded), so they are computed when the table is built, not stored.
pub(super) fn simulated(
    bench: &str,
    params: &std::collections::BTreeMap<String, String>,
    b: bool,
) -> Result<Vec<f64>, NoSimulation> {
    let policy = if b { PolicyName::HtAware2002 } else { PolicyName::Stock2002 };
    let workload = match bench {
        "sim.loops" => WorkloadCfg::Loops(LoopsCfg { loops: 2, work: 2.55, iterations: 20, jitter: DEFAULT_JITTER }),
        "sim.make" => {
            let j = params.get("parallel").map(String::as_str).unwrap_or("2");
            let parallel = j
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=4096).contains(n))
                .ok_or_else(|| NoSimulation::Parallel(j.to_string()))?;
            WorkloadCfg::Make(MakeCfg { parallel, jobs: DEFAULT_JOBS })
        }
        other => return Err(NoSimulation::Unknown(other.to_string())),
    };
    // Molnar's box, as `kdelta simulate --topology 2x1x2` takes it by default.
    let cfg = SimConfig {
        shape: Shape::parse("2x1x2").map_err(|e| NoSimulation::Failed(e.to_string()))?,
        engine: EngineCfg::default(),
        policy,
        reps: workload.default_reps(),
        workload,
        seed: DEFAULT_SEED,
        trace: false,
    };
    let r = simulate_all(&cfg, &[policy], false).map_err(|e| NoSimulation::Failed(e.to_string()))?;
    let r = r.into_iter().next().ok_or(NoSimulation::NoResult)?;
    Ok(match (r.loops, r.make) {
        (Some(l), _) => l.times,
        (_, Some(m)) => m.makespans,
        _ => Vec::new(),
    })
}

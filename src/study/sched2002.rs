//! sched-2002: Molnar's fully HT-aware scheduler (2002). His box is
//! simulated (`kdelta simulate`: 2 packages x 1 core x 2 threads, two loops
//! of 2.55 s, `make -j2` and `-j5`, stock-2002 against ht-aware-2002), and
//! the builds run for real on this machine: both jobs on one core's two
//! siblings (what the stock scheduler could do) against one per core (what
//! the HT-aware one does).

use super::{pair, Def, Parts, RoleUse, StudyName, Variant};
use crate::topology::Topology;
use clap::Parser;

pub const DEF: Def = Def {
    name: StudyName::Sched2002,
    id: "sched-2002",
    what: "Molnar's HT-aware scheduler (2002): his 2x1x2 box simulated (loops of 2.55 s, make -j2 and -j5, stock against HT-aware), and build.make at -j2 and -j5 here",
    needs: "ht1 (both jobs on one core's siblings) against noht (one per core)",
    published: super::published::SCHED_2002,
    roles,
    request,
};

fn roles(topo: &Topology, _variant: Variant, _host: &serde_json::Value, _root: &std::path::Path) -> Vec<RoleUse> {
    pair(["A", "B"], ["ht1", "noht"], ["up", "smp2"], "which answers what spreading the jobs over a second CPU does rather than over a second core's sibling", topo)
}

fn request(_quick: bool) -> Parts {
    Parts::new(&["build.make"], &[("build.make:jobs", "2,5")])
}

#[derive(Parser)]
struct Sim {
    #[command(flatten)]
    a: crate::simulate::cli::SimulateArgs,
}

/// The simulated samples of a `sim.*` row: per-loop times (loops) or
/// makespans (make) of stock-2002 (A) or ht-aware-2002 (B). Deterministic
/// (seeded), so they are computed when the table is built, not stored.
pub fn simulated(bench: &str, params: &std::collections::BTreeMap<String, String>, b: bool) -> Result<Vec<f64>, String> {
    let policy = if b { "ht-aware-2002" } else { "stock-2002" };
    let mut args = vec!["sim".to_string(), "--topology".into(), "2x1x2".into(), "--policy".into(), policy.into()];
    match bench {
        "sim.loops" => args.extend(["--workload", "loops", "-k", "2", "--work", "2.55", "--iterations", "20"].map(String::from)),
        "sim.make" => {
            let j = params.get("parallel").cloned().unwrap_or_else(|| "2".into());
            args.extend(["--workload".to_string(), "make".into(), "-j".into(), j]);
        }
        other => return Err(format!("no simulation named {other}")),
    }
    let sim = Sim::try_parse_from(&args).map_err(|e| e.to_string())?;
    let (cfg, policies) = crate::simulate::cli::config(&sim.a).map_err(|e| e.to_string())?;
    let r = crate::simulate::cli::simulate_all(&cfg, &policies, false).map_err(|e| e.to_string())?;
    let r = r.into_iter().next().ok_or("the simulation gave no result")?;
    Ok(match (r.loops, r.make) {
        (Some(l), _) => l.times,
        (_, Some(m)) => m.makespans,
        _ => Vec::new(),
    })
}

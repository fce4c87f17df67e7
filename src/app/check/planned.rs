//! What `check` will judge, known from the plan before anything runs or is
//! stored: whether the run would share a row with the baseline, and whether
//! a `--within` run compares anything.

use crate::error::bad_input;
use crate::harness::plan::Plan;
use crate::model::record::ResultRecord;
use crate::model::Params;
use anyhow::Result;

/// The rows a plan makes: (benchmark, parameters as stored results spell
/// them), and its configurations' names.
fn rows(plan: &Plan) -> (Vec<(String, Params)>, Vec<&str>) {
    let rows = plan
        .items
        .iter()
        .map(|i| {
            let mut p = i.params.clone();
            crate::model::params::canonicalise(&i.info.params, &mut p);
            (i.info.name.to_string(), p)
        })
        .collect();
    (rows, plan.configs.iter().map(|c| c.name()).collect())
}

/// Refuse a run that would share no row with the baseline `base` (named
/// `base_name`): rows match on benchmark and parameters, in the same
/// configuration (or in the only one of each), as `compare` matches them.
pub(super) fn share_a_row(plan: &Plan, base_name: &str, base: &[ResultRecord]) -> Result<()> {
    let (planned, configs) = rows(plan);
    let mut base_configs: Vec<&str> = Vec::new();
    for r in base {
        if !base_configs.contains(&r.config.as_str()) {
            base_configs.push(&r.config);
        }
    }
    let shared: Vec<&str> = base_configs.iter().copied().filter(|c| configs.contains(c)).collect();
    let single = shared.is_empty() && base_configs.len() == 1 && configs.len() == 1;
    if base.iter().any(|r| (single || shared.contains(&r.config.as_str())) && planned.contains(&r.point_key())) {
        return Ok(());
    }
    let why = if shared.is_empty() && !single {
        format!("configurations {} here, {} in the baseline", configs.join(","), base_configs.join(","))
    } else {
        difference(&planned, base)
    };
    Err(bad_input(format!(
        "this run would have no row {base_name} has (benchmark, parameters and configuration): {why}; \
         nothing was run (see `kdelta show` of the baseline)"
    )))
}

/// The nearest miss between the planned rows and the baseline's: the
/// parameters that differ, or the benchmarks when none is in both.
fn difference(planned: &[(String, Params)], base: &[ResultRecord]) -> String {
    let one = |v: Option<&String>| match v {
        Some(v) => format!("{:?}", crate::model::params::one_line(v)),
        None => "unset".to_string(),
    };
    let mut best: Option<Vec<String>> = None;
    for (bench, p) in planned {
        for r in base.iter().filter(|r| &r.benchmark == bench) {
            let mut keys: Vec<&String> = p.0.keys().chain(r.params.0.keys()).collect();
            keys.sort();
            keys.dedup();
            let diff: Vec<String> = keys
                .into_iter()
                .filter(|k| p.0.get(*k) != r.params.0.get(*k))
                .map(|k| format!("{bench} {k} is {} here, {} in the baseline", one(p.0.get(k)), one(r.params.0.get(k))))
                .collect();
            if best.as_ref().is_none_or(|b| diff.len() < b.len()) {
                best = Some(diff);
            }
        }
    }
    match best {
        Some(diff) => diff.join("; "),
        None => {
            let mut here: Vec<&str> = planned.iter().map(|(b, _)| b.as_str()).collect();
            here.dedup();
            let mut there: Vec<&str> = base.iter().map(|r| r.benchmark.as_str()).collect();
            there.dedup();
            format!("{} here, {} in the baseline", here.join(", "), there.join(", "))
        }
    }
}

/// Whether a plan compares anything, as `--within` needs: two
/// configurations, or points of one benchmark whose parameters differ (a
/// list, a range, several `--cmd`).
pub(super) fn compares(plan: &Plan) -> bool {
    let (rows, configs) = rows(plan);
    configs.len() > 1 || rows.iter().any(|(b, p)| rows.iter().any(|(b2, p2)| b == b2 && p != p2))
}

//! `kdelta simulate`: print a simulation, and with `--store` keep it as a run.

use super::*;
use crate::cli::SimulateArgs;
use crate::model::fmt::TextOrJson;
use crate::simulate::render::{render_json, render_text};
use crate::simulate::simulate_all;

/// `kdelta simulate` without `--store`: every policy simulated, printed.
pub(super) fn cmd_simulate(a: &SimulateArgs) -> Result<u8> {
    let (cfg, policies) = a.config()?;
    let results = simulate_all(&cfg, &policies, a.bench_speed)?;
    if a.format == TextOrJson::Json {
        out_json(&render_json(&cfg, &results)?);
    } else {
        out(&render_text(&cfg, &results));
    }
    Ok(exit::OK)
}

/// `kdelta simulate --store`: print as usual, then store one run whose
/// configurations are the policies and whose samples are the simulated
/// iteration times (loops) or makespans (make), marked simulated.
pub(super) fn cmd_simulate_store(db: &Option<PathBuf>, a: &SimulateArgs) -> Result<u8> {
    use crate::model::record::{ResultRecord, RunRecord, RunStatus, Status};
    let (cfg, policies) = a.config()?;
    let results = simulate_all(&cfg, &policies, false)?;
    let mut store = open_store(db)?;
    if a.format == TextOrJson::Json {
        out_json(&render_json(&cfg, &results)?);
    } else {
        out(&render_text(&cfg, &results));
    }
    let (name, mut params) = match &cfg.workload {
        crate::simulate::WorkloadCfg::Loops(l) => {
            let mut p = bench::Params::default();
            p.set("loops", l.loops.to_string());
            p.set("work", l.work.to_string());
            p.set("iterations", l.iterations.to_string());
            ("sim.loops", p)
        }
        crate::simulate::WorkloadCfg::Make(m) => {
            let mut p = bench::Params::default();
            p.set("parallel", m.parallel.to_string());
            p.set("jobs", m.jobs.to_string());
            ("sim.make", p)
        }
    };
    params.set("topology", cfg.shape.to_string());
    params.set("smt_rate", cfg.engine.smt_rate.to_string());
    params.set("seed", cfg.seed.to_string());
    let run = RunRecord::begin(
        a.label.clone(),
        command_line(),
        Vec::new(),
        serde_json::json!({ "simulated": true, "topology": cfg.shape.to_string() }),
        crate::model::RunEnvironment { simulated: true, ..Default::default() },
    );
    let id = store.begin_run(&run)?;
    for (seq, r) in results.iter().enumerate() {
        let samples: Vec<f64> = match (&r.loops, &r.make) {
            (Some(l), _) => l.times.clone(),
            (_, Some(m)) => m.makespans.clone(),
            _ => Vec::new(),
        };
        let mut extras = serde_json::Map::new();
        extras.insert("doubled_time_s".into(), r.doubled_time.into());
        extras.insert("migrations_running".into(), r.migrations_running.into());
        extras.insert("events".into(), r.events.into());
        let rec = ResultRecord {
            benchmark: name.to_string(),
            family: "sim".to_string(),
            params: params.clone(),
            config: r.policy.clone(),
            cpus: format!("simulated {}", cfg.shape),
            unit: "s".to_string(),
            better: bench::Better::Lower,
            status: Status::Ok,
            reason: None,
            summary: crate::stats::summarize(&samples, false),
            iterations: None,
            extras: extras.into(),
            notes: vec!["simulated, not measured".to_string()],
            warnings: crate::stats::warnings::for_samples(&samples, &[]),
            samples,
            samples_meta: Vec::new(),
            quality: None,
            placement: Vec::new(),
            below_resolution: None,
            simulated: true,
            profile: None,
        };
        store.add_result(id, seq, &rec)?;
    }
    store.finish_run(id, RunStatus::Complete, &run.environment)?;
    eprintln!("kdelta: stored as run {id} (simulated)");
    Ok(exit::OK)
}

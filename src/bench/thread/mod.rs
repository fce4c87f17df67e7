//! The `thread` family: the 2004 NPTL/LinuxThreads study's thread benchmarks
//! (`thread.create`, `thread.ctx`). The token ring (`ring.rs`) is shared with
//! `lat.ctx` (`bench/lat/ctx.rs`).

pub(crate) mod create;
pub(crate) mod ring;

use super::{bad_param, BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler};
use anyhow::Result;
use create::{create_loop, CreateModel, Manager};
use ring::{measure_ctx, Model};
use std::time::Duration;

pub(crate) const FAMILY: super::Family =
    super::Family { benchmarks, summary: None, server: None, command: None, run_flags: &[] };

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![Box::new(ThreadCreate), Box::new(ThreadCtx)]
}

use ring::SIZE_HELP;

struct ThreadCreate;

/// `thread.create`'s parameters, read once.
struct CreateParams {
    model: CreateModel,
}

impl CreateParams {
    fn from(p: &Params) -> Result<Self> {
        Ok(CreateParams { model: p.choice("model").map_err(bad_param)? })
    }
}

impl Benchmark for ThreadCreate {
    fn info(&self) -> BenchInfo {
        BenchInfo::new(
            "thread.create",
            "create a thread that returns at once, and join it (lat_thread null)",
            "us",
            Better::Lower,
        )
        .param(ParamSpec::new(
            "model",
            ParamKind::choice::<CreateModel>(),
            "direct,manager,process",
            "direct: pthread_create/join; manager: LinuxThreads' manager thread over a pipe; process: fork/waitpid",
        ))
        .timeout(Duration::from_secs(120))
    }

    fn check(&self, p: &Params) -> Result<()> {
        CreateParams::from(p).map(drop)
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let CreateParams { model } = CreateParams::from(p)?;
        let manager = if model == CreateModel::Manager { Some(Manager::start(false)?) } else { None };
        s.kind(crate::model::sample::TaskKind::Waits);
        s.measure_us(|n| create_loop(model, n, manager.as_ref()))?;
        drop(manager);
        Ok(())
    }
}

struct ThreadCtx;

/// `thread.ctx`'s parameters, read once.
struct CtxParams {
    model: Model,
    threads: usize,
    size: usize,
}

impl CtxParams {
    fn from(p: &Params) -> Result<Self> {
        Ok(CtxParams {
            model: p.choice("model").map_err(bad_param)?,
            threads: p.usize("threads")?,
            size: p.usize("size")?,
        })
    }
}

impl Benchmark for ThreadCtx {
    fn info(&self) -> BenchInfo {
        BenchInfo::new(
            "thread.ctx",
            "one context switch in a ring of threads passing a token over pipes, pipe and data overhead subtracted (lat_thread_ctx)",
            "us",
            Better::Lower,
        )
        .param(ParamSpec::new("threads", ParamKind::Int { min: 2, max: 4096 }, "2,4,8,16,24,32,48,64,96,128", "members of the ring").quick("2,8"))
        .param(ParamSpec::new("size", ParamKind::Int { min: 0, max: 16384 }, "0,16,64", SIZE_HELP).quick("0"))
        .param(ParamSpec::new("model", ParamKind::choice::<Model>(), "threads", "members are threads of one process, or processes"))
        .timeout(Duration::from_secs(180))
    }

    fn check(&self, p: &Params) -> Result<()> {
        CtxParams::from(p).map(drop)
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let c = CtxParams::from(p)?;
        measure_ctx(s, c.model, c.threads, c.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sampler::SamplerSettings;
    use std::collections::BTreeMap;

    fn sampler() -> Sampler {
        Sampler::new(SamplerSettings { llc_bytes: Some(32 << 20), ..SamplerSettings::direct(2, std::env::temp_dir()) })
    }

    fn run_with(b: &dyn Benchmark, over: &[(&str, &str)]) -> Vec<f64> {
        let info = b.info();
        let o: BTreeMap<String, String> = over.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let pts = crate::model::params::expand(&info.params, &o, true, info.name).unwrap();
        let mut all = Vec::new();
        for p in pts {
            b.check(&p).unwrap();
            let mut s = sampler();
            b.run(&p, &mut s).unwrap();
            let out = s.finish();
            assert_eq!(out.samples.len(), 2);
            all.extend(out.samples);
        }
        all
    }

    #[test]
    fn ctx_figures_are_finite() {
        // The overhead is subtracted, so on a busy machine a sample may come
        // out near zero; it must still be a finite figure. Positive overall:
        for v in run_with(&crate::bench::lat::ctx::LatCtx, &[("procs", "2"), ("size", "0,4")])
            .into_iter()
            .chain(run_with(&ThreadCtx, &[("threads", "3"), ("model", "threads,process")]))
        {
            assert!(v.is_finite(), "{v}");
        }
        let v = run_with(&ThreadCtx, &[("threads", "2"), ("size", "16")]);
        assert!(v.iter().sum::<f64>() > 0.0, "{v:?}");
    }

    #[test]
    fn create_figures_are_positive() {
        for v in run_with(&ThreadCreate, &[]) {
            assert!(v > 0.0 && v.is_finite(), "{v}");
        }
    }

    #[test]
    fn bad_model_is_bad_input() {
        let mut p = Params::default();
        p.set("model", "fiber");
        assert!(crate::error::is_bad_input(&ThreadCreate.check(&p).unwrap_err()));
        assert!(crate::error::is_bad_input(&ThreadCtx.check(&p).unwrap_err()));
    }
}

/// Figures for the report, not a check: `cargo test --release --lib
/// bench::thread::measure -- --ignored --nocapture` (pin it with taskset for
/// `up`). Settings like the harness's: 10 ms samples, 10 of them.
#[cfg(test)]
mod measure {
    use super::*;
    use crate::measure::sampler::SamplerSettings;

    fn median(b: &dyn Benchmark, kv: &[(&str, &str)]) -> (f64, f64) {
        let mut p = Params::default();
        for (k, v) in kv {
            p.set(k, *v);
        }
        let mut s = Sampler::new(SamplerSettings {
            target: Duration::from_millis(10),
            quick: false,
            ..SamplerSettings::direct(10, std::env::temp_dir())
        });
        b.run(&p, &mut s).unwrap();
        let out = s.finish();
        let mut v = out.samples.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        let m = v[v.len() / 2];
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0)).sqrt();
        (m, sd / mean)
    }

    #[test]
    #[ignore]
    fn figures() {
        // Interleaved rounds, as the harness does, against drift and load.
        let models = ["direct", "manager", "process"];
        let mut per: Vec<Vec<f64>> = vec![Vec::new(); 3];
        for _ in 0..5 {
            for (i, m) in models.iter().enumerate() {
                per[i].push(median(&ThreadCreate, &[("model", m)]).0);
            }
        }
        for (m, mut v) in models.iter().zip(per) {
            v.sort_by(|a, b| a.total_cmp(b));
            eprintln!("thread.create model={m}: median of 5 interleaved medians {:.2} us, min {:.2} us", v[2], v[0]);
        }
        if std::env::var("KDELTA_ONLY_CREATE").is_ok() {
            return;
        }
        if std::env::var("KDELTA_CTX_SWEEP").is_ok() {
            for sz in ["0", "16"] {
                let row: Vec<String> = ["2", "4", "8", "16", "32", "64"]
                    .iter()
                    .map(|n| {
                        format!(
                            "{n}:{:.2}",
                            median(&ThreadCtx, &[("threads", n), ("size", sz), ("model", "threads")]).0
                        )
                    })
                    .collect();
                eprintln!("thread.ctx size={sz}K us by threads: {}", row.join(" "));
            }
            return;
        }
        for (n, sz, model) in [
            ("2", "0", "threads"),
            ("2", "0", "processes"),
            ("16", "0", "threads"),
            ("16", "16", "threads"),
            ("64", "16", "threads"),
        ] {
            let (v, cv) = median(&ThreadCtx, &[("threads", n), ("size", sz), ("model", model)]);
            eprintln!("thread.ctx threads={n} size={sz} model={model}: {v:.2} us (cv {:.1}%)", cv * 100.0);
        }
        for (n, sz) in [("2", "0"), ("8", "16")] {
            let (v, cv) = median(&crate::bench::lat::ctx::LatCtx, &[("procs", n), ("size", sz)]);
            eprintln!("lat.ctx procs={n} size={sz}: {v:.2} us (cv {:.1}%)", cv * 100.0);
        }
    }
}

//! One round of a group run: a worker per job, one after the other. Each
//! worker is told its points as a [`JobSpec`], runs under its configuration
//! (kernel settings switched first, when it has any), and its [`Outcome`]
//! is folded into the points it measured.

use super::group::{Executor, Sweep};
use super::ix::CfgIx;
use super::plan::Interleave;
use super::schedule::{Job, Round};
use super::worker::{run_job, JobPoint, JobSpec, Outcome, PointResult};
use crate::config::Config;
use crate::measure::owned;
use crate::measure::sampler::SamplerSettings;
use anyhow::Result;
use std::sync::atomic::Ordering;

impl Sweep<'_> {
    /// The part of a job still to run: its points that have not failed,
    /// with samples to take.
    fn still_taking(&self, job: &Job) -> Job {
        let takes =
            job.takes.iter().copied().filter(|t| self.points[t.point].got.failed.is_none() && t.samples > 0).collect();
        Job { takes }
    }

    /// Every point of the job fails, for `reason`.
    fn fail(&mut self, job: &Job, reason: &str) {
        for t in &job.takes {
            self.points[t.point].got.failed = Some(reason.to_string());
        }
    }

    /// A worker's samples (or failures), one per point of its job, folded
    /// into the points, each sample marked with its round and worker.
    pub(super) fn absorb(&mut self, job: &Job, sets: Vec<PointResult>, round: u32, job_no: usize) {
        for (t, got) in job.takes.iter().zip(sets) {
            let p = &mut self.points[t.point];
            match got {
                Ok(mut set) => {
                    let it = &mut self.iterations[t.point];
                    if it.is_none() {
                        *it = set.iterations;
                    }
                    for m in set.meta.iter_mut() {
                        m.round = round;
                        m.job = job_no as u32;
                    }
                    p.got.set.absorb(set);
                }
                Err(reason) => p.got.failed = Some(reason),
            }
        }
    }

    /// The job's points as its worker is told them, in the order they take
    /// turns; `counts(cfg)`: whether a point of configuration `cfg` counts.
    pub(super) fn job_points(&self, job: &Job, counts: impl Fn(CfgIx) -> bool) -> Vec<JobPoint> {
        job.takes
            .iter()
            .map(|t| {
                let item = self.points[t.point].item;
                JobPoint {
                    params: self.items[item].params.clone(),
                    samples: t.samples,
                    iterations: self.iterations[t.point],
                    counters: counts(self.points[t.point].cfg),
                }
            })
            .collect()
    }
}

impl Executor<'_> {
    /// One round: a worker per job, in the round's order. Stops at once when
    /// the run is interrupted.
    pub(super) fn run_round(&mut self, sweep: &mut Sweep, round: &Round) -> Result<()> {
        for job in &round.jobs {
            let job = sweep.still_taking(job);
            let Some(first) = job.takes.first() else { continue };
            if self.interrupted.load(Ordering::SeqCst) {
                self.was_interrupted = true;
                return Ok(());
            }
            let ready = self.ready;
            let cfg = &ready[sweep.points[first.point].cfg];
            // Machine-wide settings are switched here, settled before the worker starts.
            if let Err(why) = self.switch_knobs(cfg) {
                sweep.fail(&job, &format!("applying kernel settings: {why}"));
                self.progress.inc();
                continue;
            }
            let (job_no, outcome) = self.run_worker(sweep, &job, cfg, round)?;
            self.progress.inc();
            for t in &job.takes {
                self.ledger.schedule.push((sweep.points[t.point].seq, round.number));
            }
            match outcome {
                Outcome::Done { sets, cpu_secs, max_rss } => {
                    self.ledger.workers_cpu += cpu_secs;
                    self.ledger.peak_worker_rss = self.ledger.peak_worker_rss.max(max_rss);
                    sweep.absorb(&job, sets, round.number, job_no);
                }
                Outcome::Failed { reason, cpu_secs } => {
                    self.ledger.workers_cpu += cpu_secs;
                    self.restore_knobs();
                    sweep.fail(&job, &reason);
                }
                Outcome::Interrupted => {
                    self.was_interrupted = true;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Start a worker for `job` under `cfg` and wait for it; returns its
    /// number and how it ended. Its scratch directories go with it.
    fn run_worker(&mut self, sweep: &Sweep, job: &Job, cfg: &Config, round: &Round) -> Result<(usize, Outcome)> {
        let first = &sweep.items[sweep.points[job.takes[0].point].item];
        // The limit is per point: a tie's worker measures each in turn.
        let timeout = self.req.timeout.unwrap_or(first.info.timeout) * job.takes.len() as u32;
        self.job_no += 1;
        let job_no = self.job_no;
        let wdir = self.tmp.join(format!("w{job_no}"));
        std::fs::create_dir_all(&wdir)?;
        let placement = match self.cgroups.as_mut() {
            Some(c) => match c.place(cfg, job_no) {
                Ok(p) => p,
                Err(why) => {
                    return Ok((
                        job_no,
                        Outcome::Failed { reason: format!("making the worker's cgroup: {why}"), cpu_secs: 0.0 },
                    ));
                }
            },
            None => Default::default(),
        };
        let spec = JobSpec {
            benchmark: first.info.name.to_string(),
            // Points of one tie may differ in counting (`config_ties`).
            points: sweep.job_points(job, |cfg| self.ready[cfg].counters.unwrap_or(self.req.counters)),
            config: cfg.clone(),
            settings: SamplerSettings {
                time_limit: Some(self.req.timeout.unwrap_or(first.info.timeout)),
                // After a disturbed sample of one of its points (a retake
                // always is), the worker waits for quiet first.
                quiet_first: job
                    .takes
                    .iter()
                    .any(|t| t.retakes > 0 || sweep.points[t.point].got.set.meta.last().is_some_and(|m| m.disturbed)),
                cpu_stat: placement.cpu_stat.clone(),
                ..self.settings(wdir.clone())
            },
            result_path: self.tmp.join(format!("r{job_no}.json")),
            cgroups: placement.join.clone(),
            order_seed: match self.req.interleave {
                Interleave::Lockstep => 0,
                _ => order_seed(self.ledger.order_seed, job_no),
            },
            duet: self.duet_cpus(cfg, job.takes.len()),
        };
        let n = job.takes.len();
        let turns = if n > 1 { format!(" (+{} in turn)", n - 1) } else { String::new() };
        self.progress.set_message(format!(
            "{} {}{turns} [{}] {}",
            first.info.name,
            first.params.display_set(&first.info.option_defaults()),
            cfg.name,
            round.label()
        ));
        let outcome = run_job(&spec, &self.tmp.join(format!("j{job_no}.json")), timeout, &self.interrupted);
        // The directories the worker made elsewhere go with it, however it ended.
        owned::remove_listed(&wdir.join(owned::LIST), owned::Owner::me());
        if let Some(c) = self.cgroups.as_mut() {
            c.release(&placement);
        }
        let _ = std::fs::remove_dir_all(&wdir);
        Ok((job_no, outcome?))
    }

    /// The sampler settings every point of a worker shares; each point's
    /// samples, iterations and counting come from its [`JobPoint`].
    fn settings(&self, tmpdir: std::path::PathBuf) -> SamplerSettings {
        SamplerSettings {
            samples: 0,
            target: self.req.sample_time,
            warmup: self.req.warmup,
            warmup_runs: self.req.warmup_runs,
            warmup_settles: self.req.warmup_settles,
            time_limit: None,
            quick: self.req.quick,
            iterations: None,
            tmpdir,
            llc_bytes: self.topo.llc_bytes(),
            retake: true,
            quiet_wait: self.req.quiet_wait,
            quiet_first: false,
            owner: Some(owned::Owner::me()),
            counters: false,
            cpu_stat: None,
            profile: self.req.profile.clone(),
        }
    }

    /// Switch the kernel settings to `cfg`'s, when the run switches any; on
    /// failure they are restored as found and the reason returned.
    fn switch_knobs(&mut self, cfg: &Config) -> std::result::Result<(), super::knobs::SwitchError> {
        let Some(k) = self.knobs.as_mut() else { return Ok(()) };
        let switched = k.switch(cfg);
        if switched.is_err() {
            self.restore_knobs();
        }
        switched
    }

    /// Kernel settings back as found, when the run switches any.
    pub(super) fn restore_knobs(&mut self) {
        if let Some(k) = self.knobs.as_mut() {
            if let Err(e) = k.restore() {
                eprintln!("kdelta: restoring kernel settings: {e}");
            }
        }
    }
}

impl Executor<'_> {
    /// With `--interleave duet`, the CPUs of `cfg` a worker of `points`
    /// points samples on at the same moment (one per core first), counted
    /// into the ledger; empty (they take turns) otherwise, or when `cfg`
    /// has fewer CPUs than points.
    fn duet_cpus(&mut self, cfg: &Config, points: usize) -> Vec<u32> {
        if self.req.interleave != Interleave::Duet || points < 2 {
            return Vec::new();
        }
        let cpus = self.topo.spread(&cfg.cpus, points);
        let entry = format!("{} [{}]", cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","), cfg.name);
        if cpus.len() < points {
            let took_turns = format!("{} [{}]", cfg.cpus, cfg.name);
            if !self.ledger.duet_fell_back.contains(&took_turns) {
                self.ledger.duet_fell_back.push(took_turns);
            }
            return Vec::new();
        }
        if !self.ledger.duet.contains(&entry) {
            self.ledger.duet.push(entry);
        }
        cpus
    }
}

/// A worker's turn-order seed from the run's (splitmix64 of the two): never 0.
fn order_seed(run: u64, job_no: usize) -> u64 {
    let mut z = run ^ (job_no as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)).max(1)
}

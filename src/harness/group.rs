//! One benchmark's group of points (parameter point x configuration) run
//! in rounds of workers: the group laid out as points ([`Sweep`]), its
//! rounds planned ([`Schedule`]), run one by one (`round.rs`) in the run's
//! passes over its groups (`passes.rs`), extra rounds
//! added while points lack clean samples or (with `--runs auto`) while a
//! comparison they take part in is unsettled (neither *different* nor
//! *same*, `stats::verdict`; a point compared with nothing: while its
//! median's interval is wider than `--ci-target`), and every point's
//! samples turned into its stored result.
//!
//! A worker usually measures one point. When the user compares values of
//! a parameter (`--param impl=libc,tuned`) of a benchmark that allows it
//! (`BenchInfo::lockstep`), the values at each other point of the sweep
//! form a *tie* (`order::ties`, [`Tie`]) and share one worker, taking turns
//! sample by sample (`measure::sampler::turns`); `--interleave workers`
//! turns that off. Configurations that differ only in what a worker
//! switches per point (`+counters=on|off`, `Config::shares_worker_with`)
//! join the same tie: counting on against off is then measured in one
//! process, turn by turn.

use super::ix::{CfgIx, ItemIx, PointIx};
use super::order::{compared, ties, visit_order, Axes};
use super::plan::{param_for, Item, PlannedConfig, Request};
use super::result::{ci_met, finish, record_only, Aim, Gathered, Subject};
use super::schedule::{Round, Standing, Tie};
use crate::config::Config;
use crate::model::record::{ResultRecord, Status};
use crate::model::Params;
use crate::topology::Topology;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// One point of a group: an item under one ready configuration, the
/// sequence number its result is stored under, and what it has gathered.
pub(super) struct Point {
    pub(crate) item: ItemIx,
    pub(crate) cfg: CfgIx,
    pub(crate) seq: usize,
    pub(crate) got: Gathered,
}

/// Where each result of a group comes from, in storing order.
enum Slot {
    Measured(PointIx),
    Unavailable { item: ItemIx, config: String, reason: String },
    Unsupported { item: ItemIx, cfg: CfgIx, reason: String },
}

/// A group under way: its items, its points (one per supported item and
/// ready configuration, item by item), where each of its results comes from
/// in storing order, and what each point's work was calibrated to.
pub(super) struct Sweep<'g> {
    pub(crate) items: &'g [Item],
    pub(crate) points: Vec<Point>,
    slots: Vec<Slot>,
    /// Iterations per sample, per point: calibrated once, in the point's
    /// first worker, and timed again by its later workers. Each
    /// configuration calibrates its own, as LMbench calibrates each run: a
    /// count sized on one CPU would make another configuration's samples
    /// 30x the target where a round trip is 30x dearer (`lat.pipe` under
    /// `noht`), or a thirtieth of it the other way round.
    pub(crate) iterations: Vec<Option<u64>>,
}

impl<'g> Sweep<'g> {
    /// The group's points and its storing order: per item, its unavailable
    /// configurations, then its points (or, for an item the benchmark does
    /// not support here, a record per ready configuration saying why);
    /// results are numbered from `first_seq` in that order.
    pub(super) fn lay_out(items: &'g [Item], configs: &[PlannedConfig], ready: usize, first_seq: usize) -> Sweep<'g> {
        let mut points = Vec::new();
        let mut slots = Vec::new();
        for (ii, item) in items.iter().enumerate() {
            let ii = ItemIx(ii);
            for pc in configs {
                if let PlannedConfig::Unavailable { name, reason } = pc {
                    let reason = format!("configuration unavailable: {reason}");
                    slots.push(Slot::Unavailable { item: ii, config: name.clone(), reason });
                }
            }
            match &item.unsupported {
                None => {
                    for cfg in (0..ready).map(CfgIx) {
                        slots.push(Slot::Measured(PointIx(points.len())));
                        let seq = first_seq + slots.len() - 1;
                        points.push(Point { item: ii, cfg, seq, got: Gathered::default() });
                    }
                }
                Some(why) => {
                    slots.extend((0..ready).map(|c| Slot::Unsupported { item: ii, cfg: CfgIx(c), reason: why.clone() }))
                }
            }
        }
        let iterations = vec![None; points.len()];
        Sweep { items, points, slots, iterations }
    }

    /// How many results the group stores (its result numbers).
    pub(super) fn slots_len(&self) -> usize {
        self.slots.len()
    }

    /// The group's ties in running order: each tie of items (`item_ties`)
    /// once per class of configurations that share a worker (`config_ties`),
    /// configurations innermost; within a tie, configuration by configuration.
    pub(super) fn ties(&self, item_ties: Vec<Vec<ItemIx>>, cfg_ties: &[Vec<CfgIx>]) -> Vec<Tie> {
        let at = |item: ItemIx, cfg: CfgIx| {
            let at = self.points.iter().position(|p| p.item == item && p.cfg == cfg);
            PointIx(at.expect("a supported item has its points"))
        };
        item_ties
            .iter()
            .flat_map(|tie| {
                cfg_ties.iter().map(move |class| Tie {
                    points: class.iter().flat_map(|&cfg| tie.iter().map(move |&ii| at(ii, cfg))).collect(),
                })
            })
            .collect()
    }

    /// Where each point stands before an extra round; `unsettled`: per
    /// point, whether a comparison it takes part in is still unknown
    /// (`None` for a point compared with nothing).
    pub(super) fn standings(&self, aim: Aim, unsettled: &[Option<bool>]) -> Vec<Standing> {
        self.points
            .iter()
            .zip(unsettled)
            .map(|(p, u)| Standing {
                item: p.item,
                failed: p.got.failed.is_some(),
                clean: p.got.clean(),
                taken: p.got.taken(),
                imprecise: aim.auto && u.unwrap_or_else(|| !ci_met(&p.got.set, aim.ci_target_pct)),
            })
            .collect()
    }

    /// The comparisons a report will make of this group, as pairs of
    /// points (base, other): each configuration of an item against the
    /// first, and within a tie each compared value against the tie's first
    /// at the same configuration.
    fn comparisons(&self, ties: &[Tie]) -> Vec<(PointIx, PointIx)> {
        let mut out = Vec::new();
        for (i, p) in self.points.iter().enumerate() {
            if p.cfg != CfgIx::FIRST {
                if let Some(base) = self.points.iter().position(|q| q.item == p.item && q.cfg == CfgIx::FIRST) {
                    out.push((PointIx(base), PointIx(i)));
                }
            }
        }
        for tie in ties {
            for (k, &i) in tie.points.iter().enumerate() {
                let first = tie.points[..k].iter().find(|&&b| self.points[b].cfg == self.points[i].cfg);
                if let Some(&base) = first {
                    if self.points[base].item != self.points[i].item {
                        out.push((base, i));
                    }
                }
            }
        }
        out
    }

    /// Per point: whether a comparison it takes part in is unknown
    /// (`Some(true)`), all of them settled (`Some(false)`), or it takes part
    /// in none (`None`). Each point is judged as its stored result will be.
    /// With `room` (what sampling may still add), an unknown that the most
    /// samples it could still get would not settle counts as settled:
    /// sampling it more is futile.
    pub(super) fn unsettled(
        &self,
        ties: &[Tie],
        aim: Aim,
        names: &[Config],
        threshold_pct: f64,
        room: Option<Room>,
    ) -> Vec<Option<bool>> {
        let mut out = vec![None; self.points.len()];
        let pairs = self.comparisons(ties);
        if pairs.is_empty() {
            return out;
        }
        let rec: Vec<ResultRecord> = self
            .points
            .iter()
            .map(|p| {
                let of = Subject { item: &self.items[p.item], config: &names[p.cfg].name, cpus: String::new() };
                finish(of, p.got.clone(), aim)
            })
            .collect();
        let opt = crate::stats::CompareOptions { threshold_pct, bootstrap: 0, ..Default::default() };
        for (a, b) in pairs {
            let (ra, rb) = (&rec[a], &rec[b]);
            // With `cap`: open only while more samples, up to the cap, could
            // still settle it (`verdict::Evidence::could_settle`).
            let taken = self.points[a].got.taken().min(self.points[b].got.taken()).max(1);
            let futile = |e: &crate::stats::verdict::Evidence| {
                room.is_some_and(|r| {
                    let growth = (r.cap as f64 / taken as f64).min(r.time);
                    growth <= crate::stats::verdict::FUTILITY_MAX_GROWTH && !e.could_settle(growth, threshold_pct)
                })
            };
            let open = if ra.status != Status::Ok || rb.status != Status::Ok {
                false
            } else {
                crate::stats::compare::compare_results(ra, rb, &opt).is_none_or(|c| {
                    c.answer == crate::stats::verdict::Answer::Unknown && !c.evidence.as_ref().is_some_and(futile)
                })
            };
            for i in [a, b] {
                out[i] = Some(out[i].unwrap_or(false) || open);
            }
        }
        out
    }

    /// An extra round's samples taken to replace disturbed ones, counted
    /// as retakes of their points when it is planned.
    pub(super) fn count_retakes(&mut self, round: &Round) {
        for t in round.jobs.iter().flat_map(|j| &j.takes) {
            self.points[t.point].got.retaken_extra += t.retakes;
        }
    }
}

/// How much more a group's sampling may grow: a point's sample cap, and
/// the group's time so far against all it may take (the cap of extra
/// rounds, or what is left of `--budget`), as a factor.
#[derive(Debug, Clone, Copy)]
pub(super) struct Room {
    pub(super) cap: usize,
    pub(super) time: f64,
}

/// What the run tells about its workers and rounds, stored in the run's
/// environment.
#[derive(Default)]
pub(super) struct Ledger {
    /// (result seq, round) per point of each worker, in the order they ran.
    pub(crate) schedule: Vec<(usize, u32)>,
    /// Draws every tie's turn order (`sampler::turns`), stored with the run.
    pub(crate) order_seed: u64,
    /// `--interleave duet`: the CPUs ties sampled on, per configuration
    /// (`0,1 [noht]`), and the configurations with too few CPUs, whose
    /// ties took turns instead.
    pub(crate) duet: Vec<String>,
    pub(crate) duet_fell_back: Vec<String>,
    pub(crate) retaken: usize,
    pub(crate) auto_met: usize,
    pub(crate) auto_capped: Vec<String>,
    pub(crate) noisy: usize,
    /// CPU time of every worker.
    pub(crate) workers_cpu: f64,
    pub(crate) peak_worker_rss: u64,
}

impl Ledger {
    /// A stored result's quality counted into the run's totals; `open`:
    /// whether a comparison it takes part in was still unknown at the end
    /// (`None` for a result compared with nothing: then whether its median
    /// missed the precision target).
    fn count(&mut self, r: &ResultRecord, auto: bool, open: Option<bool>) {
        let Some(q) = &r.quality else { return };
        self.retaken += q.retaken;
        self.noisy += usize::from(q.noisy);
        if auto && r.status == Status::Ok {
            match open.unwrap_or(q.ci_target_met != Some(true)) {
                false => self.auto_met += 1,
                true => {
                    let shown = r.params.display_set(&crate::bench::option_defaults(&r.benchmark));
                    let sep = if shown.is_empty() { "" } else { " " };
                    self.auto_capped.push(format!("{}{sep}{shown} [{}]", r.benchmark, r.config));
                }
            }
        }
    }
}

/// Runs a plan's groups, worker by worker, and keeps the run's running totals.
pub(super) struct Executor<'a> {
    pub(crate) req: &'a Request,
    pub(crate) topo: &'a Topology,
    /// Every configuration planned: unavailable ones are stored as such.
    pub(crate) configs: &'a [PlannedConfig],
    /// The configurations that run; a point's `cfg` indexes these.
    pub(crate) ready: &'a [Config],
    /// `--runs auto` (asked, or by default for a comparison).
    pub(crate) auto: bool,
    /// The run's temporary directory: job and result files, workers' scratch.
    pub(crate) tmp: std::path::PathBuf,
    pub(crate) interrupted: Arc<AtomicBool>,
    pub(crate) progress: super::progress::Progress,
    /// Kernel settings switched between workers, when a configuration has any.
    pub(crate) knobs: Option<super::knobs::Session>,
    /// The workers' cgroups and the isolating cpusets, when the run makes any.
    pub(crate) cgroups: Option<super::cgroups::Cgroups>,
    /// Workers started so far: the number of the last one.
    pub(crate) job_no: usize,
    pub(crate) was_interrupted: bool,
    pub(crate) ledger: Ledger,
    /// When the run began (`--budget` counts from here).
    pub(crate) started: Instant,
}

/// With `--budget`, a point may take up to this many times its samples.
pub(super) const BUDGET_CAP: usize = 50;

/// The ties of a benchmark's group before configurations, as items: its
/// supported items in visit order (`order.rs`), cut into ties when the
/// benchmark takes turns and the user compares a parameter's values. A tie
/// whose buffers together exceed what the machine can give
/// (`MemInfo::buffer_limit`) is split again.
pub(super) fn item_ties(req: &Request, group: &[Item]) -> Vec<Vec<ItemIx>> {
    let Some(info) = group.first().map(|i| &i.info) else { return Vec::new() };
    let axes = Axes {
        declared: info.params.iter().map(|p| p.name).collect(),
        given: req.overrides.keys().filter_map(|k| param_for(k, info)).collect(),
        alternatives: info.params.iter().filter(|p| p.kind.names_alternatives()).map(|p| p.name).collect(),
    };
    let params: Vec<&Params> = group.iter().map(|i| &i.params).collect();
    let order = visit_order(&params, &axes);
    let tie_on = if req.interleave.ties() && info.lockstep { compared(&params, &axes) } else { None };
    let cut = match tie_on {
        Some(p) => ties(&params, &order, p),
        None => order.iter().map(|&i| vec![i]).collect(),
    };
    let limit = crate::sys::memory::meminfo().map(|m| m.buffer_limit());
    let mut out = Vec::new();
    for tie in cut {
        let tie: Vec<usize> = tie.into_iter().filter(|&i| group[i].unsupported.is_none()).collect();
        let total = tie.iter().filter_map(|&i| group[i].bench.memory(&group[i].params)).fold(0u64, u64::saturating_add);
        if tie.len() > 1 && limit.is_some_and(|l| total > l) {
            out.extend(tie.into_iter().map(|i| vec![ItemIx(i)]));
        } else if !tie.is_empty() {
            out.push(tie.into_iter().map(ItemIx).collect());
        }
    }
    out
}

/// The ready configurations (indices) grouped into those one worker
/// measures together: for a benchmark that takes turns, configurations that
/// differ only in counting (`Config::shares_worker_with`), in first-seen
/// order; otherwise (or with `--interleave workers`) one each.
pub(super) fn config_ties(req: &Request, lockstep: bool, ready: &[Config]) -> Vec<Vec<CfgIx>> {
    let joins = req.interleave.ties() && lockstep;
    let mut out: Vec<Vec<CfgIx>> = Vec::new();
    for (i, c) in ready.iter().enumerate() {
        match out.iter_mut().find(|class| joins && ready[class[0]].shares_worker_with(c)) {
            Some(class) => class.push(CfgIx(i)),
            None => out.push(vec![CfgIx(i)]),
        }
    }
    out
}

impl Executor<'_> {
    /// The group's results in storing order. A point interrupted before its
    /// first sample stores nothing.
    pub(super) fn records(
        &mut self,
        sweep: Sweep,
        aim: Aim,
        open: &[Option<bool>],
        futile: &[bool],
    ) -> Vec<ResultRecord> {
        let Sweep { items, mut points, slots, .. } = sweep;
        let mut out = Vec::new();
        for slot in slots {
            let r = match slot {
                Slot::Measured(pi) => {
                    let p = &mut points[pi];
                    if self.was_interrupted && p.got.set.samples.is_empty() && p.got.failed.is_none() {
                        continue;
                    }
                    let mut r = self.measured(&items[p.item], p.cfg, std::mem::take(&mut p.got), aim, open[pi]);
                    if let Some(q) = r.quality.as_mut().filter(|_| futile[pi]) {
                        q.futile = true;
                    }
                    r
                }
                Slot::Unavailable { item, config, reason } => {
                    record_only(Subject { item: &items[item], config: &config, cpus: String::new() }, reason)
                }
                Slot::Unsupported { item, cfg, reason } => {
                    let c = &self.ready[cfg];
                    record_only(Subject { item: &items[item], config: &c.name, cpus: c.cpus.to_string() }, reason)
                }
            };
            out.push(r);
        }
        out
    }

    /// A measured point's result, with the kernel settings read back under
    /// its configuration, counted into the ledger.
    fn measured(&mut self, item: &Item, cfg: CfgIx, got: Gathered, aim: Aim, open: Option<bool>) -> ResultRecord {
        let cfg = &self.ready[cfg];
        let mut r = finish(Subject { item, config: &cfg.name, cpus: cfg.cpus.to_string() }, got, aim);
        if let Some(k) = &self.knobs {
            let read = k.read_back(&cfg.name);
            if !read.is_empty() {
                r.notes.push(format!("kernel settings read back: {}", read.join(", ")));
                r.extras.kernel_settings_read_back = Some(read.to_vec());
            }
        }
        self.ledger.count(&r, aim.auto, open);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::benchmark::{BenchInfo, Benchmark};
    use crate::measure::sampler::Sampler;
    use crate::model::Better;
    use anyhow::Result;

    struct Fake;
    impl Benchmark for Fake {
        fn info(&self) -> BenchInfo {
            BenchInfo::new("fake.bench", "nothing", "us", Better::Lower)
        }
        fn run(&self, _: &Params, _: &mut Sampler) -> Result<()> {
            Ok(())
        }
    }

    fn item(n: &str, unsupported: Option<&str>) -> Item {
        Item {
            bench: Arc::new(Fake),
            info: Fake.info(),
            params: Params([("n".to_string(), n.to_string())].into_iter().collect()),
            unsupported: unsupported.map(str::to_string),
        }
    }

    #[test]
    fn a_group_stores_item_by_item_and_ties_its_points_per_configuration() {
        let items = [item("1", None), item("2", Some("no device")), item("3", None)];
        let unavailable = [PlannedConfig::Unavailable { name: "smt".into(), reason: "no SMT".into() }];
        // Two ready configurations besides the unavailable one; results numbered from 10.
        let sweep = Sweep::lay_out(&items, &unavailable, 2, 10);
        let kinds: Vec<String> = sweep
            .slots
            .iter()
            .map(|s| match s {
                Slot::Measured(p) => format!("point {}", p.0),
                Slot::Unavailable { item, .. } => format!("unavailable {}", item.0),
                Slot::Unsupported { item, cfg, .. } => format!("unsupported {}/{}", item.0, cfg.0),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "unavailable 0",
                "point 0",
                "point 1",
                "unavailable 1",
                "unsupported 1/0",
                "unsupported 1/1",
                "unavailable 2",
                "point 2",
                "point 3"
            ]
        );
        let points: Vec<(usize, usize, usize)> = sweep.points.iter().map(|p| (p.item.0, p.cfg.0, p.seq)).collect();
        assert_eq!(points, [(0, 0, 11), (0, 1, 12), (2, 0, 17), (2, 1, 18)]);
        // Items 2 and 0 compared side by side: a tie per configuration.
        let item_ix = |v: &[usize]| v.iter().copied().map(ItemIx).collect();
        let cfg_ix = |v: &[usize]| v.iter().copied().map(CfgIx).collect();
        let points = |v: &[usize]| Tie { points: v.iter().copied().map(PointIx).collect() };
        let ties = sweep.ties(vec![item_ix(&[2, 0])], &[cfg_ix(&[0]), cfg_ix(&[1])]);
        assert_eq!(ties, [points(&[2, 0]), points(&[3, 1])]);
        // Two configurations one worker measures together: one tie, per
        // configuration its items.
        let ties = sweep.ties(vec![item_ix(&[2, 0])], &[cfg_ix(&[0, 1])]);
        assert_eq!(ties, [points(&[2, 0, 3, 1])]);
    }

    #[test]
    fn each_configuration_times_the_count_its_own_first_worker_calibrated() {
        use super::super::schedule::{Job, Take};
        let items = [item("1", None)];
        let mut sweep = Sweep::lay_out(&items, &[], 2, 0);
        let job = |point| Job { takes: vec![Take { point: PointIx(point), samples: 2, retakes: 0 }] };
        let calibrated = |n| vec![Ok(crate::measure::sampler::SampleSet { iterations: Some(n), ..Default::default() })];
        // The first configuration's worker calibrated 5000 (a pipe round
        // trip on one CPU); the second configuration's first worker must
        // calibrate its own, not time 5000 round trips 30x dearer.
        sweep.absorb(&job(0), calibrated(5000), 1, 1);
        let told = |sweep: &Sweep, point| sweep.job_points(&job(point), |_| false)[0].iterations;
        assert_eq!(told(&sweep, 0), Some(5000));
        assert_eq!(told(&sweep, 1), None);
        sweep.absorb(&job(1), calibrated(170), 1, 2);
        // Later workers of each keep their own count, whatever a later worker reports.
        sweep.absorb(&job(0), calibrated(4000), 2, 3);
        assert_eq!((told(&sweep, 0), told(&sweep, 1)), (Some(5000), Some(170)));
    }
}

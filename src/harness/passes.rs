//! A run's groups measured in passes: round 1 of every benchmark's group
//! of a window, then round 2 of each, and so on; then extra rounds, one per
//! group still wanting more in each pass, until none does; then the next
//! window. A window holds the groups whose first rounds, one after the
//! other, take [`WINDOW`] (all of them in most runs of a few minutes).
//!
//! Why not one group after the other: on a VM one vCPU can run several
//! percent slower than the other for seconds at a time (its host thread
//! shares a core with someone else's), and workers started close together
//! on one CPU tend to settle at the same speed. A group run whole takes a
//! second or two, so all its rounds of one configuration could fall into
//! one such stretch and agree with each other on a difference no later run
//! finds again: an identical loop on CPU 0 and CPU 1 (`--config
//! cpus=0,cpus=1`) was starred in 4 of 60 rows, quiet, on this project's
//! 2-vCPU Xeon VM. Passes put the other groups' workers between a group's
//! rounds, so its rounds sample the machine over the whole run, and the
//! rounds test (`stats::rounds`) sees these stretches as the noise they are.
//! A run of one benchmark is unchanged.
//!
//! A group is stored as soon as it has no more rounds to take (after the
//! last pass of its window's planned rounds at the earliest), so a kdelta
//! killed keeps the windows already done; interrupted, it stores what each
//! group of its window has measured, as a group run whole did.

use super::group::{Executor, Room, Sweep, BUDGET_CAP};
use super::plan::{wanted, Item};
use super::result::Aim;
use super::schedule::Schedule;
use crate::model::record::ResultRecord;
use anyhow::Result;
use std::time::{Duration, Instant};

/// One benchmark's group under way across the passes.
pub(super) struct GroupRun<'g> {
    sweep: Sweep<'g>,
    schedule: Schedule,
    aim: Aim,
    /// The time its planned rounds took, and its extra rounds so far.
    planned: Duration,
    extra: Duration,
    /// The number of its last round.
    number: u32,
    /// The result number of its first result.
    first_seq: usize,
    /// Extra rounds: the samples taken when the answers were last looked
    /// at, and what that look found, per point.
    looked_at: usize,
    unsettled: Vec<Option<bool>>,
    futile: Vec<bool>,
}

/// How long one pass over the groups of a window may take, at least:
/// round 1 of one group after another joins the window until it has taken
/// this long, so a group's rounds lie about this far apart (the stretches
/// of one slow vCPU seen here last a few seconds), and an interrupted run
/// leaves at most one window's groups part-measured. The tests shorten it
/// through `KDELTA_TEST_PASS_WINDOW_MS`.
const WINDOW: Duration = Duration::from_secs(10);

fn window() -> Duration {
    std::env::var("KDELTA_TEST_PASS_WINDOW_MS").ok().and_then(|v| v.parse().ok()).map_or(WINDOW, Duration::from_millis)
}

impl GroupRun<'_> {
    /// How many planned rounds it has.
    fn planned_rounds(&self) -> u32 {
        self.schedule.planned.len() as u32
    }
}

impl Executor<'_> {
    /// Every group of the plan, in passes (the module's documentation);
    /// `store(first_seq, records)` is called with each group's results, in
    /// storing order, numbered from `first_seq`, as soon as the group is
    /// done (interrupted: at once).
    pub(super) fn run_groups<'g>(
        &mut self,
        groups: impl Iterator<Item = &'g [Item]>,
        first_seq: usize,
        mut store: impl FnMut(usize, Vec<ResultRecord>) -> Result<()>,
    ) -> Result<()> {
        let mut seq = first_seq;
        let mut groups = groups.peekable();
        let window = window();
        while groups.peek().is_some() {
            // Round 1 of each group, until a pass takes the window's time.
            let mut runs: Vec<GroupRun<'g>> = Vec::new();
            let mut pass = Duration::ZERO;
            while !self.was_interrupted && pass < window.max(Duration::from_nanos(1)) {
                let Some(items) = groups.next() else { break };
                let mut g = self.lay_out(items, seq);
                seq += g.sweep.slots_len();
                pass += self.planned_round(&mut g, 1)?.max(Duration::from_nanos(1));
                runs.push(g);
            }
            let passes = runs.iter().map(GroupRun::planned_rounds).max().unwrap_or(0);
            for number in 2..=passes {
                for g in runs.iter_mut().filter(|g| number <= g.planned_rounds()) {
                    if self.was_interrupted {
                        break;
                    }
                    self.planned_round(g, number)?;
                }
            }
            while !runs.is_empty() {
                let mut still = Vec::with_capacity(runs.len());
                for mut g in runs {
                    if !self.was_interrupted && self.extra_round(&mut g)? {
                        still.push(g);
                    } else {
                        let first = g.first_seq;
                        store(first, self.group_records(g))?;
                    }
                }
                runs = still;
            }
            if self.was_interrupted {
                break;
            }
        }
        Ok(())
    }

    /// Planned round `number` of a group; the time it took.
    fn planned_round(&mut self, g: &mut GroupRun, number: u32) -> Result<Duration> {
        let t = Instant::now();
        if number <= g.planned_rounds() {
            self.run_round(&mut g.sweep, &g.schedule.planned_round(number))?;
            g.number = number;
        }
        g.planned += t.elapsed();
        Ok(t.elapsed())
    }

    /// A group laid out and scheduled; its results numbered from `first_seq`.
    fn lay_out<'g>(&self, items: &'g [Item], first_seq: usize) -> GroupRun<'g> {
        use super::group::{config_ties, item_ties};
        let aim =
            Aim { want: wanted(self.req, &items[0].info), auto: self.auto, ci_target_pct: self.req.ci_target_pct };
        let sweep = Sweep::lay_out(items, self.configs, self.ready.len(), first_seq);
        let cfg_ties = config_ties(self.req, items[0].info.lockstep, self.ready);
        let mut schedule = Schedule::new(sweep.ties(item_ties(self.req, items), &cfg_ties), aim.want);
        if self.req.budget.is_some() {
            // The budget bounds the time: a comparison may take many more samples to settle.
            schedule = schedule.capped(BUDGET_CAP);
        }
        let n = sweep.points.len();
        GroupRun {
            sweep,
            schedule,
            aim,
            planned: Duration::ZERO,
            extra: Duration::ZERO,
            number: 0,
            first_seq,
            looked_at: 0,
            unsettled: vec![None; n],
            futile: vec![false; n],
        }
    }

    /// One extra round of a group, while a point lacks clean samples or
    /// (with `--runs auto`) precision: for twice as long as its planned
    /// rounds took at most (a second at least), so that a group takes at
    /// most about 3x its planned time, as a point takes at most 3x its
    /// samples; with `--budget`, until the run has taken that long.
    /// Whether it ran one.
    fn extra_round(&mut self, g: &mut GroupRun) -> Result<bool> {
        let room_left = match self.req.budget {
            Some(b) => b.saturating_sub(self.started.elapsed()),
            None => (2 * g.planned).max(Duration::from_secs(1)).saturating_sub(g.extra),
        };
        if room_left.is_zero() {
            return Ok(false);
        }
        // Each look at the answers is one more chance of a false
        // *different* (`stats::verdict`): look after the planned rounds,
        // then each time the group's samples have grown by half.
        let taken: usize = g.sweep.points.iter().map(|p| p.got.taken()).sum();
        if g.aim.auto && (g.looked_at == 0 || 2 * taken >= 3 * g.looked_at) {
            let used = g.planned + g.extra;
            let time = (used + room_left).as_secs_f64() / used.as_secs_f64().max(1e-3);
            let room = Room { cap: g.schedule.cap, time };
            let threshold = self.req.threshold_pct;
            g.unsettled = g.sweep.unsettled(&g.schedule.ties, g.aim, self.ready, threshold, Some(room));
            let plain = g.sweep.unsettled(&g.schedule.ties, g.aim, self.ready, threshold, None);
            g.futile = plain.iter().zip(&g.unsettled).map(|(p, u)| *p == Some(true) && *u == Some(false)).collect();
            g.looked_at = taken.max(1);
        }
        let standings = g.sweep.standings(g.aim, &g.unsettled);
        let Some(round) = g.schedule.extra_round(g.number + 1, &standings) else { return Ok(false) };
        g.number += 1;
        g.sweep.count_retakes(&round);
        self.progress.add_length(round.jobs.len() as u64);
        let t = Instant::now();
        self.run_round(&mut g.sweep, &round)?;
        g.extra += t.elapsed();
        Ok(true)
    }

    /// A finished group's results in storing order. Still unknown at the
    /// end, and let go by the futility stop rather than by the budget or
    /// the cap: stored so a verdict says which.
    fn group_records(&mut self, g: GroupRun) -> Vec<ResultRecord> {
        let open = match g.aim.auto {
            true => g.sweep.unsettled(&g.schedule.ties, g.aim, self.ready, self.req.threshold_pct, None),
            false => vec![None; g.sweep.points.len()],
        };
        let futile: Vec<bool> = open.iter().zip(&g.futile).map(|(o, f)| *o == Some(true) && *f).collect();
        self.records(g.sweep, g.aim, &open, &futile)
    }
}

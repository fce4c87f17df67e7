//! The rounds of a benchmark's group, as data: which points share a worker
//! (a [`Tie`]), what one worker measures (a [`Job`]), the jobs of one round
//! in running order (a [`Round`]), and the planned and extra rounds of the
//! group (its [`Schedule`]). Nothing here runs anything: points are indices
//! into the group's table of points (`group::Sweep`), and which points an
//! extra round takes is decided from each point's [`Standing`].

use super::ix::{ItemIx, PointIx};
use super::order::round_order;
use super::plan::split_rounds;

/// A tie: the points that share one worker and take turns in it sample by
/// sample (`measure::sampler::turns`), in this order. All are under one
/// configuration; when the user compares a parameter's values
/// (`--param impl=libc,tuned`) of a benchmark that takes turns, a tie holds
/// those values at one other point of the sweep. Otherwise it holds one point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tie {
    pub(crate) points: Vec<PointIx>,
}

/// One point's share of a job: the samples its worker takes of it, and how
/// many of those replace disturbed samples (counted as retaken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Take {
    pub(crate) point: PointIx,
    pub(crate) samples: usize,
    pub(crate) retakes: usize,
}

/// A job: what one worker measures. The points of one tie (all, or those an
/// extra round still takes), in the order they take turns, each with the
/// samples it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Job {
    pub(crate) takes: Vec<Take>,
}

/// A round: a worker per job, one after the other in this order. Rounds are
/// numbered from 1 over a group; even-numbered ones run backward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Round {
    pub(crate) number: u32,
    /// How many rounds were planned, for a planned round; `None` for an
    /// extra one (retakes, `--runs auto`).
    pub(crate) planned_of: Option<u32>,
    pub(crate) jobs: Vec<Job>,
}

impl Round {
    /// How the progress bar names the round: `round 2/5`, `extra round 6`.
    pub(super) fn label(&self) -> String {
        match self.planned_of {
            Some(of) => format!("round {}/{of}", self.number),
            None => format!("extra round {}", self.number),
        }
    }
}

/// Where a point stands before an extra round: what decides the samples
/// it takes in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Standing {
    /// The item (parameter point) it measures, in every configuration.
    pub(crate) item: ItemIx,
    /// A failed point takes nothing more.
    pub(crate) failed: bool,
    pub(crate) clean: usize,
    pub(crate) taken: usize,
    /// With `--runs auto`: its median is not yet known to the target precision.
    pub(crate) imprecise: bool,
}

/// The rounds of one group: its ties in running order, each point's
/// samples in each planned round, and the counts extra rounds work to.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    pub(crate) ties: Vec<Tie>,
    /// Samples each point takes in each planned round (`split_rounds`).
    pub(crate) planned: Vec<usize>,
    /// Clean samples each point wants.
    pub(crate) want: usize,
    /// Samples a point may take in all, disturbed ones included: 3x `want`.
    pub(crate) cap: usize,
}

impl Schedule {
    pub(super) fn new(ties: Vec<Tie>, want: usize) -> Schedule {
        Schedule { ties, planned: split_rounds(want), want, cap: 3 * want }
    }

    /// The same, each point taking at most `factor` times its samples.
    pub(super) fn capped(mut self, factor: usize) -> Schedule {
        self.cap = factor.max(1) * self.want;
        self
    }

    /// Planned round `number` (from 1): every tie once, each point taking
    /// that round's samples.
    pub(super) fn planned_round(&self, number: u32) -> Round {
        let per = self.planned[number as usize - 1];
        let jobs = self
            .ties
            .iter()
            .map(|tie| Job {
                takes: tie.points.iter().map(|&point| Take { point, samples: per, retakes: 0 }).collect(),
            })
            .collect();
        Round { number, planned_of: Some(self.planned.len() as u32), jobs: directed(jobs, number) }
    }

    /// Extra round `number`, or `None` when no point needs more: a point
    /// short of clean samples takes what it lacks (at most a planned
    /// round's worth), and with `--runs auto` every configuration of an item
    /// with an imprecise median takes a planned round's worth more (a
    /// comparison is judged on rounds both sides took: `stats::rounds`),
    /// all within the cap. A tie keeps taking turns: its other points take
    /// as many samples as the one that needs most, within their caps.
    pub(super) fn extra_round(&self, number: u32, standing: &[Standing]) -> Option<Round> {
        let (want, cap, step) = (self.want, self.cap, self.planned[0]);
        let refined: Vec<ItemIx> =
            standing.iter().filter(|s| !s.failed && s.taken < cap && s.imprecise).map(|s| s.item).collect();
        let need = |s: &Standing| {
            if s.failed || s.taken >= cap {
                0
            } else if s.clean < want {
                (want - s.clean).min(step).min(cap - s.taken)
            } else if refined.contains(&s.item) {
                step.min(cap - s.taken)
            } else {
                0
            }
        };
        let mut jobs = Vec::new();
        for tie in &self.ties {
            let needs: Vec<usize> = tie.points.iter().map(|&p| need(&standing[p])).collect();
            let most = needs.iter().copied().max().unwrap_or(0);
            if most == 0 {
                continue;
            }
            let takes = tie
                .points
                .iter()
                .zip(needs)
                .filter(|(&p, _)| !standing[p].failed)
                .filter_map(|(&point, n)| {
                    let s = &standing[point];
                    let retakes = if s.clean < want { n } else { 0 };
                    let samples = n.max(most.min(cap.saturating_sub(s.taken)));
                    (samples > 0).then_some(Take { point, samples, retakes })
                })
                .collect();
            jobs.push(Job { takes });
        }
        (!jobs.is_empty()).then(|| Round { number, planned_of: None, jobs: directed(jobs, number) })
    }
}

/// Jobs in the direction of round `number`: as given on odd rounds; on even
/// ones the jobs backward and so the points within each, so that drift hits
/// every point alike and no point always follows the same neighbour.
fn directed(jobs: Vec<Job>, number: u32) -> Vec<Job> {
    let r = number as usize - 1;
    let mut jobs: Vec<Job> = round_order(jobs.len(), r).into_iter().map(|k| jobs[k].clone()).collect();
    for job in &mut jobs {
        job.takes = round_order(job.takes.len(), r).into_iter().map(|m| job.takes[m]).collect();
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tie(points: &[usize]) -> Tie {
        Tie { points: points.iter().copied().map(PointIx).collect() }
    }

    /// Each job as (point, samples) pairs.
    fn shown(r: &Round) -> Vec<Vec<(usize, usize)>> {
        r.jobs.iter().map(|j| j.takes.iter().map(|t| (t.point.0, t.samples)).collect()).collect()
    }

    #[test]
    fn planned_rounds_take_every_tie_alternating_direction() {
        // Two ties of two points (a compared pair under one configuration) and a lone point.
        let s = Schedule::new(vec![tie(&[0, 1]), tie(&[2, 3]), tie(&[4])], 7);
        assert_eq!(s.planned, [2, 2, 1, 1, 1]);
        assert_eq!(s.cap, 21);
        let r1 = s.planned_round(1);
        assert_eq!(r1.label(), "round 1/5");
        assert_eq!(shown(&r1), [vec![(0, 2), (1, 2)], vec![(2, 2), (3, 2)], vec![(4, 2)]]);
        let r2 = s.planned_round(2);
        assert_eq!(shown(&r2), [vec![(4, 2)], vec![(3, 2), (2, 2)], vec![(1, 2), (0, 2)]]);
        assert_eq!(shown(&s.planned_round(3)), [vec![(0, 1), (1, 1)], vec![(2, 1), (3, 1)], vec![(4, 1)]]);
        let total: usize = (1..=5).map(|n| s.planned_round(n).jobs[0].takes[0].samples).sum();
        assert_eq!(total, 7, "the planned rounds take every wanted sample");
        assert!((1..=5).flat_map(|n| s.planned_round(n).jobs).flat_map(|j| j.takes).all(|t| t.retakes == 0));
    }

    #[test]
    fn extra_rounds_retake_what_is_missing_and_keep_ties_in_turn() {
        let s = Schedule::new(vec![tie(&[0, 1]), tie(&[2]), tie(&[3])], 10);
        let done = |item| Standing { item: ItemIx(item), clean: 10, taken: 10, ..Standing::default() };
        // Point 0 lost two samples to disturbance; its tie-mate takes as many
        // to keep taking turns, without counting them as retakes. Point 3 failed.
        let standing = [
            Standing { item: ItemIx(0), clean: 8, taken: 10, ..Standing::default() },
            done(1),
            done(2),
            Standing { item: ItemIx(3), failed: true, ..Standing::default() },
        ];
        let r = s.extra_round(6, &standing).expect("a retake");
        assert_eq!(r.label(), "extra round 6");
        // Even round: backward, within the tie too.
        assert_eq!(
            r.jobs,
            [Job {
                takes: vec![
                    Take { point: PointIx(1), samples: 2, retakes: 0 },
                    Take { point: PointIx(0), samples: 2, retakes: 2 }
                ]
            }]
        );
        // Nothing missing and nothing imprecise: no extra round.
        let all_done: Vec<Standing> = (0..4).map(done).collect();
        assert_eq!(s.extra_round(7, &all_done), None);
        // A point at its cap takes nothing more, however few are clean.
        let capped =
            [Standing { item: ItemIx(0), clean: 0, taken: 30, ..Standing::default() }, done(1), done(2), done(3)];
        assert_eq!(s.extra_round(7, &capped), None);
    }

    #[test]
    fn auto_refines_every_configuration_of_an_imprecise_item() {
        // Items 0 and 1 under two configurations: points 0, 1 are item 0, points 2, 3 item 1.
        let s = Schedule::new(vec![tie(&[0]), tie(&[1]), tie(&[2]), tie(&[3])], 10);
        let at = |item, imprecise, taken| Standing {
            item: ItemIx(item),
            clean: taken,
            taken,
            imprecise,
            ..Standing::default()
        };
        let standing = [at(0, true, 10), at(0, false, 10), at(1, false, 10), at(1, false, 28)];
        let r = s.extra_round(7, &standing).expect("refinement");
        // A planned round's worth (2) for both configurations of item 0.
        assert_eq!(shown(&r), [vec![(0, 2)], vec![(1, 2)]]);
        // Near the cap, only what is left.
        let near = [at(0, true, 29), at(0, false, 10), at(1, false, 10), at(1, false, 10)];
        assert_eq!(shown(&s.extra_round(8, &near).unwrap()), [vec![(1, 2)], vec![(0, 1)]]);
        // An imprecise point at its cap no longer refines its item.
        let spent = [at(0, true, 30), at(0, false, 10), at(1, false, 10), at(1, false, 10)];
        assert_eq!(s.extra_round(8, &spent), None);
    }
}

//! Simulator tests: hand-computed cases, the figures of Molnar's 2002 post, and properties.

use super::render::{render_json, render_text};
use super::simulate_all;
use super::summary::PolicyResult;
use crate::cli::SimulateArgs;
use clap::Parser;

#[derive(clap::Parser)]
struct T {
    #[command(flatten)]
    a: SimulateArgs,
}

fn args(s: &str) -> SimulateArgs {
    let v = std::iter::once("x").chain(s.split_whitespace());
    T::try_parse_from(v).unwrap().a
}

fn sim(s: &str) -> Vec<PolicyResult> {
    let (cfg, p) = args(s).config().unwrap();
    simulate_all(&cfg, &p, false).unwrap()
}

/// Developer aid: `SIMARGS="--workload make" cargo test --lib
/// simulate::tests::show -- --ignored --nocapture` prints the text report.
#[test]
#[ignore]
fn show() {
    let a = args(&std::env::var("SIMARGS").unwrap());
    let (cfg, p) = a.config().unwrap();
    let r = simulate_all(&cfg, &p, false).unwrap();
    println!("{}", render_text(&cfg, &r));
}

use super::engine::{Engine, EngineCfg, Phase, State, TaskId, Workload};
use super::policy::{Action, Policy, PolicyName};
use super::shape::Shape;
use super::{rng_for, run_rep, SimConfig, WorkloadCfg};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Test policy: a task runs on the CPU named by its tag; optionally one
/// running-task migration at the first balance tick.
struct Pinned {
    q: Vec<VecDeque<TaskId>>,
    migrate: Option<(usize, usize)>,
}
impl Policy for Pinned {
    fn name(&self) -> &'static str {
        "pinned"
    }
    fn enqueue(&mut self, st: &State, task: TaskId, _new: bool, _r: &mut ChaCha8Rng) {
        self.q[st.tasks[task].tag as usize].push_back(task);
    }
    fn queue(&self, _st: &State, cpu: usize) -> &VecDeque<TaskId> {
        &self.q[cpu]
    }
    fn queue_mut(&mut self, _st: &State, cpu: usize) -> &mut VecDeque<TaskId> {
        &mut self.q[cpu]
    }
    fn balance(&mut self, _st: &State, _r: &mut ChaCha8Rng) -> Vec<Action> {
        self.migrate.take().map(|(from, to)| Action::MigrateRunning { from, to }).into_iter().collect()
    }
    fn idle_balance(&mut self, _st: &State, _cpu: usize, _r: &mut ChaCha8Rng) -> Vec<Action> {
        Vec::new()
    }
}

/// Test workload: the given tasks at time 0; records exit times.
struct Batch {
    tasks: Vec<(Vec<Phase>, u64)>,
    exits: Vec<(TaskId, f64)>,
}
impl Workload for Batch {
    fn start(&mut self, sim: &mut Engine) {
        for (ph, tag) in std::mem::take(&mut self.tasks) {
            sim.spawn(ph, tag, None);
        }
    }
    fn exited(&mut self, sim: &mut Engine, task: TaskId) {
        self.exits.push((task, sim.now()));
    }
}

fn batch(
    shape: &str,
    smt: f64,
    cross: f64,
    balance: f64,
    migrate: Option<(usize, usize)>,
    tasks: Vec<(Vec<Phase>, u64)>,
) -> (Vec<(TaskId, f64)>, Engine) {
    let shape = Shape::parse(shape).unwrap();
    let cfg = EngineCfg { smt_rate: smt, cross_core_rate: cross, timeslice: 0.1, balance };
    let pol = Box::new(Pinned { q: vec![VecDeque::new(); shape.ncpus()], migrate });
    let mut e = Engine::new(shape, cfg, pol, rng_for(1, 0, 1), true);
    let mut w = Batch { tasks, exits: vec![] };
    e.run(&mut w);
    (w.exits, e)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn one_task_alone_runs_at_rate_one() {
    let (ex, e) = batch("2x1x2", 0.5, 0.9, 1.0, None, vec![(vec![Phase::Cpu(2.0)], 0)]);
    assert!(close(ex[0].1, 2.0), "{ex:?}");
    assert!(close(e.counters.work_done, 2.0));
}

#[test]
fn two_tasks_on_siblings_run_at_smt_rate() {
    let (ex, _) = batch("2x1x2", 0.5, 0.9, 1.0, None, vec![(vec![Phase::Cpu(1.0)], 0), (vec![Phase::Cpu(1.0)], 1)]);
    assert!(ex.iter().all(|&(_, t)| close(t, 2.0)), "{ex:?}");
    // Different cores: the cross-core factor only.
    let (ex, _) = batch("2x1x2", 0.5, 0.8, 1.0, None, vec![(vec![Phase::Cpu(1.0)], 0), (vec![Phase::Cpu(1.0)], 2)]);
    assert!(ex.iter().all(|&(_, t)| close(t, 1.25)), "{ex:?}");
    // Unequal work: the short one ends at 1.0 (0.5 work at rate 0.5), then the other runs alone.
    let (ex, _) = batch("2x1x2", 0.5, 1.0, 10.0, None, vec![(vec![Phase::Cpu(0.5)], 0), (vec![Phase::Cpu(1.0)], 1)]);
    assert!(close(ex[0].1, 1.0) && close(ex[1].1, 1.5), "{ex:?}");
}

#[test]
fn migration_mid_task_speeds_both_up() {
    // Siblings at rate 0.5 until the tick at 0.5 s (0.25 done each), then on
    // separate cores at rate 1: 0.75 left, ends at 1.25.
    let (ex, e) =
        batch("2x1x2", 0.5, 1.0, 0.5, Some((1, 2)), vec![(vec![Phase::Cpu(1.0)], 0), (vec![Phase::Cpu(1.0)], 1)]);
    assert!(ex.iter().all(|&(_, t)| close(t, 1.25)), "{ex:?}");
    assert_eq!(e.counters.migrations_running, 1);
    let tr = e.trace.unwrap();
    assert!(tr.iter().any(|s| s.cpu == 2 && close(s.start, 0.5)));
}

#[test]
fn blocking_phase_and_timeslice() {
    // Task 0: 0.1 work, 0.3 blocked, 0.1 work. Tasks 1 and 2 share CPU 2 by slices.
    let (ex, e) = batch(
        "1x2x1",
        0.5,
        1.0,
        1.0,
        None,
        vec![
            (vec![Phase::Cpu(0.1), Phase::Block(0.3), Phase::Cpu(0.1)], 0),
            (vec![Phase::Cpu(0.25)], 1),
            (vec![Phase::Cpu(0.25)], 1),
        ],
    );
    let t0 = ex.iter().find(|x| x.0 == 0).unwrap().1;
    assert!(close(t0, 0.5), "{ex:?}");
    let last = ex.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(close(last, 0.5), "{ex:?}");
    assert!(e.counters.preemptions >= 2);
}

fn loops_times(r: &PolicyResult) -> Vec<f64> {
    r.reps.iter().flat_map(|x| x.iterations.iter().map(|i| i.time())).collect()
}

/// Molnar's loops: 2 loops of 2.55 s on 2x1x2, smt-rate 0.55.
#[test]
fn loops_bars() {
    let r = sim(
        "--topology 2x1x2 --smt-rate 0.55 --policy stock-2002,ht-aware-2002,modern --iterations 150 --seed 1 --trace",
    );
    let stock = r[0].loops.as_ref().unwrap().iteration.clone();
    assert!((stock.min / 2.60 - 1.0).abs() < 0.05, "{stock:?}");
    assert!((stock.max / 4.6 - 1.0).abs() < 0.05, "{stock:?}");
    // The mean is a statistical figure; the 1-in-3 model predicts 3.27 s.
    assert!(stock.mean > 3.0 && stock.mean < 3.6, "{stock:?}");
    for r in &r[1..] {
        let t = loops_times(r);
        assert_eq!(t.len(), 300);
        assert!(t.iter().all(|&x| (x / 2.60 - 1.0).abs() < 0.02), "{}: {:?}", r.policy, r.loops);
    }
}

#[test]
fn make_bars() {
    let best = |s: &str| sim(s).iter().map(|r| r.make.as_ref().unwrap().clone()).collect::<Vec<_>>();
    let j2 = best("--workload make -j 2 --policy stock-2002,ht-aware-2002 --reps 10 --seed 1");
    let gain = 1.0 - j2[1].best / j2[0].best;
    assert!(gain > 0.05 && gain < 0.15, "-j2 gain {gain}: {j2:?}");
    // Calibration: stock -j2 about 45 s.
    assert!((j2[0].mean / 45.0 - 1.0).abs() < 0.03, "{j2:?}");
    let j5 = best("--workload make -j 5 --policy stock-2002,ht-aware-2002 --reps 10 --seed 1");
    assert!((j5[1].best / j5[0].best - 1.0).abs() < 0.03, "-j5: {j5:?}");
}

#[test]
fn bad_arguments_are_bad_input() {
    for a in
        ["--topology 2x1", "--smt-rate 0", "--smt-rate 1.5", "--workload make -j 0", "--iterations 0", "--work nan"]
    {
        let e = args(a).config().unwrap_err();
        assert!(crate::error::is_bad_input(&e), "{a}: {e}");
    }
    // Closed sets are refused by the parser itself, naming what is allowed.
    for a in ["--workload idle", "--format xml", "--policy cfs", "--policy modern,cfs"] {
        let v = std::iter::once("x").chain(a.split_whitespace());
        let Err(e) = T::try_parse_from(v) else { panic!("{a} was accepted") };
        assert!(e.to_string().contains("possible values"), "{a}: {e}");
    }
}

#[test]
fn text_and_json_output() {
    let (cfg, p) = args("--iterations 3 --trace").config().unwrap();
    let r = simulate_all(&cfg, &p, false).unwrap();
    let txt = render_text(&cfg, &r);
    assert!(txt.contains("SIMULATED") && txt.contains("trace of stock-2002") && txt.contains("events/s"));
    let (cfg, p) = args("--workload make --jobs 20 --reps 2").config().unwrap();
    let r = simulate_all(&cfg, &p, false).unwrap();
    assert!(render_text(&cfg, &r).contains("best s"));
    let v: serde_json::Value = serde_json::from_str(&render_json(&cfg, &r).unwrap()).unwrap();
    assert_eq!(v["simulated"], true);
    assert_eq!(v["config"]["workload"]["kind"], "make");
    assert_eq!(v["results"].as_array().unwrap().len(), 3);
    assert!(v["results"][0]["make"]["best"].as_f64().unwrap() > 0.0);
    assert!(v["results"][0]["events_per_sec"].as_f64().is_some());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn cfg(shape: Shape, policy: PolicyName, wl: WorkloadCfg, seed: u64, smt: f64) -> SimConfig {
        SimConfig {
            shape,
            engine: EngineCfg { smt_rate: smt, cross_core_rate: 0.98, timeslice: 0.02, balance: 0.004 },
            policy,
            workload: wl,
            seed,
            reps: 1,
            trace: false,
        }
    }

    fn workload() -> impl Strategy<Value = WorkloadCfg> {
        prop_oneof![
            (1usize..10, 0.01f64..0.5, 1usize..6, 0.0f64..0.2).prop_map(|(loops, work, iterations, jitter)| {
                WorkloadCfg::Loops(super::super::workload::loops::LoopsCfg { loops, work, iterations, jitter })
            }),
            (1usize..9, 1usize..40).prop_map(|(parallel, jobs)| WorkloadCfg::Make(
                super::super::workload::make::MakeCfg { parallel, jobs }
            )),
        ]
    }

    fn shape() -> impl Strategy<Value = Shape> {
        (1usize..3, 1usize..4, 1usize..4).prop_map(|(p, c, t)| Shape::new(p, c, t).unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn smt_aware_policies_never_leave_a_core_idle_beside_a_doubled_one(sh in shape(), wl in workload(), seed in 0u64..1000, smt in 0.3f64..1.0, modern in any::<bool>()) {
            let p = if modern { PolicyName::Modern } else { PolicyName::HtAware2002 };
            let r = run_rep(&cfg(sh, p, wl, seed, smt), 0).unwrap();
            prop_assert!(r.counters.doubled_longest <= 0.004 + 1e-9, "{p} {sh}: {:?}", r.counters);
        }

        #[test]
        fn work_is_conserved_and_seeded_runs_repeat(sh in shape(), wl in workload(), seed in 0u64..1000, smt in 0.3f64..1.0, pi in 0usize..3) {
            let p = PolicyName::ALL[pi];
            let c = cfg(sh, p, wl, seed, smt);
            let a = run_rep(&c, 0).unwrap();
            let k = &a.counters;
            prop_assert!((k.work_done - k.work_submitted).abs() <= 1e-6 * k.work_submitted.max(1.0), "{p}: {k:?}");
            if let WorkloadCfg::Loops(l) = wl {
                prop_assert_eq!(a.iterations.len(), l.loops * l.iterations);
            }
            let b = run_rep(&c, 0).unwrap();
            prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
        }
    }
}

//! Tests of `disturb.rs`.

use super::*;

#[test]
fn solo_rule() {
    // 10 ms of wall time, 9.9 ms on the CPU: 1 % lost, clean.
    assert!(!judge_solo(0.010, 0.0099, Some(0.0)));
    // 3 ms lost to a preempting task.
    assert!(judge_solo(0.010, 0.007, None));
    // Steal counts even when the guest's CPU clock did not see it, once
    // it is more than the one clock tick /proc/stat resolves.
    assert!(judge_solo(0.100, 0.100, Some(0.03)));
    assert!(!judge_solo(0.010, 0.010, Some(0.01)));
    // Tiny samples get the absolute slack.
    assert!(!judge_solo(0.0005, 0.00048, None));
}

#[test]
fn waits_rule() {
    // Ping-pong on one CPU: idle 0, the two tasks used all 10 ms; their
    // waits for each other (2.5 ms) do not count.
    assert!(!judge_waits(0.010, Some(Placement::OneCpu), Some(0.0), Some(0.0025), Some(0.0)));
    // A hog took 4.5 ms of that CPU.
    assert!(judge_waits(0.010, Some(Placement::OneCpu), Some(0.0045), Some(0.006), None));
    // Across CPUs: wake-up work in idle context inflates `others`; the
    // tasks barely waited, so the sample is clean; a long wait is not.
    assert!(!judge_waits(0.100, Some(Placement::Across), Some(0.030), Some(0.0015), None));
    assert!(judge_waits(0.100, Some(Placement::Across), Some(0.030), Some(0.012), None));
    // Moving between the two: not judged, unless steal says so.
    assert!(!judge_waits(0.100, Some(Placement::Mixed), Some(0.030), Some(0.030), None));
    assert!(judge_waits(0.100, Some(Placement::Mixed), None, None, Some(0.03)));
    // fork: one task seen, its children reaped; no cpuidle: not judged.
    assert!(!judge_waits(0.010, None, None, Some(0.003), None));
}

#[test]
fn shared_rule() {
    assert!(!judge_shared(0.010, Some(0.0001), Some(0.0), MAX_LOST));
    assert!(judge_shared(0.010, Some(0.004), None, MAX_LOST));
    assert!(!judge_shared(0.010, None, None, MAX_LOST), "unknown is not disturbed");
    assert!(!judge_shared(1.0, Some(0.05), None, MAX_LOST_WHOLE_RUN));
    assert!(judge_shared(1.0, Some(0.2), None, MAX_LOST_WHOLE_RUN));
}

#[test]
fn a_whole_run_shorter_than_a_tick_is_not_judged_by_idle_ticks() {
    let tick = 1.0 / clock::clk_tck();
    // 0.3 ms on two CPUs, neither idle counter moved: 0.6 ms busy, of
    // which the run used 0.2 ms. Below the resolution: clean.
    let wall = 0.0003;
    let o = others(&[0, 1], &[0, 1], wall, 0.0002, &[Some(1.0), Some(1.0)], &[Some(1.0), Some(1.0)]).unwrap();
    assert!(o > MAX_LOST_WHOLE_RUN * wall + SLACK_S, "without the resolution it looks disturbed");
    assert!((tick_resolution(2, wall) - 2.0 * wall).abs() < 1e-12);
    assert!(!judge_shared(wall, Some((o - tick_resolution(2, wall)).max(0.0)), None, MAX_LOST_WHOLE_RUN));
    // A hog on the other CPU through a 100 ms run is still seen.
    let wall = 0.1;
    let o = others(&[0, 1], &[0, 1], wall, 0.1, &[Some(1.0), Some(1.0)], &[Some(1.0), Some(1.0)]).unwrap();
    assert!((tick_resolution(2, wall) - 2.0 * tick).abs() < 1e-12);
    assert!(judge_shared(wall, Some(o - tick_resolution(2, wall)), None, MAX_LOST_WHOLE_RUN));
}

#[test]
fn others_from_idle() {
    // Two CPUs watched, tasks seen on both; 10 ms of wall time; CPU 0
    // idle 4 ms, CPU 1 idle 5 ms; the tasks used 11 ms: nothing else ran.
    let ia = [Some(1.0), Some(2.0)];
    let ib = [Some(1.004), Some(2.005)];
    let o = others(&[0, 1], &[0, 1], 0.010, 0.011, &ia, &ib).unwrap();
    assert!(o.abs() < 1e-9, "{o}");
    // A hog took 5 ms of CPU 0 while the tasks used 6 ms.
    let o = others(&[0, 1], &[0], 0.010, 0.005, &[Some(0.0), None], &[Some(0.0), None]).unwrap();
    assert!((o - 0.005).abs() < 1e-9);
    // Idle unknown on a used CPU: no judgement.
    assert!(others(&[0, 1], &[1], 0.010, 0.005, &ia, &[Some(1.0), None]).is_none());
}

fn fig(wall: f64, others: f64, unresolved: f64) -> WholeRun {
    WholeRun { wall, others: Some(others), unresolved, pressure: None, seen_wait: None, throttled: 0.0 }
}

#[test]
fn a_whole_run_that_lost_a_tenth_to_a_hog_is_disturbed_by_its_wait() {
    // 1 s on one CPU, a hog took 100 ms of it: the ticks alone allow it.
    let ticks = fig(1.0, 0.10, 0.01);
    let (src, lost, disturbed) = judge_whole_run(&ticks);
    assert!(src == WaitSource::Ticks && (lost.unwrap() - 0.09).abs() < 1e-9 && !disturbed);
    // The run's tasks and the hog waited for each other: pressure says
    // 200 ms, the other work bounds the loss at 110 ms.
    let psi = WholeRun { pressure: Some((WaitSource::Pressure, 0.2)), ..ticks };
    let (src, lost, disturbed) = judge_whole_run(&psi);
    assert_eq!(src, WaitSource::Pressure);
    assert!((lost.unwrap() - 0.11).abs() < 1e-9 && disturbed);
    // The shell loop reaped as a zombie waited 95 ms: schedstat alone
    // says so where there is no PSI.
    let sched = WholeRun { seen_wait: Some(0.095), ..ticks };
    assert_eq!(judge_whole_run(&sched).0, WaitSource::Schedstat);
    assert!(judge_whole_run(&sched).2);
    // Its own cgroup's pressure, as exact.
    let cg = WholeRun { pressure: Some((WaitSource::CgroupPressure, 0.1)), ..ticks };
    assert_eq!(judge_whole_run(&cg).0, WaitSource::CgroupPressure);
    assert!(judge_whole_run(&cg).2);
}

#[test]
fn a_quiet_whole_run_is_clean_by_every_source() {
    let quiet = fig(0.2, 0.001, 0.01);
    for w in [
        WholeRun { pressure: Some((WaitSource::Pressure, 0.001)), ..quiet },
        WholeRun { pressure: Some((WaitSource::CgroupPressure, 0.0)), ..quiet },
        WholeRun { seen_wait: Some(0.0004), ..quiet },
        quiet,
    ] {
        assert!(!judge_whole_run(&w).2, "{w:?}");
    }
}

#[test]
fn waits_a_run_did_not_lose_to_others_do_not_disturb_it() {
    // A build with more jobs than CPUs waits for itself: pressure 2 s
    // over a 2 s run on two CPUs, but the other work on them is 10 ms.
    let build = WholeRun { pressure: Some((WaitSource::Pressure, 2.0)), ..fig(2.0, 0.01, 0.02) };
    assert!(!judge_whole_run(&build).2);
    // Other tasks waited on a CPU the run did not use: the system's
    // pressure says 100 ms, the run's own tasks (all seen) waited 1 ms.
    let elsewhere =
        WholeRun { pressure: Some((WaitSource::Pressure, 0.1)), seen_wait: Some(0.001), ..fig(0.1, 0.0, 0.01) };
    assert_eq!(judge_whole_run(&elsewhere), (WaitSource::Pressure, Some(0.001), false));
    // Throttling by its own cgroup's quota is the effect studied.
    let limited = WholeRun { pressure: Some((WaitSource::CgroupPressure, 0.5)), throttled: 0.5, ..fig(1.0, 0.5, 0.01) };
    assert!(!judge_whole_run(&limited).2);
    // Idle unknown and nothing else: not judged.
    let unknown = WholeRun { others: None, ..fig(1.0, 0.0, 0.01) };
    assert_eq!(judge_whole_run(&unknown), (WaitSource::Ticks, None, false));
}

/// A probe on a fake machine: `watch` CPUs, each one's interfering CPUs.
fn fake_probe(kind: TaskKind, watch: &[u32], near: &[(u32, &[u32])]) -> Probe {
    Probe {
        kind,
        peers: Vec::new(),
        watch: watch.to_vec(),
        root: PathBuf::from("/nonexistent"),
        pgid: 0,
        pid: 0,
        tid: 0,
        counting: false,
        counters: RefCell::new(None),
        cpu_stat: None,
        pressure: None,
        near: near.iter().map(|(c, n)| (*c, n.to_vec())).collect(),
        exempt: Vec::new(),
        softirqd: Vec::new(),
    }
}

/// A snapshot at `t` seconds after `base`, CPU `cpu`, every CPU's idle
/// seconds `idle` (cpuidle and `/proc/stat` alike), `cpu_s` of ours.
fn snap(base: Instant, t: f64, cpu: u32, idle: &[f64], cpu_s: f64) -> Snapshot {
    Snapshot {
        at: base + std::time::Duration::from_secs_f64(t),
        unix: t,
        thread_cpu: cpu_s,
        thread_nivcsw: 0,
        own_delay: Some(0.0),
        process_cpu: cpu_s,
        process_nivcsw: 0,
        softirqd_run: Vec::new(),
        peer_run: Vec::new(),
        peer_delay: Vec::new(),
        group_cpu: 0.0,
        cpus: vec![cpu],
        throttle: None,
        idle: idle.iter().map(|&i| Some(i)).collect(),
        steal: vec![0.0; idle.len()],
        counts: None,
        pressure: None,
        tasks: Vec::new(),
        reaped: (0.0, 0.0),
        stat_idle: idle.to_vec(),
    }
}

#[test]
fn a_busy_cpu_that_shares_the_core_disturbs_a_solo_sample() {
    let base = Instant::now();
    // 1 s on CPU 0, all of it on the CPU; CPU 1 busy 200 ms of it.
    let a = snap(base, 0.0, 0, &[5.0, 5.0], 1.0);
    let b = snap(base, 1.0, 0, &[5.0, 5.8], 2.0);
    // No SMT, no doctor's record: CPU 1 is none of the sample's business.
    let m = fake_probe(TaskKind::Solo, &[0, 1], &[]).meta(&a, &b);
    assert!(!m.disturbed && m.interfering_cpus.is_empty() && m.interfering_s.is_none());
    // CPU 1 slows CPU 0 (a sibling, or the doctor measured so).
    let p = fake_probe(TaskKind::Solo, &[0, 1], &[(0, &[1]), (1, &[0])]);
    let m = p.meta(&a, &b);
    assert_eq!(m.interfering_cpus, vec![1]);
    assert!(m.disturbed && m.interfering_s.unwrap() > 0.15, "{m:?}");
    // CPU 1 idle but for 10 ms (a clock tick): clean.
    let b = snap(base, 1.0, 0, &[5.0, 5.99], 2.0);
    assert!(!p.meta(&a, &b).disturbed);
}

#[test]
fn a_whole_run_records_its_source_and_its_interfering_cpus() {
    let base = Instant::now();
    // A whole run on CPU 0 (its affinity), 1 s, 0.9 s of CPU; CPU 1
    // slows CPU 0 and was busy 400 ms; nothing else ran on CPU 0.
    let a = snap(base, 0.0, 0, &[5.0, 5.0], 0.0);
    let mut b = snap(base, 1.0, 0, &[5.1, 5.6], 0.9);
    b.reaped = (0.9, 0.0);
    let p = fake_probe(TaskKind::WholeRun, &[0], &[(0, &[1])]);
    let m = p.meta(&a, &b);
    assert_eq!(m.wait_source, Some(WaitSource::Schedstat));
    assert_eq!(m.lost_s, Some(0.0));
    assert_eq!(m.interfering_cpus, vec![1]);
    assert!(m.disturbed, "{m:?}");
    // Without the doctor's record: clean, judged as before it.
    let m = fake_probe(TaskKind::WholeRun, &[0], &[]).meta(&a, &b);
    assert!(!m.disturbed && m.interfering_cpus.is_empty(), "{m:?}");
    // The reaped child waited 100 ms while a hog ran: disturbed.
    let mut c = b.clone();
    c.reaped = (0.9, 0.1);
    c.stat_idle = vec![5.0, 6.0];
    c.idle = vec![Some(5.0), Some(6.0)];
    let m = fake_probe(TaskKind::WholeRun, &[0], &[]).meta(&a, &c);
    assert!(m.disturbed && m.run_delay_s == Some(0.1), "{m:?}");
}

#[test]
fn the_wait_of_tasks_seen_and_children_reaped_adds_up() {
    let base = Instant::now();
    let mut a = snap(base, 0.0, 0, &[0.0], 0.0);
    let mut b = snap(base, 1.0, 0, &[0.0], 0.0);
    a.tasks = vec![(10, 1.0, 0.5), (11, 2.0, 0.1)];
    a.reaped = (3.0, 0.2);
    // Task 10 ran 0.5 s more and waited 0.05 s; 11 is gone (its time
    // lost with it); 12 started during the sample; a child was reaped.
    b.tasks = vec![(10, 1.5, 0.55), (12, 0.2, 0.01)];
    b.reaped = (3.3, 0.23);
    let (run, wait) = seen(&a, &b);
    assert!((run - (0.5 + 0.2 + 0.3)).abs() < 1e-9, "{run}");
    assert!((wait - (0.05 + 0.01 + 0.03)).abs() < 1e-9, "{wait}");
}

#[test]
fn a_busy_loop_is_clean_and_a_sleep_is_not() {
    let p = Probe::new(TaskKind::Solo);
    let a = p.snapshot();
    let t = Instant::now();
    while t.elapsed().as_millis() < 5 {
        std::hint::black_box(0);
    }
    let b = p.snapshot_end();
    let m = p.meta(&a, &b);
    assert!(m.wall_s >= 0.005 && m.cpu_s > 0.0);
    // Not asserted clean: the test machine may preempt us. A sleep is
    // time not on the CPU, which the rule must see.
    let a = p.snapshot();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = p.snapshot_end();
    assert!(p.meta(&a, &b).disturbed);
}

/// A fork-and-reap sample on one CPU: the kernel frees what the exits left
/// in `ksoftirqd/0` (0.6 ms of a 10 ms sample, as measured on the VM with
/// `scripts/who-disturbed.py`). That is the tasks' own deferred work, not
/// other work; anything beyond it still is.
#[test]
fn a_waits_sample_s_own_deferred_softirq_work_is_not_other_work() {
    let base = Instant::now();
    let mut p = fake_probe(TaskKind::Waits, &[0], &[]);
    p.softirqd = vec![(0, 1)];
    let a = Snapshot { softirqd_run: vec![Some(5.0)], ..snap(base, 0.0, 0, &[0.0], 0.0) };
    let b = Snapshot { softirqd_run: vec![Some(5.0006)], ..snap(base, 0.010, 0, &[0.0], 0.0094) };
    let m = p.meta(&a, &b);
    assert!((m.softirqd_s.unwrap() - 0.0006).abs() < 1e-9);
    assert!(m.others_s.unwrap() < 1e-9, "{m:?}");
    assert!(!m.disturbed);
    // The same sample without the thread's figure: 6 % of it was other work.
    p.softirqd.clear();
    let m = p.meta(&a, &b);
    assert!(m.softirqd_s.is_none() && (m.others_s.unwrap() - 0.0006).abs() < 1e-9);
    assert!(m.disturbed);
    // A hog beside it is still seen: 2 ms more than the softirq thread ran.
    p.softirqd = vec![(0, 1)];
    let hog = Snapshot { softirqd_run: vec![Some(5.0006)], ..snap(base, 0.010, 0, &[0.0], 0.0074) };
    assert!(p.meta(&a, &hog).disturbed);
}

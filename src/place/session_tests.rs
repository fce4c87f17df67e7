//! `kdelta place` end to end on this machine's CPUs, and its refusals.

use super::*;
use crate::cli::PlaceArgs;
use crate::cpuset::CpuSet;
use crate::place::decide::tests::{two_by_four_by_two, two_by_two_interleaved};
use crate::place::live::restrict;
use crate::place::render::render_place;
use crate::topology::flat;
use clap::Parser;
use std::sync::Arc;

#[derive(clap::Parser)]
struct T {
    #[command(flatten)]
    a: PlaceArgs,
}

fn parsed(s: &str) -> PlaceArgs {
    T::try_parse_from(std::iter::once("x").chain(s.split_whitespace())).unwrap().a
}

fn args(s: &str) -> Request {
    parsed(s).request()
}

/// Children of this process that are still around (zombies included).
fn my_children() -> Vec<i32> {
    let me = std::process::id() as i32;
    crate::sys::task::all_pids()
        .into_iter()
        .filter(|&p| crate::sys::task::stat(p).is_some_and(|st| st.ppid == me))
        .collect()
}

fn local_topo() -> Topology {
    // The CPUs this test may use, as a no-SMT topology (the live reader is not relied on).
    let m = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    flat(&CpuSet::from_iter((0..nix::sched::CpuSet::count() as u32).filter(|&c| m.is_set(c as usize).unwrap())))
}

// One test for all process-spawning cases, so the leftover check is not
// disturbed by another test's children.
#[test]
fn every_policy_runs_and_leaves_no_process_behind() {
    let topo = local_topo();
    let stop = AtomicBool::new(false);
    for p in ["naive", "smt-aware", "kernel"] {
        let a = args(&format!("--policy {p} -n 2 --iterations 2 --job-ms 20 --sample-ms 2"));
        let r = place(&a, &topo, None, &stop).unwrap();
        assert_eq!(r.runs.len(), 4, "{p}");
        assert_eq!(r.failed_iterations, 0);
        assert!(r.smt_present == Some(false) && r.note.is_some());
        assert!(render_place(parsed("").format, &r).contains("iteration wall time"));
        // Other tests in this binary fork too: check the processes this run started.
        let left: Vec<i32> = r.runs.iter().map(|x| x.pid).filter(|p| my_children().contains(p)).collect();
        assert!(left.is_empty(), "{p}: {left:?}");
    }
    // A command, one failing.
    let a = args("--policy smt-aware -n 2 --iterations 2 -- false");
    let r = place(&a, &topo, None, &stop).unwrap();
    assert_eq!(r.failed_iterations, 4);
    let e = place(&args("-- /nonexistent/kdelta-no-such-cmd"), &topo, None, &stop).unwrap_err();
    assert!(crate::error::is_bad_input(&e));
    // Interrupted: long jobs, stop raised from another thread; all killed and reaped.
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        s2.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let a = args("--policy naive -n 2 --iterations 3 --job-ms 60000");
    let t0 = std::time::Instant::now();
    let r = place(&a, &topo, None, &stop).unwrap();
    h.join().unwrap();
    assert!(r.interrupted && t0.elapsed() < Duration::from_secs(10));
    // Other tests in this binary fork short-lived children too; a leaked
    // 60 s job (a fork of this binary, never exec'd) would still be here
    // after they are gone. Programs other tests start and exec (the
    // report tests' headless Chromium) may outlive the wait: they are
    // not this run's jobs.
    let own_exe = std::fs::read_link("/proc/self/exe").ok();
    let forks = || -> Vec<i32> {
        my_children().into_iter().filter(|p| std::fs::read_link(format!("/proc/{p}/exe")).ok() == own_exe).collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !forks().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(forks().is_empty(), "{:?}", forks());
}

#[test]
fn smt_rate_needs_siblings() {
    let r = measure_smt_rate(&args("--measure-smt-rate"), &local_topo(), None, &AtomicBool::new(false)).unwrap();
    assert!(r.smt_rate.is_none());
    assert!(r.reason.unwrap().contains("SMT is absent"));
}

#[test]
fn bad_arguments() {
    for a in ["-n 0", "--iterations 0", "--job-ms 0"] {
        let e = place(&args(a), &local_topo(), None, &AtomicBool::new(false)).unwrap_err();
        assert!(crate::error::is_bad_input(&e), "{a}");
    }
    // Closed sets are refused by the parser itself, naming what is allowed.
    for a in ["--policy random", "--format yaml"] {
        let Err(e) = T::try_parse_from(std::iter::once("x").chain(a.split_whitespace())) else {
            panic!("{a} was accepted")
        };
        assert!(e.to_string().contains("possible values"), "{a}: {e}");
    }
}

#[test]
fn restrict_keeps_allowed_cpus() {
    let t = restrict(&two_by_four_by_two(), &CpuSet::parse_list("0-3,8").unwrap());
    assert_eq!(t.cores.len(), 4);
    assert_eq!(t.cores[0].cpus, CpuSet::parse_list("0,8").unwrap());
    assert!(t.has_smt());
    let t = restrict(&two_by_two_interleaved(), &CpuSet::parse_list("0-1").unwrap());
    assert!(!t.has_smt());
    assert_eq!(t.cpus.iter().map(|c| c.core).collect::<Vec<_>>(), vec![0, 1]);
}

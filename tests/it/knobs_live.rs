//! Kernel settings on the real machine (root only, `#[ignore]`d: they change
//! transparent huge pages machine-wide for a few seconds, so they must not
//! run beside anything that depends on THP). Run on demand:
//! `cargo test --release --test it knobs_live:: -- --ignored --test-threads 1`.

use crate::common;
use crate::common::{assert_ok, spawn_long_run, Env};
use std::time::{Duration, Instant};

const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

fn thp() -> Option<String> {
    std::fs::read_to_string(THP).ok()
}

/// Puts THP back as found if a test fails half-way.
struct Guard(String);
impl Drop for Guard {
    fn drop(&mut self) {
        if thp().as_deref() != Some(self.0.as_str()) {
            let cur =
                self.0.split_whitespace().find_map(|w| w.strip_prefix('[')?.strip_suffix(']')).unwrap_or("madvise");
            let _ = std::fs::write(THP, cur);
        }
    }
}

fn usable() -> Option<Guard> {
    if !nix::unistd::geteuid().is_root() {
        println!("SKIPPED: needs root to switch {THP}");
        return None;
    }
    match thp() {
        Some(t) => Some(Guard(t)),
        None => {
            println!("SKIPPED: {THP} absent (no transparent huge pages)");
            None
        }
    }
}

fn cmd(e: &Env) -> assert_cmd::Command {
    let mut c = e.cmd();
    c.env_remove("KDELTA_JOURNAL");
    c
}

#[test]
#[ignore]
fn thp_interleaved_and_restored() {
    let Some(g) = usable() else { return };
    let e = Env::new();
    let out = cmd(&e)
        .args([
            "run",
            "test.sleep",
            "--config",
            "up+thp=never,up+thp=always",
            "--runs",
            "4",
            "--sample-time",
            "2ms",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_ok(&out);
    assert_eq!(thp().unwrap(), g.0, "THP as found");
    let v = common::json(&out.stdout);
    let sched = v["run"]["environment"]["schedule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[0].as_u64().unwrap())
        .collect::<Vec<_>>();
    assert!(sched.windows(2).any(|w| w[0] != w[1]) && sched.len() >= 4, "interleaved: {sched:?}");
}

#[test]
#[ignore]
fn thp_restored_after_ctrl_c_and_after_kill_9_with_restore() {
    let Some(g) = usable() else { return };
    let e = Env::new();
    for sig in [nix::sys::signal::Signal::SIGINT, nix::sys::signal::Signal::SIGKILL] {
        let mut c = e.spawnable();
        c.env_remove("KDELTA_JOURNAL");
        let child = spawn_long_run(&mut c, "up+thp=never,up+thp=always", &[]);
        let t0 = Instant::now();
        while thp().as_deref() == Some(g.0.as_str()) && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_ne!(thp().unwrap(), g.0, "the run changed THP");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
        let st = child.wait_with_output().unwrap().status;
        if sig == nix::sys::signal::Signal::SIGKILL {
            assert_ne!(thp().unwrap(), g.0, "killed: left changed");
            let out = cmd(&e).arg("restore").output().unwrap();
            assert_ok(&out);
        } else {
            assert_eq!(st.code(), Some(130));
        }
        assert_eq!(thp().unwrap(), g.0, "{sig}: THP as found");
    }
}

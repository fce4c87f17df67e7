//! Issue 15: dbench cannot be made to write outside its tree, and nothing a
//! run starts or makes outlives kdelta, even `kill -9` of kdelta itself.

use crate::common::{assert_ok, Env};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kdelta(e: &Env) -> Command {
    e.spawnable()
}

/// `kdelta run dbench.throughput --quick` for `time` with `clients` and no
/// warm-up, working in `dir` when one is given (else below its TMPDIR).
fn dbench(e: &Env, time: &str, clients: u32, dir: Option<&Path>) -> Command {
    let mut c = kdelta(e);
    c.args(["run", "dbench.throughput", "--quick", "--param", &format!("time={time}")]).args([
        "--param",
        "warmup=0s",
        "--param",
        &format!("clients={clients}"),
    ]);
    if let Some(d) = dir {
        c.arg("--param").arg(format!("dir={}", d.display()));
    }
    c
}

/// Processes whose environment names this test's TMPDIR: kdelta, its
/// workers and their clients.
fn ours(e: &Env) -> Vec<i32> {
    let tmp = e.tmp().to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|d| d.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            // A zombie has no environment left to read; it runs nothing.
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| String::from_utf8_lossy(&env).contains(&tmp))
        })
        .collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Wait (up to 20 s) until `find` gives something.
fn wait_for<T>(mut find: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(x) = find() {
            return x;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "timed out waiting");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The dbench tree in `dir` once its client directories exist.
fn tree_in(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("kdelta-dbench-"))
            && !p.is_symlink()
            && p.join("clients/client1/~dmtmp").is_dir()
    })
}

/// The dbench tree in the run's temporary directory (`TMPDIR/kdelta-*/wN/`).
fn tree_in_tmp(e: &Env) -> Option<PathBuf> {
    std::fs::read_dir(e.tmp())
        .ok()?
        .flatten()
        .flat_map(|run| std::fs::read_dir(run.path()).into_iter().flatten().flatten())
        .find_map(|w| tree_in(&w.path()))
}

fn kill_9_during_dbench(user_dir: Option<&Path>) {
    let e = Env::new();
    let mut child = dbench(&e, "30s", 2, user_dir).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    match user_dir {
        Some(d) => drop(wait_for(|| tree_in(d))),
        None => drop(wait_for(|| tree_in_tmp(&e))),
    }
    assert!(ours(&e).len() >= 3, "kdelta, its worker and two clients should run: {:?}", ours(&e));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(ours(&e), Vec::<i32>::new(), "processes left 2 s after kill -9 of kdelta");
    // The tree and the temporary directory are left until the next kdelta
    // command, which removes them (marked, and their owner is dead) and shows
    // the run incomplete: the bar is `kdelta runs`.
    let out = kdelta(&e).args(["runs", "--json"]).output().unwrap();
    assert_ok(&out);
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(runs[0]["status"], "incomplete", "{runs}");
    assert_eq!(entries(&e.tmp()), Vec::<String>::new(), "left in TMPDIR");
    if let Some(d) = user_dir {
        assert_eq!(entries(d), Vec::<String>::new(), "left in dir=");
    }
}

#[test]
fn kill_9_of_kdelta_leaves_no_process_and_no_directory() {
    kill_9_during_dbench(None);
}

#[test]
fn kill_9_of_kdelta_leaves_nothing_in_dir() {
    let user = tempfile::tempdir().unwrap();
    kill_9_during_dbench(Some(user.path()));
}

#[test]
fn a_link_planted_in_dir_is_never_followed() {
    let e = Env::new();
    let user = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    // The old predictable names, for pids near ours, and a shared name.
    let me = std::process::id();
    for pid in me..me + 200 {
        std::os::unix::fs::symlink(victim.path(), user.path().join(format!("kdelta-dbench-{pid}-0"))).unwrap();
    }
    std::os::unix::fs::symlink(victim.path(), user.path().join("clients")).unwrap();
    let before = entries(user.path());
    let out = dbench(&e, "1s", 1, Some(user.path())).args(["--runs", "1"]).output().unwrap();
    assert_ok(&out);
    assert_eq!(entries(victim.path()), Vec::<String>::new(), "written through a link");
    assert_eq!(entries(user.path()), before, "left in dir=");
    assert_eq!(entries(&e.tmp()), Vec::<String>::new());
}

#[test]
fn a_link_planted_in_a_client_directory_is_refused_and_counted() {
    let e = Env::new();
    let user = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    let mut child = dbench(&e, "2s", 1, Some(user.path()))
        .args(["--runs", "1", "--param", "model=threads", "--label", "hostile"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tree = wait_for(|| tree_in(user.path()));
    // Until the run ends, replace a directory the loadfile works in with a
    // link to the victim (each pass's Deltree removes the link again).
    let excel = tree.join("clients/client1/~dmtmp/EXCEL");
    let mut planted = 0;
    for i in 0.. {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if excel.is_dir()
            && !excel.is_symlink()
            && std::fs::rename(&excel, excel.with_extension(format!("gone{i}"))).is_ok()
        {
            planted += usize::from(std::os::unix::fs::symlink(victim.path(), &excel).is_ok());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    assert!(planted > 0);
    assert_eq!(entries(victim.path()), Vec::<String>::new(), "written through a link");
    assert_eq!(entries(user.path()), Vec::<String>::new(), "left in dir=");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("refused because a symbolic link"), "the run should say what it refused: {text}");
    let v: serde_json::Value =
        serde_json::from_slice(&kdelta(&e).args(["export", "hostile"]).output().unwrap().stdout).unwrap();
    let refused = v["results"][0]["extras"]["refused_links"].as_u64().unwrap_or(0);
    assert!(refused > 0, "refused_links not stored: {}", v["results"][0]);
}

#[test]
fn a_worker_never_outlives_its_limit_and_grace_even_if_kdelta_is_stuck() {
    let e = Env::new();
    let mut child = kdelta(&e)
        .args(["run", "test.hang", "--runs", "1", "--timeout", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let kpid = child.id() as i32;
    let t0 = Instant::now();
    let worker = wait_for(|| {
        ours(&e).into_iter().find(|&p| {
            p != kpid
                && std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.windows(8).any(|w| w == b"__worker"))
        })
    });
    // The watchdog is forked just after the worker is spawned; stopping
    // kdelta in between would leave no watchdog to test.
    wait_for(|| {
        ours(&e).into_iter().find(|&p| {
            p != kpid
                && p != worker
                && std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .is_ok_and(|s| s[s.rfind(')').unwrap() + 2..].split(' ').nth(1) == Some(&kpid.to_string()))
        })
    });
    // kdelta stops: it can neither kill the worker at its limit nor reap it.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(kpid), nix::sys::signal::Signal::SIGSTOP).unwrap();
    let running = || {
        std::fs::read_to_string(format!("/proc/{worker}/stat"))
            .is_ok_and(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
    };
    wait_for(|| (!running()).then_some(()));
    let took = t0.elapsed();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(kpid), nix::sys::signal::Signal::SIGCONT).unwrap();
    child.wait().unwrap();
    // The watchdog's limit: the worker's 1 s and a grace of 10 s.
    assert!(took >= Duration::from_secs(10) && took < Duration::from_secs(15), "{took:?}");
    assert_eq!(ours(&e), Vec::<i32>::new());
    assert_eq!(entries(&e.tmp()), Vec::<String>::new());
}

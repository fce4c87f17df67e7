//! The fleet against a real PostgreSQL server (`$KDELTA_TEST_PG`, set by
//! `.ci/run`; without it each test prints "SKIPPED: ..." and passes, unless
//! `KDELTA_REQUIRE_PG=1`): agents on this machine, each with its own
//! `--host-name`, labels and fake sysfs tree (so their topologies and
//! kernel settings are their own and the real machine's are never
//! touched), taking jobs that `kdelta submit` queued. No timing is asserted
//! beyond generous bounds: every wait polls the queue's state.

use crate::common::{assert_ok, fake_knobs, fake_sysfs, knob_value, PgDb as Db};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The longest any state is waited for (a noisy 2-CPU machine included).
const PATIENCE: Duration = Duration::from_secs(300);

const THP: &str = "sys/kernel/mm/transparent_hugepage/enabled";

/// A test's fleet: its database, a directory, and the agents it started
/// (killed and reaped however the test ends).
struct Fleet {
    db: Db,
    dir: tempfile::TempDir,
    agents: Vec<(String, Child)>,
}

impl Fleet {
    fn new(test: &str) -> Option<Fleet> {
        let db = Db::new(test)?;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        Some(Fleet { db, dir, agents: Vec::new() })
    }

    /// A fake sysfs tree of these cores, with every kernel setting kdelta
    /// switches (so a job's settings are written there, never to the machine).
    fn root(&self, name: &str, cores: &[&[u32]]) -> PathBuf {
        let root = self.dir.path().join(format!("sysfs-{name}"));
        fake_sysfs(&root, cores);
        fake_knobs(&root);
        root
    }

    fn cmd(&self, root: Option<&Path>) -> Command {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("kdelta"));
        c.env_remove("KDELTA_DB")
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env("KDELTA_TEST_BENCHES", "1")
            .env("NO_COLOR", "1")
            .env_remove("KDELTA_JOURNAL")
            .arg("--db")
            .arg(&self.db.url);
        match root {
            Some(r) => c.env("KDELTA_SYSFS_ROOT", r),
            None => c.env_remove("KDELTA_SYSFS_ROOT"),
        };
        c
    }

    /// Run kdelta to its end; its output.
    fn kdelta(&self, args: &[&str]) -> std::process::Output {
        self.cmd(None).args(args).output().unwrap()
    }

    /// Start an agent; its log goes to `agent-NAME-K.log` in the directory.
    fn agent(&mut self, name: &str, root: &Path, extra: &[&str]) -> usize {
        let log = self.dir.path().join(format!("agent-{name}-{}.log", self.agents.len()));
        let child = self
            .cmd(Some(root))
            .args(["agent", "--host-name", name, "--poll", "200ms"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        self.agents.push((log.to_string_lossy().into_owned(), child));
        // Registered before anything is submitted to it.
        self.until(&format!("{name} registered"), || self.hosts().iter().any(|h| h["name"] == name));
        self.agents.len() - 1
    }

    fn logs(&self) -> String {
        self.agents
            .iter()
            .map(|(log, _)| format!("--- {log}\n{}", std::fs::read_to_string(log).unwrap_or_default()))
            .collect()
    }

    fn jobs_and_hosts(&self) -> serde_json::Value {
        let out = self.kdelta(&["jobs", "--json", "--limit", "10000"]);
        assert_ok(&out);
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn jobs(&self) -> Vec<serde_json::Value> {
        self.jobs_and_hosts()["jobs"].as_array().unwrap().clone()
    }

    fn job(&self, id: i64) -> serde_json::Value {
        self.jobs().into_iter().find(|j| j["id"] == id).unwrap()
    }

    fn hosts(&self) -> Vec<serde_json::Value> {
        self.jobs_and_hosts()["hosts"].as_array().unwrap().clone()
    }

    /// Submit; the (job id, host) pairs it printed.
    fn submit(&self, args: &[&str]) -> Vec<(i64, String)> {
        let out = self.kdelta(&[&["submit"], args].concat());
        assert_ok(&out);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let (id, host) = l.split_once('\t').unwrap();
                (id.parse().unwrap(), host.to_string())
            })
            .collect()
    }

    /// Wait until `ok` holds, polling; panics with the agents' logs after
    /// [`PATIENCE`].
    fn until(&self, what: &str, ok: impl Fn() -> bool) {
        let t0 = Instant::now();
        while !ok() {
            assert!(t0.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn until_finished(&self, ids: &[i64]) {
        self.until("the jobs to end", || {
            let jobs = self.jobs();
            ids.iter().all(|id| {
                jobs.iter().any(|j| j["id"] == *id && !["queued", "running"].contains(&j["state"].as_str().unwrap()))
            })
        });
    }

    fn signal(&mut self, agent: usize, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.agents[agent].1.id() as i32), sig).unwrap();
    }

    /// Wait for an agent to exit (a bounded wait); its exit status.
    fn reap(&mut self, agent: usize) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.agents[agent].1.try_wait().unwrap() {
                return st;
            }
            assert!(t0.elapsed() < PATIENCE, "agent {agent} did not exit\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs stored for each job id.
    fn runs_per_job(&self) -> Vec<(i64, i64)> {
        self.db
            .sql()
            .query("SELECT job_id, COUNT(*) FROM runs WHERE job_id IS NOT NULL GROUP BY job_id ORDER BY job_id", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (_, c) in &mut self.agents {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What each job runs: tiny sample counts, so a job takes a second or two.
const TINY: &[&str] = &["--runs", "2", "--sample-time", "1ms", "--warmup", "1ms"];

#[test]
fn three_agents_run_every_submission_once() {
    let Some(mut f) = Fleet::new("three_agents_run_every_submission_once") else { return };
    for (name, rack) in [("h1", "a"), ("h2", "a"), ("h3", "b")] {
        let root = f.root(name, &[&[0], &[1]]);
        f.agent(name, &root, &["--labels", &format!("rack={rack},role=fleet")]);
    }
    let mut ids = Vec::new();
    for _ in 0..4 {
        let jobs = f.submit(
            &[&["lat.syscall", "lat.pipe", "--config", "up,noht", "--hosts", "all", "--label", "fleet"], TINY].concat(),
        );
        let mut hosts: Vec<&str> = jobs.iter().map(|(_, h)| h.as_str()).collect();
        hosts.sort();
        assert_eq!(hosts, ["h1", "h2", "h3"]);
        ids.extend(jobs.iter().map(|(id, _)| *id));
    }
    // A label picks hosts.
    let rack_b =
        f.submit(&[&["lat.syscall", "--config", "up", "--hosts", "rack=b", "--label", "rack-b"], TINY].concat());
    assert_eq!(rack_b.iter().map(|(_, h)| h.as_str()).collect::<Vec<_>>(), ["h3"]);
    ids.extend(rack_b.iter().map(|(id, _)| *id));
    f.until_finished(&ids);
    let jobs = f.jobs();
    for j in &jobs {
        assert_eq!(j["state"], "done", "{j}\n{}", f.logs());
        assert_eq!(j["attempts"].as_array().unwrap().len(), 1, "{j}");
        assert!(j["run"].as_i64().is_some(), "{j}");
    }
    // Every job's run stored once, and each run its job's.
    let per_job = f.runs_per_job();
    assert_eq!(per_job.len(), ids.len(), "{per_job:?}");
    assert!(per_job.iter().all(|(_, n)| *n == 1), "{per_job:?}");
    let runs: Vec<i64> = jobs.iter().map(|j| j["run"].as_i64().unwrap()).collect();
    let mut distinct = runs.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), runs.len(), "a run answers two jobs: {runs:?}");
    // The stored runs read as any others: by label, host by host.
    let out = f.kdelta(&["runs", "--label", "fleet", "--json", "--limit", "1000"]);
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.len(), 12);
    for h in ["h1", "h2", "h3"] {
        assert_eq!(listed.iter().filter(|r| r["hostname"] == h && r["status"] == "complete").count(), 4, "{h}");
    }
    let out = f.kdelta(&["compare", "--by", "host", "--label", "fleet"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("h1") && text.contains("h3") && text.contains("lat.pipe"), "{text}");
    // The text listing names hosts and states.
    let out = f.kdelta(&["jobs"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("done") && text.contains("rack=b"), "{text}");
    // SIGTERM ends idle agents cleanly.
    for a in 0..3 {
        f.signal(a, nix::sys::signal::Signal::SIGTERM);
        assert!(f.reap(a).success(), "{}", f.logs());
    }
    assert!(f.hosts().iter().all(|h| h["state"] == "stopped"));
}

/// A job long enough to be caught in its middle: one worker of `test.sleep`
/// taking 40 samples of about 20 ms.
fn long_job(config: &str) -> Vec<String> {
    ["test.sleep", "--config", config, "--param", "us=2000", "--runs", "40", "--sample-time", "20ms", "--warmup", "1ms"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn a_killed_agents_job_is_taken_again_after_its_lease_and_stored_once() {
    let Some(mut f) = Fleet::new("a_killed_agents_job_is_taken_again_after_its_lease_and_stored_once") else {
        return;
    };
    let root = f.root("h1", &[&[0], &[1]]);
    let first = f.agent("h1", &root, &["--lease", "2s"]);
    let args = [long_job("up"), vec!["--hosts".into(), "all".into()]].concat();
    let jobs = f.submit(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let id = jobs[0].0;
    // In the middle of the job: its run is stored and taking results.
    f.until("the job's run to start", || f.runs_per_job().iter().any(|(j, _)| *j == id));
    f.signal(first, nix::sys::signal::Signal::SIGKILL);
    f.reap(first);
    // The same host's next agent (as systemd would restart it) takes it
    // again once the lease has run out.
    f.agent("h1", &root, &["--lease", "2s"]);
    f.until_finished(&[id]);
    let job = f.job(id);
    assert_eq!(job["state"], "done", "{job}\n{}", f.logs());
    let attempts = job["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{job}");
    assert_eq!(attempts[0]["outcome"], "lost", "{job}");
    assert!(attempts[0]["ended"].as_str().is_some(), "the first attempt's end is shown: {job}");
    assert!(attempts[0]["reason"].as_str().unwrap().contains("lease ran out"), "{job}");
    assert_ne!(attempts[0]["agent"], attempts[1]["agent"]);
    assert_eq!(attempts[1]["outcome"], "done", "{job}");
    assert_eq!(f.runs_per_job(), vec![(id, 1)], "the job's run is stored once");
    let run = job["run"].as_i64().unwrap();
    let status: String = f.db.sql().query_one("SELECT status FROM runs WHERE id = $1", &[&run]).unwrap().get(0);
    assert_eq!(status, "complete");
    let text = String::from_utf8_lossy(&f.kdelta(&["jobs"]).stdout).into_owned();
    assert!(text.contains("attempt 1") && text.contains("lost at"), "{text}");
}

#[test]
fn a_host_without_smt_refuses_ht_and_runs_the_rest() {
    let Some(mut f) = Fleet::new("a_host_without_smt_refuses_ht_and_runs_the_rest") else { return };
    let flat = f.root("flat", &[&[0], &[1]]);
    let smt = f.root("smt", &[&[0, 1]]);
    f.agent("flat", &flat, &[]);
    f.agent("smt", &smt, &[]);
    let ht = f.submit(
        &[&["test.sleep", "--config", "ht", "--param", "us=100", "--hosts", "all", "--label", "smt"], TINY].concat(),
    );
    let up = f.submit(
        &[&["test.sleep", "--config", "up", "--param", "us=100", "--hosts", "all", "--label", "smt"], TINY].concat(),
    );
    let ids: Vec<i64> = ht.iter().chain(&up).map(|(id, _)| *id).collect();
    f.until_finished(&ids);
    for (id, host) in ht.iter().chain(&up) {
        let j = f.job(*id);
        let refused = j["args"].as_array().unwrap().iter().any(|a| a == "--config=ht") && host == "flat";
        if refused {
            assert_eq!(j["state"], "refused", "{j}");
            let why = j["reason"].as_str().unwrap();
            assert!(why.contains("ht"), "the reason names the configuration: {why}");
            assert!(j["run"].is_null(), "{j}");
        } else {
            assert_eq!(j["state"], "done", "{j}\n{}", f.logs());
        }
    }
    let text = String::from_utf8_lossy(&f.kdelta(&["jobs"]).stdout).into_owned();
    assert!(text.contains("refused"), "{text}");
    // The report of the label lists which hosts ran its jobs, which refused them and why.
    let page = f.dir.path().join("smt.html");
    let out = f.kdelta(&["report", "--label", "smt", "-o", page.to_str().unwrap()]);
    assert_ok(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Fleet: the jobs labelled smt"), "no fleet table");
    assert!(html.contains("4 jobs on 2 hosts: 3 done, 1 refused"), "the fleet table counts the jobs");
    // Cancel: a queued job for a host whose agent is not taking work.
    f.signal(0, nix::sys::signal::Signal::SIGTERM);
    assert!(f.reap(0).success());
    let late = f.submit(&["test.sleep", "--config", "up", "--hosts", "host=flat"]);
    let out = f.kdelta(&["cancel", &late[0].0.to_string()]);
    assert_ok(&out);
    assert_eq!(f.job(late[0].0)["state"], "cancelled");
    let again = f.kdelta(&["cancel", &late[0].0.to_string()]);
    assert_eq!(again.status.code(), Some(2));
}

#[test]
fn sigterm_puts_the_job_back_and_the_machine_as_found() {
    let Some(mut f) = Fleet::new("sigterm_puts_the_job_back_and_the_machine_as_found") else { return };
    let root = f.root("h1", &[&[0], &[1]]);
    let a = f.agent("h1", &root, &["--allow", "settings"]);
    assert_eq!(knob_value(&root, THP), "madvise");
    let args = [long_job("up+thp=never"), vec!["--hosts".into(), "all".into()]].concat();
    let id = f.submit(&args.iter().map(String::as_str).collect::<Vec<_>>())[0].0;
    f.until("the job's setting to be applied", || knob_value(&root, THP) == "never");
    f.signal(a, nix::sys::signal::Signal::SIGTERM);
    assert!(f.reap(a).success(), "{}", f.logs());
    // The machine as found: the setting back, no journal, no run left.
    assert_eq!(knob_value(&root, THP), "madvise");
    assert!(!root.join("run/kdelta/knobs.journal").exists());
    let job = f.job(id);
    assert_eq!(job["state"], "queued", "{job}\n{}", f.logs());
    assert_eq!(job["attempts"][0]["outcome"], "returned", "{job}");
    assert!(f.runs_per_job().is_empty(), "the stopped attempt's run was removed");
    // The next agent runs it, once.
    f.agent("h1", &root, &["--once", "--allow", "settings"]);
    f.until_finished(&[id]);
    assert_eq!(f.job(id)["state"], "done", "{}", f.logs());
    assert_eq!(f.runs_per_job(), vec![(id, 1)]);
    assert_eq!(knob_value(&root, THP), "madvise");
}

/// Anyone who can write the store can queue a job, and an agent usually
/// runs as root: it runs only kdelta's own benchmarks unless its operator
/// allows more (`--allow`). A job beyond that ends `refused` naming the
/// class to allow, before anything of it runs; a job naming its own store
/// is refused whatever is allowed.
#[test]
fn an_agent_runs_only_what_its_operator_allows() {
    let Some(mut f) = Fleet::new("an_agent_runs_only_what_its_operator_allows") else { return };
    let root = f.root("h1", &[&[0], &[1]]);
    let a = f.agent("h1", &root, &[]);
    let ran = f.dir.path().join("ran");
    let touch = format!("touch {}", ran.display());
    let beyond: [(&[&str], &str); 5] = [
        (&["cmd", "--cmd", &touch], "--allow commands"),
        (&["check", "cmd", "--cmd", &touch, "--cmd", "true", "--within"], "--allow commands"),
        (&["test.sleep", "--config", "up+thp=never", "--param", "us=100"], "--allow settings"),
        (&["test.sleep", "--config", "up+env=LD_PRELOAD=/x.so", "--param", "us=100"], "--allow commands"),
        (&["lat.tcp", "--param", "server=192.0.2.1:9"], "--allow network"),
    ];
    let mut ids = Vec::new();
    for (args, _) in &beyond {
        ids.push(f.submit(&[args, TINY, &["--hosts", "all"]].concat())[0].0);
    }
    // A row a store writer made by hand: its own store for the child.
    let evil = f.dir.path().join("evil.db");
    let hand: i64 =
        f.db.sql()
            .query_one(
                "INSERT INTO jobs (host, kind, args, submitted_by) VALUES ('h1', 'check', $1, 'x') RETURNING id",
                &[&serde_json::json!(["--db", evil, "test.sleep", "--within", "--config", "up,cpus=1"]).to_string()],
            )
            .unwrap()
            .get(0);
    f.until_finished(&[ids.clone(), vec![hand]].concat());
    for (id, (_, allow)) in ids.iter().zip(&beyond) {
        let j = f.job(*id);
        assert_eq!(j["state"], "refused", "{j}\n{}", f.logs());
        let why = j["reason"].as_str().unwrap();
        assert!(why.contains(allow) && why.starts_with("this agent runs no job that"), "{why}");
    }
    let j = f.job(hand);
    assert_eq!(j["state"], "refused", "{j}");
    assert!(j["reason"].as_str().unwrap().contains("may not name its own store (--db)"), "{j}");
    assert!(!ran.exists() && !evil.exists(), "nothing of a refused job ran");
    // Its operator allows commands: the same job runs.
    f.signal(a, nix::sys::signal::Signal::SIGTERM);
    assert!(f.reap(a).success(), "{}", f.logs());
    let id = f.submit(&[&["cmd", "--cmd", &touch][..], TINY, &["--hosts", "all"]].concat())[0].0;
    f.agent("h1", &root, &["--allow", "commands", "--once"]);
    f.until_finished(&[id]);
    assert_eq!(f.job(id)["state"], "done", "{}", f.logs());
    assert!(ran.exists());
    // The submitter is told what an agent must allow.
    let args =
        [&["submit", "cmd", "--cmd", "true", "--config", "all+thp=never"][..], TINY, &["--hosts", "all"]].concat();
    let out = f.kdelta(&args);
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only with `kdelta agent --allow commands,settings` (cmd.run cmd=true)"), "{err}");
    let out = f.kdelta(&[&["submit", "test.sleep", "--param", "us=100"][..], TINY, &["--hosts", "all"]].concat());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--allow"), "a benchmark of kdelta's own needs nothing");
    let out = f.kdelta(&["agent", "--allow", "root"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown class \"root\""));
}

#[test]
fn mistakes_are_refused_in_one_line() {
    let Some(mut f) = Fleet::new("mistakes_are_refused_in_one_line") else { return };
    // No agent yet: nothing to submit to.
    let out = f.kdelta(&["submit", "lat.syscall", "--hosts", "all"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no agent has registered"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let root = f.root("h1", &[&[0], &[1]]);
    f.agent("h1", &root, &[]);
    for (args, says) in [
        (&["submit", "lat.nope", "--hosts", "all"][..], "unknown benchmark"),
        (&["submit", "lat.syscall", "--hosts", "rack=z"][..], "no registered host matches"),
        (&["submit", "lat.syscall", "--hosts", "x"][..], "--hosts"),
        (&["agent", "--host-name", "h1", "--once"][..], "another agent serves host"),
        (&["agent", "--lease", "0s"][..], "--lease"),
    ] {
        let out = f.kdelta(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // The queue needs a shared store.
    let file = f.dir.path().join("local.db");
    let out = Command::new(assert_cmd::cargo::cargo_bin("kdelta"))
        .args(["--db", file.to_str().unwrap(), "jobs"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shared store"));
}

#[test]
fn study_and_check_jobs_run_on_every_host() {
    let Some(mut f) = Fleet::new("study_and_check_jobs_run_on_every_host") else { return };
    for name in ["s1", "s2"] {
        let root = f.root(name, &[&[0], &[1]]);
        f.agent(name, &root, &[]);
    }
    let study = f.submit(&["study", "ht-2003", "--tiny-plan-for-tests", "--label", "st", "--hosts", "all"]);
    let check = f.submit(
        &[
            &["check", "test.sleep", "--config", "up,cpus=1", "--param", "us=100", "--within"][..],
            TINY,
            &["--label", "ck", "--hosts", "all"],
        ]
        .concat(),
    );
    assert_eq!(study.len(), 2);
    assert_eq!(check.len(), 2);
    let ids: Vec<i64> = study.iter().chain(&check).map(|(id, _)| *id).collect();
    f.until_finished(&ids);
    for (id, host) in study.iter().chain(&check) {
        let j = f.job(*id);
        assert_eq!(j["state"], "done", "{j}\n{}", f.logs());
        let run = j["run"].as_i64().unwrap();
        let (job, name): (Option<i64>, String) =
            f.db.sql()
                .query_one("SELECT job_id, hostname FROM runs WHERE id = $1", &[&run])
                .map(|r| (r.get(0), r.get(1)))
                .unwrap();
        assert_eq!((job, name.as_str()), (Some(*id), host.as_str()), "the run records its job and host");
    }
    for (id, _) in &check {
        let j = f.job(*id);
        let why = j["reason"].as_str().unwrap_or_default();
        assert!(why.starts_with("check exit "), "a check's verdict is the job's note: {j}");
    }
    assert_eq!(f.jobs()[0]["kind"], "check");
    let runs = f.runs_per_job();
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(runs.iter().all(|(_, n)| *n == 1), "{runs:?}");
    // What the study or check itself would refuse before running is refused here.
    for (args, says) in [
        (&["submit", "study", "list", "--hosts", "all"][..], "name a study"),
        (&["submit", "study", "ht-2003", "--resume", "--hosts", "all"][..], "--resume"),
        (&["submit", "check", "lat.syscall", "--run", "1", "--against", "1", "--hosts", "all"][..], "--run"),
        (&["submit", "check", "lat.syscall", "--against", "nope", "--hosts", "all"][..], "nope"),
        (&["submit", "check", "lat.nope", "--within", "--hosts", "all"][..], "unknown benchmark"),
    ] {
        let out = f.kdelta(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// A role with only the rights the fleet's docs list (docs/store.md) runs
/// agents, `submit`, `jobs` and `cancel`; the schema made by its owner.
#[test]
fn a_writer_role_serves_the_fleet() {
    let Some(mut f) = Fleet::new("a_writer_role_serves_the_fleet") else { return };
    // The owner makes the schema (any command that opens the queue).
    let out = f.kdelta(&["submit", "lat.syscall", "--hosts", "all"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no agent has registered"));
    let role = format!("kdelta_w_{}", std::process::id());
    let mut admin = f.db.sql();
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN;
             GRANT USAGE ON SCHEMA kdelta TO {role};
             GRANT SELECT ON ALL TABLES IN SCHEMA kdelta TO {role};
             GRANT INSERT, UPDATE ON kdelta.runs, kdelta.results, kdelta.jobs, kdelta.job_attempts, kdelta.fleet_hosts TO {role};
             GRANT DELETE ON kdelta.runs TO {role};
             GRANT USAGE ON ALL SEQUENCES IN SCHEMA kdelta TO {role};"
        ))
        .unwrap();
    struct DropRole(String, String);
    impl Drop for DropRole {
        fn drop(&mut self) {
            if let Ok(mut c) = postgres::Client::connect(&self.0, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP OWNED BY {0}; DROP ROLE IF EXISTS {0}", self.1));
            }
        }
    }
    let owner = f.db.url.clone();
    let (scheme, rest) = owner.split_once("://").unwrap();
    let writer = format!("{scheme}://{role}@{}", rest.split_once('@').unwrap().1);
    // Dropped before the database (the guard's connection needs it).
    let _guard = DropRole(owner.clone(), role.clone());
    f.db.url = writer;
    let root = f.root("w1", &[&[0], &[1]]);
    f.agent("w1", &root, &[]);
    let run = f.submit(&[&["test.sleep", "--config", "up", "--param", "us=100", "--hosts", "all"], TINY].concat());
    let check = f.submit(
        &[&["check", "test.sleep", "--config", "up,cpus=1", "--param", "us=100", "--within", "--hosts", "all"], TINY]
            .concat(),
    );
    let ids: Vec<i64> = run.iter().chain(&check).map(|(id, _)| *id).collect();
    f.until_finished(&ids);
    for id in &ids {
        assert_eq!(f.job(*id)["state"], "done", "{}", f.logs());
    }
    // A killed attempt's unfinished run is removed by the writer too.
    let long = [long_job("up"), vec!["--hosts".into(), "all".into()]].concat();
    let id = f.submit(&long.iter().map(String::as_str).collect::<Vec<_>>())[0].0;
    f.until("the job's run to start", || f.runs_per_job().iter().any(|(j, _)| *j == id));
    f.signal(0, nix::sys::signal::Signal::SIGTERM);
    assert!(f.reap(0).success(), "{}", f.logs());
    assert_eq!(f.job(id)["state"], "queued");
    let out = f.kdelta(&["cancel", &id.to_string()]);
    assert_ok(&out);
    assert_eq!(f.runs_per_job().len(), 2, "the stopped attempt's run was removed");
    let text = String::from_utf8_lossy(&f.kdelta(&["jobs"]).stdout).into_owned();
    assert!(text.contains("cancelled") && text.contains("w1"), "{text}");
    f.db.url = owner;
}

/// The store goes away (its server restarted, the agent's sessions ended):
/// a busy agent and an idle one each exit 1 with one line, the busy one's
/// job stopped and the machine put back; a restarted agent takes the job
/// again after its lease.
#[test]
fn an_agent_that_loses_the_database_exits_and_leaves_the_machine_as_found() {
    let Some(mut f) = Fleet::new("an_agent_that_loses_the_database_exits_and_leaves_the_machine_as_found") else {
        return;
    };
    let busy_root = f.root("busy", &[&[0], &[1]]);
    let idle_root = f.root("idle", &[&[0], &[1]]);
    let busy = f.agent("busy", &busy_root, &["--lease", "2s", "--allow", "settings"]);
    let idle = f.agent("idle", &idle_root, &["--lease", "2s"]);
    let args = [long_job("up+thp=never"), vec!["--hosts".into(), "host=busy".into()]].concat();
    let id = f.submit(&args.iter().map(String::as_str).collect::<Vec<_>>())[0].0;
    f.until("the job's setting to be applied", || knob_value(&busy_root, THP) == "never");
    let ended: i64 =
        f.db.sql()
            .query_one(
                "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
    assert!(ended >= 4, "the agents' sessions: {ended}");
    for a in [busy, idle] {
        let st = f.reap(a);
        assert_eq!(st.code(), Some(1), "{}", f.logs());
    }
    for (log, _) in &f.agents {
        let text = std::fs::read_to_string(log).unwrap();
        let last = text.trim().lines().last().unwrap_or_default();
        assert!(last.starts_with("kdelta: database "), "one line says why: {text}");
    }
    assert_eq!(knob_value(&busy_root, THP), "madvise", "{}", f.logs());
    assert!(!busy_root.join("run/kdelta/knobs.journal").exists());
    // As systemd would: the agent again, which takes the job once its lease ran out.
    f.agent("busy", &busy_root, &["--lease", "2s", "--allow", "settings"]);
    f.until_finished(&[id]);
    let job = f.job(id);
    assert_eq!(job["state"], "done", "{job}\n{}", f.logs());
    assert_eq!(job["attempts"][0]["outcome"], "lost", "{job}");
    assert_eq!(f.runs_per_job(), vec![(id, 1)]);
    assert_eq!(knob_value(&busy_root, THP), "madvise");
}

//! Study and check jobs (`kdelta submit study NAME ...`, `kdelta submit
//! check ...`): what `submit` checks before queueing one, and how an agent
//! runs one: as `kdelta study ...` / `kdelta check ...`, a child process of
//! its own binary, so the study's and the check's own paths (their plans,
//! signals, output and exit statuses) run unchanged. The child finds its job
//! and host name in [`JOB_ENV`] and [`HOST_ENV`] (its run records the job,
//! under the agent's host name), the store in `KDELTA_DB` (never on its
//! command line, where `ps` would show a password). The agent's interrupt
//! (SIGTERM to the agent, a cancel, a lost lease) reaches it as SIGTERM,
//! which it takes as Ctrl-C: the run marked incomplete, the machine put
//! back. It gets the same SIGTERM should the agent die (`kill -9`).

use super::*;
use crate::cli::{CheckArgs, StudyArg, StudyArgs};
use crate::fleet::queue::Job;
use crate::model::reach::Reach;
use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::process::{Command as Process, Stdio};
use std::sync::atomic::Ordering;

/// The job id a child runs for (internal: set by the agent only).
pub(crate) const JOB_ENV: &str = "KDELTA_AGENT_JOB";
/// The host name a child stores its run under (the agent's `--host-name`).
pub(crate) const HOST_ENV: &str = "KDELTA_AGENT_HOST";
/// What the child's job may reach (the agent's `--allow`, as
/// `Reach::show_list` writes it).
pub(crate) const ALLOW_ENV: &str = "KDELTA_AGENT_ALLOW";

/// `submit study`: a study to run, not `list`, and no `--resume` (a job
/// makes its own run; an attempt's unfinished one is replaced).
pub(super) fn check_study(a: &StudyArgs) -> Result<()> {
    if a.name == StudyArg::List {
        return Err(bad_input("submit study list: name a study to queue (`kdelta study list` shows them)"));
    }
    if a.resume {
        return Err(bad_input(
            "submit study --resume: a job makes its own run (an unfinished attempt's run is replaced when the job \
             is taken again); drop --resume",
        ));
    }
    crate::cli::run_meta(&a.meta)?;
    Ok(())
}

/// `submit check`: what `check` would refuse before running, refused here:
/// `--run` (a stored run is judged where it is), no selector, an unknown
/// benchmark or bad option, a baseline the store does not have.
pub(super) fn check_check(db: &Option<PathBuf>, a: &CheckArgs) -> Result<()> {
    if a.stored.is_some() {
        return Err(bad_input(
            "submit check --run: a job measures on its host; judge a stored run with `kdelta check --run` where you are",
        ));
    }
    if a.run.selectors.is_empty() {
        return Err(bad_input("submit check: name what to run (as `kdelta run` takes it)"));
    }
    if a.run.format != Format::Text || a.run.verbose {
        return Err(bad_input("check prints one line per row: --format and --verbose are for `kdelta run`"));
    }
    run::request(&a.run)?;
    plan::select(&a.run.selectors, bench::registry())?;
    if let Some(against) = &a.against {
        stored::open_existing(db)?.find_run(against)?;
    }
    Ok(())
}

/// Run a study or check job as a child `kdelta`, stopping it (SIGTERM) once
/// `interrupt` is set; how it ended, from its exit status and the run it
/// stored with the job.
pub(super) fn run(
    db: &Path,
    host: &str,
    allowed: &BTreeSet<Reach>,
    job: &Job,
    interrupt: &AtomicBool,
) -> Result<RunEnd> {
    // The job's store is the agent's: a job naming its own would write
    // (as the agent's user) wherever its queuer chose.
    if let Some(a) =
        job.args.iter().find(|a| ["--db", "--init-schema"].iter().any(|f| a == f || a.starts_with(&format!("{f}="))))
    {
        return Ok(RunEnd::Refused(format!("a job may not name its own store ({a}): it stores in its agent's")));
    }
    let exe = std::env::current_exe().context("finding kdelta's own binary")?;
    let mut cmd = Process::new(exe);
    cmd.arg(&job.kind)
        .args(&job.args)
        .env("KDELTA_DB", db)
        .env(JOB_ENV, job.id.to_string())
        .env(HOST_ENV, host)
        .env(ALLOW_ENV, Reach::show_list(allowed))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    term_with_parent(&mut cmd);
    let mut child = cmd.spawn().context("starting kdelta for the job")?;
    let id = job.id;
    // Its output goes on to the agent's, stderr's lines marked with the job;
    // kept: stdout's last line (a check's verdict), stderr's last `kdelta:`
    // line (why it failed).
    let out = child.stdout.take().map(|o| {
        std::thread::spawn(move || {
            let mut last = None;
            for line in std::io::BufReader::new(o).lines().map_while(std::result::Result::ok) {
                let _ = writeln!(std::io::stdout().lock(), "{line}");
                if !line.trim().is_empty() {
                    last = Some(line);
                }
            }
            last
        })
    });
    let err = child.stderr.take().map(|e| {
        std::thread::spawn(move || {
            let mut last = None;
            for line in std::io::BufReader::new(e).lines().map_while(std::result::Result::ok) {
                let _ = writeln!(std::io::stderr().lock(), "job {id}: {line}");
                if let Some(l) = line.strip_prefix("kdelta: ") {
                    last = Some(l.to_string());
                }
            }
            last
        })
    });
    let mut signalled = false;
    let status = loop {
        if let Some(st) = child.try_wait().context("waiting for the job's kdelta")? {
            break st;
        }
        if interrupt.load(Ordering::Relaxed) && !signalled {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            signalled = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let last_out = out.and_then(|t| t.join().ok()).flatten();
    let last_err = err.and_then(|t| t.join().ok()).flatten();
    let code = status.code();
    let why = last_err.unwrap_or_else(|| format!("kdelta {} ended with {status}", job.kind));
    let stored = Queue::open(db)?.run_of(job.id)?;
    Ok(end(&job.kind, code, stored, why, last_out))
}

/// How a child's job ended: its kind, exit status (`None`: a signal), the
/// run stored with the job (id, status), why it failed (its last error
/// line) and its last line of output.
fn end(kind: &str, code: Option<i32>, stored: Option<(i64, String)>, why: String, last: Option<String>) -> RunEnd {
    let refused = |c: i32| c == i32::from(exit::BAD_INPUT) || (kind == "check" && c == i32::from(exit::CHECK_REFUSED));
    match (stored, code) {
        (Some((run, status)), code) if status == "complete" => {
            let note = match (kind, code) {
                (_, Some(0)) if kind != "check" => None,
                ("check", Some(c)) => Some(format!("check exit {c}: {}", last.unwrap_or(why))),
                (_, c) => Some(format!("{kind} exit {}: {why}", c.map_or("by a signal".into(), |c| c.to_string()))),
            };
            RunEnd::Stored { run, interrupted: false, note }
        }
        (Some((run, _)), Some(c)) if c == i32::from(exit::INTERRUPTED) => {
            RunEnd::Stored { run, interrupted: true, note: None }
        }
        (Some((run, _)), None) => RunEnd::Stored { run, interrupted: true, note: None },
        (Some((run, _)), _) => RunEnd::Failed(format!("run {run} left unfinished: {why}")),
        (None, Some(c)) if refused(c) => RunEnd::Refused(why),
        (None, _) => RunEnd::Failed(why),
    }
}

/// SIGTERM for the child should the agent die, so it ends its run as
/// Ctrl-C would (`child::die_with_parent` sends SIGKILL, for workers).
fn term_with_parent(cmd: &mut Process) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and calls only
    // prctl, which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why() -> String {
        "no such thing".to_string()
    }

    #[test]
    fn a_childs_end_is_read_from_its_status_and_its_run() {
        let done = |s: &str| Some((7, s.to_string()));
        assert_eq!(
            end("study", Some(0), done("complete"), why(), None),
            RunEnd::Stored { run: 7, interrupted: false, note: None }
        );
        let RunEnd::Stored { note: Some(n), interrupted: false, .. } =
            end("check", Some(1), done("complete"), why(), Some("regressed: lat.syscall".into()))
        else {
            panic!()
        };
        assert_eq!(n, "check exit 1: regressed: lat.syscall");
        assert_eq!(
            end("study", Some(130), done("incomplete"), why(), None),
            RunEnd::Stored { run: 7, interrupted: true, note: None }
        );
        assert_eq!(end("check", Some(128), None, why(), None), RunEnd::Refused(why()));
        assert_eq!(end("study", Some(2), None, why(), None), RunEnd::Refused(why()));
        assert_eq!(end("study", Some(1), None, why(), None), RunEnd::Failed(why()));
        assert_eq!(
            end("check", Some(128), done("running"), why(), None),
            RunEnd::Failed(format!("run 7 left unfinished: {}", why()))
        );
    }
}

//! `kdelta agent`: the loop on each host. Register the host, then take one
//! job at a time for it from the queue, hold its lease on a thread of its
//! own while the [`Runner`] runs it, and report how it ended.
//!
//! Between jobs the machine is as the run left it, which is as it found
//! it: the run path restores kernel settings and removes cgroups however it
//! ends. A journal a killed kdelta left (`kdelta restore` needed) stops the
//! agent taking jobs until it is gone. SIGTERM, SIGINT or SIGHUP stop the
//! running job as Ctrl-C stops `kdelta run` (workers killed, settings put
//! back), remove its unfinished run and put the job back in the queue, not
//! counted as a failure; the agent then exits.

use super::queue::{End, Job, Lease, Prior, Queue};
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a [`Runner`] ended a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunEnd {
    /// Its run is stored (complete, or incomplete when `interrupted`).
    Stored { run: i64, interrupted: bool, note: Option<String> },
    /// This host cannot run it; the reason, on one line.
    Refused(String),
    /// It failed before or while running; the reason, on one line.
    Failed(String),
}

/// What runs a job: the command line's own run path (`app/fleet.rs`), so
/// the fleet knows nothing of requests or benchmarks.
pub(crate) trait Runner {
    /// Run `job` (its run recorded with `job.id`), stopping as soon as it
    /// can once `interrupt` is set.
    fn run(&self, job: &Job, interrupt: Arc<AtomicBool>) -> RunEnd;
}

/// What `kdelta agent` was told.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) db: PathBuf,
    /// The host's name in the queue (and in the runs it stores).
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    /// The CPUs kdelta may use here, as a list.
    pub(crate) cpus: String,
    /// The host snapshot, registered with the host.
    pub(crate) host: serde_json::Value,
    /// Take at most one job, and stop when there is none.
    pub(crate) once: bool,
    pub(crate) lease: Duration,
    /// How long to wait for work between looks at the queue (a submission
    /// wakes the agent at once).
    pub(crate) poll: Duration,
    /// Where the kernel settings' journals are (`/`, or the fake sysfs root).
    pub(crate) root: PathBuf,
    /// What its jobs may reach beyond measuring (`--allow`), as shown.
    pub(crate) allows: String,
}

/// What an agent did, for its last line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) done: usize,
    pub(crate) failed: usize,
    pub(crate) refused: usize,
    pub(crate) returned: usize,
    pub(crate) lost: usize,
}

/// How long a starting agent waits for another agent's hold on its host.
const HOST_WAIT: Duration = Duration::from_secs(5);

fn say(name: &str, what: &str) {
    eprintln!("kdelta agent {name}: {what}");
}

/// Serve the queue until `stop` is set (or, with `once`, after one job or
/// none). Fails only when the store cannot be reached or refuses; a job's
/// own failure is reported to the queue.
pub(crate) fn serve(s: &Settings, runner: &dyn Runner, stop: Arc<AtomicBool>) -> Result<Tally> {
    let mut q = Queue::open(&s.db)?;
    hold_host(&mut q, s, &stop)?;
    q.register(&s.name, &s.labels, &s.cpus, &s.host)?;
    q.listen()?;
    let mut lease_q = Some(Queue::open(&s.db)?);
    let agent = agent_id(&s.name);
    let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    say(
        &s.name,
        &format!(
            "serving {} (labels {}, CPUs {}, lease {} s, jobs may reach {})",
            q.shown().display(),
            if labels.is_empty() { "none".to_string() } else { labels.join(",") },
            s.cpus,
            s.lease.as_secs_f64(),
            s.allows
        ),
    );
    let mut tally = Tally::default();
    let mut blocked: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        if let Some(why) = crate::harness::journal::restore_needed(&s.root) {
            if blocked.as_deref() != Some(&why) {
                say(&s.name, &format!("taking no jobs until the machine is restored: {why}"));
                q.set_state(&s.name, "restore needed", Some(&why))?;
            }
            if s.once {
                return Err(crate::error::bad_input(why));
            }
            blocked = Some(why);
            wait(&mut q, s.poll, &stop)?;
            continue;
        }
        blocked = None;
        for (id, state) in q.expire()? {
            say(&s.name, &format!("job {id}: its agent's lease ran out; now {state}"));
        }
        let Some(job) = q.claim(&s.name, &agent, s.lease)? else {
            if s.once {
                break;
            }
            q.set_state(&s.name, "idle", None)?;
            wait(&mut q, s.poll, &stop)?;
            continue;
        };
        q.set_state(&s.name, "busy", Some(&format!("job {}", job.id)))?;
        let end = take(&mut q, &mut lease_q, s, &agent, &job, runner, &stop)?;
        match end {
            Some(End::Done { .. }) => tally.done += 1,
            Some(End::Failed(_)) => tally.failed += 1,
            Some(End::Refused(_)) => tally.refused += 1,
            Some(End::Returned(_)) => tally.returned += 1,
            Some(End::Cancelled) => {}
            None => tally.lost += 1,
        }
        if s.once {
            break;
        }
    }
    q.set_state(&s.name, "stopped", None)?;
    say(
        &s.name,
        &format!(
            "stopped: {} done, {} failed, {} refused, {} put back, {} lost",
            tally.done, tally.failed, tally.refused, tally.returned, tally.lost
        ),
    );
    Ok(tally)
}

/// Take this host in the queue (one agent per host). An agent that was
/// just killed holds the host until the server has seen its connection
/// end: a restarted one waits a moment for it.
fn hold_host(q: &mut Queue, s: &Settings, stop: &AtomicBool) -> Result<()> {
    let t0 = Instant::now();
    let mut held = q.lock_host(&s.name)?;
    while !held && t0.elapsed() < HOST_WAIT && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        held = q.lock_host(&s.name)?;
    }
    if !held {
        return Err(crate::error::bad_input(format!(
            "another agent serves host {:?} on {}: one agent per host (give another --host-name)",
            s.name,
            q.shown().display()
        )));
    }
    Ok(())
}

/// This agent's name in the queue: host, process id and start time, so a
/// restarted agent on the same host is another agent.
fn agent_id(name: &str) -> String {
    let pid = std::process::id();
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("{name}/{pid}/{t}")
}

/// Wait up to `d` for a submission, waking early on `stop`.
fn wait(q: &mut Queue, d: Duration, stop: &AtomicBool) -> Result<()> {
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < d {
        let slice = (d - t0.elapsed()).min(Duration::from_millis(250));
        if q.wait(slice)? {
            break;
        }
    }
    Ok(())
}

/// Run one claimed job and report how it ended (`None`: the lease was lost,
/// so it is no longer this agent's to report).
fn take(
    q: &mut Queue,
    lease_q: &mut Option<Queue>,
    s: &Settings,
    agent: &str,
    job: &Job,
    runner: &dyn Runner,
    stop: &Arc<AtomicBool>,
) -> Result<Option<End>> {
    let label = job.label.as_ref().map(|l| format!(", label {l}")).unwrap_or_default();
    let what = format!("job {} (attempt {}{label}, {} {})", job.id, job.attempt, job.kind, job.args.join(" "));
    say(&s.name, &format!("{what}: taken"));
    let mut note = None;
    match q.prepare_run(job.id)? {
        Prior::Nothing => {}
        Prior::Stored(run) => {
            let end = End::Done { run, note: Some(format!("run {run} was stored by an earlier attempt")) };
            say(&s.name, &format!("{what}: its run {run} was stored by an earlier attempt"));
            return Ok(q.finish(job, agent, &end)?.then_some(end));
        }
        Prior::Busy(run) => {
            let end = End::Returned(format!("run {run} of an earlier attempt is still being written"));
            say(&s.name, &format!("{what}: run {run} of an earlier attempt is still being written; put back"));
            let kept = q.finish(job, agent, &end)?;
            wait(q, s.lease, stop)?;
            return Ok(kept.then_some(end));
        }
        Prior::Replaced { run, results } => {
            let n = format!("replaced run {run} ({results} results) an earlier attempt left unfinished");
            say(&s.name, &format!("{what}: {n}"));
            note = Some(n);
        }
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    let holder = Holder::start(
        lease_q.take().map(Ok).unwrap_or_else(|| Queue::open(&s.db))?,
        job.id,
        agent,
        s.lease,
        stop.clone(),
        interrupt.clone(),
    );
    let ran = runner.run(job, interrupt);
    let (lq, lease) = holder.finish();
    *lease_q = lq;
    let stopping = stop.load(Ordering::Relaxed);
    let end = match (lease, ran) {
        (Lease::Lost, ran) => {
            say(&s.name, &format!("{what}: lost its lease ({ran:?}); the queue gives it to another attempt"));
            return Ok(None);
        }
        (_, RunEnd::Stored { run, interrupted: false, note: n }) => {
            End::Done { run, note: [note, n].into_iter().flatten().reduce(|a, b| format!("{a}; {b}")) }
        }
        (Lease::Cancelled, _) => End::Cancelled,
        (_, RunEnd::Refused(why)) => End::Refused(why),
        (_, RunEnd::Stored { run, interrupted: true, .. }) if stopping => {
            q.drop_unfinished_run(job.id)?;
            End::Returned(format!("the agent was stopped (signal) during the job; its unfinished run {run} removed"))
        }
        (_, RunEnd::Failed(why)) if stopping => End::Returned(format!("the agent was stopped (signal): {why}")),
        (_, RunEnd::Stored { run, interrupted: true, .. }) => End::Failed(format!("run {run} was interrupted")),
        (_, RunEnd::Failed(why)) => End::Failed(why),
    };
    let kept = q.finish(job, agent, &end)?;
    let said = match &end {
        End::Done { run, note } => {
            format!("done, run {run}{}", note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default())
        }
        End::Failed(why) => format!("failed: {why}"),
        End::Refused(why) => format!("refused: {why}"),
        End::Returned(why) => format!("put back in the queue: {why}"),
        End::Cancelled => "cancelled".to_string(),
    };
    say(&s.name, &format!("{what}: {said}{}", if kept { "" } else { " (no longer this agent's: not reported)" }));
    Ok(kept.then_some(end))
}

/// The thread that renews a job's lease while it runs (a connection of its
/// own, so a long statement of the run's never delays it), and passes a
/// stop signal, a cancellation or a lost lease on to the run as `interrupt`.
struct Holder {
    quit: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(Option<Queue>, Lease)>,
}

impl Holder {
    fn start(
        mut q: Queue,
        job: i64,
        agent: &str,
        lease: Duration,
        stop: Arc<AtomicBool>,
        interrupt: Arc<AtomicBool>,
    ) -> Holder {
        let quit = Arc::new(AtomicBool::new(false));
        let agent = agent.to_string();
        let done = quit.clone();
        let every = lease / 3;
        let thread = std::thread::spawn(move || {
            let mut last_ok = Instant::now();
            let mut next = Instant::now() + every;
            let mut state = Lease::Kept;
            while !done.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) {
                    interrupt.store(true, Ordering::Relaxed);
                }
                if Instant::now() >= next {
                    match q.renew(job, &agent, lease) {
                        Ok(Lease::Lost) => {
                            interrupt.store(true, Ordering::Relaxed);
                            return (Some(q), Lease::Lost);
                        }
                        Ok(l) => {
                            last_ok = Instant::now();
                            if l == Lease::Cancelled {
                                interrupt.store(true, Ordering::Relaxed);
                                state = Lease::Cancelled;
                            }
                        }
                        Err(e) => {
                            eprintln!("kdelta agent: renewing the lease of job {job}: {e}");
                            // The server's lease has surely run out by now.
                            if last_ok.elapsed() >= lease {
                                interrupt.store(true, Ordering::Relaxed);
                                return (None, Lease::Lost);
                            }
                        }
                    }
                    next = Instant::now() + every;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            (Some(q), state)
        });
        Holder { quit, thread }
    }

    /// Stop renewing; the connection back (unless it broke) and what the
    /// renewals found.
    fn finish(self) -> (Option<Queue>, Lease) {
        self.quit.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or((None, Lease::Lost))
    }
}

/// Where an agent's host name comes from when `--host-name` is not given:
/// the snapshot's (the kernel's node name).
pub(crate) fn default_name(host: &serde_json::Value) -> Option<String> {
    host.get("hostname")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty() && !s.starts_with("unavailable"))
        .map(str::to_string)
}

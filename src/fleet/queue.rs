//! The queue in the shared store: every statement the fleet makes, on a
//! connection of its own (`store::queue_client`, the schema migrated first;
//! tables in `store/pg_schema.rs`, version 5).
//!
//! A job is one (submission, host) pair. An agent takes the oldest queued
//! job for its host with `SELECT ... FOR UPDATE SKIP LOCKED` in the
//! transaction that marks it `running`, holds it with a lease (server time,
//! `lease_until`) renewed while it runs, and ends it in one transaction
//! that first checks the job is still its own. A lease that runs out ends
//! its attempt as `lost` ([`Queue::expire`], run by every agent before it
//! claims) and the job goes back to the queue; the second failure of any
//! kind (lost, or failed) ends it `failed` with every attempt's reason. A
//! run records its job (`runs.job_id`, unique): before an attempt runs,
//! [`Queue::prepare_run`] finds what an earlier one stored.

use anyhow::Result;
use postgres::Client;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod types;
pub(crate) use types::*;

/// How many failed attempts (lost or failed) end a job `failed`.
pub(crate) const MAX_FAILURES: i32 = 2;

/// The channel `submit` notifies and agents listen on.
const CHANNEL: &str = "kdelta_jobs";

/// A job's states, as stored.
pub(crate) const QUEUED: &str = "queued";
pub(crate) const RUNNING: &str = "running";
pub(crate) const DONE: &str = "done";
pub(crate) const FAILED: &str = "failed";
pub(crate) const REFUSED: &str = "refused";
pub(crate) const CANCELLED: &str = "cancelled";

/// The queue: a connection to the shared store.
pub(crate) struct Queue {
    client: Client,
    shown: PathBuf,
}

/// Timestamps as text, UTC, to the second (as runs keep theirs).
const TS: &str = "YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"";

fn ts(col: &str) -> String {
    format!("to_char({col} AT TIME ZONE 'UTC', '{TS}')")
}

impl Queue {
    /// Connect to the shared store `db` (made or migrated first).
    pub(crate) fn open(db: &Path) -> Result<Queue> {
        let (client, shown) = crate::store::queue_client(db)?;
        Ok(Queue { client, shown })
    }

    /// Connect to read an existing queue: `None` when the store has none
    /// yet (nothing is made or migrated).
    pub(crate) fn open_existing(db: &Path) -> Result<Option<Queue>> {
        Ok(crate::store::queue_client_existing(db)?.map(|(client, shown)| Queue { client, shown }))
    }

    /// The store's URL without its password, for messages.
    pub(crate) fn shown(&self) -> &Path {
        &self.shown
    }

    /// Hold host `name` for this connection (a session lock, freed when the
    /// connection ends however it ends): one agent per host. `false` when
    /// another agent holds it.
    pub(crate) fn lock_host(&mut self, name: &str) -> Result<bool> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let row = self
            .client
            .query_one("SELECT pg_try_advisory_lock(1801742452, hashtext('kdelta-host:' || $1))", &[&name])
            .map_err(e)?;
        Ok(row.get(0))
    }

    /// Register (or refresh) a host: its labels, usable CPUs, snapshot.
    pub(crate) fn register(
        &mut self,
        name: &str,
        labels: &std::collections::BTreeMap<String, String>,
        cpus: &str,
        host: &serde_json::Value,
    ) -> Result<()> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let labels = serde_json::to_string(labels)?;
        let host = host.to_string();
        self.client
            .execute(
                "INSERT INTO fleet_hosts (name, labels, cpus, host, kdelta_version, state) VALUES ($1, $2, $3, $4, $5, 'idle')
                 ON CONFLICT (name) DO UPDATE SET labels = $2, cpus = $3, host = $4, kdelta_version = $5, state = 'idle',
                 note = NULL, seen = now()",
                &[&name, &labels, &cpus, &host, &env!("CARGO_PKG_VERSION")],
            )
            .map_err(e)?;
        Ok(())
    }

    /// Say what the host is doing (`idle`, `busy`, `restore needed`,
    /// `stopped`), and that it is alive.
    pub(crate) fn set_state(&mut self, name: &str, state: &str, note: Option<&str>) -> Result<()> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        self.client
            .execute(
                "UPDATE fleet_hosts SET state = $2, note = $3, seen = now() WHERE name = $1",
                &[&name, &state, &note],
            )
            .map_err(e)?;
        Ok(())
    }

    /// Listen for submissions, so [`Queue::wait`] wakes as one arrives.
    pub(crate) fn listen(&mut self) -> Result<()> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        self.client.batch_execute(&format!("LISTEN {CHANNEL}")).map_err(e)?;
        Ok(())
    }

    /// Wait up to `d` for a submission (after [`Queue::listen`]); whether
    /// one came.
    pub(crate) fn wait(&mut self, d: Duration) -> Result<bool> {
        use postgres::fallible_iterator::FallibleIterator;
        let e = |e| crate::store::pg_error(&self.shown, e);
        let mut n = self.client.notifications();
        let came = n.timeout_iter(d).next().map_err(e)?.is_some();
        // Drain what else arrived: one wake-up is enough.
        while n.iter().next().map_err(e)?.is_some() {}
        Ok(came)
    }

    /// End every attempt whose lease ran out (any host's): the attempt is
    /// `lost`, the job queued again, or `failed` at its second failure.
    /// Returns the jobs it ended this way, and what became of each.
    pub(crate) fn expire(&mut self) -> Result<Vec<(i64, String)>> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let mut tx = self.client.transaction().map_err(e)?;
        let rows = tx
            .query(
                &format!(
                    "SELECT id, attempts, failures, {} FROM jobs WHERE state = 'running' AND lease_until < now()
                     ORDER BY id FOR UPDATE SKIP LOCKED",
                    ts("lease_until")
                ),
                &[],
            )
            .map_err(e)?;
        let mut ended = Vec::new();
        for r in rows {
            let (id, attempt, failures, until): (i64, i32, i32, String) = (r.get(0), r.get(1), r.get(2), r.get(3));
            let why = format!(
                "lease ran out at {until} without a renewal (the agent was killed, its host went down or lost the database)"
            );
            tx.execute(
                "UPDATE job_attempts SET ended = (SELECT lease_until FROM jobs WHERE id = $1), outcome = 'lost', reason = $3
                 WHERE job_id = $1 AND attempt = $2 AND ended IS NULL",
                &[&id, &attempt, &why],
            )
            .map_err(e)?;
            let state = if failures + 1 >= MAX_FAILURES { FAILED } else { QUEUED };
            let reason = if state == FAILED { Some(reasons(&mut tx, id).map_err(e)?) } else { None };
            tx.execute(
                "UPDATE jobs SET state = $2, failures = failures + 1, agent = NULL, lease_until = NULL, reason = $3,
                 ended = CASE WHEN $2 = 'failed' THEN now() ELSE NULL END WHERE id = $1",
                &[&id, &state, &reason],
            )
            .map_err(e)?;
            ended.push((id, state.to_string()));
        }
        tx.commit().map_err(e)?;
        Ok(ended)
    }

    /// Take the oldest queued job for `host`, held by `agent` for `lease`.
    pub(crate) fn claim(&mut self, host: &str, agent: &str, lease: Duration) -> Result<Option<Job>> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let ms = lease.as_millis().min(i64::MAX as u128) as i64;
        let mut tx = self.client.transaction().map_err(e)?;
        let row = tx
            .query_opt(
                "WITH c AS (SELECT id FROM jobs WHERE host = $1 AND state = 'queued' AND NOT cancel
                            ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                 UPDATE jobs SET state = 'running', attempts = attempts + 1, agent = $2,
                        lease_until = now() + $3::bigint * interval '1 millisecond', reason = NULL
                 FROM c WHERE jobs.id = c.id
                 RETURNING jobs.id, jobs.attempts, jobs.kind, jobs.args, jobs.label",
                &[&host, &agent, &ms],
            )
            .map_err(e)?;
        let Some(row) = row else {
            tx.commit().map_err(e)?;
            return Ok(None);
        };
        let job = Job {
            id: row.get(0),
            attempt: row.get(1),
            kind: row.get(2),
            args: serde_json::from_str(row.get::<_, &str>(3)).unwrap_or_default(),
            label: row.get(4),
        };
        tx.execute(
            "INSERT INTO job_attempts (job_id, attempt, host, agent) VALUES ($1, $2, $3, $4)",
            &[&job.id, &job.attempt, &host, &agent],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(Some(job))
    }

    /// Renew `agent`'s lease on `job` for another `lease`.
    pub(crate) fn renew(&mut self, job: i64, agent: &str, lease: Duration) -> Result<Lease> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let ms = lease.as_millis().min(i64::MAX as u128) as i64;
        let row = self
            .client
            .query_opt(
                // The host is seen as its lease is renewed: `jobs` must not
                // show a busy host as silent for the length of a long job.
                "WITH j AS (UPDATE jobs SET lease_until = now() + $3::bigint * interval '1 millisecond'
                            WHERE id = $1 AND agent = $2 AND state = 'running' RETURNING cancel, host),
                      h AS (UPDATE fleet_hosts SET seen = now() WHERE name IN (SELECT host FROM j))
                 SELECT cancel FROM j",
                &[&job, &agent, &ms],
            )
            .map_err(e)?;
        Ok(match row {
            None => Lease::Lost,
            Some(r) if r.get::<_, bool>(0) => Lease::Cancelled,
            Some(_) => Lease::Kept,
        })
    }

    /// What an earlier attempt at `job` stored: a complete run is kept (the
    /// job is done), an unfinished one whose writer is gone is removed with
    /// its results, so the job's run is stored once.
    pub(crate) fn prepare_run(&mut self, job: i64) -> Result<Prior> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let mut tx = self.client.transaction().map_err(e)?;
        let row = tx.query_opt("SELECT id, status FROM runs WHERE job_id = $1 FOR UPDATE", &[&job]).map_err(e)?;
        let Some(row) = row else {
            tx.commit().map_err(e)?;
            return Ok(Prior::Nothing);
        };
        let (run, status): (i64, String) = (row.get(0), row.get(1));
        if status == "complete" {
            tx.commit().map_err(e)?;
            return Ok(Prior::Stored(run));
        }
        // Its writer holds the run's lock as long as its connection lives.
        let key = crate::store::run_lock_key(run);
        let free: bool = tx.query_one("SELECT pg_try_advisory_xact_lock($1)", &[&key]).map_err(e)?.get(0);
        if !free {
            tx.commit().map_err(e)?;
            return Ok(Prior::Busy(run));
        }
        let results: i64 = tx.query_one("SELECT COUNT(*) FROM results WHERE run_id = $1", &[&run]).map_err(e)?.get(0);
        tx.execute("DELETE FROM runs WHERE id = $1", &[&run]).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(Prior::Replaced { run, results })
    }

    /// End `agent`'s attempt at `job` as `end` says. `false` (nothing
    /// changed) when the job is no longer its own.
    pub(crate) fn finish(&mut self, job: &Job, agent: &str, end: &End) -> Result<bool> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let mut tx = self.client.transaction().map_err(e)?;
        let mine = tx
            .query_opt(
                "SELECT failures FROM jobs WHERE id = $1 AND agent = $2 AND state = 'running' AND attempts = $3 FOR UPDATE",
                &[&job.id, &agent, &job.attempt],
            )
            .map_err(e)?;
        let Some(mine) = mine else {
            tx.commit().map_err(e)?;
            return Ok(false);
        };
        let failures: i32 = mine.get(0);
        let (outcome, reason, run) = match end {
            End::Done { run, note } => (DONE, note.clone(), Some(*run)),
            End::Failed(why) => (FAILED, Some(why.clone()), None),
            End::Refused(why) => (REFUSED, Some(why.clone()), None),
            End::Returned(why) => ("returned", Some(why.clone()), None),
            End::Cancelled => (CANCELLED, Some("cancelled by `kdelta cancel`".to_string()), None),
        };
        tx.execute(
            "UPDATE job_attempts SET ended = now(), outcome = $3, reason = $4, run_id = $5 WHERE job_id = $1 AND attempt = $2",
            &[&job.id, &job.attempt, &outcome, &reason, &run],
        )
        .map_err(e)?;
        let (state, failures) = match end {
            End::Failed(_) if failures + 1 < MAX_FAILURES => (QUEUED, failures + 1),
            End::Failed(_) => (FAILED, failures + 1),
            End::Returned(_) => (QUEUED, failures),
            _ => (outcome, failures),
        };
        let reason = if state == FAILED { Some(reasons(&mut tx, job.id).map_err(e)?) } else { reason };
        tx.execute(
            "UPDATE jobs SET state = $2, failures = $3, agent = NULL, lease_until = NULL, reason = $4, run_id = $5,
             ended = CASE WHEN $2 = 'queued' THEN NULL ELSE now() END WHERE id = $1",
            &[&job.id, &state, &failures, &reason, &run],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(true)
    }

    /// The run stored with `job`, if any: its id and status (`complete`,
    /// `incomplete`, `running`).
    pub(crate) fn run_of(&mut self, job: i64) -> Result<Option<(i64, String)>> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let row = self.client.query_opt("SELECT id, status FROM runs WHERE job_id = $1", &[&job]).map_err(e)?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    /// Remove `job`'s run if it is unfinished (this agent's own, stopped).
    pub(crate) fn drop_unfinished_run(&mut self, job: i64) -> Result<Option<i64>> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let row = self
            .client
            .query_opt("DELETE FROM runs WHERE job_id = $1 AND status <> 'complete' RETURNING id", &[&job])
            .map_err(e)?;
        Ok(row.map(|r| r.get(0)))
    }

    /// The registered hosts, by name.
    pub(crate) fn hosts(&mut self) -> Result<Vec<HostRow>> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT name, labels, cpus, state, note, {}, EXTRACT(EPOCH FROM now() - seen)::float8 FROM fleet_hosts ORDER BY name",
                    ts("seen")
                ),
                &[],
            )
            .map_err(e)?;
        Ok(rows
            .iter()
            .map(|r| HostRow {
                name: r.get(0),
                labels: serde_json::from_str(r.get::<_, &str>(1)).unwrap_or_default(),
                cpus: r.get(2),
                state: r.get(3),
                note: r.get(4),
                seen: r.get(5),
                idle_s: r.get(6),
            })
            .collect())
    }

    /// Queue one job per host `hosts` selects; returns (job id, host) pairs.
    /// Refused (exit 2) when no registered host matches.
    pub(crate) fn submit(
        &mut self,
        hosts: &Hosts,
        kind: &str,
        args: &[String],
        label: Option<&str>,
        by: &str,
    ) -> Result<Vec<(i64, String)>> {
        let all = self.hosts()?;
        let chosen: Vec<&HostRow> = all
            .iter()
            .filter(|h| match hosts {
                Hosts::All => true,
                Hosts::Label(k, v) => (k == "host" && &h.name == v) || h.labels.get(k).is_some_and(|have| have == v),
            })
            .collect();
        if chosen.is_empty() {
            let known = if all.is_empty() {
                "no agent has registered yet: start `kdelta agent --db URL` on each host".to_string()
            } else {
                format!(
                    "registered: {}",
                    all.iter()
                        .map(|h| {
                            let l: Vec<String> = h.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                            format!("{} ({})", h.name, l.join(","))
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let asked = match hosts {
                Hosts::All => "all".to_string(),
                Hosts::Label(k, v) => format!("{k}={v}"),
            };
            return Err(crate::error::bad_input(format!("--hosts {asked}: no registered host matches; {known}")));
        }
        let e = |e| crate::store::pg_error(&self.shown, e);
        let args = serde_json::to_string(args)?;
        let mut tx = self.client.transaction().map_err(e)?;
        let mut ids = Vec::new();
        for h in chosen {
            let id: i64 = tx
                .query_one(
                    "INSERT INTO jobs (host, kind, args, label, submitted_by) VALUES ($1, $2, $3, $4, $5) RETURNING id",
                    &[&h.name, &kind, &args, &label, &by],
                )
                .map_err(e)?
                .get(0);
            ids.push((id, h.name.clone()));
        }
        tx.batch_execute(&format!("NOTIFY {CHANNEL}")).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(ids)
    }

    /// Cancel job `id`: a queued one ends now; a running one is told to
    /// stop at its next renewal. Returns what happened, in words.
    pub(crate) fn cancel(&mut self, id: i64) -> Result<String> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let mut tx = self.client.transaction().map_err(e)?;
        let Some(row) = tx.query_opt("SELECT state, host FROM jobs WHERE id = $1 FOR UPDATE", &[&id]).map_err(e)?
        else {
            return Err(crate::error::bad_input(format!("no job {id} in {}: see `kdelta jobs`", self.shown.display())));
        };
        let (state, host): (String, String) = (row.get(0), row.get(1));
        let said = match state.as_str() {
            QUEUED => {
                tx.execute(
                    "UPDATE jobs SET state = 'cancelled', cancel = true, ended = now(), reason = 'cancelled by `kdelta cancel`' WHERE id = $1",
                    &[&id],
                )
                .map_err(e)?;
                format!("job {id} cancelled (it was queued for {host})")
            }
            RUNNING => {
                tx.execute("UPDATE jobs SET cancel = true WHERE id = $1", &[&id]).map_err(e)?;
                format!("job {id} is running on {host}: its agent stops it at its next lease renewal")
            }
            other => {
                return Err(crate::error::bad_input(format!("job {id} is already {other}: nothing to cancel")));
            }
        };
        tx.commit().map_err(e)?;
        Ok(said)
    }

    /// Jobs, newest first (at most `limit`; with `label`, only those), each
    /// with its attempts.
    pub(crate) fn jobs(&mut self, label: Option<&str>, limit: usize) -> Result<Vec<JobRow>> {
        let e = |e| crate::store::pg_error(&self.shown, e);
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT id, host, kind, args, label, state, {}, {}, run_id, reason, cancel FROM jobs
                     WHERE ($1::text IS NULL OR label = $1) ORDER BY id DESC LIMIT $2",
                    ts("submitted"),
                    ts("ended")
                ),
                &[&label, &limit],
            )
            .map_err(e)?;
        let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        let attempts = self
            .client
            .query(
                &format!(
                    "SELECT job_id, attempt, host, agent, {}, {}, outcome, reason, run_id FROM job_attempts
                     WHERE job_id = ANY($1) ORDER BY job_id, attempt",
                    ts("started"),
                    ts("ended")
                ),
                &[&ids],
            )
            .map_err(e)?;
        let mut by_job: std::collections::HashMap<i64, Vec<AttemptRow>> = std::collections::HashMap::new();
        for a in attempts {
            by_job.entry(a.get(0)).or_default().push(AttemptRow {
                attempt: a.get(1),
                host: a.get(2),
                agent: a.get(3),
                started: a.get(4),
                ended: a.get(5),
                outcome: a.get(6),
                reason: a.get(7),
                run: a.get(8),
            });
        }
        Ok(rows
            .iter()
            .map(|r| {
                let id: i64 = r.get(0);
                JobRow {
                    id,
                    host: r.get(1),
                    kind: r.get(2),
                    args: serde_json::from_str(r.get::<_, &str>(3)).unwrap_or_default(),
                    label: r.get(4),
                    state: r.get(5),
                    submitted: r.get(6),
                    ended: r.get(7),
                    run: r.get(8),
                    reason: r.get(9),
                    cancel: r.get(10),
                    attempts: by_job.remove(&id).unwrap_or_default(),
                }
            })
            .collect())
    }
}

/// Every ended attempt's reason, one after the other: what a failed job says.
fn reasons(tx: &mut postgres::Transaction<'_>, job: i64) -> Result<String, postgres::Error> {
    let rows = tx.query(
        "SELECT attempt, host, outcome, reason FROM job_attempts WHERE job_id = $1 AND outcome IN ('lost', 'failed') ORDER BY attempt",
        &[&job],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            format!(
                "attempt {} on {} {}: {}",
                r.get::<_, i32>(0),
                r.get::<_, String>(1),
                r.get::<_, String>(2),
                r.get::<_, Option<String>>(3).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("; "))
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
